/**
 * DueDriver — the History role's delivery timers (DESIGN.md §7), driven from due times stored
 * in the database: a job needs a (new) Matching task at enqueue (runAt), after a retry backoff
 * and when a claim's deadline lapses.
 *
 * A pass, at the clock's current time: the store dead-letters exhausted lapsed claims, then
 * reserves the due rows — pushing each one's due time `jobDeliveryRetryMs` forward BEFORE its
 * task is added — adds one Matching task per row in claim order (priority DESC, due time ASC,
 * ready order), and confirms the rows whose task Matching accepted (due := null). A crash or a
 * failed add between reserve and confirm leaves the reservation, so the row is offered again
 * after `jobDeliveryRetryMs`: at worst a duplicate task, which History answers obsolete or
 * already-started; never a stranded job.
 *
 * Invariants: passes run one at a time, in request order; a requested pass that has not started
 * yet is shared by every caller that asks meanwhile (it will read the clock after all of them);
 * one clock timer is armed, at the earliest due time in the store (read after each pass, and
 * lowered by `notifyDue`) or the safety scan (`jobDueScanIntervalMs`), whichever is sooner —
 * the scan finds rows other connections wrote since. Waiters for a queue are woken first come first served: one per task a
 * pass hands that queue, or as many as asked (`wake`).
 *
 * Does not: decide anything about a job (the store's statements do), or run sweeps.
 */
import { isMatchboxError } from '../domain/errors.ts'
import type { CancelTimer, Clock } from '../kernel/Clock.ts'
import { jobDeliveryBatchMax, jobDeliveryRefusedRetryMs, jobDeliveryRetryMs, jobDueScanIntervalMs } from '../kernel/Limits.ts'
import type { MatchingHost } from '../actors/MatchingHost.ts'
import type { DueJob, JobStore } from '../persistence/jobs/JobStore.ts'

/** The Matching namespace job queues live in: one family per job queue, one partition per family. */
export const jobsNamespace = 'jobs'

/** Why a wait for delivery ended. */
export type WakeReason = 'delivered' | 'woken' | 'timeout'

/** The delivery driver of one engine. */
export interface DueDriver {
  /** Runs a pass at the clock's time (after any running one); resolves when it is done. */
  run(): Promise<void>
  /**
   * Waits for a requested pass, or runs one if the armed timer is already due (a clock that
   * jumped); otherwise returns at once. Workers use it: the timers and the scan deliver for them.
   */
  runIfDue(): Promise<void>
  /** Requests a pass soon without waiting for it. */
  kick(): void
  /** A row of this engine became due at `dueMs`: make sure a pass runs then. */
  notifyDue(dueMs: number): void
  /**
   * Waits, first come first woken, until a pass hands `queue` tasks ('delivered'), `wake` is
   * called ('woken'), `untilMs` arrives ('timeout'), or the driver closes ('woken').
   */
  waitForDelivery(queue: string, untilMs: number): Promise<WakeReason>
  /** Wakes the first `count` waiters of `queue` (default: all). */
  wake(queue: string, count?: number): void
  /** Resolves once no pass is running or requested. */
  idle(): Promise<void>
  /** Cancels the timer, wakes every waiter, and waits for the running pass. */
  close(): Promise<void>
}

/** What a driver needs. */
export interface DueDriverOptions {
  readonly jobStore: JobStore
  readonly matching: MatchingHost
  readonly clock: Clock
  /** Failures of a pass that are not expected store errors (defects); default: rethrown asynchronously. */
  readonly onDefect?: (defect: unknown) => void
}

/** Starts a driver (it arms its first scan at once). */
export function makeDueDriver(options: DueDriverOptions): DueDriver {
  const { jobStore, matching, clock } = options
  const waiters = new Map<string, Array<(reason: WakeReason) => void>>()
  let tail: Promise<void> = Promise.resolve()
  let requested: Promise<void> | null = null
  let timer: { atMs: number; cancel: CancelTimer } | null = null
  let closed = false
  const now = () => Math.floor(clock.now())

  const wakeWith = (queue: string, reason: WakeReason, count: number): void => {
    const list = waiters.get(queue)
    if (list === undefined) return
    for (const resolve of list.splice(0, count)) resolve(reason)
    if (list.length === 0) waiters.delete(queue)
  }
  const wake = (queue: string, count = Number.POSITIVE_INFINITY): void => wakeWith(queue, 'woken', count)

  const arm = (atMs: number): void => {
    if (closed || (timer !== null && timer.atMs <= atMs)) return
    timer?.cancel()
    const armed = { atMs, cancel: clock.setTimer(atMs - clock.now(), () => {
      if (timer === armed) timer = null
      kick()
    }) }
    timer = armed
  }

  const deliver = async (due: ReadonlyArray<DueJob>): Promise<void> => {
    // Issued together, in claim order: Matching queues each add in arrival order and batches them.
    const added = await Promise.allSettled(
      due.map((job) =>
        matching.addTask({
          namespace: jobsNamespace,
          family: job.queue,
          type: 'activity',
          task: { jobId: job.id, kind: 'job', priority: job.priority, expiresAtMs: job.expiresAtMs },
        }),
      ),
    )
    const delivered = due.filter((_, index) => added[index]?.status === 'fulfilled')
    // A refusal that wrote nothing gives the reservation back at once; an outcome that may have
    // committed keeps it, and the job is offered again when the reservation runs out.
    const refused = due.filter((_, index) => {
      const result = added[index]
      return result?.status === 'rejected' && isMatchboxError(result.reason) && !result.reason.maybeCommitted
    })
    if (refused.length > 0) {
      await jobStore.releaseDelivered({ deliveries: refused.map((job) => ({ id: job.id, revision: job.revision })), dueMs: now() + jobDeliveryRefusedRetryMs })
    }
    for (const result of added) if (result.status === 'rejected' && !isMatchboxError(result.reason)) report(result.reason)
    if (delivered.length > 0) await jobStore.confirmDelivered({ deliveries: delivered.map((job) => ({ id: job.id, revision: job.revision })) })
    const perQueue = new Map<string, number>()
    for (const job of delivered) perQueue.set(job.queue, (perQueue.get(job.queue) ?? 0) + 1)
    for (const [queue, count] of perQueue) wakeWith(queue, 'delivered', count)
  }

  const pass = async (): Promise<void> => {
    if (closed) return
    const nowMs = now()
    let nextMs = nowMs + jobDueScanIntervalMs
    try {
      for (;;) {
        const due = await jobStore.takeDue({ nowMs, reserveUntilMs: nowMs + jobDeliveryRetryMs, limit: jobDeliveryBatchMax, queues: null })
        if (due.length > 0) await deliver(due)
        if (due.length < jobDeliveryBatchMax || closed) break
      }
      const next = await jobStore.nextDueMs({ nowMs: now(), queues: null })
      // A due time not after now is a row another connection holds: the scan looks again.
      if (next !== null && next > now()) nextMs = Math.min(nextMs, next)
    } catch (error) {
      // An unavailable store: the scan timer tries again.
      if (!isMatchboxError(error)) report(error)
    }
    arm(nextMs)
  }

  const report = (defect: unknown): void => {
    if (options.onDefect !== undefined) return options.onDefect(defect)
    queueMicrotask(() => {
      throw defect
    })
  }

  const run = (): Promise<void> => {
    if (requested !== null) return requested
    const started = tail.then(() => {
      requested = null
      return pass()
    })
    requested = started
    tail = started
    return started
  }

  const kick = (): void => {
    if (!closed) void run()
  }

  arm(now() + jobDueScanIntervalMs)

  return {
    run,
    runIfDue() {
      if (requested !== null) return requested
      return timer !== null && timer.atMs <= clock.now() ? run() : Promise.resolve()
    },
    kick,
    notifyDue(dueMs) {
      if (dueMs <= clock.now()) kick()
      else arm(dueMs)
    },
    waitForDelivery(queue, untilMs) {
      if (closed) return Promise.resolve('woken')
      return new Promise((resolve) => {
        let settled = false
        const done = (reason: WakeReason) => {
          if (settled) return
          settled = true
          cancel()
          const list = waiters.get(queue)
          const index = list?.indexOf(done) ?? -1
          if (index >= 0) list?.splice(index, 1)
          resolve(reason)
        }
        const list = waiters.get(queue) ?? []
        list.push(done)
        waiters.set(queue, list)
        const cancel = clock.setTimer(untilMs - clock.now(), () => done('timeout'))
      })
    },
    wake,
    async idle() {
      for (let seen: Promise<void> | null = null; seen !== tail; ) {
        seen = tail
        await tail
      }
    },
    async close() {
      closed = true
      timer?.cancel()
      timer = null
      for (const queue of waiters.keys()) wake(queue)
      await tail
    },
  }
}
