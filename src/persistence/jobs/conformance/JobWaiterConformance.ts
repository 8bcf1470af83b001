/**
 * JobWaiterConformance — the hand-over at enqueue across engines (HandOver.ts): claims registered
 * as waiters with `addWaiter`, taken back with `removeWaiter`, and an enqueue with `toWaiter`
 * that inserts its job claimed with the queue's first waiter's token — only under the waiter's
 * current fence, only while nothing else of the queue is claimable, never in a paused queue,
 * never for a job something guards at its claim — and otherwise enqueues as any enqueue does.
 * Across two stores on one database, a waiter registered through one is taken through the other,
 * and two enqueues racing for one waiter hand over one job.
 *
 * A job claimed for a waiter its engine took back meanwhile is given back by its token
 * (`releaseHandedOver`).
 *
 * Readings pinned here: a waiter taken is gone (`removeWaiter` answers false); a waiter under a
 * stale fence is passed over, not taken; a registration again under one token renews it in place
 * of the old.
 */
import { describe, expect, it } from 'vitest'
import type { ClaimFence, JobRecord } from '../JobStore.ts'
import { type JobFixture, ownedQueue } from './JobFixture.ts'

// The fixture and the helpers the waiter cases share.
function waiterKitOf(fixture: JobFixture) {
  const store = () => fixture.store()
  // A job queue whose physical queue is acquired once: the owner's fence for its waiters.
  const owned = (label: string) => ownedQueue(fixture, label)

  const wait = (queue: string, fence: ClaimFence, claimToken: string, hostId = 'worker-host', untilMs = 10_000) =>
    store().addWaiters({ queue, claimTokens: [claimToken], hostId, untilMs, nowMs: 1_000, fence })
  const handOver = (queue: string, nowMs = 2_000, overrides = {}) => store().enqueue({ job: fixture.job(queue, { runAtMs: nowMs, ...overrides }), nowMs, toWaiter: true })
  const expectPending = (job: JobRecord & { readonly handedTo?: unknown }) => {
    expect(job.state).toBe('pending')
    expect(job.claimToken).toBeNull()
    expect(job.handedTo).toBeUndefined()
  }
  return { fixture, store, owned, wait, handOver, expectPending }
}

/** Registers the waiter tests. */
export function describeJobWaiterConformance(fixture: JobFixture): void {
  const kit = waiterKitOf(fixture)
  describe('the hand-over at enqueue to a waiter', () => {
    handOverCases(kit)
    refusalCases(kit)
  })
}

function handOverCases(kit: ReturnType<typeof waiterKitOf>): void {
  const { fixture, store, owned, wait, handOver, expectPending } = kit
  it('an enqueue takes the queue’s first waiter: inserted claimed with its token, answered with its engine and fence', async () => {
    const { queue, fence } = await owned('waiter-taken')
    await wait(queue, fence, 'first', 'host-a')
    await wait(queue, fence, 'second', 'host-b')
    const job = await handOver(queue)
    expect(job).toMatchObject({ state: 'processing', claimToken: 'first', attempts: 1, claimedAtMs: 2_000, deadlineMs: 2_000 + 30_000 })
    expect(job.handedTo).toEqual({ hostId: 'host-a', fence })
    // The store holds it as any claim: the token is valid, the job is not claimable.
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'processing', claimToken: 'first' })
    expect(await store().claimDue({ queue, nowMs: 2_000, claimTokens: ['other'] })).toEqual([])
    expect(await store().ack({ id: job.id, claimToken: 'first', nowMs: 2_001 })).toBe(true)
    // The waiter taken is gone; the next enqueue takes the next waiter.
    expect(await store().removeWaiters({ claimTokens: ['first'] })).toEqual([])
    expect((await handOver(queue, 2_100)).handedTo?.hostId).toBe('host-b')
    expectPending(await handOver(queue, 2_200))
  })

  it('tokens registered in one call are waiters in their order, taken back together', async () => {
    const { queue, fence } = await owned('waiter-batch')
    await store().addWaiters({ queue, claimTokens: ['b1', 'b2', 'b3'], hostId: 'host', untilMs: 10_000, nowMs: 1_000, fence })
    expect((await handOver(queue, 2_000)).claimToken).toBe('b1')
    expect(await store().removeWaiters({ claimTokens: ['b1', 'b3', 'never'] })).toEqual(['b3'])
    expect((await handOver(queue, 2_100)).claimToken).toBe('b2')
    expect(await store().removeWaiters({ claimTokens: [] })).toEqual([])
  })

  it('a waiter taken back is not handed anything; one registered again is renewed in its place', async () => {
    const { queue, fence } = await owned('waiter-removed')
    await wait(queue, fence, 'gone')
    expect(await store().removeWaiters({ claimTokens: ['gone'] })).toEqual(['gone'])
    expect(await store().removeWaiters({ claimTokens: ['gone'] })).toEqual([])
    expect(await store().removeWaiters({ claimTokens: ['never-registered'] })).toEqual([])
    expectPending(await handOver(queue))
    // Registered twice under one token: one waiter, its later time.
    const other = fixture.queue('waiter-renewed')
    await wait(other, fence, 'twice', 'host', 1_500)
    await wait(other, fence, 'twice', 'host', 9_000)
    expect((await handOver(other, 2_000)).claimToken).toBe('twice')
    expect(await store().removeWaiters({ claimTokens: ['twice'] })).toEqual([])
  })

  it('the job an enqueue claimed for a waiter taken meanwhile is given back by its token, once, and only while its claim holds', async () => {
    const { queue, fence } = await owned('waiter-given-back')
    await store().addWaiters({ queue, claimTokens: ['lost', 'acked', 'idle'], hostId: 'host', untilMs: 10_000, nowMs: 1_000, fence })
    const lost = await handOver(queue, 2_000)
    const acked = await handOver(queue, 2_000)
    expect(await store().ack({ id: acked.id, claimToken: 'acked', nowMs: 2_001 })).toBe(true)
    // Taken back: the idle waiter was still there; the two others were taken by the enqueues.
    expect(await store().removeWaiters({ claimTokens: ['lost', 'acked', 'idle'] })).toEqual(['idle'])
    // Another queue's token, one never taken, and an acked job's give nothing back.
    expect(await store().releaseHandedOver({ queue: fixture.queue('waiter-given-back-other'), claimTokens: ['lost'], nowMs: 2_500 })).toEqual([])
    expect(await store().releaseHandedOver({ queue, claimTokens: ['idle', 'acked', 'lost', 'never'], nowMs: 2_500 })).toEqual([{ id: lost.id, claimToken: 'lost' }])
    // Pending again as a release leaves it: the attempt and the claim taken back, claimable at once.
    expect(await store().getJob({ queue, id: lost.id })).toMatchObject({ state: 'pending', attempts: 0, claimToken: null, deadlineMs: null, claims: [] })
    expect(await store().releaseHandedOver({ queue, claimTokens: ['lost'], nowMs: 2_600 })).toEqual([])
    expect((await store().claimDue({ queue, nowMs: 2_700, claimTokens: ['next'] })).map((job) => job.id)).toEqual([lost.id])
    // A claim that lapsed is not given back.
    await wait(queue, fence, 'lapsed')
    const lapsed = await handOver(queue, 3_000)
    expect(await store().releaseHandedOver({ queue, claimTokens: ['lapsed'], nowMs: lapsed.deadlineMs as number })).toEqual([])
    await expect(store().releaseHandedOver({ queue, claimTokens: [''], nowMs: 3_000 })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'claimTokens[0]' })
  })

  it('across two stores on one database: a waiter registered through one is taken through the other, and two racing enqueues hand over one job', async () => {
    const { queue, fence } = await owned('waiter-peer')
    await wait(queue, fence, 'only')
    const peer = fixture.peer()
    const [a, b] = await Promise.all([
      peer.enqueue({ job: fixture.job(queue, { runAtMs: 2_000 }), nowMs: 2_000, toWaiter: true }),
      store().enqueue({ job: fixture.job(queue, { runAtMs: 2_000 }), nowMs: 2_000, toWaiter: true }),
    ])
    const handed = [a, b].filter((job) => job.handedTo !== undefined)
    expect(handed.map((job) => job.claimToken)).toEqual(['only'])
    expect([a, b].filter((job) => job.state === 'pending')).toHaveLength(1)
  })
}

function refusalCases(kit: ReturnType<typeof waiterKitOf>): void {
  const { fixture, store, owned, wait, handOver, expectPending } = kit
  it('nothing is handed over while another row of the queue is claimable, so an older job is never passed by', async () => {
    const { queue, fence } = await owned('waiter-older-first')
    const older = await store().enqueue({ job: fixture.job(queue, { runAtMs: 1_500 }), nowMs: 1_500 })
    await wait(queue, fence, 'kept')
    expectPending(await handOver(queue))
    expect(await store().removeWaiters({ claimTokens: ['kept'] })).toEqual(['kept'])
    // A job due later does not stand in the way.
    const later = fixture.queue('waiter-later-behind')
    await store().enqueue({ job: fixture.job(later, { runAtMs: 50_000 }), nowMs: 1_500 })
    await wait(later, fence, 'taken')
    expect((await handOver(later)).claimToken).toBe('taken')
    expect(older.state).toBe('pending')
  })

  it('nothing is handed over under a stale fence, to a waiter whose time passed, or in a paused queue; a waiter under a stale fence is passed over', async () => {
    const stale = await owned('waiter-stale')
    await wait(stale.queue, stale.fence, 'stale')
    const current = await stale.takeOver()
    expectPending(await handOver(stale.queue))
    // The new owner's waiter, registered after, is taken (once the job just enqueued is claimed,
    // nothing older stands before the next); the stale one stays for its engine to take back.
    expect(await store().claimDue({ queue: stale.queue, nowMs: 2_000, claimTokens: ['first'] })).toHaveLength(1)
    await wait(stale.queue, { ...stale.fence, rangeId: current }, 'current')
    expect((await handOver(stale.queue, 2_100)).claimToken).toBe('current')
    expect(await store().removeWaiters({ claimTokens: ['stale'] })).toEqual(['stale'])

    const late = await owned('waiter-late')
    await wait(late.queue, late.fence, 'late', 'host', 2_000)
    expectPending(await handOver(late.queue, 2_000))

    const paused = await owned('waiter-paused')
    await wait(paused.queue, paused.fence, 'paused')
    await store().pauseQueue({ queue: paused.queue, nowMs: 1_000 })
    expectPending(await handOver(paused.queue))
    expect(await store().removeWaiters({ claimTokens: ['paused'] })).toEqual(['paused'])
  })

  it('a job guarded at its claim, not yet due, or too large for one message is enqueued as any other, the waiter kept', async () => {
    const { queue, fence } = await owned('waiter-not-candidate')
    await wait(queue, fence, 'kept')
    expectPending(await handOver(queue, 2_000, { runAtMs: 3_000 }))
    expectPending(await handOver(queue, 2_000, { key: fixture.id('key') }))
    expectPending(await handOver(queue, 2_000, { fairnessKey: 'tenant' }))
    expectPending(await handOver(queue, 2_000, { payload: 'x'.repeat(5_000) }))
    expect(await store().removeWaiters({ claimTokens: ['kept'] })).toEqual(['kept'])
  })

  it('bad input is InvalidInput: a waiter without a fence, a hand-over beside a claim token', async () => {
    const queue = fixture.queue('waiter-input')
    await expect(store().addWaiters({ queue, claimTokens: ['t'], hostId: 'h', untilMs: 2_000, nowMs: 1_000 } as never)).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'fence' })
    const { fence } = await ownedQueue(fixture, 'waiter-input-tokens')
    await expect(store().addWaiters({ queue, claimTokens: [], hostId: 'h', untilMs: 2_000, nowMs: 1_000, fence })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'claimTokens' })
    await expect(store().addWaiters({ queue, claimTokens: ['t', 't'], hostId: 'h', untilMs: 2_000, nowMs: 1_000, fence })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'claimTokens' })
    await expect(store().enqueue({ job: fixture.job(queue), nowMs: 2_000, claimToken: 't', toWaiter: true })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'toWaiter' })
  })
}
