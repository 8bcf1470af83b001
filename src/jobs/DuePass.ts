/**
 * DuePass — one pass of the due-time driver (DueDriver.ts), at the clock's current time: gives
 * back reservations an earlier pass could not, picks the queues it delivers, claims due jobs
 * straight for this engine's waiting claims, reserves at most as many due rows of a queue as
 * claims wait for in Matching, adds one Matching task per reserved row and confirms the ones
 * Matching accepted, then reads the next due time and arms the driver's timer at it.
 *
 * Owns: what a driver needs (`DueDriverOptions`, which DueDriver.ts re-exports: nearly all of it
 * is what a pass calls), what a pass does with the driver's state (`DuePassState`), and how
 * refused adds are given back (`sortRefusals`).
 *
 * Does not: decide when passes run or keep them one at a time (DueDriver.ts does, and arms the
 * timer), or decide anything about a job (the store's statements do).
 */
import { isMatchboxError } from '../domain/errors.ts'
import type { Clock } from '../kernel/Clock.ts'
import type { Random } from '../kernel/Random.ts'
import { dueQueuesPerScanMax, jobDeliveryBatchMax, jobDeliveryRefusedRetryMs, jobDeliveryRetryMs, jobDeliveryUnreleasedMax, jobDueScanIntervalMs } from '../kernel/Limits.ts'
import type { MatchingHost } from '../actors/MatchingHost.ts'
import type { DueJob, JobStore } from '../persistence/jobs/JobStore.ts'
import type { OutageBackoff } from './OutageBackoff.ts'
import type { QueueWaiters } from './QueueWaiters.ts'
import { jobTaskKind } from './JobsHistory.ts'
import { jobsNamespace, jobTaskType, type QueueRouting } from './QueueRouting.ts'

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
  /**
   * Called as a reservation of `queue`'s due rows goes to the store (a head statement: it holds
   * rows it may not reserve, which claims beside it pass over); `ended` once it answered or failed.
   */
  readonly headOut?: (queue: string) => { ended(): void }
  /** Called as each pass starts, whichever queues it covers (the engine gives back jobs nobody took). */
  readonly onPass?: () => void
  /** Failures of a pass that are not expected store errors (defects); default: rethrown asynchronously. */
  readonly onDefect?: (defect: unknown) => void
}

/** A reservation to confirm or give back: the row's id at the revision the pass saw. */
export type Delivery = { readonly id: string; readonly revision: number }

/** The state of one driver that its passes read and change; DueDriver.ts makes one per driver. */
export interface DuePassState {
  readonly options: DueDriverOptions
  /** Claims waiting for a delivery, woken as a pass hands their queue tasks. */
  readonly deliveries: QueueWaiters
  readonly outage: OutageBackoff
  /**
   * Queues whose adds Matching refused, until the refusal ends: passes take none of their due
   * rows for Matching before then (claims still take them from the store).
   */
  readonly addsHeld: Map<string, number>
  /** With routing: the queues signalled since the last pass. */
  readonly signalled: Set<string>
  /** With routing: whether the next pass must also scan the store for queue names (a timer, a lazy claim, a change of ownership). */
  scanNeeded: boolean
  /**
   * A due signal without its time came since the last pass: the next pass reads the next due
   * time of its queues. Every other signal says when its rows are due (`notifyDue` arms that
   * time), so a pass that served only such signals and reserved nothing skips that read.
   */
  untimedSignal: boolean
  /**
   * Reservations of failed adds that could not be given back because the store failed as well:
   * given back at the start of the next pass, so a brief outage does not hold those jobs for a
   * whole reservation. A stale one is harmless: the release is revision-guarded.
   */
  unreleased: Delivery[]
  closed: boolean
  /** Arms the driver's timer at `atMs` unless it is armed sooner. */
  readonly arm: (atMs: number) => void
  /** Requests a pass soon: a full scan, or for `queue`. */
  readonly request: (queue?: string) => void
  /** Hands on a failure that is not an expected store error. */
  readonly report: (defect: unknown) => void
}

/** The clock's time as whole milliseconds, as every pass reads it. */
export function nowOf(clock: Clock): number {
  return Math.floor(clock.now())
}

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
async function reserveFor(state: DuePassState, queue: string, wanted: number, nowMs: number): Promise<boolean> {
  const { options } = state
  let readNext = options.isRateLimited?.(queue) === true
  const reservedKeys = new Set<string>()
  for (let asked = wanted, round = 0; asked > 0 && round < wanted && !state.closed; round++) {
    const skip = reservedKeys.size === 0 ? {} : { skipConcurrencyKeys: [...reservedKeys] }
    const head = options.headOut?.(queue)
    let due: ReadonlyArray<DueJob>
    try {
      due = await options.jobStore.takeDue({ nowMs, reserveUntilMs: nowMs + jobDeliveryRetryMs, limit: asked, queues: [queue], ...skip })
    } finally {
      head?.ended()
    }
    if (due.length === 0) break
    readNext = true
    await deliver(state, due)
    if (due.length >= asked || options.isConcurrencyLimited?.(queue) !== true) break
    for (const job of due) if (job.concurrencyKey !== undefined) reservedKeys.add(job.concurrencyKey)
    asked = Math.min(asked - due.length, options.deliveryDemand().get(queue) ?? 0)
  }
  return readNext
}

// Gives `given` back to the store, due at `dueMs`; when the store fails too, keeps them (up to
// `jobDeliveryUnreleasedMax`) for the next pass to give back.
async function release(state: DuePassState, given: ReadonlyArray<Delivery>, dueMs = nowOf(state.options.clock) + jobDeliveryRefusedRetryMs): Promise<void> {
  try {
    await state.options.jobStore.releaseDelivered({ deliveries: given, dueMs })
  } catch (error) {
    if (!isMatchboxError(error)) throw error
    state.unreleased = [...state.unreleased, ...given].slice(0, jobDeliveryUnreleasedMax)
  }
}

// Adds one Matching task per reserved row of `due`, confirms those Matching accepted and wakes
// as many of their queues' waiters, and gives the refused ones back (sortRefusals).
async function deliver(state: DuePassState, due: ReadonlyArray<DueJob>): Promise<void> {
  const { options } = state
  const { jobStore, matching, clock } = options
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
  const refused = sortRefusals(due, added, nowOf(clock))
  for (const [queue, untilMs] of refused.holds) state.addsHeld.set(queue, Math.max(state.addsHeld.get(queue) ?? 0, untilMs))
  if (refused.later.length > 0) await release(state, refused.later)
  for (const [queue, given] of refused.dueNow) {
    await release(state, given, nowOf(clock))
    options.onGivenBack?.(queue, nowOf(clock))
    state.request(queue)
  }
  for (const result of added) if (result.status === 'rejected' && !isMatchboxError(result.reason)) state.report(result.reason)
  if (delivered.length > 0) await jobStore.confirmDelivered({ deliveries: delivered.map((job) => ({ id: job.id, revision: job.revision })) })
  const perQueue = new Map<string, number>()
  for (const job of delivered) perQueue.set(job.queue, (perQueue.get(job.queue) ?? 0) + 1)
  for (const [queue, count] of perQueue) state.deliveries.wake(queue, 'delivered', count)
}

// The queues this pass delivers: null for all; with routing, the owned ones among those
// signalled and, on a scan, those the store has due rows for.
async function queuesOfPass(state: DuePassState, nowMs: number): Promise<ReadonlyArray<string> | null> {
  const { routing } = state.options
  const { signalled } = state
  if (routing === undefined) return null
  if (routing.membership === undefined) {
    // Alone on the store: a scan covers every queue; a pass only due signals asked for, their queues.
    const only = state.scanNeeded || signalled.size === 0 ? null : [...signalled]
    state.scanNeeded = false
    signalled.clear()
    return only
  }
  const candidates = new Set(signalled)
  signalled.clear()
  if (state.scanNeeded) {
    state.scanNeeded = false
    for (const entry of await state.options.jobStore.dueQueues({ nowMs, limit: dueQueuesPerScanMax })) candidates.add(entry.queue)
  }
  await Promise.all([...candidates].map((queue) => routing.load(queue)))
  return [...candidates].filter((queue) => routing.owns(queue))
}

/**
 * Runs one pass at the clock's time over `state` and arms the driver's timer for the next: at the
 * earliest due time it read, a held queue's end, the safety scan, or — after a store failure —
 * the back-off step. Store errors end the pass quietly (the back-off retries); others are reported.
 */
export async function runPass(state: DuePassState): Promise<void> {
  const { options } = state
  const { jobStore, clock } = options
  options.onPass?.()
  const nowMs = nowOf(clock)
  for (const [queue, untilMs] of state.addsHeld) if (untilMs <= nowMs) state.addsHeld.delete(queue)
  const startedMs = nowMs
  let nextMs = nowMs + jobDueScanIntervalMs
  // Reservations and their give-backs move due times; so may rows this engine heard no time for.
  let readNextDue = state.untimedSignal || state.unreleased.length > 0
  state.untimedSignal = false
  try {
    if (state.unreleased.length > 0) {
      const pending = state.unreleased
      state.unreleased = []
      await release(state, pending)
    }
    const scanning = state.scanNeeded
    if (scanning) readNextDue = true
    const queues = await queuesOfPass(state, nowMs)
    if (queues !== null && queues.length === 0) return state.arm(nextMs)
    if (queues === null) readNextDue = true
    // Queues whose due rows the waiting workers took all of need no reservation round.
    const drained = (await options.claimForWaiting?.(queues, nowMs)) ?? []
    const reserving = queues === null ? null : queues.filter((queue) => !drained.includes(queue))
    // The exhaustion rule still buries lapsed rows whose tasks are not wanted yet: on a scan,
    // which a lapse's due time arms.
    if (scanning) await jobStore.takeDue({ nowMs, reserveUntilMs: nowMs + jobDeliveryRetryMs, limit: 0, queues })
    // Claims served by this pass have left the line; claims that joined since it started are not counted.
    for (const [queue, count] of options.deliveryDemand()) {
      if (state.closed || (reserving !== null && !reserving.includes(queue)) || drained.includes(queue)) continue
      const heldUntilMs = state.addsHeld.get(queue)
      if (heldUntilMs !== undefined && heldUntilMs > nowMs) {
        nextMs = Math.min(nextMs, heldUntilMs)
        continue
      }
      if (await reserveFor(state, queue, Math.min(count, jobDeliveryBatchMax), nowMs)) readNextDue = true
    }
    // The next due time after now (reservations and their give-backs moved some): due rows not
    // taken are the backlog (claims take them) or rows another connection holds (the scan
    // looks again).
    if (readNextDue) {
      const next = await jobStore.nextDueMs({ nowMs: nowOf(clock), queues })
      if (next !== null && next > nowOf(clock)) nextMs = Math.min(nextMs, next)
    }
    state.outage.succeeded()
  } catch (error) {
    // An unavailable store: a scan tries again after the back-off step (kicks wait for it too).
    if (!isMatchboxError(error)) state.report(error)
    state.scanNeeded = true
    nextMs = state.outage.failed(startedMs, nowOf(clock)).retryAtMs
  }
  state.arm(nextMs)
}
