/**
 * RestartBooks — the restart back-off of each partition a Matching host serves, kept above its
 * instances (DESIGN.md §6): when a queue dies of lost ownership or a failed load, its partition
 * instance writes the delay into its book, and every later instance of the partition reads the
 * same book before it loads that queue again. So an instance that unloads (its default queue
 * died, it went idle, membership moved it) never takes the back-off with it.
 *
 * The policy is a Schedule, `partitionRestartSchedule`: doubling from 1 s, capped at 10 s
 * (upstream's lease-init retry). Each slot of a book steps its own run of the schedule once per
 * failure, against the caller's clock time, so the n-th failure in a row waits the schedule's
 * n-th delay; a clean unload after the delay ran out forgets the run, and the next failure
 * starts from the first delay.
 *
 * A membership view that gives a partition to this host cuts the delays still running in its
 * book to the schedule's first step (`waiveOurs`): the longer steps are for hosts whose views
 * keep disagreeing, and a new view is news they were not waiting for.
 *
 * Bound: a book is kept while an instance of its partition is unfinished (loaded, or unloaded
 * but with queues still draining, which may still write it) and, after the last one finished,
 * while one of its delays still runs; then it goes. Entries whose delay has passed are forgotten
 * then too: a partition left alone for a whole delay starts its next back-off from the first step.
 *
 * Does not: time anything (the caller passes the clock's time and sets its own timers).
 */
import { Cause, Duration, Effect, Exit, Schedule } from 'effect'
import { assert } from '../kernel/assert.ts'
import type { PartitionKey } from '../domain/QueueKey.ts'
import { acquireRetryInitialMs, acquireRetryMaxMs } from '../kernel/Limits.ts'

/**
 * The restart policy of a partition's queue that died of lost ownership or a failed load: the
 * delay before it may be loaded again doubles from `acquireRetryInitialMs` with every failure in
 * a row, up to `acquireRetryMaxMs`, and it recurs for ever (a queue is never given up on). Its
 * output is the delay.
 */
export const partitionRestartSchedule: Schedule.Schedule<Duration.Duration> = Schedule.min([
  Schedule.exponential(Duration.millis(acquireRetryInitialMs), 2),
  Schedule.spaced(Duration.millis(acquireRetryMaxMs)),
])

/**
 * One run of a schedule, stepped synchronously: each call is the next recurrence's delay in ms,
 * its step taken at `nowMs` (the caller's clock). The schedule must be pure and never end, as
 * `partitionRestartSchedule` is; a schedule that ends or fails is a bug and throws.
 *
 * Synchronous because a queue's restart delay is written the moment it dies, from a physical
 * queue's callback that is not a fiber (see PartitionActor.ts).
 */
export function makeRestartDelays(schedule: Schedule.Schedule<unknown> = partitionRestartSchedule): (nowMs: number) => number {
  const step = Effect.runSync(Schedule.toStep(schedule))
  return (nowMs) => {
    const exit = Effect.runSyncExit(step(nowMs, undefined))
    assert(Exit.isSuccess(exit), () => `a restart schedule ended or failed: ${Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ''}`)
    return Duration.toMillis(exit.value[1])
  }
}

/** When a queue that died of lost ownership or a failed load may be loaded again. */
export interface RestartEntry {
  /** Failures in a row so far (the schedule's steps taken). */
  readonly attempts: number
  /** When the latest failure was booked. */
  readonly failedAtMs: number
  readonly notBeforeMs: number
  /** The slot's run of the restart schedule: the next failure's delay. */
  readonly nextDelayMs: (nowMs: number) => number
}

/** A partition's restart book: an entry per queue slot ('' for the default queue, '@version'). */
export type RestartBook = Map<string, RestartEntry>

/**
 * Books a queue's end in `book`: a failure (lost ownership, a failed load) takes the slot's next
 * restart delay from its schedule run; a clean unload forgets earlier failures, but never a
 * restart delay still running (an overlapping instance of the queue may have just lost it to
 * another host).
 */
export function bookQueueEnd(book: RestartBook, slot: string, failed: boolean, nowMs: number, schedule?: Schedule.Schedule<unknown>): void {
  const entry = book.get(slot)
  if (failed) {
    const nextDelayMs = entry?.nextDelayMs ?? makeRestartDelays(schedule)
    book.set(slot, { attempts: (entry?.attempts ?? 0) + 1, failedAtMs: nowMs, notBeforeMs: nowMs + nextDelayMs(nowMs), nextDelayMs })
  } else if ((entry?.notBeforeMs ?? 0) <= nowMs) book.delete(slot)
}

/** The restart books of one host, by partition name. */
export interface RestartBooks {
  /** The book a new instance of partition `name` (`key`) reads and writes; counts the instance as unfinished. */
  open(name: string, key: PartitionKey): RestartBook
  /**
   * A new membership view: the delays still running in the books of partitions it gives this
   * host (`isOurs`) are cut to the first step of the schedule (`acquireRetryInitialMs` after the
   * failure; now, if that has passed). The longer steps keep two hosts whose views disagree from
   * taking a queue from each other at a growing rate; a new view that gives the partition to this
   * host is news they were not waiting for (the host it lost the queue to left, say), while the
   * first step still bounds how fast hosts that disagree can take it back and forth. The run of
   * failures is kept, so a queue lost again backs off longer.
   */
  waiveOurs(isOurs: (key: PartitionKey) => boolean, nowMs: number): void
  /** An instance of `name` finished: unloaded, its queues drained, so it writes its book no more. */
  finished(name: string, nowMs: number): void
  /** Books kept now (diagnostics). */
  size(): number
}

/** Makes a host's restart books. */
export function makeRestartBooks(): RestartBooks {
  const books = new Map<string, RestartBook>()
  const keys = new Map<string, PartitionKey>()
  const unfinished = new Map<string, number>()
  // Books of partitions with no unfinished instance, kept only for a delay still running.
  const lingering = new Set<string>()

  // Drops `name`'s book if no instance may write it and no delay of it still runs.
  const forgetIfDone = (name: string, nowMs: number): void => {
    if (unfinished.has(name)) {
      lingering.delete(name)
      return
    }
    const book = books.get(name)
    if (book !== undefined) for (const [slot, entry] of book) if (entry.notBeforeMs <= nowMs) book.delete(slot)
    if (book === undefined || book.size === 0) {
      books.delete(name)
      keys.delete(name)
      lingering.delete(name)
    } else lingering.add(name)
  }

  return {
    open(name, key) {
      unfinished.set(name, (unfinished.get(name) ?? 0) + 1)
      keys.set(name, key)
      lingering.delete(name)
      let book = books.get(name)
      if (book === undefined) books.set(name, (book = new Map()))
      return book
    },
    finished(name, nowMs) {
      const left = (unfinished.get(name) ?? 1) - 1
      if (left > 0) unfinished.set(name, left)
      else unfinished.delete(name)
      for (const other of lingering) forgetIfDone(other, nowMs)
      forgetIfDone(name, nowMs)
    },
    waiveOurs(isOurs, nowMs) {
      for (const [name, book] of books) {
        const key = keys.get(name)
        if (key === undefined || !isOurs(key)) continue
        for (const [slot, entry] of book) {
          const waivedMs = Math.max(nowMs, entry.failedAtMs + acquireRetryInitialMs)
          if (entry.notBeforeMs > waivedMs) book.set(slot, { ...entry, notBeforeMs: waivedMs })
        }
      }
    },
    size: () => books.size,
  }
}
