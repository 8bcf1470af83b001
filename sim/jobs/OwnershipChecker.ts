/**
 * OwnershipChecker — "only the owner delivers" (DESIGN.md §6, many engines on one database):
 * no job is handed out by a host that did not own its queue at that moment. Judged outside the
 * engine from the JobStore boundary: every claim that committed (History's recordTaskStarted
 * → JobStore.claim answered `claimed`) carries what the claiming host's own membership view
 * said when its Matching handed the task to a poll (JobBoundary.ts's ClaimOwnership). The
 * hand-over, not the claim statement, is the delivery: History batches claims, and a batch
 * slowed by the store may commit after the partition has unloaded, as a delivery in flight
 * during a drain may (DESIGN.md §5).
 *
 * The rule: the claiming host is a member of the group and its view gave it at least one
 * partition of the job's queue — or it lost the queue's last partition at most
 * `membershipUnloadDelayMs` earlier. That grace is the design's own: a host unloads a partition
 * membership moved away only after that delay (DESIGN.md §6, §9), and a queue that has not
 * unloaded still serves the polls waiting on it; past it, a claim by a non-owner is a host
 * delivering from a partition it has no business holding. One more case passes: a hand-over
 * while that unload was due but had not run because the host's timers were overdue — the clock
 * jumped past them (a paused process) and has not moved since, while I/O kept completing. A
 * process waking from a pause runs late timers and pending I/O in either order, so it may
 * deliver before it unloads; fencing, not timing, keeps such a stale owner's claim safe. And a
 * claim whose statement the engine stamped while it still owned the queue (or within the unload
 * delay after) passes however late it was issued: the engine decided as the owner, and the
 * statement carries that partition's range (the claim fence), which the store refuses once
 * another engine took the partition. A producer (not a member) never
 * owns anything, so any claim it performs is a violation.
 *
 * Weaker than "the owner of the task's own partition": the boundary does not see which
 * partition a task came from, so with several partitions a host that owns one of them passes.
 *
 * Does not: look at the engine's memory, or judge forwarded polls (the owner claims for them).
 */
import { membershipUnloadDelayMs } from '../../src/kernel/Limits.ts'
import type { JobBoundaryRecord } from './JobBoundary.ts'

/** Counts of what the checker saw, for reports. */
export interface OwnershipCounts {
  /** Claims performed by a host owning a partition of the job's queue. */
  readonly byOwner: number
  /** Claims performed within the unload delay after the host lost the queue. */
  readonly inUnloadDelay: number
  /** Claims handed out while the host's unload was overdue (its timers had not run since a clock jump). */
  readonly unloadOverdue: number
  /** Claims stamped while the host owned the queue (or within the unload delay), issued after it lost it. */
  readonly stampedAsOwner: number
}

/** Judges each committed claim. */
export class OwnershipChecker {
  #byOwner = 0
  #inUnloadDelay = 0
  #unloadOverdue = 0
  #stampedAsOwner = 0

  /** The violation a committed claim shows, or null. */
  observe(record: Extract<JobBoundaryRecord, { op: 'claim' }>): string | null {
    const ownership = record.ownership
    if (record.outcome.kind !== 'claimed' || ownership === null) return null
    const { queue, owned, partitions, lostAtMs } = ownership
    if (!ownership.member) return `job ${record.id} of ${queue} claimed by ${record.hostId} at ${record.nowMs}, a producer that owns no partition`
    if (owned.length > 0) {
      this.#byOwner++
      return null
    }
    const atMs = ownership.atMs
    if (lostAtMs !== null && atMs - lostAtMs <= membershipUnloadDelayMs) {
      this.#inUnloadDelay++
      return null
    }
    // Woken from a pause with the unload overdue: until the host's late timers run, it may
    // still hand out what its loaded queues hold.
    const unloadDueMs = lostAtMs === null ? null : lostAtMs + membershipUnloadDelayMs
    const overdueSinceMs = ownership.timersOverdueSinceMs
    if (unloadDueMs !== null && overdueSinceMs !== null && overdueSinceMs <= unloadDueMs && unloadDueMs <= atMs) {
      this.#unloadOverdue++
      return null
    }
    // Stamped as the owner, issued late: the claim fence guards its commit.
    if (lostAtMs !== null && record.nowMs - lostAtMs <= membershipUnloadDelayMs) {
      this.#stampedAsOwner++
      return null
    }
    const since = lostAtMs === null ? 'had not owned it in this incarnation' : `had lost its last partition at ${lostAtMs}, ${atMs - lostAtMs} ms earlier`
    return `job ${record.id} of ${queue} handed out by ${record.hostId} at ${atMs} (claimed at ${record.nowMs}), which owned none of its ${partitions} partition(s) by its own view (it ${since})`
  }

  /** What was seen so far. */
  counts(): OwnershipCounts {
    return { byOwner: this.#byOwner, inUnloadDelay: this.#inUnloadDelay, unloadOverdue: this.#unloadOverdue, stampedAsOwner: this.#stampedAsOwner }
  }
}
