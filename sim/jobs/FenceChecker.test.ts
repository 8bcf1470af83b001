import { describe, expect, it } from 'vitest'
import { encodeQueueKey, type QueueKey } from '../../src/domain/QueueKey.ts'
import type { ClaimFence, JobRecord } from '../../src/persistence/jobs/JobStore.ts'
import type { QueueMetadata } from '../../src/persistence/queues/Store.ts'
import { FenceChecker } from './FenceChecker.ts'
import type { JobBoundaryRecord } from './JobBoundary.ts'

const key = (family: string): QueueKey => ({ namespace: 'jobs', family, type: 'activity', partition: 0, version: null })
const at = { hostId: 'host-1', nowMs: 0, committedAtMs: 0 }
const claim = (fence?: ClaimFence): JobBoundaryRecord => ({
  op: 'claim', ...at, id: 'j', claimToken: 't', outcome: { kind: 'claimed', job: { id: 'j', queue: 'q' } as JobRecord }, ownership: null, ...(fence === undefined ? {} : { fence }),
})
const acquired = (rangeId: number) => ({ op: 'acquire' as const, hostId: 'host-2', queue: encodeQueueKey(key('q')), metadata: { key: key('q'), rangeId } as QueueMetadata })

// Replays the acquires (by range) then the claim; answers the violations.
function judge(ranges: ReadonlyArray<number>, record: JobBoundaryRecord): string[] {
  const violations: string[] = []
  const checker = new FenceChecker((sentence) => violations.push(sentence))
  for (const rangeId of ranges) checker.observeStore(acquired(rangeId))
  checker.observeJobs(record)
  return violations
}

describe('FenceChecker', () => {
  it('passes a claim under its partition\'s current range', () => {
    expect(judge([1, 2], claim({ queueKey: key('q'), rangeId: 2 }))).toEqual([])
  })

  it('fails a claim without a fence, or under another queue\'s', () => {
    expect(judge([1], claim())[0]).toContain('without a fence')
    expect(judge([1], claim({ queueKey: key('other'), rangeId: 1 }))[0]).toContain('fence of another queue')
  })

  it('fails a claim under a range a later acquire superseded', () => {
    expect(judge([1, 2], claim({ queueKey: key('q'), rangeId: 1 }))[0]).toContain('a stale owner\'s claim committed')
  })
})
