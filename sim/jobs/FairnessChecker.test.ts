import { describe, expect, it } from 'vitest'
import type { JobRecord } from '../../src/persistence/jobs/JobStore.ts'
import { FairnessChecker } from './FairnessChecker.ts'
import type { JobBoundaryRecord } from './JobBoundary.ts'

const job = (id: string, nowMs: number): JobRecord => ({ id, queue: 'q', state: 'pending', priority: 0, runAtMs: nowMs, expiresAtMs: null }) as JobRecord
const at = (nowMs: number) => ({ hostId: 'host-1', nowMs, committedAtMs: nowMs })

// A keyed enqueue at `nowMs` that the store gave `fairPass` (weight 1 unless given).
const keyed = (id: string, nowMs: number, fairnessKey: string, fairPass: number, fairnessWeight = 1): JobBoundaryRecord => ({
  op: 'enqueue', ...at(nowMs), job: job(id, nowMs), fairnessKey, fairnessWeight, fairPass,
})

// An unkeyed enqueue at `nowMs`, with the pass the store gave it (absent: none).
const unkeyed = (id: string, nowMs: number, fairPass?: number): JobBoundaryRecord => ({
  op: 'enqueue', ...at(nowMs), job: job(id, nowMs), ...(fairPass === undefined ? {} : { fairPass }),
})
const sweep: JobBoundaryRecord = { op: 'sweep', ...at(2_000), queue: 'q', dead: 0, purged: 0 }

// A claim of `id`'s job.
const claimOf = (id: string): JobBoundaryRecord => ({ op: 'claim', ...at(1_000), id, claimToken: 't', outcome: { kind: 'claimed', job: job(id, 1_000) }, ownership: null })

// Replays `records` and answers the violations.
function judge(records: ReadonlyArray<JobBoundaryRecord>): string[] {
  const violations: string[] = []
  const checker = new FairnessChecker((sentence) => violations.push(sentence))
  for (const record of records) checker.observe(record)
  return violations
}

describe('FairnessChecker', () => {
  it('passes the stride formula: a key steps by 1000 / weight, a new key enters at the head', () => {
    expect(judge([keyed('a1', 1_000, 'a', 1_000, 4), keyed('a2', 1_000, 'a', 1_250, 4), keyed('b1', 1_000, 'b', 1_000), keyed('b2', 1_000, 'b', 2_000)])).toEqual([])
  })

  it('fails a pass below the key\'s last pass plus its stride: the weight was ignored, stepping too little', () => {
    const violations = judge([keyed('a1', 1_000, 'a', 1_000, 0.5), keyed('a2', 1_000, 'a', 2_000, 0.5)])
    expect(violations).toHaveLength(1)
    expect(violations[0]).toContain('below its key\'s last pass 1000 + its stride')
  })

  it('fails a pass beyond the stride while a surely pending job sorts before it: stepping too much', () => {
    // Weight 4 steps by 250; 2 000 would be the head only if nothing pending sorted before it.
    const violations = judge([keyed('a1', 1_000, 'a', 1_000, 4), keyed('a2', 1_000, 'a', 2_000, 4)])
    expect(violations).toHaveLength(1)
    expect(violations[0]).toContain('pending job a1 sorts at 1000')
  })

  it('fails a keyed job the store keeps no pass for', () => {
    const dropped: JobBoundaryRecord = { op: 'enqueue', ...at(1_000), job: job('a1', 1_000), fairnessKey: 'a', fairnessWeight: 1 }
    expect(judge([dropped])[0]).toContain('the key was dropped')
  })

  it('lets the head lift a pass once the jobs before it were claimed, and a new key enter there', () => {
    const claimA1: JobBoundaryRecord = { op: 'claim', ...at(1_500), id: 'a1', claimToken: 't', outcome: { kind: 'claimed', job: job('a1', 1_000) }, ownership: null }
    expect(judge([keyed('a1', 1_000, 'a', 1_000, 4), claimA1, keyed('a2', 3_000, 'a', 3_000, 4), keyed('b1', 3_000, 'b', 3_000)])).toEqual([])
    // Without the claim, a1 is still pending at 1 000, so a new key cannot enter at 3 000.
    expect(judge([keyed('a1', 1_000, 'a', 1_000, 4), keyed('b1', 3_000, 'b', 3_000)])).toHaveLength(1)
  })

  it('passes unkeyed jobs without a pass in a queue without keys, and the implicit key\'s passes once it has keys', () => {
    expect(judge([unkeyed('u1', 1_000), keyed('a1', 1_000, 'a', 1_000), unkeyed('u2', 1_000, 1_000), unkeyed('u3', 1_000, 2_000), keyed('a2', 1_000, 'a', 2_000)])).toEqual([])
    // u4, due at 1 000, entered at the head's 2 000 and sorts there: a new key entering at 2 000 is not behind it.
    expect(judge([keyed('a1', 1_000, 'a', 1_000), keyed('a2', 1_000, 'a', 2_000), claimOf('a1'), unkeyed('u4', 1_000, 2_000), keyed('b1', 1_000, 'b', 2_000)])).toEqual([])
  })

  it('judges an unkeyed job with a pass by the rules of a key of weight 1 (its surely pending jobs sort by their passes)', () => {
    // u3 steps by 500 only: the implicit key ran ahead of weight 1's share.
    const violations = judge([keyed('a1', 1_000, 'a', 1_000), unkeyed('u2', 1_000, 1_000), unkeyed('u3', 1_000, 1_500)])
    expect(violations).toHaveLength(1)
    expect(violations[0]).toContain('the implicit key, weight 1, stride 1000')
    // A new key entering at 2 000 behind u3's pass 2 000: nothing sorts before it (u3 sorts by its pass, not its due time).
    expect(judge([keyed('a1', 1_000, 'a', 1_000), unkeyed('u2', 1_000, 1_000), claimOf('a1'), claimOf('u2'), unkeyed('u3', 1_000, 2_000), keyed('b1', 1_000, 'b', 2_000)])).toEqual([])
  })

  it('fails an unkeyed job without a pass in a queue with keys (the implicit key ignored), and one with a pass in a queue that never had keys', () => {
    expect(judge([keyed('a1', 1_000, 'a', 1_000), unkeyed('u1', 1_000)])[0]).toContain('the implicit key was ignored')
    expect(judge([unkeyed('u1', 1_000, 1_000)])[0]).toContain('a queue without keys gave it')
    // After a sweep the queue may have forgotten its keys: either answer passes.
    expect(judge([keyed('a1', 1_000, 'a', 1_000), sweep, unkeyed('u1', 2_000)])).toEqual([])
  })
})
