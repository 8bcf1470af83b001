/**
 * Eager dispatch: an enqueue on an engine whose worker waits for the queue inserts the job
 * already claimed and hands it to that worker, with no delivery pass and no Matching task for
 * it. A job handed over just as the worker claimed another one from the store waits for the
 * worker's next poll, and both run once. The job store is wrapped to watch (and, in the race,
 * hold) calls.
 *
 * No sleeps: waits are on conditions; the clock does not move.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock, Random } from '../src/index.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { makeGate } from './harness/gate.ts'
import { until } from './harness/settle.ts'

// Records which jobs were enqueued claimed, which were claimed straight from the store and which
// a delivery pass reserved for Matching; claims from the store wait at `directClaims`.
function watched(inner: JobStore) {
  const seen = { claimedAtEnqueue: [] as string[], delivered: [] as string[], claimedDue: [] as string[] }
  const directClaims = makeGate()
  const store: JobStore = {
    ...inner,
    async enqueue(params, tx) {
      if (params.claimToken !== undefined) seen.claimedAtEnqueue.push(params.job.id)
      return inner.enqueue(params, tx)
    },
    async claimDue(params) {
      await directClaims.pass()
      const claimed = await inner.claimDue(params)
      seen.claimedDue.push(...claimed.map((job) => job.id))
      return claimed
    },
    async takeDue(params) {
      const due = await inner.takeDue(params)
      seen.delivered.push(...due.map((job) => job.id))
      return due
    },
  }
  return { store, seen, directClaims }
}

// An engine on `jobStore` with one worker on queue `q` recording the payloads it ran; `during`
// runs inside the handler (a test may hold a job there).
function workingEngine(jobStore: JobStore, store: ReturnType<typeof makeMemoryStore>, during: (payload: string) => Promise<void> = async () => {}) {
  const clock = new ManualClock(1_700_000_000_000)
  const mb = makeMatchbox({ hostId: 'eager', store, jobStore, clock, random: Random.make(3), closeStores: () => store.close() })
  const q = mb.queue('q')
  const ran: string[] = []
  const stop = q.work(async (job) => {
    ran.push(job.payload as string)
    await during(job.payload as string)
  })
  return { mb, q, ran, stop, clock }
}

describe('eager dispatch', () => {
  it('hands a job enqueued on the worker’s engine straight to the waiting worker', async () => {
    const store = makeMemoryStore()
    const jobs = watched(makeMemoryJobStore({ queueRanges: store }))
    const { mb, q, ran, stop } = workingEngine(jobs.store, store)
    const first = await q.enqueue('warm-up')
    await until(() => ran.length === 1, 'the first job ran')
    const id = await q.enqueue('eager')
    await until(() => ran.length === 2, 'the eager job ran')
    expect(jobs.seen.claimedAtEnqueue).toContain(id)
    expect(jobs.seen.delivered).not.toContain(id)
    await until(() => jobs.seen.claimedAtEnqueue.length === 2, 'both enqueues were eager') // the warm-up too: the worker was waiting
    expect(jobs.seen.claimedAtEnqueue).toEqual([first, id])
    await stop()
    expect(await q.getJob(id)).toBeNull()
    await mb.close()
  })

  it('a job that becomes due while the worker waits is claimed by the delivery pass straight for it, with no Matching task', async () => {
    const store = makeMemoryStore()
    const jobs = watched(makeMemoryJobStore({ queueRanges: store }))
    const { mb, q, ran, stop, clock } = workingEngine(jobs.store, store)
    await q.enqueue('warm-up')
    await until(() => ran.length === 1, 'the first job ran')
    // Not claimable at enqueue, so no eager enqueue: the due-time driver meets the waiting worker.
    const id = await q.enqueue('later', { runAt: new Date(clock.now() + 5_000) })
    expect(jobs.seen.claimedAtEnqueue).not.toContain(id)
    clock.advance(5_000)
    await until(() => ran.length === 2, 'the due job ran')
    expect(ran).toEqual(['warm-up', 'later'])
    expect(jobs.seen.claimedDue).toEqual([id])
    expect(jobs.seen.delivered).not.toContain(id)
    await stop()
    expect(await q.getJob(id)).toBeNull()
    await mb.close()
  })

  it('a job handed over while the worker’s own claim from the store is in flight waits for its next poll; both run once', async () => {
    const store = makeMemoryStore()
    const jobs = watched(makeMemoryJobStore({ queueRanges: store }))
    const mb = makeMatchbox({ hostId: 'eager', store, jobStore: jobs.store, clock: new ManualClock(1_700_000_000_000), random: Random.make(3), closeStores: () => store.close() })
    const q = mb.queue('q')
    // A job waits in the store (enqueueMany is never eager) before any worker runs.
    const [backlog] = await q.enqueueMany([{ payload: 'backlog' }])
    await mb.idle()
    // The worker's first claim takes the head of the due rows straight from the store: held.
    jobs.directClaims.close()
    const ran: string[] = []
    const stop = q.work(async (job) => {
      ran.push(job.payload as string)
    })
    await until(() => jobs.directClaims.held() === 1, 'the worker’s claim from the store is held')
    // The worker still waits in line, so this enqueue hands it a job as well.
    const eagerId = await q.enqueue('eager')
    expect(jobs.seen.claimedAtEnqueue).toContain(eagerId)
    jobs.directClaims.open()
    await until(() => ran.length === 2, 'both jobs ran')
    expect(ran).toEqual(['backlog', 'eager'])
    expect(jobs.seen.claimedDue).toEqual([backlog])
    expect(jobs.seen.delivered).toEqual([])
    await stop()
    expect(await q.getJob(eagerId)).toBeNull()
    expect(await q.getJob(backlog as string)).toBeNull()
    await mb.close()
  })

  it('an enqueue whose key a live job holds puts the waiting worker back in line: the next due job reaches it without the clock moving', async () => {
    const store = makeMemoryStore()
    const jobs = watched(makeMemoryJobStore({ queueRanges: store }))
    const { mb, q, ran, stop, clock } = workingEngine(jobs.store, store)
    await q.enqueue('warm-up')
    await until(() => ran.length === 1, 'the first job ran')
    // A job due later holds key k; the worker waits in line again.
    await q.enqueue('held', { key: 'k', runAt: new Date(clock.now() + 60_000) })
    await mb.idle()
    // Eager dispatch sets the worker aside for this job, but the key is held: nothing is inserted.
    const sameId = await q.enqueue('duplicate', { key: 'k' })
    expect(jobs.seen.claimedAtEnqueue).not.toContain(sameId)
    // A job the due-time pass claims for the workers in line (enqueueMany is never eager).
    await q.enqueueMany([{ payload: 'next' }])
    await until(() => ran.length === 2, 'the next job reached the worker')
    expect(ran).toEqual(['warm-up', 'next'])
    await stop()
    await mb.close()
  })
})
