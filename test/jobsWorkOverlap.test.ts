/**
 * `work` overlaps a job's ack with the next claim: a loop claims and runs its next job while the
 * previous job's ack is still on its way to the store, at most one ack per loop in flight, and
 * `stop()` resolves only once that ack has landed. The job store's acks wait on a gate here, so
 * the test holds an ack in flight and watches what the loop does meanwhile.
 *
 * No sleeps: waits are on conditions; the clock does not move.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock, Random } from '../src/index.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { settle, until } from './harness/settle.ts'

// A job store whose acks wait until `open()` is called; everything else passes through.
function gatedAcks(inner: JobStore): { store: JobStore; held: () => number; open: () => void } {
  let waiting: Array<() => void> = []
  const gate = (): Promise<void> => new Promise((resume) => waiting.push(resume))
  const store: JobStore = {
    ...inner,
    async ack(params) {
      await gate()
      return inner.ack(params)
    },
    async ackMany(params) {
      await gate()
      return inner.ackMany(params)
    },
  }
  return {
    store,
    held: () => waiting.length,
    open: () => {
      const resumed = waiting
      waiting = []
      for (const resume of resumed) resume()
    },
  }
}

describe('work: an ack overlaps the next claim', () => {
  it('with concurrency 1 the next job runs while the previous ack is in flight; stop waits for the last ack', async () => {
    const clock = new ManualClock(1_700_000_000_000)
    const store = makeMemoryStore()
    const acks = gatedAcks(makeMemoryJobStore())
    const mb = makeMatchbox({ hostId: 'overlap', store, jobStore: acks.store, clock, random: Random.make(11), closeStores: () => store.close() })
    const q = mb.queue('q')
    const first = await q.enqueue('first')
    const second = await q.enqueue('second')
    const third = await q.enqueue('third')
    const ran: string[] = []
    const stop = q.work(async (job) => {
      ran.push(job.payload as string)
    })

    // The first ack is held: the loop has claimed and run the second job meanwhile, and holds
    // the third until the first ack lands (one ack in flight per loop).
    await until(() => ran.length === 2 && acks.held() === 1, 'second job ran while the first ack was held')
    await settle()
    expect(ran).toEqual(['first', 'second'])
    expect(acks.held()).toBe(1)
    expect(await q.getJob(first)).not.toBeNull()

    acks.open()
    await until(() => ran.length === 3 && acks.held() === 1, 'third job ran once the first ack landed')
    expect(await q.getJob(first)).toBeNull()
    acks.open()
    await until(() => acks.held() === 1, 'the third ack is in flight')

    let stopped = false
    const stopping = stop().then(() => {
      stopped = true
    })
    await settle()
    expect(stopped).toBe(false)
    acks.open()
    await stopping
    for (const id of [first, second, third]) expect(await q.getJob(id)).toBeNull()
    await mb.close()
  })
})
