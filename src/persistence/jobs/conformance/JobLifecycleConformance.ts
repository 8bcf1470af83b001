/**
 * JobLifecycleConformance — the job contract's lifecycle on a job store: enqueue stamps, claim, one validity
 * predicate for every handle operation, heartbeat as absolute renewal (a late one refused),
 * reclaim counting an attempt, retry and fail, unconditional cancel, ackBatch, and a reclaim
 * racing an ack with exactly one winner.
 *
 * Readings pinned here: a deadline is valid while now < deadline (at the deadline it has
 * lapsed); a heartbeat moves the deadline every rule reads (reclaim, exhaustion, due time); a retried job keeps no lastError (dead-only) but keeps the handler's error apart; cancel leaves dead jobs alone (false);
 * ackBatch counts a duplicated claim once.
 */
import { describe, expect, it } from 'vitest'
import { expectRejection } from '../../queues/conformance/ConformanceFixture.ts'
import type { JobFixture } from './JobFixture.ts'

// The fixture and the helpers the job lifecycle cases share.
function lifecycleKitOf(fixture: JobFixture) {
  const store = () => fixture.store()

  return { fixture, store }
}

/** Registers the lifecycle tests. */
export function describeJobLifecycleConformance(fixture: JobFixture): void {
  const kit = lifecycleKitOf(fixture)
  describe('job lifecycle', () => {
    lifecycleCases1(kit)
    lifecycleCases2(kit)
    lifecycleCases3(kit)
  })
}

function lifecycleCases1(kit: ReturnType<typeof lifecycleKitOf>): void {
  const { fixture, store } = kit
  it('enqueue with a claim token inserts the job claimed, due at its deadline, without a delivery', async () => {
    const queue = fixture.queue('enqueue-claimed')
    const job = fixture.job(queue, { runAtMs: 1_000 })
    const claimed = await store().enqueue({ job, nowMs: 2_000, claimToken: 'eager-token' })
    expect(claimed).toMatchObject({ id: job.id, state: 'processing', attempts: 1, claimedAtMs: 2_000, claimToken: 'eager-token', deadlineMs: 2_000 + job.visibilityTimeoutMs })
    expect(await store().getJob({ queue, id: job.id })).toEqual(claimed)
    // Not due before its deadline; at the deadline, due like any lapsed claim.
    expect(await store().takeDue({ nowMs: 2_000, reserveUntilMs: 3_000, limit: 10, queues: [queue] })).toEqual([])
    const deadline = 2_000 + job.visibilityTimeoutMs
    expect((await store().takeDue({ nowMs: deadline, reserveUntilMs: deadline + 1_000, limit: 10, queues: [queue] })).map((due) => due.id)).toEqual([job.id])
    expect(await store().ack({ id: job.id, claimToken: 'eager-token', nowMs: deadline - 1 })).toBe(true)

    // A key's holder answers unclaimed; a job not claimable now is refused, nothing written.
    const holder = await store().enqueue({ job: fixture.job(queue, { key: 'k' }), nowMs: 2_000 })
    expect(await store().enqueue({ job: fixture.job(queue, { key: 'k' }), nowMs: 2_000, claimToken: 'other' })).toEqual(holder)
    const later = fixture.job(queue, { runAtMs: 5_000 })
    await expectRejection(store().enqueue({ job: later, nowMs: 2_000, claimToken: 't' }), 'InvalidInput', { field: 'claimToken' })
    const expired = fixture.job(queue, { expiresAtMs: 2_000 })
    await expectRejection(store().enqueue({ job: expired, nowMs: 2_000, claimToken: 't' }), 'InvalidInput', { field: 'claimToken' })
    expect(await store().getJob({ queue, id: later.id })).toBeNull()
    expect(await store().getJob({ queue, id: expired.id })).toBeNull()
  })

  it('enqueue stamps the job; getJob returns it, only in its own queue', async () => {
    const queue = fixture.queue('enqueue')
    const job = fixture.job(queue, { payload: { to: 'a@b.c', list: [1, 2], nested: { ok: true } }, priority: 7, runAtMs: 5_000, expiresAtMs: 90_000, deadLetterRetentionMs: 60_000 })
    const stored = await store().enqueue({ job, nowMs: 2_000 })
    const expected = {
      ...job,
      state: 'pending',
      attempts: 0,
      createdAtMs: 2_000,
      claimedAtMs: null,
      claimToken: null,
      deadlineMs: null,
      key: null,
      lastError: null,
      diedAtMs: null,
      lastHandlerError: null,
      lastHandlerStack: null,
      attemptErrors: [],
      claims: [],
      progress: null,
      progressAtMs: null,
    }
    expect(stored).toEqual(expected)
    expect(await store().getJob({ queue, id: job.id })).toEqual(expected)
    expect(await store().getJob({ queue: fixture.queue('other'), id: job.id })).toBeNull()
    expect(await store().getJob({ queue, id: fixture.id('missing') })).toBeNull()
  })

  it('claim counts an attempt, sets the deadline from the stamp and fences it with the token', async () => {
    const queue = fixture.queue('claim')
    const job = await store().enqueue({ job: fixture.job(queue, { runAtMs: 1_000, visibilityTimeoutMs: 7_000 }), nowMs: 500 })
    expect(await store().claim({ id: job.id, claimToken: 'early', nowMs: 999 })).toEqual({ kind: 'obsolete', reason: 'not-due' })
    const outcome = await store().claim({ id: job.id, claimToken: 'first', nowMs: 1_000 })
    expect(outcome).toEqual({ kind: 'claimed', job: { ...job, state: 'processing', attempts: 1, claimedAtMs: 1_000, claimToken: 'first', deadlineMs: 8_000, claims: [{ attempt: 1, atMs: 1_000 }] } })
    expect(await store().claim({ id: job.id, claimToken: 'second', nowMs: 7_999 })).toEqual({ kind: 'already-started' })
    expect(await store().claim({ id: fixture.id('missing'), claimToken: 'x', nowMs: 1_000 })).toEqual({ kind: 'obsolete', reason: 'missing' })
    expect((await store().getJob({ queue, id: job.id }))?.claimToken).toBe('first')
  })

  it('ack deletes under a valid claim only; a wrong token or a lapsed deadline changes nothing', async () => {
    const queue = fixture.queue('ack')
    const job = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 10_000 }, 'tok')
    expect(await store().ack({ id: job.id, claimToken: 'other', nowMs: 2_000 })).toBe(false)
    expect(await store().ack({ id: job.id, claimToken: 'tok', nowMs: 11_000 })).toBe(false)
    expect(await store().getJob({ queue, id: job.id })).toEqual(job)
    expect(await store().ack({ id: job.id, claimToken: 'tok', nowMs: 10_999 })).toBe(true)
    expect(await store().getJob({ queue, id: job.id })).toBeNull()
    expect(await store().ack({ id: job.id, claimToken: 'tok', nowMs: 10_999 })).toBe(false)
  })

  it('heartbeat resets the deadline from now (stamp or extension); a late heartbeat is refused', async () => {
    const queue = fixture.queue('heartbeat')
    const job = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 10_000 }, 'tok')
    expect((await store().heartbeat({ id: job.id, claimToken: 'tok', extendMs: null, nowMs: 4_000 }))?.deadlineMs).toBe(14_000)
    expect((await store().heartbeat({ id: job.id, claimToken: 'tok', extendMs: 2_000, nowMs: 5_000 }))?.deadlineMs).toBe(7_000)
    expect(await store().heartbeat({ id: job.id, claimToken: 'bad', extendMs: null, nowMs: 5_000 })).toBeNull()
    expect(await store().heartbeat({ id: job.id, claimToken: 'tok', extendMs: 60_000, nowMs: 7_000 })).toBeNull()
    const after = await store().getJob({ queue, id: job.id })
    expect(after).toMatchObject({ state: 'processing', deadlineMs: 7_000, attempts: 1 })
  })

  it('a lapsed claim is reclaimed with a new token and another attempt; the old holder is refused', async () => {
    const queue = fixture.queue('reclaim')
    const job = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 1_000 }, 'old')
    const outcome = await store().claim({ id: job.id, claimToken: 'new', nowMs: 2_000 })
    expect(outcome).toMatchObject({ kind: 'claimed', job: { attempts: 2, claimToken: 'new', claimedAtMs: 2_000, deadlineMs: 3_000 } })
    for (const op of [
      store().ack({ id: job.id, claimToken: 'old', nowMs: 2_500 }),
      store().fail({ id: job.id, claimToken: 'old', error: 'x', nowMs: 2_500 }),
      store().retry({ id: job.id, claimToken: 'old', error: 'x', delayMs: 0, nowMs: 2_500 }),
      store().heartbeat({ id: job.id, claimToken: 'old', extendMs: null, nowMs: 2_500 }),
    ]) {
      expect(await op).toBeFalsy()
    }
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'processing', claimToken: 'new', attempts: 2 })
  })
}

function lifecycleCases2(kit: ReturnType<typeof lifecycleKitOf>): void {
  const { fixture, store } = kit
  it('a heartbeat moves the deadline: claims before the new one are refused, at it one succeeds, then the old holder is refused', async () => {
    const queue = fixture.queue('heartbeat-moved')
    const job = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 10_000 }, 'first')
    const ref = (claimToken: string) => ({ id: job.id, claimToken })
    expect(job.deadlineMs).toBe(11_000)
    expect((await store().heartbeat({ ...ref('first'), extendMs: 20_000, nowMs: 5_000 }))?.deadlineMs).toBe(25_000)
    for (const nowMs of [11_000, 11_001, 24_999]) {
      expect(await store().claim({ ...ref('second'), nowMs }), `claim at ${nowMs}`).toEqual({ kind: 'already-started' })
      expect(await store().claimMany({ claims: [ref('second')], nowMs }), `claimMany at ${nowMs}`).toEqual([{ kind: 'already-started' }])
    }
    expect(await store().nextDueMs({ nowMs: 11_000, queues: [queue] })).toBe(25_000)
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'processing', claimToken: 'first', deadlineMs: 25_000, attempts: 1 })
    const second = await store().claim({ ...ref('second'), nowMs: 25_000 })
    expect(second).toMatchObject({ kind: 'claimed', job: { claimToken: 'second', attempts: 2, claimedAtMs: 25_000, deadlineMs: 35_000 } })
    expect(await store().ack({ ...ref('first'), nowMs: 25_000 })).toBe(false)
    expect(await store().ackMany({ claims: [ref('first')], nowMs: 25_001 })).toEqual([])
    expect(await store().heartbeat({ ...ref('first'), extendMs: null, nowMs: 25_001 })).toBeNull()
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'processing', claimToken: 'second', deadlineMs: 35_000, attempts: 2 })
    expect(await store().ack({ ...ref('second'), nowMs: 25_001 })).toBe(true)
  })

  it('a heartbeat at the budget moves the exhaustion deadline too: nothing dies at the old deadline', async () => {
    const queue = fixture.queue('heartbeat-moved-budget')
    const job = await fixture.claimed(queue, 1_000, { maxAttempts: 1, visibilityTimeoutMs: 10_000 }, 'first')
    await store().heartbeat({ id: job.id, claimToken: 'first', extendMs: 20_000, nowMs: 5_000 })
    expect(await store().claim({ id: job.id, claimToken: 'second', nowMs: 11_000 })).toEqual({ kind: 'already-started' })
    expect(await store().takeDue({ nowMs: 11_000, reserveUntilMs: 11_000, limit: 10, queues: [queue] })).toEqual([])
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'processing', claimToken: 'first', deadlineMs: 25_000 })
    expect(await store().claim({ id: job.id, claimToken: 'second', nowMs: 25_000 })).toEqual({ kind: 'obsolete', reason: 'exhausted' })
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'dead', lastError: 'max attempts exceeded', diedAtMs: 25_000 })
    expect(await store().ack({ id: job.id, claimToken: 'first', nowMs: 25_000 })).toBe(false)
  })

  it('retry returns the job to pending at now + delay with the handler error kept; at the budget it dead-letters', async () => {
    const queue = fixture.queue('retry')
    const job = await fixture.claimed(queue, 1_000, { maxAttempts: 2 }, 't1')
    expect(await store().retry({ id: job.id, claimToken: 't1', error: 'boom', stack: 'Error: boom\n    at f', delayMs: 4_000, nowMs: 2_000 })).toEqual({ kind: 'retried', runAtMs: 6_000 })
    expect(await store().getJob({ queue, id: job.id })).toEqual({
      ...job,
      state: 'pending',
      runAtMs: 6_000,
      claimToken: null,
      deadlineMs: null,
      lastHandlerError: 'boom',
      lastHandlerStack: 'Error: boom\n    at f',
      attemptErrors: [{ attempt: 1, error: 'boom', stack: 'Error: boom\n    at f', atMs: 2_000, retryAtMs: 6_000 }],
    })
    expect(await store().claim({ id: job.id, claimToken: 't2', nowMs: 5_999 })).toEqual({ kind: 'obsolete', reason: 'not-due' })
    expect(await store().claim({ id: job.id, claimToken: 't2', nowMs: 6_000 })).toMatchObject({ kind: 'claimed', job: { attempts: 2, lastHandlerError: 'boom' } })
    expect(await store().retry({ id: job.id, claimToken: 't2', error: 'again', delayMs: 0, nowMs: 7_000 })).toEqual({ kind: 'dead' })
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({
      state: 'dead',
      attempts: 2,
      lastError: 'max attempts exceeded',
      diedAtMs: 7_000,
      claimToken: null,
      deadlineMs: null,
      lastHandlerError: 'again',
      lastHandlerStack: null,
    })
  })

  it('a death by reclaim or sweep keeps the last handler error beside the contract’s reason', async () => {
    const queue = fixture.queue('reclaim-error')
    const job = await fixture.claimed(queue, 1_000, { maxAttempts: 1, visibilityTimeoutMs: 1_000, expiresAtMs: 50_000 }, 't1')
    expect(await store().claim({ id: job.id, claimToken: 't2', nowMs: 3_000 })).toEqual({ kind: 'obsolete', reason: 'exhausted' })
    expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'dead', lastError: 'max attempts exceeded', lastHandlerError: null })
    const other = await fixture.claimed(queue, 1_000, { expiresAtMs: 9_000 }, 't3')
    await store().retry({ id: other.id, claimToken: 't3', error: 'flaky', delayMs: 0, nowMs: 1_500 })
    expect(await store().sweepExpired({ queue, nowMs: 9_000 })).toEqual({ dead: 1, purged: 0 })
    expect(await store().getJob({ queue, id: other.id })).toMatchObject({ state: 'dead', lastError: 'expired', lastHandlerError: 'flaky' })
  })

  it('fail dead-letters with the caller’s error; dead jobs are visible, unclaimable and not cancellable', async () => {
    const queue = fixture.queue('fail')
    const job = await fixture.claimed(queue, 1_000, {}, 'tok')
    expect(await store().fail({ id: job.id, claimToken: 'tok', error: 'bad input ✗', stack: 'at g', nowMs: 1_500 })).toBe(true)
    expect(await store().getJob({ queue, id: job.id })).toEqual({
      ...job,
      state: 'dead',
      claimToken: null,
      deadlineMs: null,
      lastError: 'bad input ✗',
      diedAtMs: 1_500,
      lastHandlerError: 'bad input ✗',
      lastHandlerStack: 'at g',
      attemptErrors: [{ attempt: 1, error: 'bad input ✗', stack: 'at g', atMs: 1_500 }],
    })
    expect(await store().claim({ id: job.id, claimToken: 'again', nowMs: 2_000 })).toEqual({ kind: 'obsolete', reason: 'dead' })
    expect(await store().cancel({ queue, id: job.id })).toBe(false)
    expect(await store().fail({ id: job.id, claimToken: 'tok', error: 'twice', nowMs: 1_600 })).toBe(false)
    expect((await store().getJob({ queue, id: job.id }))?.lastError).toBe('bad input ✗')
  })
}

function lifecycleCases3(kit: ReturnType<typeof lifecycleKitOf>): void {
  const { fixture, store } = kit
  it('cancel deletes pending and processing jobs, whoever holds them; the holder is then refused', async () => {
    const queue = fixture.queue('cancel')
    const pending = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
    const held = await fixture.claimed(queue, 1_000, {}, 'tok')
    expect(await store().cancel({ queue: fixture.queue('elsewhere'), id: pending.id })).toBe(false)
    expect(await store().cancel({ queue, id: pending.id })).toBe(true)
    expect(await store().cancel({ queue, id: held.id })).toBe(true)
    expect(await store().cancel({ queue, id: held.id })).toBe(false)
    expect(await store().ack({ id: held.id, claimToken: 'tok', nowMs: 1_001 })).toBe(false)
    expect(await store().getJob({ queue, id: pending.id })).toBeNull()
    expect(await store().claim({ id: pending.id, claimToken: 'x', nowMs: 2_000 })).toEqual({ kind: 'obsolete', reason: 'missing' })
  })

  it('ackBatch applies the predicate per claim and counts what it deleted', async () => {
    const queue = fixture.queue('batch')
    const a = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 10_000 }, 'a')
    const b = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 10_000 }, 'b')
    const lapsed = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 100 }, 'c')
    const pending = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
    const claims = [
      { id: a.id, claimToken: 'a' },
      { id: a.id, claimToken: 'a' },
      { id: b.id, claimToken: 'wrong' },
      { id: lapsed.id, claimToken: 'c' },
      { id: pending.id, claimToken: 'none' },
      { id: fixture.id('missing'), claimToken: 'x' },
    ]
    expect(await store().ackBatch({ claims, nowMs: 2_000 })).toBe(1)
    expect(await store().ackBatch({ claims: [], nowMs: 2_000 })).toBe(0)
    expect(await store().getJob({ queue, id: a.id })).toBeNull()
    expect((await store().getJob({ queue, id: b.id }))?.state).toBe('processing')
    expect((await store().getJob({ queue, id: lapsed.id }))?.state).toBe('processing')
    expect((await store().getJob({ queue, id: pending.id }))?.state).toBe('pending')
  })

  it('a reclaim racing an ack: exactly one wins, and the row shows the winner', async () => {
    const queue = fixture.queue('race')
    for (let round = 0; round < 8; round++) {
      const job = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 1_000 }, 'holder')
      // The holder believes it is 1 ms before the deadline; the reclaimer that it has lapsed.
      const [acked, reclaimed] = await Promise.all([
        store().ack({ id: job.id, claimToken: 'holder', nowMs: 1_999 }),
        store().claim({ id: job.id, claimToken: 'reclaimer', nowMs: 2_000 }),
      ])
      const reclaimWon = reclaimed.kind === 'claimed'
      expect(acked !== reclaimWon, `round ${round}: ack ${acked}, reclaim ${JSON.stringify(reclaimed)}`).toBe(true)
      const after = await store().getJob({ queue, id: job.id })
      if (acked) expect(after).toBeNull()
      else expect(after).toMatchObject({ claimToken: 'reclaimer', attempts: 2 })
    }
  })

  it('each job keeps its own stamps: the visibility of one does not leak into another', async () => {
    const queue = fixture.queue('stamps')
    const short = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 1_000 })
    const long = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 100_000 })
    expect(short.deadlineMs).toBe(2_000)
    expect(long.deadlineMs).toBe(101_000)
  })
}
