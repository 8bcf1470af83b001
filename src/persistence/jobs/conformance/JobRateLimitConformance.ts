/**
 * JobRateLimitConformance — rate limits on a job store (JobStore.ts's "Rate limits"): a queue's
 * claims start at most burst + perSecond × elapsed of its jobs, and of each fairness key's (jobs
 * without one sharing one bucket), whichever claim takes them and whichever of two stores on the
 * same data (the fixture's `peer`) runs it; a key without a token is skipped, not waited on; a
 * queue-wide bucket at zero claims nothing; the refill follows the callers' clocks, never
 * minting tokens for a clock behind; the next token is a due time; queues without limits claim
 * as before; bad limits are refused with nothing written.
 *
 * Time is the injected `nowMs` only: a refill is a later `nowMs`, never a sleep. `startedOf`
 * counts what the store holds processing, so a case fails when a claim lets one job too many through.
 */
import { describe, expect, it } from 'vitest'
import { InvalidInput } from '../../../domain/errors.ts'
import type { JobRecord, NewJob, RateLimit } from '../JobStore.ts'
import type { JobFixture } from './JobFixture.ts'

// The fixture and the helpers the rate limit cases share.
function rateLimitKitOf(fixture: JobFixture) {
  const { store } = fixture
  const nowMs = 1_000

  const queueWide = (perSecond: number, burst: number): Partial<NewJob> => ({ rateLimit: { perSecond, burst } })
  const perKey = (perSecond: number, burst: number, fairnessKey?: string): Partial<NewJob> => ({ rateLimitPerKey: { perSecond, burst }, ...(fairnessKey === undefined ? {} : { fairnessKey }) })
  // Enqueues `count` jobs of `queue` with `extra` at `at`; answers them in order.
  const enqueue = async (queue: string, count: number, extra: Partial<NewJob> = {}, at = nowMs): Promise<JobRecord[]> => {
    const jobs: JobRecord[] = []
    for (let n = 0; n < count; n++) jobs.push(await store().enqueue({ job: fixture.job(queue, { payload: { n }, runAtMs: at, ...extra }), nowMs: at }))
    return jobs
  }
  const tokens = (count: number): string[] => Array.from({ length: count }, () => fixture.id('t'))
  const claimDue = (queue: string, count: number, at = nowMs) => store().claimDue({ queue, nowMs: at, claimTokens: tokens(count) })
  const startedOf = async (queue: string): Promise<number> => (await store().countJobs({ queue })).processing

  return { fixture, store, nowMs, queueWide, perKey, enqueue, tokens, claimDue, startedOf }
}

/** Registers the rate-limit cases on `fixture`'s store. */
export function describeJobRateLimitConformance(fixture: JobFixture): void {
  const kit = rateLimitKitOf(fixture)
  describe('rate limits', () => {
    rateLimitCases1(kit)
    rateLimitCases2(kit)
  })
}

function rateLimitCases1(kit: ReturnType<typeof rateLimitKitOf>): void {
  const { fixture, store, nowMs, queueWide, perKey, enqueue, tokens, claimDue, startedOf } = kit
  it('a burst, then one start per token as the injected clock refills the bucket', async () => {
    const queue = fixture.queue('rate-burst')
    await enqueue(queue, 10, queueWide(2, 3))
    expect(await claimDue(queue, 10)).toHaveLength(3)
    expect(await claimDue(queue, 10)).toHaveLength(0)
    // 2 a second: a token every 500 ms, none a millisecond early.
    expect(await claimDue(queue, 10, nowMs + 499)).toHaveLength(0)
    expect(await claimDue(queue, 10, nowMs + 500)).toHaveLength(1)
    expect(await claimDue(queue, 10, nowMs + 1_500)).toHaveLength(2)
    // A long idle refills up to the burst, never past it.
    expect(await claimDue(queue, 10, nowMs + 60_000)).toHaveLength(3)
    expect(await startedOf(queue)).toBe(9)
  })

  it('each fairness key has its own bucket, unkeyed jobs share one, and an empty key does not hold up the others', async () => {
    const queue = fixture.queue('rate-keys')
    await enqueue(queue, 3, perKey(1, 1, 'a'))
    await enqueue(queue, 3, perKey(1, 1, 'b'))
    await enqueue(queue, 3, perKey(1, 1))
    // a's jobs are first in claim order: one claim at a time still reaches b's and the unkeyed.
    const claimed: JobRecord[] = []
    for (let n = 0; n < 5; n++) claimed.push(...(await claimDue(queue, 1)))
    expect(claimed).toHaveLength(3)
    expect(await claimDue(queue, 9)).toHaveLength(0)
    expect(await claimDue(queue, 9, nowMs + 1_000)).toHaveLength(3)
    expect(await startedOf(queue)).toBe(6)
  })

  it('a queue-wide limit caps two stores on the same data, every kind of claim included', async () => {
    const queue = fixture.queue('rate-two-pools')
    const jobs = await enqueue(queue, 8, queueWide(1, 3))
    expect(await claimDue(queue, 1)).toHaveLength(1)
    expect(await fixture.peer().claimDue({ queue, nowMs, claimTokens: tokens(5) })).toHaveLength(2)
    // The bucket is empty for claims by id and riding acks too, on either store.
    const pending: JobRecord[] = []
    for (const job of jobs) if ((await store().getJob({ queue, id: job.id }))?.state === 'pending') pending.push(job)
    expect(pending).toHaveLength(5)
    const byId = await fixture.peer().claimMany({ claims: pending.map((job) => ({ id: job.id, claimToken: fixture.id('t') })), nowMs })
    expect(byId).toEqual(pending.map(() => ({ kind: 'obsolete', reason: 'limited' })))
    expect(await store().claim({ id: (pending[0] as JobRecord).id, claimToken: fixture.id('t'), nowMs })).toEqual({ kind: 'obsolete', reason: 'limited' })
    expect(await startedOf(queue)).toBe(3)
    // A second later one token: one claim of the two stores gets it.
    const [first] = await claimDue(queue, 1, nowMs + 1_000)
    const ride = await fixture.peer().ackAndClaimDue({ acks: [{ id: (first as JobRecord).id, claimToken: (first as JobRecord).claimToken as string }], queue, nowMs: nowMs + 1_000, claimTokens: tokens(3) })
    expect(first).toBeDefined()
    expect(ride.acked).toEqual([(first as JobRecord).id])
    expect(ride.claimed).toHaveLength(0)
    expect(await startedOf(queue)).toBe(3)
  })

  it('a queue-wide bucket at zero claims nothing, whatever the keys', async () => {
    const queue = fixture.queue('rate-zero')
    await enqueue(queue, 1, { ...queueWide(1, 1), ...perKey(100, 100, 'a') })
    await enqueue(queue, 3, { ...queueWide(1, 1), ...perKey(100, 100, 'b') })
    expect(await claimDue(queue, 4)).toHaveLength(1)
    expect(await claimDue(queue, 4, nowMs + 999)).toHaveLength(0)
    expect(await startedOf(queue)).toBe(1)
  })

  it('a clock behind mints no tokens: the refill counts only time past the latest seen', async () => {
    const queue = fixture.queue('rate-clock-behind')
    // Full (2) since 1 000; a claim at 5 000 leaves one token.
    await enqueue(queue, 8, queueWide(1, 2))
    expect(await claimDue(queue, 1, 5_000)).toHaveLength(1)
    // A caller 2 s behind spends the last token, and its claim does not move the bucket's time
    // back: the caller at 5 000 finds no refill for the 2 s between them.
    expect(await fixture.peer().claimDue({ queue, nowMs: 3_000, claimTokens: tokens(8) })).toHaveLength(1)
    expect(await claimDue(queue, 8, 5_000)).toHaveLength(0)
    expect(await claimDue(queue, 8, 3_000)).toHaveLength(0)
    expect(await claimDue(queue, 8, 5_999)).toHaveLength(0)
    expect(await claimDue(queue, 8, 6_000)).toHaveLength(1)
    // A caller ahead spends the refill of its lead; the clocks behind it then find nothing.
    expect(await claimDue(queue, 8, 9_000)).toHaveLength(2)
    expect(await claimDue(queue, 8, 8_000)).toHaveLength(0)
    expect(await claimDue(queue, 8, 9_999)).toHaveLength(0)
    expect(await startedOf(queue)).toBe(5)
  })

  it('a lapsed claim claimed again takes a token', async () => {
    const queue = fixture.queue('rate-lapsed')
    await enqueue(queue, 1, { ...queueWide(1, 1), visibilityTimeoutMs: 1_000 })
    expect(await claimDue(queue, 1)).toHaveLength(1)
    // Lapsed at 2 000; the token of 2 000 goes to its second attempt, none is left for a job due then.
    const [again] = await claimDue(queue, 1, 2_000)
    expect(again?.attempts).toBe(2)
    await enqueue(queue, 1, queueWide(1, 1), 2_000)
    expect(await claimDue(queue, 1, 2_000)).toHaveLength(0)
    expect(await claimDue(queue, 1, 3_000)).toHaveLength(1)
  })
}

function rateLimitCases2(kit: ReturnType<typeof rateLimitKitOf>): void {
  const { fixture, store, nowMs, queueWide, perKey, enqueue, claimDue } = kit
  it('the next token is a due time: nextDueMs answers it, takeDue passes over empty buckets, a refused claim is due then', async () => {
    const queue = fixture.queue('rate-next')
    const [first, second] = await enqueue(queue, 2, queueWide(4, 1))
    expect(await claimDue(queue, 2)).toHaveLength(1)
    expect(await store().nextDueMs({ nowMs, queues: [queue] })).toBe(nowMs + 250)
    expect(await store().takeDue({ nowMs, reserveUntilMs: nowMs + 10_000, limit: 10, queues: [queue] })).toHaveLength(0)
    const waiting = (await store().getJob({ queue, id: (first as JobRecord).id }))?.state === 'pending' ? first : second
    const refused = await store().claim({ id: (waiting as JobRecord).id, claimToken: fixture.id('t'), nowMs: nowMs + 100 })
    expect(refused).toEqual({ kind: 'obsolete', reason: 'limited' })
    // Parked until the token: the claim at the token's time gets it.
    const at = nowMs + 250
    expect(await store().takeDue({ nowMs: at, reserveUntilMs: at + 10_000, limit: 10, queues: [queue] })).toHaveLength(1)
    expect((await store().claim({ id: (waiting as JobRecord).id, claimToken: fixture.id('t'), nowMs: at })).kind).toBe('claimed')
  })

  it('the latest enqueue that gives a limit sets it, and a queue without limits claims as it always did', async () => {
    const queue = fixture.queue('rate-latest')
    const plain = fixture.queue('rate-plain')
    await enqueue(queue, 4, queueWide(1, 1))
    await enqueue(queue, 1, queueWide(1, 3))
    await enqueue(plain, 6)
    expect(await claimDue(queue, 5)).toHaveLength(1)
    expect(await claimDue(queue, 5, nowMs + 2_000)).toHaveLength(2)
    expect(await claimDue(plain, 6)).toHaveLength(6)
    // Only a queue without buckets gets its jobs inserted claimed.
    const handed = await store().enqueue({ job: fixture.job(plain, { runAtMs: nowMs }), nowMs, claimToken: fixture.id('t') })
    expect(handed.state).toBe('processing')
    const held = await store().enqueue({ job: fixture.job(queue, { runAtMs: nowMs }), nowMs, claimToken: fixture.id('t') })
    expect(held.state).toBe('pending')
    expect(await store().nextDueMs({ nowMs, queues: [plain] })).toBe(nowMs + 30_000)
  })

  it('refuses bad limits with a typed error and writes nothing', async () => {
    const queue = fixture.queue('rate-bad')
    const bad: ReadonlyArray<unknown> = [
      { perSecond: 0, burst: 1 },
      { perSecond: -1, burst: 1 },
      { perSecond: Number.NaN, burst: 1 },
      { perSecond: Number.POSITIVE_INFINITY, burst: 1 },
      { perSecond: 1_000_001, burst: 1 },
      { perSecond: 1, burst: 0 },
      { perSecond: 1, burst: 1.5 },
      { perSecond: 1, burst: 1_000_001 },
      { perSecond: 1 },
      { perSecond: 1, burst: 1, extra: true },
      'fast',
    ]
    for (const limit of bad) {
      for (const field of ['rateLimit', 'rateLimitPerKey'] as const) {
        const job = fixture.job(queue, { [field]: limit as RateLimit })
        await expect(store().enqueue({ job, nowMs })).rejects.toBeInstanceOf(InvalidInput)
        await expect(store().enqueueMany({ jobs: [job], nowMs })).rejects.toBeInstanceOf(InvalidInput)
        expect(await store().getJob({ queue, id: job.id })).toBeNull()
      }
    }
    // The bounds themselves are limits.
    await enqueue(queue, 1, { rateLimit: { perSecond: 1_000_000, burst: 1_000_000 }, rateLimitPerKey: { perSecond: 0.001, burst: 1 } })
    expect(await claimDue(queue, 2)).toHaveLength(1)
  })

  it('enqueueMany gives its jobs the limits too (the implicit key: its jobs have no fairness key)', async () => {
    const queue = fixture.queue('rate-many')
    const jobs = Array.from({ length: 5 }, () => fixture.job(queue, { ...perKey(1, 2) }))
    await store().enqueueMany({ jobs, nowMs })
    expect(await claimDue(queue, 5)).toHaveLength(2)
    expect(await claimDue(queue, 5, nowMs + 1_000)).toHaveLength(1)
  })

  it("enqueueMany's keyed jobs take their fairness key's bucket, as enqueue's do", async () => {
    const queue = fixture.queue('rate-many-keyed')
    const jobs = ['a', 'b', 'a', 'b', 'a'].map((fairnessKey) => fixture.job(queue, { fairnessKey, ...perKey(1, 1) }))
    await store().enqueueMany({ jobs, nowMs })
    // One token per key: one job of a, one of b.
    expect(await claimDue(queue, 5)).toHaveLength(2)
  })
}
