/**
 * Due jobs reach idle workers at once when they are enqueued on an engine that does not own the
 * queue (or owns only some of its partitions), or when the queue's head is one key's: a batch whose jobs come due at different times
 * runs each at its own runAt on the owner, and a pass on a queue limited per key that reserved
 * less than its waiting claims asked for (the head's key had room for one) asks again, so a
 * forwarded claim is not left waiting for its poll to time out while jobs of other keys are due.
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

describe('due jobs across engines', () => {
  it('a batch enqueued on another engine: its later job starts on the owner at its runAt', async () => {
    const { h1, h2, clock } = twoEngines()
    const start = clock.now()
    const ranAt: Array<[string, number]> = []
    const stop = h1.queue('batched').work(
      async (job) => {
        ranAt.push([job.payload as string, clock.now()])
      },
      { batch: 3 },
    )
    await settle(20)
    // Off the scan's beat: only a timer armed for the second job's runAt runs it on time.
    const runAt = start + 140
    await h2.queue('batched').enqueueMany([{ payload: 'now' }, { payload: 'later', runAt: new Date(runAt) }])
    await until(() => ranAt.length === 1, 'the first job ran')
    clock.advance(runAt - 1 - clock.now())
    await settle(20)
    expect(ranAt).toEqual([['now', start]])
    clock.advance(1)
    await until(() => ranAt.length === 2, 'the later job ran')
    expect(ranAt).toEqual([['now', start], ['later', runAt]])
    await stop()
  })

  it('a queue whose partitions two engines own: a job enqueued on one reaches the other’s waiting worker with the clock standing still', async () => {
    // h1 owns partition 0 of `split`, h2 partition 1; only h1 runs a worker.
    const { h1, h2 } = twoEngines((partition) => (partition.family === 'split' && partition.partition === 1 ? 'h2' : 'h1'))
    const { handler, gates } = heldByKey<string>(() => 'all')
    const stop = h1.queue<string>('split', { partitions: 2 }).work(handler)
    await settle(50)
    await h2.queue<string>('split', { partitions: 2 }).enqueue('from the other owner')
    await until(() => gates.length === 1, 'the job starts on h1')
    void stop()
    releaseEveryHeld()
  })

  it('a queue limited per key whose head is one key: the forwarded claim gets a job of another key with the clock standing still', async () => {
    const { h1, h2 } = twoEngines()
    const { handler, gates } = heldByKey<{ n: number; key: string }>((payload) => payload.key)
    const options = { concurrencyPerKey: 1 }
    const stops = [h1.queue<{ n: number; key: string }>('limited', options).work(handler), h2.queue<{ n: number; key: string }>('limited', options).work(handler)]
    await settle(50)
    // One pass serves both claims: the owner's own and h2's, forwarded to it. The head is k's two
    // jobs, of which k's slot has room for one; the jobs behind them are due too.
    await h1.queue('limited', options).enqueueMany([
      { payload: { n: 0, key: 'k' }, concurrencyKey: 'k' },
      { payload: { n: 1, key: 'k' }, concurrencyKey: 'k' },
      { payload: { n: 2, key: 'none' } },
      { payload: { n: 3, key: 'j' }, concurrencyKey: 'j' },
    ])
    await until(() => gates.length === 2, 'both workers run a job at once')
    await settle(50)
    expect(gates).toHaveLength(2)
    for (const stop of stops) void stop()
    releaseEveryHeld()
  })
})
