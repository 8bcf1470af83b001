/**
 * JobBatchConformance — `claimMany` and `ackMany` on a job store: each claim and ack in a batch
 * is judged exactly as its single form would judge it, in the order given, with one round trip
 * for the common case.
 *
 * Readings pinned here: a job named twice in one `claimMany` is claimed once, by the first
 * token, and the second answers already-started; an exhausted lapsed claim in a batch is buried
 * as `claim` buries it; `ackMany` returns only the ids it deleted.
 */
import { describe, expect, it } from 'vitest'
import type { JobFixture } from './JobFixture.ts'

/** Registers the batch tests. */
export function describeJobBatchConformance(fixture: JobFixture): void {
  const store = () => fixture.store()

  describe('job batches', () => {
    it('claimMany claims every claimable job with its own token and judges the rest one by one', async () => {
      const queue = fixture.queue('claim-many')
      const a = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
      const b = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
      const later = await store().enqueue({ job: fixture.job(queue, { runAtMs: 9_000 }), nowMs: 1_000 })
      const exhausted = await fixture.claimed(queue, 1_000, { maxAttempts: 1, visibilityTimeoutMs: 500 })
      const outcomes = await store().claimMany({
        claims: [
          { id: a.id, claimToken: 'ta' },
          { id: 'nope', claimToken: 'tx' },
          { id: b.id, claimToken: 'tb' },
          { id: a.id, claimToken: 'ta2' },
          { id: later.id, claimToken: 'tl' },
          { id: exhausted.id, claimToken: 'te' },
        ],
        nowMs: 2_000,
      })
      expect(outcomes.map((outcome) => outcome.kind)).toEqual(['claimed', 'obsolete', 'claimed', 'already-started', 'obsolete', 'obsolete'])
      const [first, missing, second, , notDue, buried] = outcomes
      expect(first?.kind === 'claimed' ? [first.job.id, first.job.claimToken, first.job.attempts, first.job.deadlineMs] : null).toEqual([a.id, 'ta', 1, 2_000 + a.visibilityTimeoutMs])
      expect(second?.kind === 'claimed' ? second.job.claimToken : null).toBe('tb')
      expect(missing).toEqual({ kind: 'obsolete', reason: 'missing' })
      expect(notDue).toEqual({ kind: 'obsolete', reason: 'not-due' })
      expect(buried).toEqual({ kind: 'obsolete', reason: 'exhausted' })
      expect(await store().getJob({ queue, id: exhausted.id })).toMatchObject({ state: 'dead', lastError: 'max attempts exceeded' })
      expect(await store().claimMany({ claims: [], nowMs: 2_000 })).toEqual([])
    })

    it('ackMany deletes the validly claimed jobs and names them; stale, lapsed and unknown claims are left', async () => {
      const queue = fixture.queue('ack-many')
      const a = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 10_000 }, 'ta')
      const b = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 10_000 }, 'tb')
      const lapsed = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 500 }, 'tl')
      const acked = await store().ackMany({
        claims: [
          { id: a.id, claimToken: 'ta' },
          { id: b.id, claimToken: 'wrong' },
          { id: lapsed.id, claimToken: 'tl' },
          { id: 'nope', claimToken: 'tx' },
        ],
        nowMs: 2_000,
      })
      expect(acked).toEqual([a.id])
      expect(await store().getJob({ queue, id: a.id })).toBeNull()
      expect((await store().getJob({ queue, id: b.id }))?.state).toBe('processing')
      expect(await store().ackMany({ claims: [], nowMs: 2_000 })).toEqual([])
    })
  })
}
