/**
 * Runtime — what the parts of one Jobs engine share: the stores, the Matching host, the
 * due-time driver, the clock and the seeded randomness, and the per-queue claim bookkeeping.
 *
 * Invariants: one runtime per `open()`; `now()` is whole milliseconds of the injected clock;
 * after `close` begins, new work (enqueue, claim, work, schedules) refuses with `ShuttingDown`;
 * once the stores close, every public operation does (reads and settling claims included). An
 * engine never reopens, so these refusals are not retryable (`closed: true`).
 *
 * Does not: hold logic; the queue, handle, worker and schedules files do.
 */
import type { MatchingHost } from '../actors/MatchingHost.ts'
import { ShuttingDown } from '../domain/errors.ts'
import type { Clock } from '../kernel/Clock.ts'
import type { Random } from '../kernel/Random.ts'
import type { ClaimRef, JobRecord, JobStore } from '../persistence/jobs/JobStore.ts'
import { jobBatchesInFlightMax, jobBatchSizeMax } from '../kernel/Limits.ts'
import type { DueDriver } from './DueDriver.ts'
import { makeMicroBatcher } from '../kernel/MicroBatcher.ts'
import type { EventHub } from './Events.ts'
import type { Forwarding } from './Forwarding.ts'
import type { QueueRouting } from './QueueRouting.ts'

/** A worker of this engine waiting in Matching for a job of one queue, which an enqueue may hand one to. */
export interface WaitingWorker {
  /** Gives the worker `job` (already claimed for it); false when it has stopped waiting. */
  offer(job: JobRecord): boolean
}

/** Claims of one queue in flight on this engine: in line, through Matching, or from the store. */
export interface ClaimState {
  /** Matching polls issued because a deliverable job was seen; each stands for one such job. */
  inFlight: number
  /**
   * Claims of this engine in line for the queue (claiming from the store, or parked), first
   * come first offered: an enqueue (eager dispatch), a pass or the line's poll hands them jobs.
   */
  readonly waiting: WaitingWorker[]
  /**
   * Jobs claimed for this engine's workers that found none to take them (a task the line's poll
   * was matched just as its last parked worker was handed a job): the next worker poll takes them first.
   */
  readonly spare: JobRecord[]
  /**
   * The failure callbacks of this engine's workers parked in line (WaitingLine.ts's
   * `parkInLine`), which the line's poll serves: while any is parked the poll runs, and its
   * failure fails each of them.
   */
  readonly parked: Set<(error: unknown) => void>
  /**
   * Aborts each of the queue's line polls, the Matching polls of the workers parked: one while
   * any is parked, more while tasks come through Matching, never more than workers parked.
   */
  readonly linePolls: AbortController[]
  /**
   * Tasks of the queue come through Matching (the latest job handed over came from a line poll,
   * and no line poll has waited its whole time since): the line polls for every parked worker,
   * not once for them all.
   */
  pollPerWorker: boolean
  /**
   * Polls other engines forwarded here, waiting on this engine for the queue. While there are
   * any, due jobs go through Matching, which serves every poller in arrival order, rather than
   * straight to this engine's own waiting workers.
   */
  forwardedWaiting: number
  /**
   * This engine's claims straight from the store, those of one turn in one statement, with the
   * acks riding on them (Claimer.ts): answers whether the call's ack took effect and its job.
   */
  direct: ((ack: AckHook | null) => Promise<{ readonly acked: boolean; readonly job: JobRecord | null }>) | null
  /**
   * The last claim straight from the store found no due row, and no due-time pass over the queue
   * has started since: claims skip the store until one does.
   */
  drained: boolean
  /** Counts the due-time passes over the queue, so a direct claim knows whether one started meanwhile. */
  generation: number
}

/**
 * What acking a claimed job takes besides the statement (JobHandle.ts): its claim, and the
 * `job.completed` event once the ack took effect.
 */
export interface AckHook {
  readonly ref: ClaimRef
  readonly completed: (nowMs: number) => void
}

/** The shared parts of one engine. */
export interface JobsRuntime {
  readonly hostId: string
  readonly clock: Clock
  /** Retry jitter. */
  readonly random: Random
  /** Job ids (its own stream, so jitter draws never shift ids). */
  readonly ids: Random
  readonly jobStore: JobStore
  readonly matching: MatchingHost
  readonly driver: DueDriver
  /** Which engine serves each queue's partitions. */
  readonly routing: QueueRouting
  /** Polls forwarded to other engines; null for an engine alone on its store. */
  readonly forwarding: Forwarding | null
  /**
   * Rows of `queue` became due at `dueMs` through this engine (`byEnqueue`: an enqueue, else a
   * retry): tells this engine's driver, and the queue's owner when that is another engine and
   * the store has not signalled it already.
   */
  announceDue(queue: string, dueMs: number, byEnqueue: boolean): void
  readonly claims: Map<string, ClaimState>
  /** The user's event hooks and logger. */
  readonly events: EventHub
  /** Stop functions of running workers and maintenance loops, for `close`. */
  readonly workers: Set<() => Promise<void>>
  /** Whole milliseconds of the injected clock. */
  now(): number
  isClosed(): boolean
  /** True once `close` has stopped everything and is closing the stores. */
  areStoresClosed(): boolean
  /** Throws `ShuttingDown` (closed, not retryable) once the engine is closing: for new work. */
  refuseIfClosed(): void
  /**
   * Throws `ShuttingDown` (closed, not retryable) once the stores are closing: for reads and for
   * settling claims, which stay allowed while `close` waits for the handlers in flight.
   */
  refuseIfStoresClosed(): void
  /**
   * Acks one claim, batched with the acks of the same turn (MicroBatcher.ts); true when the
   * claim was valid at `nowMs` and the job is gone. A batch is judged at its latest stamp, which
   * can only refuse an ack whose deadline passed meanwhile, never accept a late one.
   */
  ack(claim: ClaimRef & { readonly nowMs: number }): Promise<boolean>
}

/** Builds a runtime; `isClosed` reads the engine's flag. */
export function makeRuntime(parts: Omit<JobsRuntime, 'now' | 'refuseIfClosed' | 'refuseIfStoresClosed' | 'claims' | 'workers' | 'ack'>): JobsRuntime {
  const refusal = () => new ShuttingDown({ component: `matchbox ${parts.hostId}`, closed: true })
  const ack = makeMicroBatcher<ClaimRef & { readonly nowMs: number }, boolean>({
    async run(claims) {
      const nowMs = Math.max(...claims.map((claim) => claim.nowMs))
      // A job named twice in one batch (two handles of it on this engine): the first goes in the
      // batch, the others alone after it, so each answer is its own claim's.
      const seen = new Set<string>()
      const first = claims.filter((claim) => !seen.has(claim.id) && seen.add(claim.id) !== undefined)
      const acked = new Set(await parts.jobStore.ackMany({ claims: first.map(({ id, claimToken }) => ({ id, claimToken })), nowMs }))
      const answers: boolean[] = []
      for (const claim of claims) answers.push(first.includes(claim) ? acked.has(claim.id) : await parts.jobStore.ack({ id: claim.id, claimToken: claim.claimToken, nowMs }))
      return answers
    },
    sizeMax: jobBatchSizeMax,
    inFlightMax: jobBatchesInFlightMax,
  })
  return {
    ...parts,
    ack,
    claims: new Map(),
    workers: new Set(),
    now: () => Math.floor(parts.clock.now()),
    refuseIfClosed() {
      if (parts.isClosed()) throw refusal()
    },
    refuseIfStoresClosed() {
      if (parts.areStoresClosed()) throw refusal()
    },
  }
}

/** The claim bookkeeping of `queue`. */
export function claimStateOf(runtime: JobsRuntime, queue: string): ClaimState {
  let state = runtime.claims.get(queue)
  if (state === undefined) {
    state = { inFlight: 0, waiting: [], spare: [], parked: new Set(), linePolls: [], pollPerWorker: false, forwardedWaiting: 0, direct: null, drained: false, generation: 0 }
    runtime.claims.set(queue, state)
  }
  return state
}
