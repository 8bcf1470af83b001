/**
 * Runtime — what the parts of one Jobs engine share: the stores, the Matching host, the
 * due-time driver, the clock and the seeded randomness, and the per-queue claim bookkeeping.
 *
 * Invariants: one runtime per `open()`; `now()` is whole milliseconds of the injected clock;
 * after `close` begins, every public operation refuses with `ShuttingDown`.
 *
 * Does not: hold logic; the queue, handle, worker and schedules files do.
 */
import type { MatchingHost } from '../actors/MatchingHost.ts'
import { ShuttingDown } from '../domain/errors.ts'
import type { Clock } from '../kernel/Clock.ts'
import type { Random } from '../kernel/Random.ts'
import type { JobStore } from '../persistence/jobs/JobStore.ts'
import type { DueDriver } from './DueDriver.ts'
import type { Forwarding } from './Forwarding.ts'
import type { QueueRouting } from './QueueRouting.ts'

/** Claims of one queue in flight through Matching on this engine. */
export interface ClaimState {
  /** Matching polls issued because a deliverable job was seen; each stands for one such job. */
  inFlight: number
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
  /** Stop functions of running workers, for `close`. */
  readonly workers: Set<() => Promise<void>>
  /** Whole milliseconds of the injected clock. */
  now(): number
  isClosed(): boolean
  /** Throws `ShuttingDown` once the engine is closing. */
  refuseIfClosed(): void
}

/** Builds a runtime; `isClosed` reads the engine's flag. */
export function makeRuntime(parts: Omit<JobsRuntime, 'now' | 'refuseIfClosed' | 'claims' | 'workers'>): JobsRuntime {
  return {
    ...parts,
    claims: new Map(),
    workers: new Set(),
    now: () => Math.floor(parts.clock.now()),
    refuseIfClosed() {
      if (parts.isClosed()) throw new ShuttingDown({ component: `matchbox ${parts.hostId}` })
    },
  }
}

/** The claim bookkeeping of `queue`. */
export function claimStateOf(runtime: JobsRuntime, queue: string): ClaimState {
  let state = runtime.claims.get(queue)
  if (state === undefined) {
    state = { inFlight: 0 }
    runtime.claims.set(queue, state)
  }
  return state
}
