/**
 * FenceChecker — "claims fenced": every claim that commits on the job store carries the range of
 * the queue partition it delivers, and that range is still the partition's, judged outside the
 * engine from the two boundaries: the JobStore's (each committed claim, with the fence its call
 * carried: `claim`, `claimMany`, `claimDue`, `ackAndClaimDue`, an `enqueue` that claims for a
 * waiting worker) and the Matching Store's (each committed acquire, which moves a physical
 * queue's range on).
 *
 * - carried: a claim without a fence, or with the fence of another queue's partition, commits
 *   on nobody's authority — only the partition's owner claims, and only its range says who that is;
 * - current: a claim whose fence names a range older than the last one acquired for that
 *   physical queue committed after another instance took the partition, which the store must
 *   refuse (`OwnershipLost`, nothing written).
 *
 * Does not: judge whether the claimer's membership view made it the owner (OwnershipChecker.ts),
 * or Matching's own writes (the Matching checkers).
 */
import type { BoundaryRecord } from '../core/Boundary.ts'
import { encodeQueueKey } from '../../src/domain/QueueKey.ts'
import { jobsNamespace, jobTaskType } from '../../src/jobs/QueueRouting.ts'
import type { ClaimFence } from '../../src/persistence/jobs/JobStore.ts'
import type { JobBoundaryRecord } from './JobBoundary.ts'

/** The online fence check of one world. */
export class FenceChecker {
  readonly #fail: (sentence: string) => void
  // Per encoded physical queue key: the range its latest committed acquire returned.
  readonly #ranges = new Map<string, number>()

  /** `fail` records a violation of "claims fenced". */
  constructor(fail: (sentence: string) => void) {
    this.#fail = fail
  }

  /** Learns a physical queue's range from a committed acquire of the Matching Store. */
  observeStore(record: BoundaryRecord): void {
    if (record.op === 'acquire') this.#ranges.set(record.queue, record.metadata.rangeId)
  }

  /** Checks one committed JobStore call. */
  observeJobs(record: JobBoundaryRecord): void {
    if (record.op === 'claim' && record.outcome.kind === 'claimed') this.#judge(record.id, record.outcome.job.queue, record.hostId, record.fence)
    else if (record.op === 'enqueue' && record.job.state === 'processing') this.#judge(record.job.id, record.job.queue, record.hostId, record.fence)
  }

  #judge(id: string, queue: string, hostId: string, fence: ClaimFence | undefined): void {
    const what = `job ${id} of ${queue} claimed by ${hostId}`
    if (fence === undefined) {
      this.#fail(`${what} without a fence: no range said it owned the queue`)
      return
    }
    const { namespace, family, type } = fence.queueKey
    if (namespace !== jobsNamespace || family !== queue || type !== jobTaskType) {
      this.#fail(`${what} under the fence of another queue (${namespace}/${family}/${type})`)
      return
    }
    const encoded = encodeQueueKey(fence.queueKey)
    const current = this.#ranges.get(encoded)
    if (current !== undefined && fence.rangeId < current) {
      this.#fail(`${what} with range ${fence.rangeId} of ${encoded} after range ${current} was acquired: a stale owner's claim committed`)
    }
  }
}

