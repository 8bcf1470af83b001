/**
 * The line poll: the workers of one engine parked for a queue share its Matching polls. With no
 * task coming through Matching one poll serves them all, so a job handed to a parked worker (an
 * enqueue on its engine, a due-time pass) and the worker's return to the line step no queue
 * machine. Once tasks do come through Matching, the line polls for every parked worker, and each
 * task reaches a worker.
 *
 * The queue machines are watched through `onQueueStep`; the job store is wrapped to hold back
 * claims straight from the store, which sends due jobs through Matching instead.
 *
 * No sleeps: waits are on conditions; the clock moves only where a test advances it.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock, Random } from '../src/index.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { settle, until } from './harness/settle.ts'

// An engine on `jobStore` with `concurrency` workers on queue `q`, counting its queue machines'
// poll arrivals and cancellations.
function engine(jobStore: JobStore, concurrency: number, store: ReturnType<typeof makeMemoryStore>) {
  const clock = new ManualClock(1_700_000_000_000)
  const polls = { arrived: 0, cancelled: 0, appends: 0 }
  const mb = makeMatchbox({
    hostId: 'line',
    store,
    jobStore,
    clock,
    random: Random.make(11),
    closeStores: () => store.close(),
    onQueueStep: (_queue, event, commands) => {
      if (event.type === 'poll.arrived') polls.arrived++
      if (event.type === 'poll.cancelled') polls.cancelled++
      polls.appends += commands.filter((command) => command.type === 'store.append').length
    },
  })
  const q = mb.queue('q')
  const ran: string[] = []
  const stop = q.work(
    async (job) => {
      ran.push(job.payload as string)
    },
    { concurrency },
  )
  return { mb, q, ran, stop, clock, polls }
}

describe('the line poll', () => {
  it('sixteen parked workers share one Matching poll: jobs handed to them step no queue machine', async () => {
    const store = makeMemoryStore()
    const { mb, q, ran, stop, polls } = engine(makeMemoryJobStore({ queueRanges: store }), 16, store)
    await q.enqueue('warm-up')
    await until(() => ran.length === 1, 'the warm-up ran')
    await settle()
    const before = { ...polls }
    expect(before.arrived).toBeLessThanOrEqual(2)
    for (let n = 0; n < 20; n++) {
      await q.enqueue(`job-${n}`)
      await until(() => ran.length === n + 2, `job ${n} ran`)
    }
    await settle()
    expect(ran).toHaveLength(21)
    // One worker's own poll would arrive and be cancelled for every job handed over.
    expect(polls.arrived - before.arrived).toBe(0)
    expect(polls.cancelled - before.cancelled).toBe(0)
    await stop()
    await mb.close()
  })

  it('jobs sent through Matching all reach the parked workers, which poll for each of them once the first came', async () => {
    const store = makeMemoryStore()
    const inner = makeMemoryJobStore({ queueRanges: store })
    // Claims straight from the store find nothing (as when another transaction holds the head),
    // so the due-time pass adds the due jobs to Matching for the parked workers.
    const jobStore: JobStore = { ...inner, claimDue: async () => [], ackAndClaimDue: async (params) => ({ acked: await inner.ackMany({ claims: params.acks, nowMs: params.nowMs }), claimed: [] }) }
    const { mb, q, ran, stop, clock, polls } = engine(jobStore, 4, store)
    await until(() => polls.arrived === 1, 'the line poll parked')
    await settle()
    expect(polls.arrived).toBe(1)
    // Due before the workers' claims wait their whole time, so the pass finds all four parked.
    const runAt = new Date(clock.now() + 500)
    for (let n = 0; n < 4; n++) await q.enqueue(`due-${n}`, { runAt })
    clock.advance(500)
    await until(() => ran.length === 4, 'every job sent through Matching ran')
    expect([...ran].sort()).toEqual(['due-0', 'due-1', 'due-2', 'due-3'])
    // Once a task came through Matching, the line polls for each parked worker: a second wave's
    // tasks all sync-match, none waits in the backlog.
    await settle()
    const appendsBefore = polls.appends
    const later = new Date(clock.now() + 200)
    for (let n = 4; n < 8; n++) await q.enqueue(`due-${n}`, { runAt: later })
    clock.advance(200)
    await until(() => ran.length === 8, 'the second wave ran')
    expect(polls.appends - appendsBefore).toBe(0)
    await stop()
    await mb.close()
  })
})
