/**
 * JobBoundary — what committed at the JobStore boundary, in commit order (the job twin of
 * Boundary.ts). The world runs one store call at a time, so the order in which gated calls
 * return is the order in which they committed. Each record carries the time the engine stamped
 * on the call (`nowMs`, the caller's clock when it issued it) and the world's clock when it
 * committed (`committedAtMs`); the job checkers read both, never the engine's beliefs.
 */
import type { ClaimFence, ClaimOutcome, ClaimRef, JobRecord, RetryOutcome } from '../../src/persistence/jobs/JobStore.ts'

/** A handle operation's claim and the time the engine stamped on it. */
interface Stamped {
  readonly hostId: string
  readonly nowMs: number
  readonly committedAtMs: number
}

/**
 * What the claiming host's own membership view said when its Matching handed the job's task to
 * a poll (History's recordStart; a claim no hand-over preceded reads the view when it was
 * issued): the job's queue, which of its partitions the view gave this host, and when the view
 * last took the host's last partition of the queue away (null: never, in this incarnation).
 * Null when the job's queue is unknown to the world (no enqueue of it committed).
 */
export interface ClaimOwnership {
  /** When the view was read (world time): the hand-over, or the claim's issue. */
  readonly atMs: number
  /** Then: the due time of the host's earliest timer that was due but had not fired (HostClock.ts), or null. */
  readonly timersOverdueSinceMs: number | null
  readonly queue: string
  readonly partitions: number
  readonly owned: ReadonlyArray<number>
  readonly lostAtMs: number | null
  /** False for a producer (an observer of membership that never owns anything). */
  readonly member: boolean
  /** Then: the view showed no host at all, this one included (its own row had lapsed too). */
  readonly seesNobody: boolean
}

/** A job's concurrency key and the limit on processing jobs of that key its enqueue gave. */
export interface ConcurrencySlot {
  readonly key: string
  readonly limit: number
}

/** The keys an enqueue record carries for a job input: its slot, and its fairness key with the weight the engine gave it, each only when it has one. */
export function keysOf(job: { readonly concurrencyKey?: string | null; readonly concurrencyLimit?: number; readonly fairnessKey?: string | null; readonly fairnessWeight?: number }): {
  readonly slot?: ConcurrencySlot
  readonly fairnessKey?: string
  readonly fairnessWeight?: number
} {
  const slot = slotOf(job)
  return { ...(slot === undefined ? {} : { slot }), ...(job.fairnessKey == null ? {} : { fairnessKey: job.fairnessKey, fairnessWeight: job.fairnessWeight ?? 1 }) }
}

/** The slot an enqueue input names, or undefined (no key, or no limit on its queue). */
export function slotOf(job: { readonly concurrencyKey?: string | null; readonly concurrencyLimit?: number }): ConcurrencySlot | undefined {
  return job.concurrencyKey == null || job.concurrencyLimit === undefined ? undefined : { key: job.concurrencyKey, limit: job.concurrencyLimit }
}

/** One committed JobStore call the checkers care about. */
export type JobBoundaryRecord =
  /**
   * A job written; `slot` names its concurrency key and the limit the enqueue gave it (absent: the
   * job takes no slot), `fairnessKey` its fairness key (absent: none) with the weight the engine
   * gave the store, and `fairPass` the pass the store wrote for it (read around every enqueue: an
   * unkeyed job of a queue with keys has the implicit key's).
   */
  | (Stamped & {
      readonly op: 'enqueue'
      readonly job: JobRecord
      readonly slot?: ConcurrencySlot
      readonly fairnessKey?: string
      readonly fairnessWeight?: number
      readonly fairPass?: number
      /** The claim fence the call carried (absent: none), for a job inserted claimed. */
      readonly fence?: ClaimFence
    })
  /** An enqueue of a job whose key a live job holds, answered by that holder (`id`): nothing was written, yet the call committed. */
  | (Stamped & { readonly op: 'enqueueAnswered'; readonly queue: string; readonly id: string })
  /** A claim's outcome; `fence` the claim fence its call carried (absent: none). */
  | (Stamped & { readonly op: 'claim'; readonly id: string; readonly claimToken: string; readonly outcome: ClaimOutcome; readonly ownership: ClaimOwnership | null; readonly fence?: ClaimFence })
  | (Stamped & ClaimRef & { readonly op: 'heartbeat'; readonly extendMs: number | null; readonly renewed: JobRecord | null })
  | (Stamped & ClaimRef & { readonly op: 'ack'; readonly ok: boolean })
  | (Stamped & ClaimRef & { readonly op: 'retry'; readonly outcome: RetryOutcome | null })
  | (Stamped & ClaimRef & { readonly op: 'fail'; readonly ok: boolean })
  | (Stamped & {
      readonly op: 'ackBatch'
      readonly claims: ReadonlyArray<ClaimRef>
      readonly count: number
      /** Ids whose row was live before the call and gone after it (read around it). */
      readonly ackedIds: ReadonlyArray<string>
    })
  | (Stamped & { readonly op: 'release'; readonly claims: ReadonlyArray<ClaimRef>; readonly releasedIds: ReadonlyArray<string> })
  | (Stamped & { readonly op: 'cancel'; readonly queue: string; readonly id: string; readonly ok: boolean })
  /** A queue paused or resumed (`changed`: it was running, or paused, before). */
  | (Stamped & { readonly op: 'pause' | 'resume'; readonly queue: string; readonly changed: boolean })
  | (Stamped & { readonly op: 'sweep'; readonly queue: string; readonly dead: number; readonly purged: number })
  | (Stamped & { readonly op: 'getJob'; readonly queue: string; readonly id: string; readonly job: JobRecord | null })
  /** A due-time pass reserved `ids` for Matching until `untilMs` (`takeDue`), confirmed their tasks added (`confirm`), or gave the reservations back, due at `untilMs` (`unreserve`: `releaseDelivered`). */
  | (Stamped & { readonly op: 'reserve' | 'confirm' | 'unreserve'; readonly ids: ReadonlyArray<string>; readonly untilMs: number | null })

/** Listens to committed JobStore calls. */
export type JobBoundaryListener = (record: JobBoundaryRecord) => void
