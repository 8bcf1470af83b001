/**
 * JobInputConformance — every job store refuses the same bad input with the same
 * `InvalidInput` (field and reason come from JobInput.ts), and writes nothing.
 */
import { describe, expect, it } from 'vitest'
import { expectRejection } from '../../queues/conformance/ConformanceFixture.ts'
import type { NewJob } from '../JobStore.ts'
import type { JobFixture } from './JobFixture.ts'

/** Registers the input tests. */
export function describeJobInputConformance(fixture: JobFixture): void {
  const store = () => fixture.store()

  describe('job input', () => {
    it('refuses malformed jobs by field, and writes nothing', async () => {
      const queue = fixture.queue('input')
      const cases: Array<[Partial<Record<keyof NewJob, unknown>>, string]> = [
        [{ payload: undefined }, 'job.payload'],
        [{ payload: { when: new Date(0) } }, 'job.payload.when'],
        [{ payload: Number.NaN }, 'job.payload'],
        [{ priority: 10 }, 'job.priority'],
        [{ priority: 1.5 }, 'job.priority'],
        [{ runAtMs: -1 }, 'job.runAtMs'],
        [{ runAtMs: Number.POSITIVE_INFINITY }, 'job.runAtMs'],
        [{ expiresAtMs: 1.5 }, 'job.expiresAtMs'],
        [{ maxAttempts: 0 }, 'job.maxAttempts'],
        [{ visibilityTimeoutMs: 0 }, 'job.visibilityTimeoutMs'],
        [{ backoffBaseMs: -5 }, 'job.backoffBaseMs'],
        [{ deadLetterRetentionMs: Number.NaN }, 'job.deadLetterRetentionMs'],
        [{ queue: '' }, 'job.queue'],
        [{ id: 42 }, 'job.id'],
      ]
      for (const [override, field] of cases) {
        const job = { ...fixture.job(queue), ...override } as NewJob
        await expectRejection(store().enqueue({ job, nowMs: 1_000 }), 'InvalidInput', { field })
        if (typeof job.id === 'string') expect(await store().getJob({ queue, id: job.id })).toBeNull()
      }
    })

    it('refuses bad operation parameters by field', async () => {
      const queue = fixture.queue('params')
      const job = await fixture.claimed(queue, 1_000, {}, 'tok')
      await expectRejection(store().claim({ id: job.id, claimToken: '', nowMs: 1_000 }), 'InvalidInput', { field: 'claimToken' })
      await expectRejection(store().ack({ id: job.id, claimToken: 'tok', nowMs: -1 }), 'InvalidInput', { field: 'nowMs' })
      await expectRejection(store().heartbeat({ id: job.id, claimToken: 'tok', extendMs: 0, nowMs: 1_000 }), 'InvalidInput', { field: 'extendMs' })
      await expectRejection(store().retry({ id: job.id, claimToken: 'tok', error: 'x', delayMs: -1, nowMs: 1_000 }), 'InvalidInput', { field: 'delayMs' })
      await expectRejection(store().retry({ id: job.id, claimToken: 'tok', error: 7 as never, delayMs: 0, nowMs: 1_000 }), 'InvalidInput', { field: 'error' })
      await expectRejection(store().fail({ id: job.id, claimToken: 'tok', error: 'x'.repeat(10_001), nowMs: 1_000 }), 'InvalidInput', { field: 'error' })
      await expectRejection(store().ackBatch({ claims: [{ id: job.id, claimToken: 5 as never }], nowMs: 1_000 }), 'InvalidInput', { field: 'claims[0].claimToken' })
      await expectRejection(store().takeDue({ nowMs: 1_000, reserveUntilMs: 2_000, limit: -1, queues: [queue] }), 'InvalidInput', { field: 'limit' })
      await expectRejection(store().takeDue({ nowMs: 1_000, reserveUntilMs: 2_000, limit: 1, queues: [] }), 'InvalidInput', { field: 'queues' })
      await expectRejection(store().putSchedule({ name: 's', spec: 'x', queue, payload: undefined as never, nowMs: 1 }), 'InvalidInput', { field: 'payload' })
      await expectRejection(store().acquireLease({ name: 'l', holder: '', nowMs: 1, ttlMs: 1 }), 'InvalidInput', { field: 'holder' })
      expect(await store().getJob({ queue, id: job.id })).toEqual(job)
    })
  })
}
