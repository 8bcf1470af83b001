/**
 * JobHistoryConformance — what a job keeps of its attempts and its handler's reports: the error
 * of every attempt that recorded one (`retry`, `fail`; a retry's with the time its next attempt
 * is due), bounded to the last `jobAttemptErrorsKept`, carried into dead storage and back by
 * `retryDead`; every claim's attempt and time from each claim operation, taken back by `release`,
 * bounded to the last `jobClaimsKept`, kept the same way; and the progress value (with its time)
 * a handler stores under a valid claim, bounded in size, kept when the job dies, cleared by
 * `retryDead`.
 */
import { describe, expect, it } from 'vitest'
import { deadReasonExhausted } from '../../../domain/JobRules.ts'
import { jobAttemptErrorsKept, jobClaimsKept, jobProgressBytesMax } from '../../../kernel/Limits.ts'
import type { JobRecord } from '../JobStore.ts'
import type { JobFixture } from './JobFixture.ts'

// The fixture and the helpers the attempt-history cases share.
function historyKitOf(fixture: JobFixture) {
  const store = () => fixture.store()
  // Claims `job` at `nowMs` with a fresh token; the claimed record.
  const claim = async (job: JobRecord, nowMs: number): Promise<JobRecord> => {
    const outcome = await store().claim({ id: job.id, claimToken: fixture.id('t'), nowMs })
    if (outcome.kind !== 'claimed') return expect.fail(`claim of ${job.id} answered ${JSON.stringify(outcome)}`)
    return outcome.job
  }

  return { fixture, store, claim }
}

/** Registers the attempt history and progress tests. */
export function describeJobHistoryConformance(fixture: JobFixture): void {
  const kit = historyKitOf(fixture)
  describe('attempt history and progress', () => {
    attemptErrorCases(kit)
    claimHistoryCases(kit)
  })
}

// Errors of attempts and retries.
function attemptErrorCases(kit: ReturnType<typeof historyKitOf>): void {
  const { fixture, store, claim } = kit
  it("keeps every attempt's error in order, through death and retryDead", async () => {
    const queue = fixture.queue('history')
    let job = await fixture.claimed(queue, 1_000, { maxAttempts: 5 })
    expect(job.attemptErrors).toEqual([])
    expect(await store().retry({ id: job.id, claimToken: job.claimToken as string, error: 'timeout', stack: 'at a', delayMs: 0, nowMs: 1_100 })).toMatchObject({ kind: 'retried' })
    job = await claim(job, 1_200)
    expect(await store().retry({ id: job.id, claimToken: job.claimToken as string, error: 'refused', stack: null, delayMs: 0, nowMs: 1_300 })).toMatchObject({ kind: 'retried' })
    expect((await store().getJob({ queue, id: job.id }))?.attemptErrors).toEqual([
      { attempt: 1, error: 'timeout', stack: 'at a', atMs: 1_100, retryAtMs: 1_100 },
      { attempt: 2, error: 'refused', stack: null, atMs: 1_300, retryAtMs: 1_300 },
    ])
    job = await claim(job, 1_400)
    expect(await store().fail({ id: job.id, claimToken: job.claimToken as string, error: 'bad payload', stack: 'at c', nowMs: 1_500 })).toBe(true)
    const history = [
      { attempt: 1, error: 'timeout', stack: 'at a', atMs: 1_100, retryAtMs: 1_100 },
      { attempt: 2, error: 'refused', stack: null, atMs: 1_300, retryAtMs: 1_300 },
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

  it("records a retry's next due time beside its error", async () => {
    const queue = fixture.queue('retry-at')
    const job = await fixture.claimed(queue, 1_000)
    expect(await store().retry({ id: job.id, claimToken: job.claimToken as string, error: 'later', delayMs: 7_000, nowMs: 1_100 })).toEqual({ kind: 'retried', runAtMs: 8_100 })
    expect((await store().getJob({ queue, id: job.id }))?.attemptErrors).toEqual([{ attempt: 1, error: 'later', stack: null, atMs: 1_100, retryAtMs: 8_100 }])
  })
}

// Claims kept per job, and progress.
function claimHistoryCases(kit: ReturnType<typeof historyKitOf>): void {
  const { fixture, store, claim } = kit
  it('keeps every claim, from each claim operation, without the one release gave back, through death and retryDead (attempt 0)', async () => {
    const queue = fixture.queue('claims')
    const id = fixture.id('claims')
    const ref = (job: JobRecord) => ({ id: job.id, claimToken: job.claimToken as string })
    const claimsOf = async () => (await store().getJob({ queue, id }))?.claims
    // A claimed enqueue is attempt 1.
    let job = await store().enqueue({ job: fixture.job(queue, { id, runAtMs: 1_000, maxAttempts: 9 }), nowMs: 1_000, claimToken: fixture.id('t') })
    expect(job.claims).toEqual([{ attempt: 1, atMs: 1_000 }])
    expect(await claimsOf()).toEqual([{ attempt: 1, atMs: 1_000 }])
    await store().retry({ ...ref(job), error: 'e1', delayMs: 0, nowMs: 1_050 })
    // claimDue, then release: the claim given back is gone again.
    const [byDue] = await store().claimDue({ queue, nowMs: 1_100, claimTokens: [fixture.id('t')] })
    expect(byDue?.claims).toEqual([{ attempt: 1, atMs: 1_000 }, { attempt: 2, atMs: 1_100 }])
    expect(await store().release({ claims: [ref(byDue as JobRecord)], nowMs: 1_150 })).toEqual([id])
    expect(await claimsOf()).toEqual([{ attempt: 1, atMs: 1_000 }])
    // claimMany, then its claim lapses and claim takes it again.
    const [byMany] = await store().claimMany({ claims: [{ id, claimToken: fixture.id('t') }], nowMs: 1_200 })
    expect(byMany).toMatchObject({ kind: 'claimed' })
    job = await claim(job, 1_200 + job.visibilityTimeoutMs)
    await store().retry({ ...ref(job), error: 'e3', delayMs: 0, nowMs: 40_000 })
    // ackAndClaimDue, then a fail: the claims go with the job to dead storage and back.
    const { claimed } = await store().ackAndClaimDue({ acks: [], queue, nowMs: 40_100, claimTokens: [fixture.id('t')] })
    const expected = [
      { attempt: 1, atMs: 1_000 },
      { attempt: 2, atMs: 1_200 },
      { attempt: 3, atMs: 31_200 },
      { attempt: 4, atMs: 40_100 },
    ]
    expect(claimed[0]?.claims).toEqual(expected)
    expect(await store().fail({ ...ref(claimed[0] as JobRecord), error: 'e4', nowMs: 40_200 })).toBe(true)
    expect(await store().getJob({ queue, id })).toMatchObject({ state: 'dead', claims: expected })
    // The return from dead is attempt 0, as the attempt count starts again.
    const revived = [...expected, { attempt: 0, atMs: 50_000 }]
    expect(await store().retryDead({ queue, id, nowMs: 50_000 })).toMatchObject({ kind: 'retried', job: { claims: revived } })
    expect(await claimsOf()).toEqual(revived)
    const again = await claim((await store().getJob({ queue, id })) as JobRecord, 50_100)
    expect(again.claims).toEqual([...revived, { attempt: 1, atMs: 50_100 }])
  })

  it(`keeps the last ${jobClaimsKept} claims`, async () => {
    const queue = fixture.queue('claims-bounded')
    const claimsMade = jobClaimsKept + 3
    let job = await fixture.claimed(queue, 1_000, { maxAttempts: claimsMade + 1 })
    for (let attempt = 2; attempt <= claimsMade; attempt++) job = await claim(job, (job.deadlineMs as number) + 1)
    const claims = (await store().getJob({ queue, id: job.id }))?.claims
    expect(claims?.map((entry) => entry.attempt)).toEqual(Array.from({ length: jobClaimsKept }, (_, index) => claimsMade - jobClaimsKept + 1 + index))
    expect(claims?.at(-1)).toEqual({ attempt: claimsMade, atMs: job.claimedAtMs })
  })

  it('stores progress under a valid claim only, bounded in size, kept at death and cleared by retryDead', async () => {
    const queue = fixture.queue('progress')
    const job = await fixture.claimed(queue, 1_000)
    const ref = { id: job.id, claimToken: job.claimToken as string }
    expect(job.progress).toBeNull()
    expect(await store().setProgress({ ...ref, progress: { done: 3, of: 10 }, nowMs: 1_100 })).toBe(true)
    expect((await store().getJob({ queue, id: job.id }))?.progress).toEqual({ done: 3, of: 10 })
    expect(await store().setProgress({ ...ref, progress: 0.5, nowMs: 1_200 })).toBe(true)
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ progress: 0.5, progressAtMs: 1_200 })
    expect(await store().setProgress({ id: job.id, claimToken: 'someone-else', progress: 1, nowMs: 1_300 })).toBe(false)
    expect(await store().setProgress({ ...ref, progress: 1, nowMs: job.deadlineMs as number })).toBe(false)
    await expect(store().setProgress({ ...ref, progress: 'x'.repeat(jobProgressBytesMax), nowMs: 1_300 })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'progress' })
    await expect(store().setProgress({ ...ref, progress: { n: Number.NaN } as never, nowMs: 1_300 })).rejects.toMatchObject({ _tag: 'InvalidInput' })
    expect((await store().getJob({ queue, id: job.id }))?.progress).toBe(0.5)
    expect(await store().fail({ ...ref, error: 'gave up', nowMs: 1_400 })).toBe(true)
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ progress: 0.5, progressAtMs: 1_200 })
    expect(await store().retryDead({ queue, id: job.id, nowMs: 2_000 })).toMatchObject({ kind: 'retried', job: { progress: null, progressAtMs: null } })
  })
}
