/**
 * JobDeliveryConformance — the due times that drive delivery (DESIGN.md §7): what is due when,
 * reservation before the Matching task is added, confirmation after, claim order, and which
 * claimable jobs already have a task with Matching; an ack that rides on the next claim.
 *
 * Readings pinned here: a job enqueued with runAt in the past is due at its enqueue time (it
 * cannot be ready before it exists); a claim makes the deadline the due time; a confirmation
 * at a stale revision (the job changed meanwhile) leaves the new due time alone; expired rows are
 * never handed out; every test scopes takeDue and nextDueMs to its own queues.
 */
import { describe, expect, it } from 'vitest'
import type { JobRecord } from '../JobStore.ts'
import type { JobFixture } from './JobFixture.ts'

/** Registers the delivery tests. */
export function describeJobDeliveryConformance(fixture: JobFixture): void {
  const helpers = deliveryHelpers(fixture)
  describe('job delivery due times', () => {
    claimOrderAndReservations(helpers)
    dueReads(helpers)
    claimDueCases(helpers)
    ridingAckCases(helpers)
  })
}

// What every group of these tests uses.
function deliveryHelpers(fixture: JobFixture) {
  const store = () => fixture.store()
  const take = (queue: string, nowMs: number, limit = 100) => store().takeDue({ nowMs, reserveUntilMs: nowMs + 30_000, limit, queues: [queue] })
  return { fixture, store, take }
}

type DeliveryHelpers = ReturnType<typeof deliveryHelpers>

// Claim order, reservations, confirmations and how due times follow a job.
function claimOrderAndReservations({ fixture, store, take }: DeliveryHelpers): void {
  it('hands out due jobs in claim order: priority DESC, due ASC, then the order they became ready', async () => {
    const queue = fixture.queue('order')
    const enqueue = (priority: number, runAtMs: number, nowMs: number) => store().enqueue({ job: fixture.job(queue, { priority, runAtMs }), nowMs })
    const late = await enqueue(1, 3_000, 1_000)
    const early = await enqueue(1, 2_000, 1_000)
    const high = await enqueue(5, 3_000, 1_000)
    const tieFirst = await enqueue(1, 2_000, 1_000)
    const pastRunAt = await enqueue(1, 10, 1_500)
    const notYet = await enqueue(9, 50_000, 1_000)
    const due = await take(queue, 3_000)
    expect(due.map((job) => job.id)).toEqual([high.id, pastRunAt.id, early.id, tieFirst.id, late.id])
    expect(due.map((job) => job.dueMs)).toEqual([3_000, 1_500, 2_000, 2_000, 3_000])
    expect(due.every((job) => job.queue === queue)).toBe(true)
    expect(due.some((job) => job.id === notYet.id)).toBe(false)
  })

  it('reserves what it hands out until reserveUntil; a confirmation clears the due time for good', async () => {
    const queue = fixture.queue('reserve')
    const a = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
    const b = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
    const first = await store().takeDue({ nowMs: 2_000, reserveUntilMs: 9_000, limit: 10, queues: [queue] })
    expect(first.map((job) => job.id)).toEqual([a.id, b.id])
    expect(await take(queue, 8_999)).toEqual([])
    expect(await store().nextDueMs({ nowMs: 2_000, queues: [queue] })).toBe(9_000)
    const firstA = first.find((job) => job.id === a.id)
    expect(await store().confirmDelivered({ deliveries: [{ id: a.id, revision: firstA?.revision ?? 0 }] })).toBe(1)
    const again = await take(queue, 9_000)
    expect(again.map((job) => job.id)).toEqual([b.id])
    expect(await store().nextDueMs({ nowMs: 9_000, queues: [queue] })).toBe(39_000)
  })

  it('a released reservation is due again at the given time; a stale release changes nothing', async () => {
    const queue = fixture.queue('release')
    const job = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
    const [reserved] = await take(queue, 1_000)
    expect(reserved?.id).toBe(job.id)
    expect(await store().releaseDelivered({ deliveries: [{ id: job.id, revision: (reserved?.revision ?? 0) + 1 }], dueMs: 2_000 })).toBe(0)
    expect(await store().nextDueMs({ nowMs: 1_000, queues: [queue] })).toBe(31_000)
    expect(await store().releaseDelivered({ deliveries: [{ id: job.id, revision: reserved?.revision ?? 0 }], dueMs: 2_000 })).toBe(1)
    expect(await store().nextDueMs({ nowMs: 1_000, queues: [queue] })).toBe(2_000)
    expect(await take(queue, 1_999)).toEqual([])
    expect((await take(queue, 2_000)).map((due) => due.id)).toEqual([job.id])
    expect(await store().releaseDelivered({ deliveries: [], dueMs: 2_000 })).toBe(0)
  })

  it('a claim after the reservation wins: the stale confirmation leaves the deadline as the due time', async () => {
    const queue = fixture.queue('stale-confirm')
    const job = await store().enqueue({ job: fixture.job(queue, { visibilityTimeoutMs: 5_000 }), nowMs: 1_000 })
    const [reserved] = await take(queue, 1_000)
    expect(reserved?.id).toBe(job.id)
    expect((await store().claim({ id: job.id, claimToken: 't', nowMs: 1_000 })).kind).toBe('claimed')
    expect(await store().confirmDelivered({ deliveries: [{ id: job.id, revision: reserved?.revision ?? 0 }] })).toBe(0)
    expect(await store().nextDueMs({ nowMs: 1_000, queues: [queue] })).toBe(6_000)
    expect((await take(queue, 6_000)).map((due) => due.id)).toEqual([job.id])
  })

  it('due times follow the job: enqueue max(runAt, now), claim and heartbeat the deadline, retry the new runAt', async () => {
    const queue = fixture.queue('due-times')
    const job = await store().enqueue({ job: fixture.job(queue, { runAtMs: 4_000, visibilityTimeoutMs: 10_000 }), nowMs: 1_000 })
    expect(await store().nextDueMs({ nowMs: 1_000, queues: [queue] })).toBe(4_000)
    await store().claim({ id: job.id, claimToken: 't', nowMs: 4_000 })
    expect(await store().nextDueMs({ nowMs: 4_000, queues: [queue] })).toBe(14_000)
    await store().heartbeat({ id: job.id, claimToken: 't', extendMs: 20_000, nowMs: 5_000 })
    expect(await store().nextDueMs({ nowMs: 5_000, queues: [queue] })).toBe(25_000)
    await store().retry({ id: job.id, claimToken: 't', error: 'e', delayMs: 3_000, nowMs: 6_000 })
    expect(await store().nextDueMs({ nowMs: 6_000, queues: [queue] })).toBe(9_000)
    await store().cancel({ queue, id: job.id })
    expect(await store().nextDueMs({ nowMs: 6_000, queues: [queue] })).toBeNull()
  })
}

// The due-time reads (dueQueues, deliverableCount) and what takeDue buries or skips.
function dueReads({ fixture, store, take }: DeliveryHelpers): void {
  it('lists the queues with due rows and their earliest due time; delivered and expired rows do not count', async () => {
    const early = fixture.queue('due-queues-early')
    const late = fixture.queue('due-queues-late')
    const delivered = fixture.queue('due-queues-delivered')
    await store().enqueue({ job: fixture.job(late, { runAtMs: 9_000 }), nowMs: 1_000 })
    await store().enqueue({ job: fixture.job(late, { runAtMs: 7_000 }), nowMs: 1_000 })
    await store().enqueue({ job: fixture.job(early, { runAtMs: 3_000 }), nowMs: 1_000 })
    await store().enqueue({ job: fixture.job(early, { runAtMs: 5_000, expiresAtMs: 1_500 }), nowMs: 1_000 })
    await store().enqueue({ job: fixture.job(delivered), nowMs: 1_000 })
    const taken = await take(delivered, 1_000)
    await store().confirmDelivered({ deliveries: taken.map((job) => ({ id: job.id, revision: job.revision })) })
    const ours = (await store().dueQueues({ nowMs: 2_000, limit: 10_000 })).filter((entry) => [early, late, delivered].includes(entry.queue))
    expect(ours).toEqual([
      { queue: early, nextDueMs: 3_000 },
      { queue: late, nextDueMs: 7_000 },
    ])
    await expect(store().dueQueues({ nowMs: 2_000, limit: 0 })).rejects.toMatchObject({ _tag: 'InvalidInput' })
  })

  it('lists the queue of an exhausted claim that lapsed before it expired, though it expired since: its scan buries it', async () => {
    const queue = fixture.queue('due-queues-exhausted')
    // One attempt, lapsing at 2,000; the job expires at 2,001, and the scan comes at 2,001.
    const exhausted = await fixture.claimed(queue, 1_000, { maxAttempts: 1, visibilityTimeoutMs: 1_000, expiresAtMs: 2_001 })
    expect((await store().dueQueues({ nowMs: 2_001, limit: 10_000 })).filter((entry) => entry.queue === queue)).toEqual([{ queue, nextDueMs: 2_000 }])
    expect(await take(queue, 2_001, 0)).toEqual([])
    // Dead of its attempts at its deadline, not of its expiry.
    expect(await store().getJob({ queue, id: exhausted.id })).toMatchObject({ state: 'dead', lastError: 'max attempts exceeded' })
    expect((await store().dueQueues({ nowMs: 2_001, limit: 10_000 })).filter((entry) => entry.queue === queue)).toEqual([])
  })

  it('counts claimable jobs whose task is with Matching, up to the limit', async () => {
    const queue = fixture.queue('deliverable')
    for (let i = 0; i < 3; i++) await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
    await store().enqueue({ job: fixture.job(queue, { runAtMs: 99_000 }), nowMs: 1_000 })
    expect(await store().deliverableCount({ queue, nowMs: 2_000, limit: 10 })).toBe(0)
    const due = await take(queue, 2_000)
    await store().confirmDelivered({ deliveries: due.map((job) => ({ id: job.id, revision: job.revision })) })
    expect(await store().deliverableCount({ queue, nowMs: 2_000, limit: 10 })).toBe(3)
    expect(await store().deliverableCount({ queue, nowMs: 2_000, limit: 2 })).toBe(2)
    expect(await store().deliverableCount({ queue: fixture.queue('empty'), nowMs: 2_000, limit: 10 })).toBe(0)
  })

  it('takeDue buries exhausted lapsed claims and never hands out expired rows', async () => {
    const queue = fixture.queue('take-bury')
    const exhausted = await fixture.claimed(queue, 1_000, { maxAttempts: 1, visibilityTimeoutMs: 1_000 })
    const expired = await store().enqueue({ job: fixture.job(queue, { expiresAtMs: 2_000 }), nowMs: 1_000 })
    const lapsed = await fixture.claimed(queue, 1_000, { maxAttempts: 2, visibilityTimeoutMs: 1_000 })
    // A limit of 0 reserves nothing and only buries.
    expect(await take(queue, 3_000, 0)).toEqual([])
    expect(await store().getJob({ queue, id: exhausted.id })).toMatchObject({ state: 'dead', lastError: 'max attempts exceeded' })
    // The lapsed claim is due since 2,000; rows already due are not a next due time.
    expect(await store().nextDueMs({ nowMs: 1_999, queues: [queue] })).toBe(2_000)
    expect(await store().nextDueMs({ nowMs: 3_000, queues: [queue] })).toBeNull()
    const due = await take(queue, 3_000)
    expect(due.map((job) => job.id)).toEqual([lapsed.id])
    expect(await store().getJob({ queue, id: exhausted.id })).toMatchObject({ state: 'dead', lastError: 'max attempts exceeded', diedAtMs: 2_000 })
    expect((await store().getJob({ queue, id: expired.id }))?.state).toBe('pending')
    expect(await store().nextDueMs({ nowMs: 3_000, queues: [queue] })).toBe(33_000)
  })
}

// claimDue: the head of the due rows, with Matching’s jobs in their places.
function claimDueCases({ fixture, store, take }: DeliveryHelpers): void {
  it('claimDue claims the head of the due rows in claim order, each with its token, as claim does', async () => {
    const queue = fixture.queue('claim-due')
    const enqueue = (priority: number, runAtMs: number) => store().enqueue({ job: fixture.job(queue, { priority, runAtMs, visibilityTimeoutMs: 5_000 }), nowMs: 1_000 })
    const late = await enqueue(1, 3_000)
    const early = await enqueue(1, 2_000)
    const high = await enqueue(5, 3_000)
    await enqueue(9, 50_000)
    const claimed = await store().claimDue({ queue, nowMs: 3_000, claimTokens: ['a', 'b'] })
    expect(claimed.map((job) => [job.id, job.claimToken])).toEqual([
      [high.id, 'a'],
      [early.id, 'b'],
    ])
    expect(claimed[0]).toMatchObject({ state: 'processing', attempts: 1, claimedAtMs: 3_000, deadlineMs: 8_000 })
    // The claim is a valid one: the deadline is the next due time (late, due at 3,000, is already
    // due), and an ack with the token lands.
    expect(await store().nextDueMs({ nowMs: 3_000, queues: [queue] })).toBe(8_000)
    expect(await store().ack({ id: high.id, claimToken: 'a', nowMs: 4_000 })).toBe(true)
    // More tokens than due rows: the rest is claimed, nothing more.
    expect((await store().claimDue({ queue, nowMs: 3_000, claimTokens: ['c', 'd', 'e'] })).map((job) => job.id)).toEqual([late.id])
    expect(await store().claimDue({ queue, nowMs: 3_000, claimTokens: [] })).toEqual([])
  })

  it('claimDue answers a large claim (a batch worker’s free room) and a small one alike: whole records, in claim order', async () => {
    const queue = fixture.queue('claim-due-large')
    const enqueued = []
    for (let n = 0; n < 24; n++) enqueued.push(await store().enqueue({ job: fixture.job(queue, { priority: n % 3, runAtMs: 1_000 + n, visibilityTimeoutMs: 5_000, key: `k${n}` }), nowMs: 1_000 }))
    const inClaimOrder = [...enqueued].sort((a, b) => b.priority - a.priority || a.runAtMs - b.runAtMs)
    const tokens = (count: number, prefix: string) => Array.from({ length: count }, (_, n) => `${prefix}${n}`)
    const large = await store().claimDue({ queue, nowMs: 3_000, claimTokens: tokens(20, 'large') })
    const small = await store().claimDue({ queue, nowMs: 3_000, claimTokens: tokens(8, 'small') })
    const expected = (job: JobRecord, claimToken: string) => ({ ...job, state: 'processing', attempts: 1, claimedAtMs: 3_000, claimToken, deadlineMs: 8_000, claims: [{ attempt: 1, atMs: 3_000 }] })
    expect(large).toEqual(inClaimOrder.slice(0, 20).map((job, n) => expected(job, `large${n}`)))
    expect(small).toEqual(inClaimOrder.slice(20).map((job, n) => expected(job, `small${n}`)))
  })

  it('claimDue takes a job with Matching in its place, and leaves reserved, expired, exhausted and other queues’ rows alone', async () => {
    const queue = fixture.queue('claim-due-skip')
    const withMatching = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
    const [reserved] = await take(queue, 1_000)
    await store().confirmDelivered({ deliveries: [{ id: withMatching.id, revision: reserved?.revision ?? 0 }] })
    const reservedJob = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
    await take(queue, 1_000)
    await store().enqueue({ job: fixture.job(queue, { expiresAtMs: 2_000 }), nowMs: 1_000 })
    const exhausted = await fixture.claimed(queue, 1_000, { maxAttempts: 1, visibilityTimeoutMs: 1_000 })
    const lapsed = await fixture.claimed(queue, 1_000, { maxAttempts: 2, visibilityTimeoutMs: 1_000 })
    await store().enqueue({ job: fixture.job(fixture.queue('claim-due-other')), nowMs: 1_000 })
    // A job with Matching was due before any row still in the store: it comes first, and no
    // Matching delivery holds up the rest of the queue.
    const claimed = await store().claimDue({ queue, nowMs: 3_000, claimTokens: ['a', 'b', 'c', 'd'] })
    expect(claimed.map((job) => job.id)).toEqual([withMatching.id, lapsed.id])
    expect(claimed[0]).toMatchObject({ attempts: 1, claimToken: 'a' })
    expect(claimed[1]).toMatchObject({ attempts: 2, claimToken: 'b' })
    // Its task, delivered later, finds the job started.
    expect(await store().claimMany({ claims: [{ id: withMatching.id, claimToken: 'late' }], nowMs: 3_000 })).toEqual([{ kind: 'already-started' }])
    expect((await store().getJob({ queue, id: reservedJob.id }))?.state).toBe('pending')
    expect((await store().getJob({ queue, id: exhausted.id }))?.state).toBe('processing')
    await expect(store().claimDue({ queue, nowMs: 3_000, claimTokens: [''] })).rejects.toMatchObject({ _tag: 'InvalidInput' })
  })

  it('claimDue takes a lapsed claim whose task is with Matching, first within its priority, and so does ackAndClaimDue', async () => {
    const queue = fixture.queue('claim-due-lapsed-matching')
    // A claim that lapsed (deadline 2,000), then reserved and handed to Matching by a pass.
    const lapsed = await fixture.claimed(queue, 1_000, { maxAttempts: 3, visibilityTimeoutMs: 1_000 })
    const [reserved] = (await take(queue, 2_500)).filter((due) => due.id === lapsed.id)
    expect(reserved?.id).toBe(lapsed.id)
    await store().confirmDelivered({ deliveries: [{ id: lapsed.id, revision: reserved?.revision ?? 0 }] })
    const [first] = await store().claimDue({ queue, nowMs: 3_000, claimTokens: ['a'] })
    expect(first).toMatchObject({ id: lapsed.id, attempts: 2, claimToken: 'a' })
    // The same row handed to Matching again after this claim lapsed: the riding claim takes it too.
    const [again] = (await take(queue, 4_500)).filter((due) => due.id === lapsed.id)
    await store().confirmDelivered({ deliveries: [{ id: lapsed.id, revision: again?.revision ?? 0 }] })
    const pending = await store().enqueue({ job: fixture.job(queue), nowMs: 4_000 })
    const ridden = await store().ackAndClaimDue({ acks: [{ id: pending.id, claimToken: 'none' }], queue, nowMs: 4_500, claimTokens: ['b', 'c'] })
    expect(ridden.claimed.map((job) => job.id)).toEqual([lapsed.id, pending.id])
  })

  it('claimDue keeps priority over a job with Matching, and a job with Matching given back is due in the store', async () => {
    const queue = fixture.queue('claim-due-matching-order')
    const withMatching = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
    const [reserved] = await take(queue, 1_000)
    await store().confirmDelivered({ deliveries: [{ id: withMatching.id, revision: reserved?.revision ?? 0 }] })
    const urgent = await store().enqueue({ job: fixture.job(queue, { priority: 5 }), nowMs: 2_000 })
    const later = await store().enqueue({ job: fixture.job(queue), nowMs: 2_000 })
    const [first, second] = await store().claimDue({ queue, nowMs: 2_000, claimTokens: ['a', 'b'] })
    expect([first?.id, second?.id]).toEqual([urgent.id, withMatching.id])
    // Given back, it is due now in the store (its task ended when it was claimed here).
    expect(await store().release({ claims: [{ id: withMatching.id, claimToken: 'b' }], nowMs: 2_500 })).toEqual([withMatching.id])
    expect((await store().claimDue({ queue, nowMs: 2_500, claimTokens: ['c', 'd'] })).map((job) => job.id)).toEqual([later.id, withMatching.id])
  })
}

// ackAndClaimDue: acks that ride on the next claim.
function ridingAckCases({ fixture, store, take }: DeliveryHelpers): void {
  it('ackAndClaimDue acks one claim and claims the head of the due rows, as ack then claimDue would', async () => {
    const queue = fixture.queue('ack-claim-due')
    const running = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 5_000 })
    const next = await store().enqueue({ job: fixture.job(queue, { visibilityTimeoutMs: 5_000 }), nowMs: 1_000 })
    const after = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
    const first = await store().ackAndClaimDue({ acks: [{ id: running.id, claimToken: running.claimToken as string }], queue, nowMs: 2_000, claimTokens: ['n'] })
    expect(first.acked).toEqual([running.id])
    expect(first.claimed.map((job) => [job.id, job.claimToken])).toEqual([[next.id, 'n']])
    expect(first.claimed[0]).toMatchObject({ state: 'processing', attempts: 1, claimedAtMs: 2_000, deadlineMs: 7_000 })
    expect(await store().getJob({ queue, id: running.id })).toBeNull()
    // An ack refused (its claim lapsed, or a stale token) still claims; none due claims nothing.
    const second = await store().ackAndClaimDue({ acks: [{ id: next.id, claimToken: 'stale' }], queue, nowMs: 2_000, claimTokens: ['m', 'o'] })
    expect(second).toMatchObject({ acked: [] })
    expect(second.claimed.map((job) => [job.id, job.claimToken])).toEqual([[after.id, 'm']])
    expect(await store().ackAndClaimDue({ acks: [{ id: next.id, claimToken: 'n' }], queue, nowMs: 2_000, claimTokens: ['p'] })).toEqual({ acked: [next.id], claimed: [] })
    // A bad input writes nothing: the ack is refused with the claim.
    await expect(store().ackAndClaimDue({ acks: [{ id: after.id, claimToken: 'm' }], queue, nowMs: 2_000, claimTokens: [''] })).rejects.toMatchObject({ _tag: 'InvalidInput' })
    expect((await store().getJob({ queue, id: after.id }))?.state).toBe('processing')
  })

  it('ackAndClaimDue acks several claims, each judged as ackMany judges it, and claims as claimDue would', async () => {
    const queue = fixture.queue('acks-claim-due')
    const done = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 5_000 })
    const alsoDone = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 5_000 })
    const lapsed = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 500 })
    const next = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
    const ref = (job: JobRecord, token = job.claimToken as string) => ({ id: job.id, claimToken: token })
    const answer = await store().ackAndClaimDue({
      acks: [ref(done), ref(alsoDone, 'stale'), ref(lapsed), ref(done), { id: 'unknown', claimToken: 'x' }],
      queue,
      nowMs: 2_000,
      claimTokens: ['a', 'b'],
    })
    expect(answer.acked).toEqual([done.id])
    // The lapsed claim's job is due again (since 1,500) and claimable: it is claimed, never acked.
    expect(answer.claimed.map((job) => [job.id, job.claimToken])).toEqual([
      [next.id, 'a'],
      [lapsed.id, 'b'],
    ])
    expect((await store().getJob({ queue, id: alsoDone.id }))?.state).toBe('processing')
    // Acks without claims, and claims without acks, are the two calls alone.
    expect(await store().ackAndClaimDue({ acks: [ref(alsoDone)], queue, nowMs: 2_000, claimTokens: [] })).toEqual({ acked: [alsoDone.id], claimed: [] })
    expect(await store().ackAndClaimDue({ acks: [], queue, nowMs: 2_000, claimTokens: ['c'] })).toEqual({ acked: [], claimed: [] })
  })

  it('a one-at-a-time drain of riding claims keeps claim order through a job with Matching and a lapsed claim, and after they are gone', async () => {
    const queue = fixture.queue('riding-drain-rare-heads')
    const withMatching = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
    const [reserved] = await take(queue, 1_000)
    await store().confirmDelivered({ deliveries: [{ id: withMatching.id, revision: reserved?.revision ?? 0 }] })
    const running = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 60_000 })
    // Lapses at 2,000 and stays in the store: no pass hands it to Matching.
    const lapsed = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 1_000, maxAttempts: 3 })
    const early = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
    const late = await store().enqueue({ job: fixture.job(queue, { runAtMs: 2_500 }), nowMs: 1_000 })
    // With Matching first within the priority, then in due order: 1,000, the lapsed claim's 2,000, 2,500.
    const expected = [withMatching.id, early.id, lapsed.id, late.id]
    let held: JobRecord = running
    for (const [step, id] of expected.entries()) {
      const answer = await store().ackAndClaimDue({ acks: [{ id: held.id, claimToken: held.claimToken as string }], queue, nowMs: 3_000, claimTokens: [`t${step}`] })
      expect(answer.acked, `step ${step}`).toEqual([held.id])
      expect(answer.claimed.map((job) => [job.id, job.claimToken]), `step ${step}`).toEqual([[id, `t${step}`]])
      // The lapsed claim is taken again, its attempt counted; the others start their first.
      expect(answer.claimed[0]?.attempts, `step ${step}`).toBe(id === lapsed.id ? 2 : 1)
      held = answer.claimed[0] as JobRecord
    }
    expect(await store().ackAndClaimDue({ acks: [{ id: held.id, claimToken: held.claimToken as string }], queue, nowMs: 3_000, claimTokens: ['end'] })).toEqual({ acked: [late.id], claimed: [] })
  })
}
