/**
 * A claim eager dispatch set aside for an enqueue whose key a live job holds goes back in line,
 * and rows that became due while it was set aside reach it at once. While the keyed enqueue's
 * statement is out, the engine's only idle worker is set aside for it; a batch enqueued meanwhile
 * starts a due-time pass, which finds no claim waiting and claims nothing. When the keyed enqueue
 * answers with the key's holder, the claim goes back in line, and the batch's jobs must start
 * with the clock standing still (not at the claim's own next look, up to a second later).
 *
 * One engine on the memory stores, a ManualClock that does not move; no sleeps: waits are on
 * conditions, bounded by event-loop turns.
 */
import { expect, it } from 'vitest'
import { ManualClock, Random } from '../src/index.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { settle, until } from './harness/settle.ts'

it('a batch enqueued while the idle worker is set aside for a keyed enqueue starts once the key’s holder answers, with the clock standing still', async () => {
  const store = makeMemoryStore()
  const inner = makeMemoryJobStore({ queueRanges: store })
  // The claimed insert of a keyed enqueue is held at the store until the test opens it.
  const held: { open: (() => void) | null } = { open: null }
  const jobStore: JobStore = {
    ...inner,
    async enqueue(params, tx) {
      if (params.claimToken !== undefined && params.job.key === 'held-key') await new Promise<void>((resolve) => (held.open = resolve))
      return inner.enqueue(params, tx)
    },
  }
  const clock = new ManualClock(1_700_000_000_000)
  const mb = makeMatchbox({ hostId: 'solo', store, jobStore, clock, random: Random.make(11), closeStores: () => store.close() })
  const q = mb.queue('q')
  // The key's holder: a job due later, so nothing runs it now.
  await q.enqueue('holder', { key: 'held-key', runAt: new Date(clock.now() + 60_000) })
  const started: string[] = []
  const stop = q.work(async (job) => {
    started.push(job.payload as string)
  })
  await settle(50)

  const keyed = q.enqueue('duplicate', { key: 'held-key' })
  await until(() => held.open !== null, 'the keyed enqueue’s claimed insert is at the store, the idle worker set aside for it')
  await q.enqueueMany([{ payload: 'a' }, { payload: 'b' }])
  await settle(50)
  held.open?.()
  await keyed

  await until(() => started.length === 2, `the batch’s jobs start with the clock still (started: ${JSON.stringify(started)})`)
  expect(started).toEqual(['a', 'b'])
  await stop()
  await mb.close()
})
