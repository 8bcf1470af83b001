/**
 * MemoryClaimFence — how the memory job store checks a claim's range fence (JobStore.ts's
 * `ClaimFence`) against the memory Matching store it is composed with: through a narrow reader of
 * range ids, the one thing the job store needs of the queue store.
 *
 * Invariants: the check is synchronous and the memory job store writes in the same synchronous
 * step, so no acquire can fall between the check and the claim (the memory stores' atomicity;
 * the SQL store gets the same from a row lock, jobs/sql/claimFenceSql.ts). A store composed with
 * no reader knows no physical queue, and refuses every fence as the SQL store refuses a queue
 * never acquired: one contract either way.
 *
 * Does not: acquire or change ranges (the queue store does), or guard unfenced calls.
 */
import { OwnershipLost, refusal } from '../../domain/errors.ts'
import { encodeQueueKey, type QueueKey } from '../../domain/QueueKey.ts'
import type { ClaimFence } from './JobStore.ts'

/** What the memory job store reads of the memory queue store (MemoryStore's `rangeIdOf`). */
export interface QueueRangeReader {
  /** The physical queue's current range id, or null when it was never acquired; read without awaiting. */
  rangeIdOf(key: QueueKey): number | null
}

/** A check that passes a null fence and one at the queue's current range, and throws `OwnershipLost` for any other. */
export function makeMemoryFenceCheck(ranges: QueueRangeReader | undefined): (fence: ClaimFence | null) => void {
  return (fence) => {
    if (fence === null) return
    const currentRangeId = ranges?.rangeIdOf(fence.queueKey) ?? null
    // An answer to a stale owner, not a failure of the store: no stack trace to capture.
    if (currentRangeId !== fence.rangeId) throw refusal(() => new OwnershipLost({ queue: encodeQueueKey(fence.queueKey), rangeId: fence.rangeId, currentRangeId }))
  }
}
