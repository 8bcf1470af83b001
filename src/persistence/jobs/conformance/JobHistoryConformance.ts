/**
 * JobHistoryConformance — what a job keeps of its attempts and its handler's reports: the error
 * of every attempt that recorded one (`retry`, `fail`), bounded to the last
 * `jobAttemptErrorsKept`, carried into dead storage and back by `retryDead`; and the progress
 * value a handler stores under a valid claim, bounded in size, kept when the job dies, cleared
 * by `retryDead`.
 */
import { describe, expect, it } from 'vitest'
import { deadReasonExhausted } from '../../../domain/JobRules.ts'
import { jobAttemptErrorsKept, jobProgressBytesMax } from '../../../kernel/Limits.ts'
import type { JobRecord } from '../JobStore.ts'
import type { JobFixture } from './JobFixture.ts'

/** Registers the attempt history and progress tests. */
export function describeJobHistoryConformance(fixture: JobFixture): void {
  const store = () => fixture.store()
  // Claims `job` at `nowMs` with a fresh token; the claimed record.
  const claim = async (job: JobRecord, nowMs: number): Promise<JobRecord> => {
    const outcome = await store().claim({ id: job.id, claimToken: fixture.id('t'), nowMs })
    if (outcome.kind !== 'claimed') return expect.fail(`claim of ${job.id} answered ${JSON.stringify(outcome)}`)
    return outcome.job
  }

  describe('attempt history and progress', () => {
    it("keeps every attempt's error in order, through death and retryDead", async () => {
      const queue = fixture.queue('history')
      let job = await fixture.claimed(queue, 1_000, { maxAttempts: 5 })
      expect(job.attemptErrors).toEqual([])
      expect(await store().retry({ id: job.id, claimToken: job.claimToken as string, error: 'timeout', stack: 'at a', delayMs: 0, nowMs: 1_100 })).toMatchObject({ kind: 'retried' })
      job = await claim(job, 1_200)
      expect(await store().retry({ id: job.id, claimToken: job.claimToken as string, error: 'refused', stack: null, delayMs: 0, nowMs: 1_300 })).toMatchObject({ kind: 'retried' })
      expect((await store().getJob({ queue, id: job.id }))?.attemptErrors).toEqual([
        { attempt: 1, error: 'timeout', stack: 'at a', atMs: 1_100 },
        { attempt: 2, error: 'refused', stack: null, atMs: 1_300 },
      ])
      job = await claim(job, 1_400)
      expect(await store().fail({ id: job.id, claimToken: job.claimToken as string, error: 'bad payload', stack: 'at c', nowMs: 1_500 })).toBe(true)
      const history = [
        { attempt: 1, error: 'timeout', stack: 'at a', atMs: 1_100 },
        { attempt: 2, error: 'refused', stack: null, atMs: 1_300 },
        { attempt: 3, error: 'bad payload', stack: 'at c', atMs: 1_500 },
      ]
      expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'dead', lastError: 'bad payload', attemptErrors: history })
      expect(await store().retryDead({ queue, id: job.id, nowMs: 2_000 })).toMatchObject({ kind: 'retried', job: { attemptErrors: history } })
      expect((await store().getJob({ queue, id: job.id }))?.attemptErrors).toEqual(history)
    })

    it(`keeps the last ${jobAttemptErrorsKept} attempts' errors, the budget's death included`, async () => {
      const queue = fixture.queue('bounded')
      const attempts = jobAttemptErrorsKept + 3
      let job = await fixture.claimed(queue, 1_000, { maxAttempts: attempts })
      for (let attempt = 1; attempt <= attempts; attempt++) {
        if (attempt > 1) job = await claim(job, 1_000 + attempt * 10)
        const outcome = await store().retry({ id: job.id, claimToken: job.claimToken as string, error: `error ${attempt}`, delayMs: 0, nowMs: 1_005 + attempt * 10 })
        expect(outcome?.kind).toBe(attempt === attempts ? 'dead' : 'retried')
      }
      const dead = await store().getJob({ queue, id: job.id })
      expect(dead?.lastError).toBe(deadReasonExhausted)
      expect(dead?.attemptErrors.map((entry) => entry.error)).toEqual(Array.from({ length: jobAttemptErrorsKept }, (_, index) => `error ${attempts - jobAttemptErrorsKept + 1 + index}`))
      expect(dead?.attemptErrors.at(-1)).toEqual({ attempt: attempts, error: `error ${attempts}`, stack: null, atMs: 1_005 + attempts * 10 })
    })

    it('stores progress under a valid claim only, bounded in size, kept at death and cleared by retryDead', async () => {
      const queue = fixture.queue('progress')
      const job = await fixture.claimed(queue, 1_000)
      const ref = { id: job.id, claimToken: job.claimToken as string }
      expect(job.progress).toBeNull()
      expect(await store().setProgress({ ...ref, progress: { done: 3, of: 10 }, nowMs: 1_100 })).toBe(true)
      expect((await store().getJob({ queue, id: job.id }))?.progress).toEqual({ done: 3, of: 10 })
      expect(await store().setProgress({ ...ref, progress: 0.5, nowMs: 1_200 })).toBe(true)
      expect((await store().getJob({ queue, id: job.id }))?.progress).toBe(0.5)
      expect(await store().setProgress({ id: job.id, claimToken: 'someone-else', progress: 1, nowMs: 1_300 })).toBe(false)
      expect(await store().setProgress({ ...ref, progress: 1, nowMs: job.deadlineMs as number })).toBe(false)
      await expect(store().setProgress({ ...ref, progress: 'x'.repeat(jobProgressBytesMax), nowMs: 1_300 })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'progress' })
      await expect(store().setProgress({ ...ref, progress: { n: Number.NaN } as never, nowMs: 1_300 })).rejects.toMatchObject({ _tag: 'InvalidInput' })
      expect((await store().getJob({ queue, id: job.id }))?.progress).toBe(0.5)
      expect(await store().fail({ ...ref, error: 'gave up', nowMs: 1_400 })).toBe(true)
      expect((await store().getJob({ queue, id: job.id }))?.progress).toBe(0.5)
      expect(await store().retryDead({ queue, id: job.id, nowMs: 2_000 })).toMatchObject({ kind: 'retried', job: { progress: null } })
    })
  })
}
