/**
 * A job that reached its worker through Matching frees the rows behind it. While a claimable job
 * of a queue is with Matching the store claims nothing behind it, so a row that became due
 * meanwhile (another engine's enqueue, whose due-time pass found nothing to claim) waits. Once
 * the Matching job has reached its worker, a due-time pass must run at once for the workers
 * still waiting: nothing else would run one before the next scan, and on a stopped clock never.
 *
 * Staged on the memory stores, one engine with two workers, on a ManualClock that does not move
 * once the first job is due:
 * - until a job has been claimed through Matching, claims straight from the store find nothing
 *   (as when another transaction holds the head), so the first due job goes to the line's
 *   Matching poll;
 * - that job's claim is held at the store while a second row is written straight into it, as
 *   another engine's enqueue would be;
 * - then the claim goes through, and the second job must reach the other worker.
 *
 * No sleeps: waits are on conditions, bounded by event-loop turns.
 */
import { expect, it } from 'vitest'
import { ManualClock, Random } from '../src/index.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import { resolveQueueOptions } from '../src/jobs/QueueOptions.ts'
import type { JobStore, NewJob } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { settle, until } from './harness/settle.ts'

it('once a job from Matching reaches its worker, a row that became due behind it reaches the other waiting worker without the clock moving', async () => {
  const store = makeMemoryStore()
  const inner = makeMemoryJobStore({ queueRanges: store })
  let claimedThroughMatching = 0
  const beforeMatching = (): boolean => claimedThroughMatching === 0
  // The first claim of a job Matching delivers is held at the store until the test opens this.
  const held: { open: (() => void) | null } = { open: null }
  const throughMatching = async <T>(claim: () => Promise<T>): Promise<T> => {
    if (beforeMatching()) await new Promise<void>((resolve) => (held.open = resolve))
    const outcome = await claim()
    claimedThroughMatching++
    return outcome
  }
  const jobStore: JobStore = {
    ...inner,
    claimDue: async (params) => (beforeMatching() ? [] : inner.claimDue(params)),
    ackAndClaimDue: async (params) =>
      beforeMatching() ? { acked: await inner.ackMany({ claims: params.acks, nowMs: params.nowMs }), claimed: [] } : inner.ackAndClaimDue(params),
    claim: (params) => throughMatching(() => inner.claim(params)),
    claimMany: (params) => throughMatching(() => inner.claimMany(params)),
  }
  const clock = new ManualClock(1_700_000_000_000)
  let pollsArrived = 0
  const mb = makeMatchbox({
    hostId: 'behind',
    store,
    jobStore,
    clock,
    random: Random.make(5),
    closeStores: () => store.close(),
    onQueueStep: (_queue, event) => {
      if (event.type === 'poll.arrived') pollsArrived++
    },
  })
  const q = mb.queue('q')
  const started: string[] = []
  // Each handler holds its job until the end, so each job needs a worker of its own.
  const finishHandlers: Array<() => void> = []
  const stop = q.work(
    async (job) => {
      started.push(job.payload as string)
      await new Promise<void>((resolve) => finishHandlers.push(resolve))
    },
    { concurrency: 2 },
  )
  await until(() => pollsArrived === 1, 'the line poll parked')
  await settle()

  // Due in 500 ms, so no worker is handed it at enqueue: the due-time pass sends it to Matching.
  await q.enqueue('first', { runAt: new Date(clock.now() + 500) })
  clock.advance(500)
  await until(() => held.open !== null, "the first job's claim through Matching is at the store")

  const second: NewJob = { id: 'second-written-elsewhere', queue: 'q', payload: 'second', priority: 0, runAtMs: clock.now(), expiresAtMs: null, ...resolveQueueOptions(undefined) }
  await inner.enqueue({ job: second, nowMs: clock.now() })
  held.open?.()

  await until(() => started.length === 2, 'the row behind the Matching job reached the other worker (it waits for the next scan, which a stopped clock never runs)')
  expect(started).toEqual(['first', 'second'])

  for (const finish of finishHandlers.splice(0)) finish()
  await stop()
  await mb.close()
})
