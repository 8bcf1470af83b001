/**
 * Runtime — what the parts of one Jobs engine share: the stores, the Matching host, the
 * due-time driver, the clock and the seeded randomness, and each queue's dispatch (Dispatch.ts).
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
import type { DispatchMachine } from '../machines/DispatchMachine.ts'
import type { ClaimRef, JobStore } from '../persistence/jobs/JobStore.ts'
import type { AckHook, Dispatches, DispatchStepListener } from './Dispatch.ts'
import { makeDispatches } from './DispatchRunner.ts'

export type { AckHook }
import { jobBatchesInFlightMax, jobBatchSizeMax } from '../kernel/Limits.ts'
import type { DueDriver } from './DueDriver.ts'
import { makeMicroBatcher } from '../kernel/MicroBatcher.ts'
import type { EventHub } from './Events.ts'
import type { Forwarding } from './Forwarding.ts'
import type { HandOvers } from './HandOvers.ts'
import type { QueueRouting } from './QueueRouting.ts'

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
  /** Hand-overs at enqueue to and from other engines' claims (HandOvers.ts); null unless the group makes them. */
  readonly handOvers: HandOvers | null
  /**
   * Rows of `queue` became due at `dueMs` through this engine (`byEnqueue`: an enqueue, else a
   * retry): tells this engine's driver, and the queue's owner when that is another engine and
   * the store has not signalled it already.
   */
  announceDue(queue: string, dueMs: number, byEnqueue: boolean): void
  /**
   * A slot of `queue` freed (the dispatch machine's `slot.announce`: a job of a queue a handle
   * here limits per key left processing): the slot may let a job of its key run now, and no claim
   * looks for it on its own (a claim the full keys sent back short left the queue drained). Tells
   * this engine's driver, and the queue's owner when that is another engine, with at most one
   * signal per queue in flight.
   */
  announceSlotFreed(queue: string): void
  /** The last instance of `queue`'s partitions here unloaded: the hand-overs' idle registrations of it are taken back (HandOvers.ts). */
  partitionsLeft(queue: string): void
  /** Queues a handle on this engine opened with `concurrencyPerKey`. */
  readonly limitedQueues: Set<string>
  /** Each queue's dispatch on this engine: its claims in line, hand-overs and line polls (Dispatch.ts). */
  readonly dispatch: Dispatches
  /** The user's event hooks and logger. */
  readonly events: EventHub
  /** Stop functions of running workers and maintenance loops, for `close`. */
  readonly workers: Set<() => Promise<void>>
  /**
   * The queues a handle of this engine gave rate limits: a claim of one that comes back short
   * arms the due-time driver at the queue's next token (StoreClaims.ts's `armNextToken`). One
   * name per queue handled, so as bounded as the handles the user makes.
   */
  readonly rateLimited: Set<string>
  /**
   * Per queue, the claim statement a due-time pass has out for the claims waiting in line, settled
   * once its jobs are handed over (Claimer.ts's `claimForWaitingWorkers`): a claim whose own
   * statement answered meanwhile waits for it, so the job claimed for it reaches it rather than
   * being kept for the next claim. At most one entry per queue with a pass out.
   */
  readonly passClaimsOut: Map<string, Promise<void>>
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
export function makeRuntime(parts: Omit<JobsRuntime, 'now' | 'refuseIfClosed' | 'refuseIfStoresClosed' | 'dispatch' | 'workers' | 'ack' | 'limitedQueues' | 'rateLimited' | 'passClaimsOut' | 'partitionsLeft'> & { readonly dispatchMachine: DispatchMachine; readonly onDispatchStep?: DispatchStepListener }): JobsRuntime {
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
  const { dispatchMachine, onDispatchStep, ...shared } = parts
  const runtime: JobsRuntime = {
    ...shared,
    ack,
    dispatch: makeDispatches(() => runtime, dispatchMachine, onDispatchStep),
    workers: new Set(),
    limitedQueues: new Set(),
    rateLimited: new Set(),
    passClaimsOut: new Map(),
    now: () => Math.floor(parts.clock.now()),
    partitionsLeft(queue) {
      void parts.handOvers?.takeBackIdle(queue)
    },
    refuseIfClosed() {
      if (parts.isClosed()) throw refusal()
    },
    refuseIfStoresClosed() {
      if (parts.areStoresClosed()) throw refusal()
    },
  }
  return runtime
}
