/**
 * A slot freed is used at once. On a queue limited per key, a claim that finds every due job's
 * key full comes back short, and the queue counts as drained until a due-time pass: no claim
 * looks at the store again on its own. So when a job of a full key leaves processing, the engine
 * that acked it tells the queue's owner (its own driver, or the owner over the bus), and the next
 * job of the key starts with the clock standing still — from either engine, owner or not. And a
 * batch claim that a key fills up within does not leave the jobs due behind it for the next pass.
 *
 * Two engines on shared memory stores and bus; h1 owns every partition. ManualClock, no sleeps.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { heldByKey, releaseEveryHeld } from './harness/heldByKey.ts'
import { settle, until } from './harness/settle.ts'
import { closeEngines, twoEngines } from './harness/twoEngines.ts'

afterEach(async () => {
  releaseEveryHeld()
  await closeEngines()
})

describe('a freed concurrency slot', () => {
  for (const worker of ['h1', 'h2'] as const) {
    it(`goes to the key's next job at once when the worker runs on ${worker === 'h1' ? 'the owner' : 'an engine that forwards its claims'}`, async () => {
      const { h1, h2 } = twoEngines()
      const { handler, gates, most, done } = heldByKey<{ n: number }>(() => 'k')
      const producer = h1.queue<{ n: number }>('limited', { concurrencyPerKey: 1 })
      for (let n = 0; n < 3; n++) await producer.enqueue({ n }, { concurrencyKey: 'k' })
      const stop = (worker === 'h1' ? h1 : h2).queue<{ n: number }>('limited', { concurrencyPerKey: 1 }).work(handler, { concurrency: 2 })
      await until(() => gates.length === 1, 'the first job starts')
      // The second loop's claim found the key full: it waits, and the queue is drained.
      await settle(50)
      expect(gates).toHaveLength(1)
      for (let finished = 1; finished <= 2; finished++) {
        gates.shift()?.()
        await until(() => done() === finished && gates.length === 1, `job ${finished + 1} starts once job ${finished} finished, with the clock standing still`)
      }
      gates.shift()?.()
      await until(() => done() === 3, 'the last job finishes')
      expect(most.get('k')).toBe(1)
      await stop()
    })
  }

  it('a batch claim that a key fills up within comes back for the jobs behind it, with the clock standing still', async () => {
    const { h1 } = twoEngines()
    const { handler, gates, done } = heldByKey<{ n: number; key: string }>((payload) => payload.key)
    const q = h1.queue<{ n: number; key: string }>('limited', { concurrencyPerKey: 1 })
    // The local queue's first claim asks for three jobs in one statement: its head is k's three
    // jobs, of which one is admitted; the unkeyed job behind them is due too.
    for (let n = 0; n < 3; n++) await q.enqueue({ n, key: 'k' }, { concurrencyKey: 'k' })
    await q.enqueue({ n: 3, key: 'none' })
    const stop = q.work(handler, { concurrency: 3, batch: 3 })
    await until(() => gates.length === 2, 'one job of k and the unkeyed job run at once')
    await settle(50)
    expect(gates).toHaveLength(2)
    for (let released = 0; released < 4; released++) {
      await until(() => gates.length > 0, 'a job runs')
      gates.shift()?.()
    }
    await until(() => done() === 4, 'every job finishes')
    await stop()
  })
})
