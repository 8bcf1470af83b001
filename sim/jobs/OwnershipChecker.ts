/**
 * OwnershipChecker — "only the owner delivers" (DESIGN.md §6, many engines on one database):
 * no job is claimed by a host that did not own its queue at that moment. Judged outside the
 * engine from the JobStore boundary: every claim that committed (History's recordTaskStarted
 * → JobStore.claim answered `claimed`) carries what the claiming host's own membership view
 * said when the claim was issued (JobBoundary.ts's ClaimOwnership).
 *
 * The rule: the claiming host is a member of the group and its view gave it at least one
 * partition of the job's queue — or it lost the queue's last partition at most
 * `membershipUnloadDelayMs` earlier. That grace is the design's own: a host unloads a partition
 * membership moved away only after that delay (DESIGN.md §6, §9), and a queue that has not
 * unloaded still serves the polls waiting on it; past it, a claim by a non-owner is a host
 * delivering from a partition it has no business holding. One more case passes: a claim at the
 * instant a clock jump landed while that unload fell due inside the jump. A paused process wakes
 * with its timers overdue and runs them in one burst, so it may claim before it unloads;
 * fencing, not timing, keeps such a stale owner's claim safe. A producer (not a member) never
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
  /** Claims performed at the instant a clock jump landed, with the host's unload still overdue. */
  readonly afterJump: number
}

/** Judges each committed claim. */
export class OwnershipChecker {
  #byOwner = 0
  #inUnloadDelay = 0
  #afterJump = 0
  // Clock jumps (a paused process waking) as [from, to]: timers due inside one fire late, at
  // `to`, in one burst, so a host may claim before its overdue unload runs.
  readonly #jumps: Array<readonly [number, number]> = []

  /** The world's clock jumped from `fromMs` to `toMs`. */
  jumped(fromMs: number, toMs: number): void {
    this.#jumps.push([fromMs, toMs])
  }

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
    if (lostAtMs !== null && record.nowMs - lostAtMs <= membershipUnloadDelayMs) {
      this.#inUnloadDelay++
      return null
    }
    // Woken from a pause with the unload overdue: the burst of late timers runs the claim and the
    // unload at one instant, in either order. Fencing, not timing, keeps that safe.
    const unloadDueMs = lostAtMs === null ? null : lostAtMs + membershipUnloadDelayMs
    if (unloadDueMs !== null && this.#jumps.some(([fromMs, toMs]) => record.nowMs === toMs && unloadDueMs > fromMs && unloadDueMs <= toMs)) {
      this.#afterJump++
      return null
    }
    const since = lostAtMs === null ? 'had not owned it in this incarnation' : `had lost its last partition at ${lostAtMs}, ${record.nowMs - lostAtMs} ms earlier`
    return `job ${record.id} of ${queue} claimed by ${record.hostId} at ${record.nowMs}, which owned none of its ${partitions} partition(s) by its own view (it ${since})`
  }

  /** What was seen so far. */
  counts(): OwnershipCounts {
    return { byOwner: this.#byOwner, inUnloadDelay: this.#inUnloadDelay, afterJump: this.#afterJump }
  }
}
