/**
 * Two claim statements of one engine at the store at once (a worker's claim in one turn, another
 * worker's in the next, before the first answered). On PostgreSQL the second passes over the
 * rows the first holds (`FOR UPDATE SKIP LOCKED`), and the first holds more than it claims when a
 * lapsed claim is due: the first row of each of its heads (due pending rows, lapsed claims),
 * of which it claims only the one ahead. The second may then find nothing and come back short.
 * The rows the first held and did not claim are due again the moment it ends, and nothing
 * announces that: a short answer must not leave them to the next scan while a worker waits.
 *
 * One engine on the memory stores, whose head statements skip the rows the test says a
 * statement in flight holds (the memory store's `heldHeads`, as the simulator's row-lock windows
 * use it), with the first claim held at a gate; a ManualClock that does not move once the jobs
 * are due; no sleeps: waits are on conditions, bounded by event-loop turns.
 */
import { expect, it } from 'vitest'
import { ManualClock, Random } from '../src/index.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import type { HeldHead } from '../src/persistence/jobs/MemoryRowLocks.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { makeGate } from './harness/gate.ts'
import { settle, until } from './harness/settle.ts'

it('a row the other claim statement held and did not claim reaches the waiting worker once that statement ends, without the clock moving', async () => {
  const store = makeMemoryStore()
  let holding: ReadonlyArray<HeldHead> = []
  const inner = makeMemoryJobStore({ queueRanges: store, heldHeads: () => holding })
  const first = makeGate()
  // Armed once the jobs are in place: the claims counted are the workers'.
  let armed = false
  let claims = 0
  const jobStore: JobStore = {
    ...inner,
    // The first claim statement waits at the gate, holding the first row of each of its heads
    // (it claims one job) while it does; the ones after it run at once, passing over those rows.
    claimDue: async (params) => {
      if (!armed || claims++ > 0) return inner.claimDue(params)
      holding = [{ queues: [params.queue], rows: params.claimTokens.length, kind: 'claim', fence: params.fence ?? null }]
      await first.pass()
      holding = []
      return inner.claimDue(params)
    },
  }
  const clock = new ManualClock(1_700_000_000_000)
  const mb = makeMatchbox({ hostId: 'solo', store, jobStore, clock, random: Random.make(11), closeStores: () => store.close() })
  const q = mb.queue('q', { visibilityTimeoutS: 5 })

  // A job whose claim lapsed (claimed, never settled, its deadline passed), then one due now.
  await q.enqueue('lapsed')
  const abandoned = await q.claim({ waitMs: 0 })
  expect(abandoned?.payload).toBe('lapsed')
  clock.advance(6_000)
  await mb.idle()
  await q.enqueue('pending')
  await mb.idle()

  const started: string[] = []
  const finish: Array<() => void> = []
  const handler = async (job: { readonly payload: unknown }): Promise<void> => {
    started.push(job.payload as string)
    await new Promise<void>((resolve) => finish.push(resolve))
  }
  first.close()
  armed = true
  const stopFirst = q.work(handler)
  await until(() => first.held() === 1, "the first worker's claim is at the store")
  // The second worker's claim goes out while the first is held, and comes back empty.
  const stopSecond = q.work(handler)
  await until(() => claims === 2, "the second worker's claim ran")
  await settle()
  expect(started).toEqual([])

  first.open()
  await until(() => started.length === 2, 'both jobs reached a worker (the row the first statement held waits for the next scan, which a stopped clock never runs)')
  expect([...started].sort()).toEqual(['lapsed', 'pending'])

  for (const resolve of finish.splice(0)) resolve()
  await Promise.all([stopFirst(), stopSecond()])
  await mb.close()
})
