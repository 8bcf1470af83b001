/**
 * JobEnqueueManyConformance — `enqueueMany` on a job store: the batch answers exactly what
 * `enqueue` of each job in turn would answer, and is all or nothing.
 *
 * Readings pinned here: answers (id and runAt, no payload) come back in the order given; a job whose key a live job of its
 * queue holds answers with that job and writes nothing — also when the holder is an earlier job
 * of the same batch; a dead job does not hold its key; one bad job refuses the whole batch with
 * `InvalidInput` naming its index, and nothing is written; more than `enqueueBatchSizeMax` jobs
 * or payloads past `enqueueBatchBytesMax` in all, is refused the same way; an empty batch writes nothing and answers nothing.
 */
import { describe, expect, it } from 'vitest'
import { enqueueBatchBytesMax, enqueueBatchSizeMax, payloadBytesMax } from '../../../kernel/Limits.ts'
import { expectRejection } from '../../queues/conformance/ConformanceFixture.ts'
import type { NewJob } from '../JobStore.ts'
import type { JobFixture } from './JobFixture.ts'

/** Registers the enqueueMany tests. */
export function describeJobEnqueueManyConformance(fixture: JobFixture): void {
  const store = () => fixture.store()

  describe('job enqueueMany', () => {
    it('inserts every job as enqueue would, answering in the order given', async () => {
      const queue = fixture.queue('many')
      const jobs = [
        fixture.job(queue, { payload: { text: `it's "quoted" \\ ✓`, list: [1, null] }, priority: 2 }),
        fixture.job(queue, { runAtMs: 9_000, expiresAtMs: 20_000, deadLetterRetentionMs: 60_000 }),
        fixture.job(queue, { payload: null, maxAttempts: 7, visibilityTimeoutMs: 45_000, backoffBaseMs: 7 }),
      ]
      const answers = await store().enqueueMany({ jobs, nowMs: 2_000 })
      expect(answers).toEqual(jobs.map((job) => ({ id: job.id, runAtMs: job.runAtMs })))
      for (const job of jobs) {
        const expected = { ...job, key: null, state: 'pending', attempts: 0, createdAtMs: 2_000, claimToken: null, deadlineMs: null }
        expect(await store().getJob({ queue, id: job.id })).toMatchObject(expected)
      }
      expect(await store().countJobs({ queue })).toEqual({ pending: 3, processing: 0, dead: 0 })
      // Due as enqueue makes them: at max(runAt, now), in claim order.
      const due = await store().takeDue({ nowMs: 9_000, reserveUntilMs: 10_000, limit: 10, queues: [queue] })
      expect(due.map((job) => [job.id, job.dueMs])).toEqual([
        [jobs[0]?.id, 2_000],
        [jobs[2]?.id, 2_000],
        [jobs[1]?.id, 9_000],
      ])
      expect(await store().enqueueMany({ jobs: [], nowMs: 2_000 })).toEqual([])
    })

    it('a key held by a live job, or by an earlier job of the batch, answers with its holder and writes nothing', async () => {
      const queue = fixture.queue('many-keys')
      const other = fixture.queue('many-keys-other')
      const holder = await store().enqueue({ job: fixture.job(queue, { key: 'k1' }), nowMs: 1_000 })
      const died = await fixture.claimed(queue, 1_000, { key: 'k3' })
      expect(await store().fail({ id: died.id, claimToken: died.claimToken as string, error: 'boom', nowMs: 1_000 })).toBe(true)
      const jobs: NewJob[] = [
        fixture.job(queue, { key: 'k1' }),
        fixture.job(queue, { key: 'k2' }),
        fixture.job(queue),
        fixture.job(queue, { key: 'k2' }),
        fixture.job(other, { key: 'k2' }),
        fixture.job(queue, { key: 'k3' }),
      ]
      const answers = await store().enqueueMany({ jobs, nowMs: 1_000 })
      expect(answers.map((answer) => answer.id)).toEqual([holder.id, jobs[1]?.id, jobs[2]?.id, jobs[1]?.id, jobs[4]?.id, jobs[5]?.id])
      expect(answers[0]).toEqual({ id: holder.id, runAtMs: holder.runAtMs })
      expect(answers[3]).toEqual(answers[1])
      expect(await store().getJob({ queue, id: jobs[0]?.id as string })).toBeNull()
      expect(await store().getJob({ queue, id: jobs[3]?.id as string })).toBeNull()
      expect(await store().countJobs({ queue })).toEqual({ pending: 4, processing: 0, dead: 1 })
      expect(await store().countJobs({ queue: other })).toEqual({ pending: 1, processing: 0, dead: 0 })
    })

    it('refuses the whole batch when one job is bad, or when it is too large, and writes nothing', async () => {
      const queue = fixture.queue('many-bad')
      const good = fixture.job(queue)
      // Each payload within its own bound, together past the batch's.
      const big = 'x'.repeat(payloadBytesMax - 10)
      const cases: Array<[ReadonlyArray<NewJob>, string]> = [
        [[good, fixture.job(queue), { ...fixture.job(queue), priority: 10 }], 'jobs[2].priority'],
        [[good, { ...fixture.job(queue), payload: undefined as never }], 'jobs[1].payload'],
        [[good, null as never], 'jobs[1]'],
        // A later job is checked where it differs from the first; its first offender is named.
        [[good, { ...fixture.job(queue), queue: '' }], 'jobs[1].queue'],
        [[good, fixture.job(queue), { ...fixture.job(queue), runAtMs: -1, priority: 10 }], 'jobs[2].priority'],
        [[good, { ...fixture.job(queue), id: '', key: '' }], 'jobs[1].id'],
        [[good, { ...fixture.job(queue), deadLetterRetentionMs: -5 }], 'jobs[1].deadLetterRetentionMs'],
        [[good, { ...fixture.job(queue), key: 'k\u0001' }], 'jobs[1].key'],
        [[good, { ...fixture.job(queue), fairnessWeight: 0 }], 'jobs[1].fairnessWeight'],
        [Array.from({ length: enqueueBatchSizeMax + 1 }, () => fixture.job(queue)), 'jobs'],
        [Array.from({ length: Math.ceil(enqueueBatchBytesMax / (payloadBytesMax - 10)) + 1 }, () => fixture.job(queue, { payload: big })), 'jobs'],
      ]
      for (const [jobs, field] of cases) {
        await expectRejection(store().enqueueMany({ jobs, nowMs: 1_000 }), 'InvalidInput', { field })
        expect(await store().getJob({ queue, id: good.id })).toBeNull()
      }
      await expectRejection(store().enqueueMany({ jobs: 'x' as never, nowMs: 1_000 }), 'InvalidInput', { field: 'jobs' })
      await expectRejection(store().enqueueMany({ jobs: [good], nowMs: -1 }), 'InvalidInput', { field: 'nowMs' })
      expect(await store().countJobs({ queue })).toEqual({ pending: 0, processing: 0, dead: 0 })
    })
  })
}
