/**
 * DueDriver — the History role's delivery timers (DESIGN.md §7), driven from due times stored
 * in the database: a job becomes due at enqueue (runAt), after a retry backoff and when a
 * claim's deadline lapses.
 *
 * A pass, at the clock's current time: claims due jobs straight for the claims of this engine
 * waiting in line (`claimForWaiting`); reserves at most as many due rows of a queue as polls
 * wait for them in Matching (`deliveryDemand`) and leaves the rest in the store, where the next
 * claim takes them; on a scan, the store dead-letters exhausted lapsed claims.
 *
 * Reserving pushes each row's due time `jobDeliveryRetryMs` forward BEFORE its task is added;
 * the pass adds one Matching task per reserved row in claim order (priority DESC, due time ASC,
 * ready order), and confirms the rows whose task Matching accepted (due := null). A failed add
 * gives its reservation back (due again after `jobDeliveryRefusedRetryMs`; when the store fails
 * that too, at the start of the next pass); a crash between
 * reserve and confirm leaves the reservation, so the row is offered again after
 * `jobDeliveryRetryMs`: at worst a duplicate task, which History answers obsolete or
 * already-started; never a stranded job.
 *
 * With routing (several engines on one database), a pass delivers only the queues of which this
 * engine owns a partition: those named by due signals since the last pass, plus — on a timer,
 * a lazy claim or a change of ownership — the queues the store lists with due rows.
 *
 * Invariants: passes run one at a time, in request order; a requested pass that has not started
 * yet is shared by every caller that asks meanwhile (it will read the clock after all of them);
 * one clock timer is armed, at the earliest due time in the store (read after each pass, and
 * lowered by `notifyDue`) or the safety scan (`jobDueScanIntervalMs`), whichever is sooner —
 * the scan finds rows other connections wrote since. Waiters for a queue are woken first come first served: one per task a
 * pass hands that queue, or as many as asked (`wake`).
 *
 * While the store is failing, passes back off (OutageBackoff.ts: 50 ms doubling to 1 s, with
 * jitter): the retry scan waits out each step and kicks in between only mark what to scan; the
 * first pass that succeeds ends the outage. Explicit `run()` calls (a lazy claim) still run.
 *
 * Length: past 400 lines (about 460) because the driver's interface is mostly doc comments its
 * callers need, and the pass, the timer, the outage back-off and the held queues share one
 * driver's state and its one-pass-at-a-time order; the parts that need none of it — the waiter
 * sets (QueueWaiters.ts) and how refused adds are given back (`sortRefusals`) — live apart.
 *
 * Does not: decide anything about a job (the store's statements do), or run sweeps.
 */
import { isMatchboxError } from '../domain/errors.ts'
import type { CancelTimer, Clock } from '../kernel/Clock.ts'
import type { Random } from '../kernel/Random.ts'
import { registerSizes } from '../kernel/Sizes.ts'
import { dueQueuesPerScanMax, jobDeliveryBatchMax, jobDeliveryRefusedRetryMs, jobDeliveryRetryMs, jobDeliveryUnreleasedMax, jobDueScanIntervalMs } from '../kernel/Limits.ts'
import type { MatchingHost } from '../actors/MatchingHost.ts'
import type { DueJob, JobStore } from '../persistence/jobs/JobStore.ts'
import { makeOutageBackoff } from './OutageBackoff.ts'
import { makeQueueWaiters, type WakeReason } from './QueueWaiters.ts'
import { jobTaskKind } from './JobsHistory.ts'
import { jobsNamespace, jobTaskType, type QueueRouting } from './QueueRouting.ts'

// Why a wait for delivery ended (QueueWaiters.ts).
export type { WakeReason } from './QueueWaiters.ts'

/** The delivery driver of one engine. */
export interface DueDriver {
  /** Runs a pass at the clock's time (after any running one); resolves when it is done. */
  run(): Promise<void>
  /**
   * Waits for a requested pass, or runs one if the armed timer is already due (a clock that
   * jumped); otherwise returns at once. Workers use it: the timers and the scan deliver for them.
   */
  runIfDue(): Promise<void>
  /**
   * Requests a pass soon without waiting for it: a full scan, or for `queue` (a due signal that
   * does not say when its rows are due: that pass also reads the queue's next due time).
   */
  kick(queue?: string): void
  /** A row of `queue` became due at `dueMs`: make sure a pass runs then. */
  notifyDue(dueMs: number, queue?: string): void
  /**
   * Waits, first come first woken, until a pass hands `queue` tasks ('delivered'), `wake` is
   * called ('woken'), `untilMs` arrives ('timeout'), or the driver closes ('woken').
   */
  waitForDelivery(queue: string, untilMs: number): Promise<WakeReason>
  /** Wakes the first `count` waiters of `queue` (default: all). */
  wake(queue: string, count?: number): void
  /**
   * Waits until `untilMs`, or until membership changes (`ownersChanged`), or the driver closes
   * ('woken'): how a claim that found nobody serving its queue, or whose forwarded poll was
   * refused, waits before it looks at the owners again.
   */
  waitForOwner(queue: string, untilMs: number): Promise<WakeReason>
  /** Membership changed: wakes every `waitForOwner`, so those claims look at the new view now, not at their timers. */
  ownersChanged(): void
  /** Resolves once no pass is running or requested. */
  idle(): Promise<void>
  /**
   * Resolves once the passes running or requested now have run (not those requested later, so a
   * stream of due signals cannot hold it off).
   */
  settled(): Promise<void>
  /**
   * True when no pass is running or requested and the timer is not overdue: every row due by
   * now that this engine delivers has been handed to Matching (as far as this engine knows).
   */
  isQuiet(): boolean
  /** Cancels the timer, wakes every waiter, and waits for the running pass. */
  close(): Promise<void>
}

/** What a driver needs. */
export interface DueDriverOptions {
  readonly jobStore: JobStore
  readonly matching: MatchingHost
  readonly clock: Clock
  /** Jitter of the back-off while the store is failing. */
  readonly random: Random
  /**
   * Which queues this engine delivers. Absent: every queue (one engine on its store, no scan of
   * queue names needed). Present: only queues of which it owns a partition.
   */
  readonly routing?: QueueRouting
  /**
   * Called by each pass before it reserves rows for Matching, with the queues it delivers (null:
   * every queue): claims due jobs straight for this engine's workers waiting on them (Claimer.ts's
   * `claimForWaitingWorkers`), so a waiting worker's job skips the Matching round. Answers the
   * queues it left with no due row, which the pass then does not reserve from.
   */
  readonly claimForWaiting?: (queues: ReadonlyArray<string> | null, nowMs: number) => Promise<ReadonlyArray<string>>
  /**
   * Delivery on demand: per queue, how many claims wait in this engine's Matching partitions for
   * a task (Claimer.ts's `deliveryDemand`). A pass reserves and adds to Matching at most that
   * many due jobs of a queue, and none of a queue not named; the other due rows stay in the store,
   * where claims take them straight (`claimDue`).
   */
  readonly deliveryDemand: () => ReadonlyMap<string, number>
  /**
   * Whether this engine's handles rate-limit `queue`: a pass that reserved fewer of its due rows
   * than were wanted reads the next due time, which includes the next token of the queue's
   * buckets (their due jobs are passed over until then), and arms the timer at it.
   */
  readonly isRateLimited?: (queue: string) => boolean
  /**
   * Whether this engine's handles limit `queue` per concurrency key: a pass whose reservation came
   * back short while claims still wait asks again (see `reserveFor`).
   */
  readonly isConcurrencyLimited?: (queue: string) => boolean
  /**
   * Called when a refused add gave due jobs of `queue` back at once (see `deliver`): the engine
   * tells the other engines, whose waiting workers can claim them straight from the store.
   */
  readonly onGivenBack?: (queue: string, dueMs: number) => void
  /** Called as each pass starts, whichever queues it covers (the engine gives back jobs nobody took). */
  readonly onPass?: () => void
  /** Failures of a pass that are not expected store errors (defects); default: rethrown asynchronously. */
  readonly onDefect?: (defect: unknown) => void
}

/** A reservation to confirm or give back: the row's id at the revision the pass saw. */
type Delivery = { readonly id: string; readonly revision: number }

/**
 * What the Matching adds a pass refused (`added`, in `due`'s order) give back, judged at `nowMs`.
 * A refusal that wrote nothing (a partition that lost its range, is unloading or waits out its
 * restart delay) gives its job back due now (`dueNow`, per queue), so claims anywhere take it
 * straight from the store, and holds its queue's adds (`holds`) until the refusal ends (its
 * `retryAtMs`, at most `jobDeliveryRefusedRetryMs`), so the partition is not hammered. An add
 * that may have committed gives its job back a refusal retry later (`later`): if it did commit,
 * the job has two tasks and History answers the second already-started or obsolete. Only a
 * crash leaves the full reservation. Failures that are not store errors are left to the caller.
 */
function sortRefusals(due: ReadonlyArray<DueJob>, added: ReadonlyArray<PromiseSettledResult<unknown>>, nowMs: number): {
  readonly dueNow: ReadonlyMap<string, ReadonlyArray<Delivery>>
  readonly later: ReadonlyArray<Delivery>
  readonly holds: ReadonlyMap<string, number>
} {
  const dueNow = new Map<string, Delivery[]>()
  const later: Delivery[] = []
  const holds = new Map<string, number>()
  due.forEach((job, index) => {
    const result = added[index]
    if (result?.status !== 'rejected' || !isMatchboxError(result.reason)) return
    const delivery = { id: job.id, revision: job.revision }
    if (result.reason._tag === 'Unavailable' && result.reason.maybeCommitted) return void later.push(delivery)
    const endsAtMs = result.reason._tag === 'Unavailable' ? result.reason.retryAtMs : undefined
    const untilMs = Math.min(nowMs + jobDeliveryRefusedRetryMs, Math.max(nowMs, endsAtMs ?? Number.POSITIVE_INFINITY))
    holds.set(job.queue, Math.max(holds.get(job.queue) ?? 0, untilMs))
    const list = dueNow.get(job.queue)
    if (list === undefined) dueNow.set(job.queue, [delivery])
    else list.push(delivery)
  })
  return { dueNow, later, holds }
}

// Reserves and delivers up to `wanted` due jobs of `queue` for the claims waiting on it; true
// when the next due time must be read. A queue limited per concurrency key reserves no more of a
// key than its slot has room for as of the statement, after taking the head, so an answer short
// of the ask may have left due jobs of other keys behind a key's jobs: it asks again for the
// claims still waiting, passing over the keys it reserved already (their claims may not hold
// their slots yet). Each round takes at least one job, so there are at most `wanted` rounds.
async function reserveFor(
  pass: { readonly options: DueDriverOptions; readonly deliver: (due: ReadonlyArray<DueJob>) => Promise<void>; readonly isClosed: () => boolean },
  queue: string,
  wanted: number,
  nowMs: number,
): Promise<boolean> {
  const { options } = pass
  let readNext = options.isRateLimited?.(queue) === true
  const reservedKeys = new Set<string>()
  for (let asked = wanted, round = 0; asked > 0 && round < wanted && !pass.isClosed(); round++) {
    const skip = reservedKeys.size === 0 ? {} : { skipConcurrencyKeys: [...reservedKeys] }
    const due = await options.jobStore.takeDue({ nowMs, reserveUntilMs: nowMs + jobDeliveryRetryMs, limit: asked, queues: [queue], ...skip })
    if (due.length === 0) break
    readNext = true
    await pass.deliver(due)
    if (due.length >= asked || options.isConcurrencyLimited?.(queue) !== true) break
    for (const job of due) if (job.concurrencyKey !== undefined) reservedKeys.add(job.concurrencyKey)
    asked = Math.min(asked - due.length, options.deliveryDemand().get(queue) ?? 0)
  }
  return readNext
}

/**
 * Starts a driver (it arms its first scan at once). Past 120 lines because the pass, the timer,
 * the waiters and the outage back-off share one driver's state and ordering (one pass at a time).
 */
export function makeDueDriver(options: DueDriverOptions): DueDriver {
  const { jobStore, matching, clock } = options
  // Claims waiting for a delivery, and claims waiting for their queue to have an owner (or to
  // retry a refused poll), which membership changes wake.
  const deliveries = makeQueueWaiters(clock, () => closed)
  const owners = makeQueueWaiters(clock, () => closed)
  let tail: Promise<void> = Promise.resolve()
  let requested: Promise<void> | null = null
  let passRunning = false
  let timer: { atMs: number; cancel: CancelTimer } | null = null
  let closed = false
  // With routing: the queues signalled since the last pass, and whether the next pass must
  // also scan the store for queue names (a timer, a lazy claim, a change of ownership).
  const signalled = new Set<string>()
  let scanNeeded = true
  // A due signal without its time came since the last pass: the next pass reads the next due
  // time of its queues. Every other signal says when its rows are due (`notifyDue` arms that
  // time), so a pass that served only such signals and reserved nothing skips that read.
  let untimedSignal = false
  const now = () => Math.floor(clock.now())
  const outage = makeOutageBackoff(options.random)
  // Reservations of failed adds that could not be given back because the store failed as well:
  // given back at the start of the next pass, so a brief outage does not hold those jobs for a
  // whole reservation. A stale one is harmless: the release is revision-guarded.
  let unreleased: Delivery[] = []

  // Queues whose adds Matching refused, until the refusal ends: passes take none of their due
  // rows for Matching before then (claims still take them from the store).
  const addsHeld = new Map<string, number>()
  const holdAdds = (queue: string, untilMs: number): void => {
    addsHeld.set(queue, Math.max(addsHeld.get(queue) ?? 0, untilMs))
  }

  const release = async (given: ReadonlyArray<Delivery>, dueMs = now() + jobDeliveryRefusedRetryMs): Promise<void> => {
    try {
      await jobStore.releaseDelivered({ deliveries: given, dueMs })
    } catch (error) {
      if (!isMatchboxError(error)) throw error
      unreleased = [...unreleased, ...given].slice(0, jobDeliveryUnreleasedMax)
    }
  }

  const wake = (queue: string, count = Number.POSITIVE_INFINITY): void => deliveries.wake(queue, 'woken', count)

  const arm = (atMs: number): void => {
    if (closed || (timer !== null && timer.atMs <= atMs)) return
    timer?.cancel()
    const armed = { atMs, cancel: clock.setTimer(atMs - clock.now(), () => {
      if (timer === armed) timer = null
      scanNeeded = true
      request()
    }) }
    timer = armed
  }

  const deliver = async (due: ReadonlyArray<DueJob>): Promise<void> => {
    // Adds route by the queue's partition count: make sure each queue's is known.
    if (options.routing !== undefined) await Promise.all([...new Set(due.map((job) => job.queue))].map((queue) => options.routing?.load(queue)))
    // Issued together, in claim order: Matching queues each add in arrival order and batches them.
    const added = await Promise.allSettled(
      due.map((job) =>
        matching.addTask({
          namespace: jobsNamespace,
          family: job.queue,
          type: jobTaskType,
          task: { jobId: job.id, kind: jobTaskKind, priority: job.priority, expiresAtMs: job.expiresAtMs },
        }),
      ),
    )
    const delivered = due.filter((_, index) => added[index]?.status === 'fulfilled')
    const refused = sortRefusals(due, added, now())
    for (const [queue, untilMs] of refused.holds) holdAdds(queue, untilMs)
    if (refused.later.length > 0) await release(refused.later)
    for (const [queue, given] of refused.dueNow) {
      await release(given, now())
      options.onGivenBack?.(queue, now())
      request(queue)
    }
    for (const result of added) if (result.status === 'rejected' && !isMatchboxError(result.reason)) report(result.reason)
    if (delivered.length > 0) await jobStore.confirmDelivered({ deliveries: delivered.map((job) => ({ id: job.id, revision: job.revision })) })
    const perQueue = new Map<string, number>()
    for (const job of delivered) perQueue.set(job.queue, (perQueue.get(job.queue) ?? 0) + 1)
    for (const [queue, count] of perQueue) deliveries.wake(queue, 'delivered', count)
  }

  // The queues this pass delivers: null for all; with routing, the owned ones among those
  // signalled and, on a scan, those the store has due rows for.
  const queuesOfPass = async (nowMs: number): Promise<ReadonlyArray<string> | null> => {
    const routing = options.routing
    if (routing === undefined) return null
    if (routing.membership === undefined) {
      // Alone on the store: a scan covers every queue; a pass only due signals asked for, their queues.
      const only = scanNeeded || signalled.size === 0 ? null : [...signalled]
      scanNeeded = false
      signalled.clear()
      return only
    }
    const candidates = new Set(signalled)
    signalled.clear()
    if (scanNeeded) {
      scanNeeded = false
      for (const entry of await jobStore.dueQueues({ nowMs, limit: dueQueuesPerScanMax })) candidates.add(entry.queue)
    }
    await Promise.all([...candidates].map((queue) => routing.load(queue)))
    return [...candidates].filter((queue) => routing.owns(queue))
  }

  const pass = async (): Promise<void> => {
    if (closed) return
    passRunning = true
    try {
      await passOnce()
    } finally {
      passRunning = false
    }
  }

  const passOnce = async (): Promise<void> => {
    options.onPass?.()
    const nowMs = now()
    for (const [queue, untilMs] of addsHeld) if (untilMs <= nowMs) addsHeld.delete(queue)
    const startedMs = nowMs
    let nextMs = nowMs + jobDueScanIntervalMs
    // Reservations and their give-backs move due times; so may rows this engine heard no time for.
    let readNextDue = untimedSignal || unreleased.length > 0
    untimedSignal = false
    try {
      if (unreleased.length > 0) {
        const pending = unreleased
        unreleased = []
        await release(pending)
      }
      const scanning = scanNeeded
      if (scanning) readNextDue = true
      const queues = await queuesOfPass(nowMs)
      if (queues !== null && queues.length === 0) return arm(nextMs)
      if (queues === null) readNextDue = true
      // Queues whose due rows the waiting workers took all of need no reservation round.
      const drained = (await options.claimForWaiting?.(queues, nowMs)) ?? []
      const reserving = queues === null ? null : queues.filter((queue) => !drained.includes(queue))
      // The exhaustion rule still buries lapsed rows whose tasks are not wanted yet: on a scan,
      // which a lapse's due time arms.
      if (scanning) await jobStore.takeDue({ nowMs, reserveUntilMs: nowMs + jobDeliveryRetryMs, limit: 0, queues })
      // Claims served by this pass have left the line; claims that joined since it started are not counted.
      for (const [queue, count] of options.deliveryDemand()) {
        if (closed || (reserving !== null && !reserving.includes(queue)) || drained.includes(queue)) continue
        const heldUntilMs = addsHeld.get(queue)
        if (heldUntilMs !== undefined && heldUntilMs > nowMs) {
          nextMs = Math.min(nextMs, heldUntilMs)
          continue
        }
        if (await reserveFor({ options, deliver, isClosed: () => closed }, queue, Math.min(count, jobDeliveryBatchMax), nowMs)) readNextDue = true
      }
      // The next due time after now (reservations and their give-backs moved some): due rows not
      // taken are the backlog (claims take them) or rows another connection holds (the scan
      // looks again).
      if (readNextDue) {
        const next = await jobStore.nextDueMs({ nowMs: now(), queues })
        if (next !== null && next > now()) nextMs = Math.min(nextMs, next)
      }
      outage.succeeded()
    } catch (error) {
      // An unavailable store: a scan tries again after the back-off step (kicks wait for it too).
      if (!isMatchboxError(error)) report(error)
      scanNeeded = true
      nextMs = outage.failed(startedMs, now()).retryAtMs
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

  const request = (queue?: string): void => {
    if (closed) return
    if (queue === undefined) scanNeeded = true
    else signalled.add(queue)
    // While the store is failing, signals wait for the back-off step's scan instead of each
    // running a pass against it.
    if (outage.retryAtMs() > clock.now()) return arm(outage.retryAtMs())
    void run()
  }

  arm(now() + jobDueScanIntervalMs)

  // Its sizes (kernel/Sizes.ts): the queues with claims waiting for a delivery, the queues
  // signalled for the next pass, and the reservations still to give back.
  const driver: DueDriver = {
    run() {
      scanNeeded = true
      return run()
    },
    runIfDue() {
      if (requested !== null) return requested
      if (timer === null || timer.atMs > clock.now()) return Promise.resolve()
      scanNeeded = true
      return run()
    },
    kick(queue) {
      if (queue !== undefined) untimedSignal = true
      request(queue)
    },
    notifyDue(dueMs, queue) {
      if (dueMs <= clock.now()) request(queue)
      else arm(dueMs)
    },
    waitForDelivery: (queue, untilMs) => deliveries.wait(queue, untilMs),
    waitForOwner: (queue, untilMs) => owners.wait(queue, untilMs),
    wake,
    ownersChanged: () => owners.wakeAll('woken'),
    isQuiet: () => requested === null && !passRunning && (timer === null || timer.atMs > clock.now()),
    settled: () => tail,
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
      deliveries.wakeAll('woken')
      owners.wakeAll('woken')
      await tail
    },
  }
  return registerSizes(driver, () => ({ dueWaiterQueues: deliveries.size() + owners.size(), dueSignalled: signalled.size, dueUnreleased: unreleased.length, dueAddsHeld: addsHeld.size }))
}
