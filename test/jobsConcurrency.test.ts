/**
 * Per-key concurrency limits through the jobs API on the memory stores and a ManualClock: a
 * handle's `concurrencyPerKey` holds a key to that many jobs processing while other keys and
 * unkeyed jobs go on, an ack frees the slot; a `concurrencyKey` on a handle without a limit
 * limits nothing; `enqueueMany` takes keyed jobs; bad limits and keys are a typed InvalidInput
 * with nothing written. The store's guard itself is held by the JobStore conformance suite
 * (JobConcurrencyConformance) and, across two pools, by concurrencyKeys.postgres.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { InvalidInput, ManualClock, type Matchbox, open } from '../src/index.ts'
import { settle } from './harness/settle.ts'
import { heldByKey } from './harness/heldByKey.ts'

const start = 1_700_000_000_000

async function engine(): Promise<Matchbox> {
  return open({ store: 'memory', clock: new ManualClock(start), seed: 7, hostId: 'limits' })
}

describe('jobs API: per-key concurrency limits', () => {
  it('a key at its limit is skipped; other keys and unkeyed jobs are claimed; an ack frees a slot', async () => {
    const mb = await engine()
    const q = mb.queue<{ key: string }>('tenants', { concurrencyPerKey: 2 })
    for (let n = 0; n < 5; n++) await q.enqueue({ key: 'a' }, { concurrencyKey: 'a' })
    for (let n = 0; n < 3; n++) await q.enqueue({ key: 'b' }, { concurrencyKey: 'b' })
    await q.enqueue({ key: 'none' })
    const claimed = []
    for (let job = await q.claim(); job !== null; job = await q.claim()) claimed.push(job)
    expect(claimed.map((job) => job.payload.key).sort()).toEqual(['a', 'a', 'b', 'b', 'none'])
    const first = claimed.find((job) => job.payload.key === 'a')
    expect(await first?.ack()).toBe(true)
    expect((await q.claim())?.payload.key).toBe('a')
    expect(await q.claim()).toBeNull()
    await mb.close()
  })

  it('a concurrencyKey on a handle without concurrencyPerKey limits nothing; enqueueMany takes keyed jobs', async () => {
    const mb = await engine()
    const free = mb.queue('free')
    for (let n = 0; n < 4; n++) await free.enqueue(n, { concurrencyKey: 'a' })
    let claims = 0
    while ((await free.claim()) !== null) claims++
    expect(claims).toBe(4)
    const limited = mb.queue('batch', { concurrencyPerKey: 1 })
    await limited.enqueueMany([1, 2, 3].map((payload) => ({ payload, concurrencyKey: 'a' })))
    expect(await limited.claim()).not.toBeNull()
    expect(await limited.claim()).toBeNull()
    await mb.close()
  })

  it('work with six loops runs at most two jobs of a key at once and finishes every job', async () => {
    const clock = new ManualClock(start)
    const mb = await open({ store: 'memory', clock, seed: 9, hostId: 'limits-work' })
    const q = mb.queue<{ key: string }>('work', { concurrencyPerKey: 2 })
    for (let n = 0; n < 8; n++) await q.enqueue({ key: 'a' }, { concurrencyKey: 'a' })
    for (let n = 0; n < 3; n++) await q.enqueue({ key: 'b' }, { concurrencyKey: 'b' })
    const { handler, gates, most, done } = heldByKey<{ key: string }>((payload) => payload.key)
    const stop = q.work(handler, { concurrency: 6 })
    // Finish the running handlers one at a time; a scan's worth of time passes when none runs.
    for (let turn = 0; turn < 200 && done() < 11; turn++) {
      await settle(20)
      const next = gates.shift()
      if (next === undefined) clock.advance(1_000)
      else next()
    }
    expect(done()).toBe(11)
    expect(most.get('a')).toBe(2)
    expect(most.get('b')).toBe(2)
    await stop()
    await mb.close()
  })

  it('refuses bad limits and keys with InvalidInput, writing nothing', async () => {
    const mb = await engine()
    for (const concurrencyPerKey of [0, 10_001, 1.5, '2']) {
      expect(() => mb.queue('refusals', { concurrencyPerKey } as never)).toThrow(InvalidInput)
    }
    const q = mb.queue('refusals', { concurrencyPerKey: 3 })
    await expect(q.enqueue(1, { concurrencyKey: 'x'.repeat(65) })).rejects.toBeInstanceOf(InvalidInput)
    await expect(q.enqueueMany([{ payload: 1 }, { payload: 2, concurrencyKey: 'x'.repeat(65) }])).rejects.toMatchObject({ field: 'jobs[1].concurrencyKey' })
    expect(await q.claim()).toBeNull()
    await mb.close()
  })
})
