/**
 * JobExpiryConformance — the job contract's expiry rules on a job store: budget exhaustion by reclaim, the
 * no-stranded-rows sweep (pending AND processing jobs past expiresAt), and dead-row retention.
 *
 * Readings pinned here (JobStore.ts states the rule): a lapsed job at its budget died at its
 * deadline with "max attempts exceeded", whoever notices first (claim, takeDue or the sweep),
 * unless it expired at or before that deadline; claims refuse expired jobs; retention deletes
 * only rows that were dead before the sweep started (a row killed by this sweep waits for the next).
 */
import { describe, expect, it } from 'vitest'
import type { JobFixture } from './JobFixture.ts'

/** Registers the expiry and exhaustion tests. */
export function describeJobExpiryConformance(fixture: JobFixture): void {
  const store = () => fixture.store()

  describe('job exhaustion, expiry and retention', () => {
    it('a reclaim past the budget dead-letters at the deadline with "max attempts exceeded"', async () => {
      const queue = fixture.queue('exhausted')
      const job = await fixture.claimed(queue, 1_000, { maxAttempts: 1, visibilityTimeoutMs: 1_000 })
      expect(await store().claim({ id: job.id, claimToken: 'late', nowMs: 5_000 })).toEqual({ kind: 'obsolete', reason: 'exhausted' })
      expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'dead', attempts: 1, lastError: 'max attempts exceeded', diedAtMs: 2_000 })
    })

    it('claims refuse expired jobs, pending or lapsed', async () => {
      const queue = fixture.queue('claim-expired')
      const pending = await store().enqueue({ job: fixture.job(queue, { expiresAtMs: 3_000 }), nowMs: 1_000 })
      expect(await store().claim({ id: pending.id, claimToken: 't', nowMs: 3_000 })).toEqual({ kind: 'obsolete', reason: 'expired' })
      const lapsed = await fixture.claimed(queue, 1_000, { expiresAtMs: 3_000, visibilityTimeoutMs: 500 })
      expect(await store().claim({ id: lapsed.id, claimToken: 't', nowMs: 3_500 })).toEqual({ kind: 'obsolete', reason: 'expired' })
      expect((await store().getJob({ queue, id: pending.id }))?.state).toBe('pending')
    })

    it('sweepExpired moves expired pending and processing jobs of its queue to dead as "expired"', async () => {
      const queue = fixture.queue('sweep')
      const other = fixture.queue('sweep-other')
      const pending = await store().enqueue({ job: fixture.job(queue, { expiresAtMs: 5_000 }), nowMs: 1_000 })
      const processing = await fixture.claimed(queue, 1_000, { expiresAtMs: 5_000, visibilityTimeoutMs: 60_000 })
      const zombie = await fixture.claimed(queue, 1_000, { expiresAtMs: 5_000, visibilityTimeoutMs: 1_000 })
      const fresh = await store().enqueue({ job: fixture.job(queue, { expiresAtMs: 5_001 }), nowMs: 1_000 })
      const elsewhere = await store().enqueue({ job: fixture.job(other, { expiresAtMs: 5_000 }), nowMs: 1_000 })
      expect(await store().sweepExpired({ queue, nowMs: 4_999 })).toEqual({ dead: 0, purged: 0 })
      expect(await store().sweepExpired({ queue, nowMs: 5_000 })).toEqual({ dead: 3, purged: 0 })
      for (const job of [pending, processing, zombie]) {
        expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'dead', lastError: 'expired', diedAtMs: 5_000, claimToken: null })
      }
      expect((await store().getJob({ queue, id: fresh.id }))?.state).toBe('pending')
      expect((await store().getJob({ queue: other, id: elsewhere.id }))?.state).toBe('pending')
    })

    it('the sweep applies the exhaustion rule: exhausted before expiry dies at its deadline; expiry first is "expired"', async () => {
      const queue = fixture.queue('sweep-exhausted')
      const exhausted = await fixture.claimed(queue, 1_000, { maxAttempts: 1, visibilityTimeoutMs: 1_000, expiresAtMs: 10_000 })
      const expiredFirst = await fixture.claimed(queue, 1_000, { maxAttempts: 1, visibilityTimeoutMs: 20_000, expiresAtMs: 10_000 })
      expect(await store().sweepExpired({ queue, nowMs: 30_000 })).toEqual({ dead: 2, purged: 0 })
      expect(await store().getJob({ queue, id: exhausted.id })).toMatchObject({ state: 'dead', lastError: 'max attempts exceeded', diedAtMs: 2_000 })
      expect(await store().getJob({ queue, id: expiredFirst.id })).toMatchObject({ state: 'dead', lastError: 'expired', diedAtMs: 30_000 })
    })

    it('dead rows are kept forever by default and deleted by the sweep once their retention passed', async () => {
      const queue = fixture.queue('retention')
      const kept = await fixture.claimed(queue, 1_000, {}, 'k')
      const retained = await fixture.claimed(queue, 1_000, { deadLetterRetentionMs: 10_000 }, 'r')
      await store().fail({ id: kept.id, claimToken: 'k', error: 'x', nowMs: 2_000 })
      await store().fail({ id: retained.id, claimToken: 'r', error: 'x', nowMs: 2_000 })
      expect(await store().sweepExpired({ queue, nowMs: 11_999 })).toEqual({ dead: 0, purged: 0 })
      expect(await store().sweepExpired({ queue, nowMs: 12_000 })).toEqual({ dead: 0, purged: 1 })
      expect(await store().getJob({ queue, id: retained.id })).toBeNull()
      expect((await store().getJob({ queue, id: kept.id }))?.state).toBe('dead')
      expect(await store().sweepExpired({ queue, nowMs: 10_000_000 })).toEqual({ dead: 0, purged: 0 })
    })

    it('a job killed by a sweep is purged by a later sweep, not the same one', async () => {
      const queue = fixture.queue('retention-zero')
      const job = await store().enqueue({ job: fixture.job(queue, { expiresAtMs: 2_000, deadLetterRetentionMs: 0 }), nowMs: 1_000 })
      expect(await store().sweepExpired({ queue, nowMs: 3_000 })).toEqual({ dead: 1, purged: 0 })
      expect((await store().getJob({ queue, id: job.id }))?.state).toBe('dead')
      expect(await store().sweepExpired({ queue, nowMs: 3_000 })).toEqual({ dead: 0, purged: 1 })
      expect(await store().getJob({ queue, id: job.id })).toBeNull()
    })
  })
}
