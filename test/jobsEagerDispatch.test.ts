/**
 * Eager dispatch: an enqueue on an engine whose worker waits for the queue inserts the job
 * already claimed and hands it to that worker, with no delivery pass and no Matching task for
 * it. A job handed over just as Matching gave the worker another one waits for the worker's next
 * poll, and both run once. The job store is wrapped to watch (and, in the race, hold) calls.
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

// Records which jobs were enqueued claimed and which a delivery pass took; claimed enqueues
// wait at `inserts`, claim batches at `claims`.
function watched(inner: JobStore) {
  const seen = { claimedAtEnqueue: [] as string[], delivered: [] as string[], claimedDue: [] as string[] }
  const inserts = makeGate()
  const claims = makeGate()
  const store: JobStore = {
    ...inner,
    async claimMany(params) {
      await claims.pass()
      return inner.claimMany(params)
    },
    async enqueue(params, tx) {
      if (params.claimToken !== undefined) {
        await inserts.pass()
        seen.claimedAtEnqueue.push(params.job.id)
      }
      return inner.enqueue(params, tx)
    },
    async claimDue(params) {
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
  return { store, seen, inserts, claims }
}

// An engine on `jobStore` with one worker on queue `q` recording the payloads it ran; `during`
// runs inside the handler (a test may hold a job there).
function workingEngine(jobStore: JobStore, during: (payload: string) => Promise<void> = async () => {}) {
  const store = makeMemoryStore()
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
    const jobs = watched(makeMemoryJobStore())
    const { mb, q, ran, stop } = workingEngine(jobs.store)
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
    const jobs = watched(makeMemoryJobStore())
    const { mb, q, ran, stop, clock } = workingEngine(jobs.store)
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

  it('a job handed over as Matching gives the worker another waits for its next poll; both run once', async () => {
    const jobs = watched(makeMemoryJobStore())
    const { mb, q, ran, stop } = workingEngine(jobs.store)
    // The worker is parked in Matching (a first job ran through it).
    await q.enqueue('warm-up')
    await until(() => ran.length === 1, 'the first job ran')
    jobs.inserts.close()
    const eager = q.enqueue('eager')
    await until(() => jobs.inserts.held() === 1, 'the claimed insert is held')
    // Meanwhile a job arrives the ordinary way (enqueueMany is never eager) and reaches the worker.
    const [ordinary] = await q.enqueueMany([{ payload: 'through Matching' }])
    await until(() => ran.length === 2, 'the ordinary job ran')
    jobs.inserts.open()
    const eagerId = await eager
    await until(() => ran.length === 3, 'the eager job ran too')
    expect(ran).toEqual(['warm-up', 'through Matching', 'eager'])
    await stop()
    expect(await q.getJob(eagerId)).toBeNull()
    expect(await q.getJob(ordinary as string)).toBeNull()
    await mb.close()
  })

  it('a job handed to a worker whose Matching poll already has a task with History waits as a spare; both run once', async () => {
    const jobs = watched(makeMemoryJobStore())
    let finishFirst: () => void = () => {}
    const firstHeld = new Promise<void>((resolve) => (finishFirst = resolve))
    const { mb, q, ran, stop } = workingEngine(jobs.store, (payload) => (payload === 'first' ? firstHeld : Promise.resolve()))
    await q.enqueue('first')
    await until(() => ran.length === 1, 'the first job is running')
    // While the worker is busy, a job goes to Matching's backlog the ordinary way.
    await q.enqueueMany([{ payload: 'backlog' }])
    await mb.idle()
    // The worker's next poll gets the backlog task; History's claim of it is held.
    jobs.claims.close()
    finishFirst()
    await until(() => jobs.claims.held() === 1, 'the claim of the backlog task is held')
    // The worker still waits in line, so this enqueue hands it a job as well.
    const eagerId = await q.enqueue('eager')
    expect(jobs.seen.claimedAtEnqueue).toContain(eagerId)
    jobs.claims.open()
    await until(() => ran.length === 3, 'both jobs ran')
    expect(ran).toEqual(['first', 'backlog', 'eager'])
    await stop()
    expect(await q.getJob(eagerId)).toBeNull()
    await mb.close()
  })
})
