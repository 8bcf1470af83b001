/**
 * JobFenceConformance — claims fenced by a physical queue's range (JobStore.ts's `ClaimFence`):
 * every claiming operation with a fence at the queue's current range claims as it would without
 * one; once another owner acquired the queue (range + 1), or when the queue was never acquired,
 * it is refused with `OwnershipLost` (shaped as the Matching store's, `maybeCommitted` false) and
 * nothing is written — no claim, no riding ack, no insert. Without a fence nothing changes.
 *
 * Readings pinned here: a fenced call that claims nothing under a good fence answers as usual
 * (an empty claim is not a refusal); a call that asks for no claim (no token, no claims) is not
 * checked; a fence on an enqueue without a claim token is `InvalidInput`.
 */
import { describe, expect, it } from 'vitest'
import { encodeQueueKey } from '../../../domain/QueueKey.ts'
import type { ClaimFence, JobRecord } from '../JobStore.ts'
import { type JobFixture, ownedQueue } from './JobFixture.ts'

// The fixture and the helpers the claim fence cases share.
function fenceKitOf(fixture: JobFixture) {
  const store = () => fixture.store()

  // A job queue, the physical queue its claims go through, acquired once: the owner's fence.
  const owned = (label: string) => ownedQueue(fixture, label)

  const lost = (fence: ClaimFence, currentRangeId: number | null) => ({
    _tag: 'OwnershipLost',
    queue: encodeQueueKey(fence.queueKey),
    rangeId: fence.rangeId,
    currentRangeId,
    maybeCommitted: false,
  })
  // Every live job of `queue` and its next due time: what a refused call must leave as it was.
  const rowsOf = async (queue: string): Promise<{ jobs: ReadonlyArray<JobRecord>; nextDueMs: number | null }> => {
    const pending = await store().listJobs({ queue, state: 'pending', limit: 100, afterId: null })
    const processing = await store().listJobs({ queue, state: 'processing', limit: 100, afterId: null })
    return { jobs: [...pending, ...processing], nextDueMs: await store().nextDueMs({ nowMs: 0, queues: [queue] }) }
  }
  const enqueueDue = async (queue: string, count: number) => {
    const jobs: JobRecord[] = []
    for (let index = 0; index < count; index++) jobs.push(await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 }))
    return jobs
  }

  return { fixture, store, owned, lost, rowsOf, enqueueDue }
}

/** Registers the fence tests. */
export function describeJobFenceConformance(fixture: JobFixture): void {
  const kit = fenceKitOf(fixture)
  describe('claims fenced by the range', () => {
    fenceCases(kit)
  })
}

function fenceCases(kit: ReturnType<typeof fenceKitOf>): void {
  const { fixture, store, owned, lost, rowsOf, enqueueDue } = kit
  it('claimDue: claims under the current range; refused, writing nothing, once the queue is taken over', async () => {
    const { queue, fence, takeOver } = await owned('fence-claim-due')
    const [first, second] = await enqueueDue(queue, 3)
    const claimed = await store().claimDue({ queue, nowMs: 2_000, claimTokens: ['t1'], fence })
    expect(claimed.map((job) => [job.id, job.claimToken])).toEqual([[first?.id, 't1']])
    const current = await takeOver()
    const before = await rowsOf(queue)
    await expect(store().claimDue({ queue, nowMs: 2_000, claimTokens: ['t2', 't3'], fence })).rejects.toMatchObject(lost(fence, current))
    expect(await rowsOf(queue)).toEqual(before)
    // The new owner's fence claims; no fence at all claims as it always did.
    expect((await store().claimDue({ queue, nowMs: 2_000, claimTokens: ['t4'], fence: { ...fence, rangeId: current } })).map((job) => job.id)).toEqual([second?.id])
    expect(await store().claimDue({ queue, nowMs: 2_000, claimTokens: ['t5'] })).toHaveLength(1)
  })

  it('claimDue: a good fence that finds nothing due answers no jobs; a large batch is fenced too', async () => {
    const { queue, fence, takeOver } = await owned('fence-claim-due-batch')
    expect(await store().claimDue({ queue, nowMs: 2_000, claimTokens: ['t0'], fence })).toEqual([])
    await enqueueDue(queue, 20)
    const tokens = Array.from({ length: 17 }, (_, index) => `big${index}`)
    expect(await store().claimDue({ queue, nowMs: 2_000, claimTokens: tokens, fence })).toHaveLength(17)
    const current = await takeOver()
    const before = await rowsOf(queue)
    await expect(store().claimDue({ queue, nowMs: 2_000, claimTokens: tokens.map((token) => `${token}'`), fence })).rejects.toMatchObject(lost(fence, current))
    expect(await rowsOf(queue)).toEqual(before)
  })

  it('ackAndClaimDue: a stale fence refuses the riding acks with the claim; the caller acks alone after', async () => {
    const { queue, fence, takeOver } = await owned('fence-ack-and-claim')
    await enqueueDue(queue, 6)
    const held = await store().claimDue({ queue, nowMs: 2_000, claimTokens: ['h1', 'h2', 'h3'], fence })
    const [one, two, three] = held.map((job) => ({ id: job.id, claimToken: job.claimToken as string }))
    if (one === undefined || two === undefined || three === undefined) return expect.fail('three jobs held')
    const settled = await store().ackAndClaimDue({ acks: [one], queue, nowMs: 2_000, claimTokens: ['n1'], fence })
    expect(settled.acked).toEqual([one.id])
    expect(settled.claimed).toHaveLength(1)
    const current = await takeOver()
    const before = await rowsOf(queue)
    // One riding ack and several: each its own statement text.
    await expect(store().ackAndClaimDue({ acks: [two], queue, nowMs: 2_000, claimTokens: ['n2'], fence })).rejects.toMatchObject(lost(fence, current))
    await expect(store().ackAndClaimDue({ acks: [two, three], queue, nowMs: 2_000, claimTokens: ['n3', 'n4'], fence })).rejects.toMatchObject(lost(fence, current))
    expect(await rowsOf(queue)).toEqual(before)
    expect((await store().getJob({ queue, id: two.id }))?.claimToken).toBe(two.claimToken)
    // With no token it is ackMany, which no fence guards.
    expect(await store().ackAndClaimDue({ acks: [two], queue, nowMs: 2_000, claimTokens: [], fence })).toEqual({ acked: [two.id], claimed: [] })
    expect(await store().ackMany({ claims: [three], nowMs: 2_000 })).toEqual([three.id])
  })

  it('claim and claimMany: fenced like the others; a stale fence refuses the whole batch', async () => {
    const { queue, fence, takeOver } = await owned('fence-claim')
    const [a, b, c, d] = await enqueueDue(queue, 4)
    if (a === undefined || b === undefined || c === undefined || d === undefined) return expect.fail('four jobs')
    expect((await store().claim({ id: a.id, claimToken: 'ca', nowMs: 2_000, fence })).kind).toBe('claimed')
    const outcomes = await store().claimMany({ claims: [{ id: b.id, claimToken: 'cb' }, { id: a.id, claimToken: 'ca2' }], nowMs: 2_000, fence })
    expect(outcomes.map((outcome) => outcome.kind)).toEqual(['claimed', 'already-started'])
    const current = await takeOver()
    const before = await rowsOf(queue)
    await expect(store().claim({ id: c.id, claimToken: 'cc', nowMs: 2_000, fence })).rejects.toMatchObject(lost(fence, current))
    await expect(store().claimMany({ claims: [{ id: c.id, claimToken: 'cc' }], nowMs: 2_000, fence })).rejects.toMatchObject(lost(fence, current))
    await expect(store().claimMany({ claims: [{ id: c.id, claimToken: 'cc' }, { id: d.id, claimToken: 'cd' }], nowMs: 2_000, fence })).rejects.toMatchObject(
      lost(fence, current),
    )
    expect(await rowsOf(queue)).toEqual(before)
    expect((await store().claim({ id: c.id, claimToken: 'cc', nowMs: 2_000 })).kind).toBe('claimed')
  })

  it('enqueue with a claim token: a stale fence inserts nothing; a fence needs a claim token', async () => {
    const { queue, fence, takeOver } = await owned('fence-enqueue')
    const job = fixture.job(queue, { runAtMs: 1_000 })
    const inserted = await store().enqueue({ job, nowMs: 1_000, claimToken: 'e1', fence })
    expect([inserted.state, inserted.claimToken, inserted.attempts]).toEqual(['processing', 'e1', 1])
    // A key's holder answers unclaimed, as without the fence.
    const keyed = await store().enqueue({ job: fixture.job(queue, { runAtMs: 1_000, key: 'k' }), nowMs: 1_000 })
    const holder = await store().enqueue({ job: fixture.job(queue, { runAtMs: 1_000, key: 'k' }), nowMs: 1_000, claimToken: 'e2', fence })
    expect([holder.id, holder.state]).toEqual([keyed.id, 'pending'])
    await expect(store().enqueue({ job: fixture.job(queue), nowMs: 1_000, fence })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'fence' })
    const current = await takeOver()
    const stale = fixture.job(queue, { runAtMs: 1_000 })
    await expect(store().enqueue({ job: stale, nowMs: 1_000, claimToken: 'e3', fence })).rejects.toMatchObject(lost(fence, current))
    expect(await store().getJob({ queue, id: stale.id })).toBeNull()
    // A producer's enqueue stays unfenced.
    expect((await store().enqueue({ job: stale, nowMs: 1_000 })).state).toBe('pending')
  })

  it('a physical queue never acquired refuses every fence; a malformed fence is InvalidInput', async () => {
    const queue = fixture.queue('fence-unknown')
    const [job] = await enqueueDue(queue, 1)
    const fence: ClaimFence = { queueKey: { namespace: 'jobs', family: queue, type: 'activity', partition: 3, version: null }, rangeId: 1 }
    const before = await rowsOf(queue)
    await expect(store().claimDue({ queue, nowMs: 2_000, claimTokens: ['u1'], fence })).rejects.toMatchObject(lost(fence, null))
    await expect(store().claim({ id: job?.id as string, claimToken: 'u2', nowMs: 2_000, fence })).rejects.toMatchObject(lost(fence, null))
    await expect(store().enqueue({ job: fixture.job(queue), nowMs: 1_000, claimToken: 'u3', fence })).rejects.toMatchObject(lost(fence, null))
    expect(await rowsOf(queue)).toEqual(before)
    await expect(store().claimDue({ queue, nowMs: 2_000, claimTokens: ['u4'], fence: { ...fence, rangeId: 0 } })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'fence.rangeId' })
    await expect(store().claimDue({ queue, nowMs: 2_000, claimTokens: ['u5'], fence: { ...fence, queueKey: { ...fence.queueKey, type: 'job' as never } } })).rejects.toMatchObject({
      _tag: 'InvalidInput',
      field: 'fence.queueKey.type',
    })
  })
}
