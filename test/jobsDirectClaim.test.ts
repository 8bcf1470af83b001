/**
 * Claims straight from the store while due-time passes keep coming: a claim that waits for the
 * pass in progress (which may be adding older jobs to Matching) waits only for the passes asked
 * for when it arrived, so a stream of due signals — each asking for a pass — cannot hold it
 * off. Each pass here is held at its last statement (the next-due read, which a scan always
 * makes) until the test lets it go, one at a time.
 *
 * No sleeps: waits are on conditions; the manual clock moves once, to a delayed job's time.
 */
import { expect, it } from 'vitest'
import { ManualClock, Random } from '../src/index.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { settle, until } from './harness/settle.ts'

it('a worker waiting for the pass in progress is not held off by the passes asked for after it', async () => {
  const store = makeMemoryStore()
  const inner = makeMemoryJobStore({ queueRanges: store })
  const heldPasses: Array<() => void> = []
  let holding = true
  const jobStore: JobStore = {
    ...inner,
    async nextDueMs(params) {
      if (holding) await new Promise<void>((resume) => heldPasses.push(resume))
      return inner.nextDueMs(params)
    },
  }
  const clock = new ManualClock(1_700_000_000_000)
  const mb = makeMatchbox({ hostId: 'direct', store, jobStore, clock, random: Random.make(9), closeStores: () => store.close() })
  const q = mb.queue('q')
  // A job waits in the store; the pass its enqueue asked for is held.
  await q.enqueueMany([{ payload: 'a' }])
  await until(() => heldPasses.length === 1, 'the first pass is held')
  // The worker arrives while that pass runs, and waits for it before claiming from the store.
  const ran: string[] = []
  const stop = q.work(async (job) => {
    ran.push(job.payload as string)
  })
  await settle()
  // A job due later arms the driver's timer; at its time the timer asks for another pass (a
  // scan), queued behind the first.
  await q.enqueueMany([{ payload: 'b', delayMs: 1_000 }])
  clock.advance(1_000)
  ;(heldPasses.shift() as () => void)()
  // The second pass is held in its turn; the worker's claim, made before it was asked for, must
  // not wait for it.
  await until(() => heldPasses.length === 1, 'the second pass is held')
  await until(() => ran.length === 1, 'the first job ran while the second pass is held')
  // That pass claimed the second job for the worker while the worker's own statement was out;
  // both went back to the store and the worker took the head (Claimer.ts's `headOfBoth`). Its
  // next claim came after the second pass was asked for: it waits for that pass, and no longer.
  holding = false
  for (const release of heldPasses.splice(0)) release()
  await until(() => ran.length === 2, 'the second job ran once the second pass was let go')
  expect(ran).toEqual(['a', 'b'])
  await stop()
  await mb.close()
})
