/**
 * A claim that finds nobody owning its queue (membership still settling, or a view that lapsed
 * for a moment after a pause) waits a little and looks again; a change of membership wakes it
 * at once. Here the engine's view first gives the queue to nobody, a work loop starts and a job
 * is enqueued; then the view gives the queue to this engine, and the job runs with the clock
 * standing still: no retry timer is needed. ManualClock, memory stores and bus, no sleeps.
 */
import { expect, it } from 'vitest'
import { ManualClock, Random } from '../src/index.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import { makeMemoryBus } from '../src/persistence/bus/MemoryBus.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { settle, until } from './harness/settle.ts'

it('a work loop waiting for its queue to have an owner runs its job once membership names one, with the clock standing still', async () => {
  const store = makeMemoryStore()
  const listeners = new Set<() => void>()
  let owner: string | null = null
  const membership = {
    ownerOf: () => owner,
    hosts: () => (owner === null ? [] : [owner]),
    subscribe: (listener: () => void) => (listeners.add(listener), () => void listeners.delete(listener)),
  }
  const bus = makeMemoryBus()
  const mb = makeMatchbox({
    hostId: 'h1',
    store,
    jobStore: makeMemoryJobStore({ queueRanges: store }),
    clock: new ManualClock(1_700_000_000_000),
    random: Random.make(3),
    group: { membership, bus, storeSignalsDue: false, leave: async () => {} },
    closeStores: async () => {
      await bus.close()
      await store.close()
    },
  })
  const ran: unknown[] = []
  const q = mb.queue('q')
  const stop = q.work(async (job) => void ran.push(job.payload), { concurrency: 1 })
  await q.enqueue('waiting for an owner')
  await settle(20)
  expect(ran).toEqual([])
  owner = 'h1'
  for (const listener of listeners) listener()
  await until(() => ran.length === 1, 'the job runs once the queue has an owner')
  expect(ran).toEqual(['waiting for an owner'])
  await stop()
  await mb.close()
})
