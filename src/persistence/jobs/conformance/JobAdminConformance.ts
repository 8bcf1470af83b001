/**
 * JobAdminConformance — what a service author and an operator need beside the lifecycle, on a
 * job store: idempotent enqueue by key, counts and keyset pages by state, and moving a dead job
 * back as a fresh pending one.
 *
 * Readings pinned here: a key is held only by a live job of its queue (the same key in another
 * queue, or on a dead job, does not conflict); concurrent enqueues of one key leave exactly one
 * job; a revived dead job keeps its id and key, starts at attempt 0, drops a passed expiry, and
 * is refused (nothing changed) while its key is held by a live job.
 */
import { describe, expect, it } from 'vitest'
import { expectRejection } from '../../queues/conformance/ConformanceFixture.ts'
import type { JobFixture } from './JobFixture.ts'

/** Registers the admin tests. */
export function describeJobAdminConformance(fixture: JobFixture): void {
  const helpers = adminHelpers(fixture)
  describe('job keys and admin', () => {
    jobKeys(helpers)
    adminOperations(helpers)
  })
}

// What every group of these tests uses.
function adminHelpers(fixture: JobFixture) {
  const store = () => fixture.store()
  return { fixture, store }
}

type AdminHelpers = ReturnType<typeof adminHelpers>

// Job keys: a live holder answers the enqueue.
function jobKeys({ fixture, store }: AdminHelpers): void {
  it('a key held by a live job makes enqueue return that job and write nothing; once it is gone the key is free', async () => {
    const queue = fixture.queue('key')
    const first = await store().enqueue({ job: fixture.job(queue, { key: 'order-7', payload: 'first' }), nowMs: 1_000 })
    expect(first).toMatchObject({ key: 'order-7', payload: 'first', state: 'pending' })
    const again = fixture.job(queue, { key: 'order-7', payload: 'second' })
    expect(await store().enqueue({ job: again, nowMs: 2_000 })).toEqual(first)
    expect(await store().getJob({ queue, id: again.id })).toBeNull()
    const elsewhere = await store().enqueue({ job: fixture.job(fixture.queue('key-other'), { key: 'order-7' }), nowMs: 2_000 })
    expect(elsewhere.id).not.toBe(first.id)
    // Processing still holds the key.
    const claimed = await store().claim({ id: first.id, claimToken: 'tok', nowMs: 2_000 })
    expect(claimed.kind).toBe('claimed')
    expect((await store().enqueue({ job: fixture.job(queue, { key: 'order-7' }), nowMs: 2_500 })).id).toBe(first.id)
    expect(await store().ack({ id: first.id, claimToken: 'tok', nowMs: 3_000 })).toBe(true)
    const next = fixture.job(queue, { key: 'order-7', payload: 'third' })
    expect(await store().enqueue({ job: next, nowMs: 3_000 })).toMatchObject({ id: next.id, key: 'order-7', payload: 'third' })
    // A dead job keeps its key but does not hold it.
    await store().claim({ id: next.id, claimToken: 'tok2', nowMs: 3_000 })
    await store().fail({ id: next.id, claimToken: 'tok2', error: 'no', nowMs: 3_100 })
    expect(await store().getJob({ queue, id: next.id })).toMatchObject({ state: 'dead', key: 'order-7' })
    const fourth = fixture.job(queue, { key: 'order-7' })
    expect((await store().enqueue({ job: fourth, nowMs: 3_200 })).id).toBe(fourth.id)
  })

  it('concurrent enqueues of one key leave exactly one job', async () => {
    const queue = fixture.queue('key-race')
    const jobs = Array.from({ length: 8 }, () => fixture.job(queue, { key: 'once' }))
    const stored = await Promise.all(jobs.map((job) => store().enqueue({ job, nowMs: 1_000 })))
    const ids = new Set(stored.map((job) => job.id))
    expect(ids.size).toBe(1)
    expect(await store().countJobs({ queue })).toEqual({ pending: 1, processing: 0, dead: 0 })
  })
}

// Counts, lists, retryDead and bad admin input.
function adminOperations({ fixture, store }: AdminHelpers): void {
  it('counts jobs by state and lists them in keyset pages by id', async () => {
    const queue = fixture.queue('admin')
    expect(await store().countJobs({ queue })).toEqual({ pending: 0, processing: 0, dead: 0 })
    const pending = []
    for (let i = 0; i < 5; i++) pending.push(await store().enqueue({ job: fixture.job(queue, { runAtMs: 50_000 }), nowMs: 1_000 }))
    const held = await fixture.claimed(queue, 1_000, {}, 'tok')
    const failed = await fixture.claimed(queue, 1_000, {}, 'tok-f')
    await store().fail({ id: failed.id, claimToken: 'tok-f', error: 'broken', stack: 'at h', nowMs: 1_200 })
    expect(await store().countJobs({ queue })).toEqual({ pending: 5, processing: 1, dead: 1 })
    const everyQueue = await store().countQueues({ limit: 1_000 })
    expect(everyQueue.filter((counts) => counts.queue === queue)).toEqual([{ queue, pending: 5, processing: 1, dead: 1 }])
    expect(everyQueue.map((counts) => counts.queue)).toEqual(everyQueue.map((counts) => counts.queue).toSorted())
    expect(await store().countQueues({ limit: 1 })).toHaveLength(1)
    const ids = pending.map((job) => job.id).sort()
    const page1 = await store().listJobs({ queue, state: 'pending', limit: 2, afterId: null })
    expect(page1.map((job) => job.id)).toEqual(ids.slice(0, 2))
    const page2 = await store().listJobs({ queue, state: 'pending', limit: 10, afterId: page1[1]?.id ?? null })
    expect(page2.map((job) => job.id)).toEqual(ids.slice(2))
    expect(await store().listJobs({ queue, state: 'processing', limit: 10, afterId: null })).toEqual([await store().getJob({ queue, id: held.id })])
    expect(await store().listJobs({ queue, state: 'dead', limit: 10, afterId: null })).toEqual([
      expect.objectContaining({ id: failed.id, state: 'dead', lastError: 'broken', lastHandlerError: 'broken', lastHandlerStack: 'at h' }),
    ])
    expect(await store().listJobs({ queue, state: 'dead', limit: 10, afterId: failed.id })).toEqual([])
  })

  it('retryDead moves a dead job back as a fresh pending job with the same id, once', async () => {
    const queue = fixture.queue('revive')
    const job = await fixture.claimed(queue, 1_000, { maxAttempts: 1, expiresAtMs: 20_000, priority: 4 }, 'tok')
    await store().retry({ id: job.id, claimToken: 'tok', error: 'boom', delayMs: 0, nowMs: 2_000 })
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'dead', lastError: 'max attempts exceeded' })
    expect(await store().retryDead({ queue: fixture.queue('elsewhere'), id: job.id, nowMs: 3_000 })).toEqual({ kind: 'not-dead' })
    const outcome = await store().retryDead({ queue, id: job.id, nowMs: 3_000 })
    const revived = {
      ...job,
      state: 'pending',
      attempts: 0,
      createdAtMs: 3_000,
      runAtMs: 3_000,
      claimedAtMs: null,
      claimToken: null,
      deadlineMs: null,
      lastError: null,
      diedAtMs: null,
      lastHandlerError: 'boom',
      lastHandlerStack: null,
      attemptErrors: [{ attempt: 1, error: 'boom', stack: null, atMs: 2_000 }],
      claims: [
        { attempt: 1, atMs: 1_000 },
        { attempt: 0, atMs: 3_000 },
      ],
    }
    expect(outcome).toEqual({ kind: 'retried', job: revived })
    expect(await store().getJob({ queue, id: job.id })).toEqual(revived)
    expect(await store().retryDead({ queue, id: job.id, nowMs: 3_000 })).toEqual({ kind: 'not-dead' })
    const due = await store().takeDue({ nowMs: 3_000, reserveUntilMs: 4_000, limit: 10, queues: [queue] })
    expect(due.map((row) => row.id)).toEqual([job.id])
    expect(await store().claim({ id: job.id, claimToken: 'again', nowMs: 3_000 })).toMatchObject({ kind: 'claimed', job: { attempts: 1 } })
  })

  it('retryDead drops a passed expiry and refuses, changing nothing, while a live job holds the key', async () => {
    const queue = fixture.queue('revive-key')
    const job = await store().enqueue({ job: fixture.job(queue, { key: 'k', expiresAtMs: 2_000 }), nowMs: 1_000 })
    await store().sweepExpired({ queue, nowMs: 2_000 })
    const holder = await store().enqueue({ job: fixture.job(queue, { key: 'k' }), nowMs: 2_500 })
    expect(await store().retryDead({ queue, id: job.id, nowMs: 3_000 })).toEqual({ kind: 'key-taken', liveId: holder.id })
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'dead', lastError: 'expired' })
    expect(await store().cancel({ queue, id: holder.id })).toBe(true)
    expect(await store().retryDead({ queue, id: job.id, nowMs: 3_000 })).toMatchObject({ kind: 'retried', job: { key: 'k', expiresAtMs: null } })
  })

  it('refuses bad admin input by field', async () => {
    const queue = fixture.queue('admin-input')
    await expectRejection(store().enqueue({ job: fixture.job(queue, { key: '' }), nowMs: 1 }), 'InvalidInput', { field: 'job.key' })
    await expectRejection(store().enqueue({ job: fixture.job(queue, { key: 7 as never }), nowMs: 1 }), 'InvalidInput', { field: 'job.key' })
    await expectRejection(store().listJobs({ queue, state: 'done' as never, limit: 1, afterId: null }), 'InvalidInput', { field: 'state' })
    await expectRejection(store().listJobs({ queue, state: 'dead', limit: 0, afterId: null }), 'InvalidInput', { field: 'limit' })
    await expectRejection(store().listJobs({ queue, state: 'dead', limit: 1, afterId: '' }), 'InvalidInput', { field: 'afterId' })
    await expectRejection(store().countJobs({ queue: '' }), 'InvalidInput', { field: 'queue' })
    await expectRejection(store().retryDead({ queue, id: 'x', nowMs: -1 }), 'InvalidInput', { field: 'nowMs' })
    await expectRejection(store().putSchedule({ name: 's', spec: '* * * * *', queue, payload: 1, timezone: 'Mars/Olympus', nowMs: 1 }), 'InvalidInput', { field: 'timezone' })
    await expectRejection(store().deleteSchedule({ name: '' }), 'InvalidInput', { field: 'name' })
    const job = await fixture.claimed(queue, 1_000, {}, 'tok')
    await expectRejection(store().retry({ id: job.id, claimToken: 'tok', error: 'x', stack: 5 as never, delayMs: 0, nowMs: 1_000 }), 'InvalidInput', { field: 'stack' })
    await expectRejection(store().fail({ id: job.id, claimToken: 'tok', error: 'x', stack: 'y'.repeat(8_001), nowMs: 1_000 }), 'InvalidInput', { field: 'stack' })
    expect(await store().getJob({ queue, id: job.id })).toEqual(job)
    expect(await store().countJobs({ queue })).toEqual({ pending: 0, processing: 1, dead: 0 })
  })
}
