/**
 * `queue.enqueueMany` on the memory stores and a ManualClock: ids in the order given, each job
 * stamped with its own options over the handle's, keys as `enqueue` keeps them (within the batch
 * too), and every refusal a typed `InvalidInput` naming the job, with nothing written.
 * The transactional form is in jobsTx.postgres.test.ts; the store's statement in the JobStore
 * conformance suite.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock, type Matchbox, open } from '../src/index.ts'
import { enqueueBatchSizeMax } from '../src/kernel/Limits.ts'
import { until } from './harness/settle.ts'

const start = 1_700_000_000_000

async function engine(): Promise<{ mb: Matchbox; clock: ManualClock }> {
  const clock = new ManualClock(start)
  return { mb: await open({ store: 'memory', clock, seed: 5, hostId: 'many' }), clock }
}

describe('jobs API: enqueueMany', () => {
  it('enqueues every job with its own options and answers the ids in order; workers run them all', async () => {
    const { mb, clock } = await engine()
    const q = mb.queue<{ n: number }>('bulk', { maxAttempts: 4 })
    const ids = await q.enqueueMany([
      { payload: { n: 0 } },
      { payload: { n: 1 }, priority: 9, maxAttempts: 2 },
      { payload: { n: 2 }, delayMs: 5_000 },
      { payload: { n: 3 }, key: 'once' },
      { payload: { n: 4 }, key: 'once' },
    ])
    expect(ids).toHaveLength(5)
    expect(new Set(ids).size).toBe(4)
    expect(ids[4]).toBe(ids[3])
    expect(await q.getJob(ids[0] as string)).toMatchObject({ state: 'pending', payload: { n: 0 }, maxAttempts: 4, priority: 0 })
    expect(await q.getJob(ids[1] as string)).toMatchObject({ payload: { n: 1 }, maxAttempts: 2, priority: 9 })
    expect(await q.getJob(ids[2] as string)).toMatchObject({ runAt: start + 5_000 })
    expect(await q.getJob(ids[3] as string)).toMatchObject({ payload: { n: 3 }, key: 'once' })
    expect(await q.enqueueMany([{ payload: { n: 5 }, key: 'once' }])).toEqual([ids[3]])
    expect(await q.enqueueMany([])).toEqual([])
    const seen: number[] = []
    const stop = q.work(async (job) => {
      seen.push(job.payload.n)
    })
    await until(() => seen.length === 3, 'the three due jobs ran')
    // Claim order: priority first, then enqueue order; the delayed job waits for its time.
    expect(seen).toEqual([1, 0, 3])
    clock.advance(5_000)
    await until(() => seen.length === 4, 'the delayed job ran')
    expect(await q.counts()).toMatchObject({ pending: 0, processing: 0 })
    await stop()
    await mb.close()
  })

  it('refuses the whole batch by the bad job’s index, and writes nothing', async () => {
    const { mb } = await engine()
    const q = mb.queue('bulk-bad')
    const refusals: Array<[unknown, unknown, string]> = [
      ['not an array', undefined, 'jobs'],
      [[{ payload: 1 }, 'bare payload'], undefined, 'jobs[1]'],
      // A sparse array: its hole is a missing job, refused rather than skipped.
      [Object.assign(new Array(2), { 1: { payload: 1 } }), undefined, 'jobs[0]'],
      [[{ payload: 1 }, {}], undefined, 'jobs[1].payload'],
      [[{ payload: 1 }, { payload: { when: new Date(0) } }], undefined, 'jobs[1].payload.when'],
      [[{ payload: 1, priority: 10 }], undefined, 'jobs[0].priority'],
      [[{ payload: 1, runAt: 1, delayMs: 1 }], undefined, 'jobs[0].delayMs'],
      [[{ payload: 1, colour: 'red' }], undefined, 'jobs[0].colour'],
      [[{ payload: 1, tx: {} }], undefined, 'jobs[0].tx'],
      [[{ payload: 1 }], { tx: {} }, 'options.tx'],
      [[{ payload: 1 }], { priority: 1 }, 'options.priority'],
      [Array.from({ length: enqueueBatchSizeMax + 1 }, (_, n) => ({ payload: n })), undefined, 'jobs'],
    ]
    for (const [jobs, options, field] of refusals) {
      await expect(q.enqueueMany(jobs as never, options as never), field).rejects.toMatchObject({ _tag: 'InvalidInput', field })
    }
    expect(await q.counts()).toEqual({ pending: 0, processing: 0, dead: 0 })
    const ids = await q.enqueueMany(Array.from({ length: enqueueBatchSizeMax }, (_, n) => ({ payload: n })))
    expect(ids).toHaveLength(enqueueBatchSizeMax)
    expect(await q.counts()).toMatchObject({ pending: enqueueBatchSizeMax })
    await mb.close()
    await expect(q.enqueueMany([{ payload: 1 }])).rejects.toMatchObject({ _tag: 'ShuttingDown' })
  })
})
