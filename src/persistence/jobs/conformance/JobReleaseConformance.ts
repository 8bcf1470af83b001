/**
 * JobReleaseConformance — `release` on a job store: a claim given back because the poll or
 * worker it was made for has gone. The job is pending again at once, with the attempt the claim
 * counted given back, in the place in claim order it had before the claim; its old token is
 * dead from then on.
 *
 * Readings pinned here: release judges each claim by the validity predicate, as `ackMany` judges
 * acks, and answers the released ids in input order; the due time restored is the one before
 * the claim when that was no later than now, else now (a job whose task was with Matching); a
 * job named twice is judged by its first claim only; bad input writes nothing.
 */
import { describe, expect, it } from 'vitest'
import { expectRejection } from '../../queues/conformance/ConformanceFixture.ts'
import type { ClaimRef, JobRecord } from '../JobStore.ts'
import type { JobFixture } from './JobFixture.ts'

/** Registers the release tests. */
export function describeJobReleaseConformance(fixture: JobFixture): void {
  const helpers = releaseHelpers(fixture)
  describe('job release', () => {
    releaseGivesBack(helpers)
    releaseRefuses(helpers)
  })
}

// What every group of these tests uses.
function releaseHelpers(fixture: JobFixture) {
  const store = () => fixture.store()
  const ref = (job: JobRecord, claimToken = job.claimToken as string): ClaimRef => ({ id: job.id, claimToken })
  const claimDueIds = async (queue: string, nowMs: number, count: number) =>
    (await store().claimDue({ queue, nowMs, claimTokens: Array.from({ length: count }, (_, n) => fixture.id(`t${n}`)) })).map((job) => job.id)
  return { fixture, store, ref, claimDueIds }
}

type ReleaseHelpers = ReturnType<typeof releaseHelpers>

// What a release gives back: the job pending, its attempt, its place in claim order.
function releaseGivesBack({ fixture, store, ref, claimDueIds }: ReleaseHelpers): void {
  it('makes the job pending and claimable at once, with the attempt given back and the claim cleared', async () => {
    const queue = fixture.queue('release')
    const job = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 5_000 }, 'first')
    expect(job.attempts).toBe(1)
    expect(await store().release({ claims: [ref(job)], nowMs: 2_000 })).toEqual([job.id])
    expect(await store().getJob({ queue, id: job.id })).toEqual({ ...job, state: 'pending', attempts: 0, claimedAtMs: null, claimToken: null, deadlineMs: null, claims: [] })
    expect(await store().nextDueMs({ nowMs: 999, queues: [queue] })).toBe(1_000)
    // Claimable at once, by claimDue as by claim: the claim counts the attempt again.
    const [again] = await store().claimDue({ queue, nowMs: 2_000, claimTokens: ['second'] })
    expect(again).toMatchObject({ id: job.id, state: 'processing', attempts: 1, claimToken: 'second', claimedAtMs: 2_000, deadlineMs: 7_000 })
    expect(await store().release({ claims: [{ id: job.id, claimToken: 'second' }], nowMs: 3_000 })).toEqual([job.id])
    // Claimed in a batch and given back: due at its enqueue again, before a job due since 2,000.
    const other = await store().enqueue({ job: fixture.job(queue, { runAtMs: 2_000 }), nowMs: 1_000 })
    const batch = await store().claimMany({ claims: [{ id: job.id, claimToken: 'third' }, { id: other.id, claimToken: 'fourth' }], nowMs: 3_000 })
    expect(batch.map((outcome) => outcome.kind)).toEqual(['claimed', 'claimed'])
    expect(await store().release({ claims: [{ id: job.id, claimToken: 'third' }, { id: other.id, claimToken: 'fourth' }], nowMs: 3_000 })).toEqual([job.id, other.id])
    expect(await store().nextDueMs({ nowMs: 999, queues: [queue] })).toBe(1_000)
    expect(await claimDueIds(queue, 3_000, 2)).toEqual([job.id, other.id])
    expect(await store().release({ claims: [], nowMs: 3_000 })).toEqual([])
  })

  it('gives back only the attempt the claim counted: a reclaim released keeps the earlier attempt', async () => {
    const queue = fixture.queue('release-reclaim')
    const job = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 500 }, 'lapsing')
    const reclaimed = await store().claim({ id: job.id, claimToken: 'reclaim', nowMs: 2_000 })
    expect(reclaimed).toMatchObject({ kind: 'claimed', job: { attempts: 2 } })
    expect(await store().release({ claims: [{ id: job.id, claimToken: 'reclaim' }], nowMs: 2_000 })).toEqual([job.id])
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'pending', attempts: 1 })
  })

  it('keeps the place in claim order: the released head is the head again, a released second is second again', async () => {
    const queue = fixture.queue('release-order')
    const enqueue = (runAtMs: number) => store().enqueue({ job: fixture.job(queue, { runAtMs, visibilityTimeoutMs: 60_000 }), nowMs: 1_000 })
    const a = await enqueue(1_000)
    const b = await enqueue(1_000)
    const c = await enqueue(2_000)
    const d = await enqueue(1_000)
    // Claim order: a, b, d (due 1,000 in enqueue order), then c (due 2,000).
    const [first] = await store().claimDue({ queue, nowMs: 3_000, claimTokens: ['ta'] })
    expect(first?.id).toBe(a.id)
    expect(await store().release({ claims: [{ id: a.id, claimToken: 'ta' }], nowMs: 4_000 })).toEqual([a.id])
    expect(await claimDueIds(queue, 4_000, 1)).toEqual([a.id])
    // b taken out of the middle by claim and given back: ahead of d (same due time, earlier
    // ready order) and of c (due earlier than now, which is when it was given back).
    const claimedB = await store().claim({ id: b.id, claimToken: 'tb', nowMs: 5_000 })
    expect(claimedB.kind).toBe('claimed')
    expect(await store().release({ claims: [{ id: b.id, claimToken: 'tb' }], nowMs: 6_000 })).toEqual([b.id])
    expect(await claimDueIds(queue, 6_000, 3)).toEqual([b.id, d.id, c.id])
    // A reclaimed lapsed job's place is its lapse (due 6,500): given back at 7,000, it is still
    // ahead of a job due at 6,800.
    const lapsing = await store().enqueue({ job: fixture.job(queue, { runAtMs: 6_000, visibilityTimeoutMs: 500, priority: 5 }), nowMs: 6_000 })
    expect((await store().claim({ id: lapsing.id, claimToken: 'lapses', nowMs: 6_000 })).kind).toBe('claimed')
    const dueLater = await store().enqueue({ job: fixture.job(queue, { runAtMs: 6_800, priority: 5 }), nowMs: 6_000 })
    const [reclaim] = await store().claimDue({ queue, nowMs: 7_000, claimTokens: ['reclaim'] })
    expect(reclaim).toMatchObject({ id: lapsing.id, attempts: 2 })
    expect(await store().release({ claims: [ref(reclaim as JobRecord)], nowMs: 7_000 })).toEqual([lapsing.id])
    expect(await claimDueIds(queue, 7_000, 2)).toEqual([lapsing.id, dueLater.id])
  })

  it('a job claimed while its task was with Matching is given back due now, behind rows due before', async () => {
    const queue = fixture.queue('release-matching')
    const withMatching = await store().enqueue({ job: fixture.job(queue, { runAtMs: 1_000 }), nowMs: 1_000 })
    const taken = await store().takeDue({ nowMs: 1_000, reserveUntilMs: 31_000, limit: 10, queues: [queue] })
    await store().confirmDelivered({ deliveries: taken.map((due) => ({ id: due.id, revision: due.revision })) })
    expect((await store().claim({ id: withMatching.id, claimToken: 'poll', nowMs: 2_000 })).kind).toBe('claimed')
    const later = await store().enqueue({ job: fixture.job(queue, { runAtMs: 3_000 }), nowMs: 2_000 })
    expect(await store().release({ claims: [{ id: withMatching.id, claimToken: 'poll' }], nowMs: 4_000 })).toEqual([withMatching.id])
    expect(await store().nextDueMs({ nowMs: 3_999, queues: [queue] })).toBe(4_000)
    expect(await claimDueIds(queue, 4_000, 2)).toEqual([later.id, withMatching.id])
    // Reserved for Matching (due at 35,000) and claimed before the confirmation: given back
    // after the reservation's end, it is due at the release, not at the reservation.
    const reservedQueue = fixture.queue('release-reserved')
    const reserved = await store().enqueue({ job: fixture.job(reservedQueue, { runAtMs: 5_000, visibilityTimeoutMs: 60_000 }), nowMs: 5_000 })
    expect((await store().takeDue({ nowMs: 5_000, reserveUntilMs: 35_000, limit: 10, queues: [reservedQueue] })).map((due) => due.id)).toEqual([reserved.id])
    expect((await store().claim({ id: reserved.id, claimToken: 'poll', nowMs: 5_000 })).kind).toBe('claimed')
    expect(await store().release({ claims: [{ id: reserved.id, claimToken: 'poll' }], nowMs: 40_000 })).toEqual([reserved.id])
    expect(await store().nextDueMs({ nowMs: 39_999, queues: [reservedQueue] })).toBe(40_000)
    // A job inserted claimed (eager dispatch) is given back at its insert's place.
    const eager = await store().enqueue({ job: fixture.job(queue, { runAtMs: 5_000 }), nowMs: 5_000, claimToken: 'eager' })
    const after = await store().enqueue({ job: fixture.job(queue, { runAtMs: 5_000 }), nowMs: 5_000 })
    expect(await store().release({ claims: [{ id: eager.id, claimToken: 'eager' }], nowMs: 6_000 })).toEqual([eager.id])
    expect(await store().getJob({ queue, id: eager.id })).toMatchObject({ state: 'pending', attempts: 0 })
    expect(await claimDueIds(queue, 6_000, 2)).toEqual([eager.id, after.id])
  })
}

// What a release skips or refuses, and that a released token is dead.
function releaseRefuses({ fixture, store, ref }: ReleaseHelpers): void {
  it('skips stale, lapsed, acked, dead and unknown claims, writing nothing for them; answers in input order', async () => {
    const queue = fixture.queue('release-skip')
    const later = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 10_000 }, 'later')
    const stale = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 10_000 }, 'stale')
    const lapsed = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 500 }, 'lapsed')
    const acked = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 10_000 }, 'acked')
    const dead = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 10_000 }, 'dead')
    const earlier = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 10_000 }, 'earlier')
    expect(await store().ack({ ...ref(acked), nowMs: 1_500 })).toBe(true)
    expect(await store().fail({ ...ref(dead), error: 'boom', nowMs: 1_500 })).toBe(true)
    const before = await Promise.all([stale, lapsed, dead].map((job) => store().getJob({ queue, id: job.id })))
    const released = await store().release({
      claims: [ref(earlier), ref(stale, 'wrong'), ref(lapsed), ref(acked), ref(dead), { id: fixture.id('unknown'), claimToken: 'x' }, ref(later)],
      nowMs: 2_000,
    })
    expect(released).toEqual([earlier.id, later.id])
    expect(await Promise.all([stale, lapsed, dead].map((job) => store().getJob({ queue, id: job.id })))).toEqual(before)
    expect(await store().getJob({ queue, id: acked.id })).toBeNull()
    // The lapsed claim is the store's to reclaim, with its attempt counted.
    expect(await store().claim({ id: lapsed.id, claimToken: 'again', nowMs: 2_000 })).toMatchObject({ kind: 'claimed', job: { attempts: 2 } })
  })

  it('judges a job named twice by its first claim only, and gives its attempt back once', async () => {
    const queue = fixture.queue('release-twice')
    const job = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 500 }, 'old')
    expect((await store().claim({ id: job.id, claimToken: 'current', nowMs: 2_000 })).kind).toBe('claimed')
    const current = { id: job.id, claimToken: 'current' }
    expect(await store().release({ claims: [{ id: job.id, claimToken: 'old' }, current], nowMs: 2_000 })).toEqual([])
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'processing', attempts: 2, claimToken: 'current' })
    expect(await store().release({ claims: [current, current], nowMs: 2_000 })).toEqual([job.id])
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'pending', attempts: 1 })
  })

  it('a released claim’s token is dead: no ack, heartbeat, retry, fail or release, before or after the next claim', async () => {
    const queue = fixture.queue('release-token')
    const job = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 10_000 }, 'gone')
    const old = ref(job)
    expect(await store().release({ claims: [old], nowMs: 1_500 })).toEqual([job.id])
    const refused = async () => {
      expect(await store().ack({ ...old, nowMs: 2_000 })).toBe(false)
      expect(await store().ackMany({ claims: [old], nowMs: 2_000 })).toEqual([])
      expect(await store().heartbeat({ ...old, extendMs: null, nowMs: 2_000 })).toBeNull()
      expect(await store().retry({ ...old, error: 'e', delayMs: 0, nowMs: 2_000 })).toBeNull()
      expect(await store().fail({ ...old, error: 'e', nowMs: 2_000 })).toBe(false)
      expect(await store().release({ claims: [old], nowMs: 2_000 })).toEqual([])
    }
    await refused()
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'pending', attempts: 0 })
    expect(await store().claim({ id: job.id, claimToken: 'next', nowMs: 2_000 })).toMatchObject({ kind: 'claimed' })
    await refused()
    expect(await store().ack({ id: job.id, claimToken: 'next', nowMs: 2_000 })).toBe(true)
  })

  it('refuses bad input before writing anything', async () => {
    const queue = fixture.queue('release-input')
    const job = await fixture.claimed(queue, 1_000, {}, 'kept')
    const claims = (count: number) => Array.from({ length: count }, () => ref(job))
    await expectRejection(store().release({ claims: [ref(job), { id: job.id, claimToken: '' }], nowMs: 1_000 }), 'InvalidInput', { field: 'claims[1].claimToken' })
    await expectRejection(store().release({ claims: [ref(job), { id: 7 as never, claimToken: 'x' }], nowMs: 1_000 }), 'InvalidInput', { field: 'claims[1].id' })
    await expectRejection(store().release({ claims: [ref(job)], nowMs: -1 }), 'InvalidInput', { field: 'nowMs' })
    await expectRejection(store().release({ claims: 'x' as never, nowMs: 1_000 }), 'InvalidInput', { field: 'claims' })
    await expectRejection(store().release({ claims: claims(1_001), nowMs: 1_000 }), 'InvalidInput', { field: 'claims' })
    expect(await store().getJob({ queue, id: job.id })).toEqual(job)
    // The bound is ackMany's: a full batch is accepted.
    expect(await store().release({ claims: claims(1_000), nowMs: 1_000 })).toEqual([job.id])
  })
}
