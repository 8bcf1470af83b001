import { describe, expect, it } from 'vitest'
import type { JobRecord } from '../../src/persistence/jobs/JobStore.ts'
import type { JobBoundaryRecord } from './JobBoundary.ts'
import { RateChecker } from './RateChecker.ts'

const job = (id: string): JobRecord => ({ id, queue: 'q' }) as JobRecord
const at = (nowMs: number) => ({ hostId: 'host-1', nowMs, committedAtMs: nowMs })
const enqueue = (id: string, fairnessKey?: string): JobBoundaryRecord => ({ op: 'enqueue', ...at(0), job: job(id), ...(fairnessKey === undefined ? {} : { fairnessKey }) })
const claim = (id: string, nowMs: number): JobBoundaryRecord => ({ op: 'claim', ...at(nowMs), id, claimToken: `${id}@${nowMs}`, outcome: { kind: 'claimed', job: job(id) }, ownership: null })

// Replays `claims` (job id, stamp) against `rates` and answers the violations.
function judge(rates: ConstructorParameters<typeof RateChecker>[0], keys: Record<string, string>, claims: ReadonlyArray<readonly [string, number]>): string[] {
  const violations: string[] = []
  const checker = new RateChecker(rates, (sentence) => violations.push(sentence))
  for (const id of new Set(claims.map(([id]) => id))) checker.observe(enqueue(id, keys[id]))
  for (const [id, nowMs] of claims) checker.observe(claim(id, nowMs))
  return violations
}

describe('RateChecker', () => {
  it('allows the burst and the refill, and fails the start past them', () => {
    const rates = { q: { rateLimit: { perSecond: 1, burst: 2 } } }
    expect(judge(rates, {}, [['a', 0], ['b', 0], ['c', 1_000], ['d', 2_000]])).toEqual([])
    const over = judge(rates, {}, [['a', 0], ['b', 0], ['c', 0]])
    expect(over).toHaveLength(1)
    expect(over[0]).toContain('job c of q started at 0 past the queue')
    expect(judge(rates, {}, [['a', 0], ['b', 0], ['c', 1_000], ['d', 1_500]])).toHaveLength(1)
  })

  it('refills nothing for a stamp behind one the bucket has seen', () => {
    const rates = { q: { rateLimit: { perSecond: 1, burst: 1 } } }
    // 1,000 spends the token refilled since 0; 500 is behind it and finds none.
    expect(judge(rates, {}, [['a', 0], ['b', 1_000], ['c', 500]])).toHaveLength(1)
  })

  it('keeps a bucket per fairness key, jobs without one sharing one, beside the queue-wide one', () => {
    const rates = { q: { rateLimitPerKey: { perSecond: 1, burst: 1 } } }
    expect(judge(rates, { a: 'x', b: 'y' }, [['a', 0], ['b', 0], ['c', 0]])).toEqual([])
    expect(judge(rates, { a: 'x', b: 'x' }, [['a', 0], ['b', 0]])).toHaveLength(1)
    expect(judge(rates, {}, [['a', 0], ['b', 0]])).toHaveLength(1)
    expect(judge({}, {}, [['a', 0], ['b', 0], ['c', 0]])).toEqual([])
  })
})
