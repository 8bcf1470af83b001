/**
 * `work(handler, { concurrency, batch })` on the memory stores and a ManualClock: claims run
 * ahead of the handlers into a local queue of at most `batch` jobs, handlers take them in claim
 * order, a job whose claim lapsed while it waited is skipped and delivered again, and `stop()`
 * runs what the local queue holds before it resolves.
 *
 * While the store can serve them, the local queue claims several jobs in one statement, once
 * its room reaches half the queue, with up to two such statements at the store at once; once
 * no row is due its claims park, and an enqueue or a
 * due-time pass serves them. The acks of jobs finished while such a claim is at the store ride
 * on the next one; a failed statement fails those acks as a failed ack does.
 *
 * No sleeps: time moves only by `clock.advance`; waits are on conditions.
 */
import { describe, expect, it } from 'vitest'
import { type JobQueue, ManualClock, type Matchbox, open, Random, Unavailable } from '../src/index.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import { localClaimsInFlightMax } from '../src/kernel/Limits.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { withRoundTrips } from './harness/roundTrips.ts'
import { settle, until } from './harness/settle.ts'

const start = 1_700_000_000_000

async function engine(): Promise<{ mb: Matchbox; clock: ManualClock }> {
  const clock = new ManualClock(start)
  return { mb: await open({ store: 'memory', clock, seed: 3, hostId: 'batch' }), clock }
}

// A handler that records `payload#attempt` and waits until released.
function gatedHandler(): { seen: string[]; running: () => number; releaseAll: () => void; handler: (job: { payload: unknown; attempts: number }) => Promise<void> } {
  const seen: string[] = []
  let gates: Array<() => void> = []
  let open = false
  return {
    seen,
    running: () => gates.length,
    releaseAll() {
      open = true
      for (const release of gates) release()
      gates = []
    },
    async handler(job) {
      seen.push(`${String(job.payload)}#${job.attempts}`)
      if (!open) await new Promise<void>((resolve) => gates.push(resolve))
    },
  }
}

// Enqueues `count` jobs on `q` and works them with a local queue (concurrency 4, batch 16); resolves
// once every one ran, with the payloads in enqueue order, those the handlers ran, and the worker's stop.
async function runBacklog(q: JobQueue, count: number): Promise<{ payloads: string[]; ran: string[]; stop: () => Promise<void> }> {
  const payloads = Array.from({ length: count }, (_, index) => `job-${index}`)
  await q.enqueueMany(payloads.map((payload) => ({ payload })))
  const ran: string[] = []
  const stop = q.work(
    async (job) => {
      ran.push(job.payload as string)
    },
    { concurrency: 4, batch: 16 },
  )
  await until(() => ran.length === count, 'the backlog ran')
  return { payloads, ran, stop }
}

// `inner` recording how many jobs each `operation` (a claim straight from the store) asked for
// (`asked`), and `whileDue`: the counts asked before the first short answer, while rows were due.
function recordingClaims(inner: JobStore, operation: 'claimDue' | 'ackAndClaimDue'): { store: JobStore; asked: number[]; whileDue: () => number[] } {
  const asked: number[] = []
  const got: number[] = []
  const store: JobStore =
    operation === 'claimDue'
      ? { ...inner, claimDue: async (params) => (asked.push(params.claimTokens.length), inner.claimDue(params).then((jobs) => (got.push(jobs.length), jobs))) }
      : {
          ...inner,
          ackAndClaimDue: async (params) => (asked.push(params.claimTokens.length), inner.ackAndClaimDue(params).then((answer) => (got.push(answer.claimed.length), answer))),
        }
  return { store, asked, whileDue: () => asked.slice(0, got.findIndex((count, index) => count < (asked[index] as number))) }
}

describe('jobs API: work with a local queue (batch)', () => {
  it('claims up to batch jobs ahead of the handlers and runs them in claim order', async () => {
    const { mb } = await engine()
    const q = mb.queue('ahead')
    await q.enqueueMany(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((payload) => ({ payload })))
    const gate = gatedHandler()
    const stop = q.work(gate.handler, { concurrency: 1, batch: 4 })
    await until(() => gate.running() === 1, 'the first handler started')
    await settle(20)
    // Four claimed in one statement, one of them running; the local queue claims again once half
    // of it (two slots) is free, so the rest are still pending.
    expect(await q.counts()).toEqual({ pending: 4, processing: 4, dead: 0 })
    expect(gate.seen).toEqual(['a#1'])
    gate.releaseAll()
    await until(() => gate.seen.length === 8, 'every job ran')
    await stop()
    expect(gate.seen).toEqual(['a#1', 'b#1', 'c#1', 'd#1', 'e#1', 'f#1', 'g#1', 'h#1'])
    expect(await q.counts()).toEqual({ pending: 0, processing: 0, dead: 0 })
    await mb.close()
  })

  it('skips a job whose claim lapsed while it waited; it is delivered again', async () => {
    const { mb, clock } = await engine()
    const q = mb.queue('lapsing', { visibilityTimeoutS: 10 })
    await q.enqueueMany(['a', 'b', 'c'].map((payload) => ({ payload })))
    const gate = gatedHandler()
    const stop = q.work(gate.handler, { concurrency: 1, batch: 2 })
    await until(() => gate.running() === 1, 'the first handler started')
    await settle(20)
    expect(await q.counts()).toMatchObject({ processing: 3 })
    // The running job is heartbeaten; the two waiting ones are not, and lapse.
    for (let second = 0; second < 12; second++) {
      clock.advance(1_000)
      await settle()
    }
    gate.releaseAll()
    await until(() => gate.seen.length === 3, 'the lapsed jobs ran again')
    await stop()
    expect(gate.seen).toEqual(['a#1', 'b#2', 'c#2'])
    expect(await q.counts()).toEqual({ pending: 0, processing: 0, dead: 0 })
    await mb.close()
  })

  it('stop claims nothing more and runs what the local queue holds before it resolves', async () => {
    const { mb } = await engine()
    const q = mb.queue('stopping')
    await q.enqueueMany(['a', 'b', 'c', 'd', 'e'].map((payload) => ({ payload })))
    const gate = gatedHandler()
    const stop = q.work(gate.handler, { concurrency: 1, batch: 3 })
    await until(() => gate.running() === 1, 'the first handler started')
    await settle(20)
    // Three claimed, one of them running; one free slot is less than half the queue.
    expect(await q.counts()).toMatchObject({ pending: 2, processing: 3 })
    let stopped = false
    const stopping = stop().then(() => {
      stopped = true
    })
    await settle(20)
    expect(stopped).toBe(false)
    gate.releaseAll()
    await stopping
    expect(gate.seen).toEqual(['a#1', 'b#1', 'c#1'])
    expect(await q.counts()).toEqual({ pending: 2, processing: 0, dead: 0 })
    await mb.close()
  })

  it('claims a backlog several jobs per statement, never fewer than half the queue while rows are due and no ack rides', async () => {
    const store = makeMemoryStore()
    const { store: jobStore, asked, whileDue: claimsWhileDue } = recordingClaims(makeMemoryJobStore({ queueRanges: store }), 'claimDue')
    const clock = new ManualClock(start)
    const mb = makeMatchbox({ hostId: 'several', store, jobStore, clock, random: Random.make(3), closeStores: () => store.close() })
    const q = mb.queue('backlog')
    const { payloads, ran, stop } = await runBacklog(q, 100)
    expect(ran).toEqual(payloads)
    // Every claim while rows were due asked for at least half the queue; the short one ended it.
    const whileDue = claimsWhileDue()
    expect(whileDue.length).toBeGreaterThan(0)
    for (const count of whileDue) expect(count).toBeGreaterThanOrEqual(8)
    expect(asked.length).toBeLessThanOrEqual(100 / 8 + 2)

    // Drained, the claims park: new jobs reach them through an enqueue or a due-time pass.
    const statementsDrained = asked.length
    await settle(20)
    expect(asked.length).toBe(statementsDrained)
    await q.enqueue('eager')
    await q.enqueueMany(['later-1', 'later-2', 'later-3'].map((payload) => ({ payload, runAt: new Date(start + 5_000) })))
    clock.advance(5_000)
    await until(() => ran.length === 104, 'the new jobs ran')
    expect(ran.slice(100).sort()).toEqual(['eager', 'later-1', 'later-2', 'later-3'])
    await stop()
    expect(await q.counts()).toEqual({ pending: 0, processing: 0, dead: 0 })
    await mb.close()
  })

  it('acks the jobs its handlers finished in the statement that claims the next ones', async () => {
    const store = makeMemoryStore()
    const { store: jobStore, statements, ridingPerStatement, claimsOutMax } = withRoundTrips(makeMemoryJobStore({ queueRanges: store }))
    const mb = makeMatchbox({ hostId: 'riding', store, jobStore, clock: new ManualClock(start), random: Random.make(5), closeStores: () => store.close() })
    const q = mb.queue('riding')
    const completed: string[] = []
    mb.on('job.completed', (event) => completed.push(event.id))
    const { payloads, ran, stop } = await runBacklog(q, 200)
    await stop()
    expect(ran).toEqual(payloads)
    expect(await q.counts()).toEqual({ pending: 0, processing: 0, dead: 0 })
    // Each ack, riding or alone, emitted its event once.
    expect(new Set(completed).size).toBe(200)
    expect(completed.length).toBe(200)
    // Most acks rode on claims: each statement both acked what the handlers finished while the
    // ones before it were out and claimed what they freed, some four jobs or more a statement here.
    expect(ridingPerStatement.reduce((sum, count) => sum + count, 0)).toBeGreaterThanOrEqual(150)
    expect(statements.length).toBeLessThanOrEqual(200 / 4)
    // Two claim statements were at the store at once while the backlog lasted, never more.
    expect(claimsOutMax()).toBe(localClaimsInFlightMax)
    await mb.close()
  })

  it('acks that ride wait for a claim at the store rather than go out with a few slots: each claim while rows are due takes half the queue or more', async () => {
    const store = makeMemoryStore()
    const { store: slow, ridingPerStatement } = withRoundTrips(makeMemoryJobStore({ queueRanges: store }))
    const { store: jobStore, whileDue: claimsWhileDue } = recordingClaims(slow, 'ackAndClaimDue')
    const mb = makeMatchbox({ hostId: 'riding-half', store, jobStore, clock: new ManualClock(start), random: Random.make(5), closeStores: () => store.close() })
    const q = mb.queue('riding-half')
    const { payloads, ran, stop } = await runBacklog(q, 400)
    await stop()
    expect(ran).toEqual(payloads)
    expect(await q.counts()).toEqual({ pending: 0, processing: 0, dead: 0 })
    // Acks rode on the claims, and every claim that carried them while rows were due asked for at
    // least half the queue (the short answer that ended the backlog aside).
    expect(ridingPerStatement.reduce((sum, count) => sum + count, 0)).toBeGreaterThanOrEqual(300)
    const whileDue = claimsWhileDue()
    expect(whileDue.length).toBeGreaterThan(20)
    expect(whileDue.filter((count) => count < 8)).toEqual([])
    await mb.close()
  })

  it('a failed claim statement fails the acks riding on it: onError hears each with its job, which is delivered again', async () => {
    const store = makeMemoryStore()
    const { store: slow } = withRoundTrips(makeMemoryJobStore({ queueRanges: store }))
    let failures = 1
    const jobStore: JobStore = {
      ...slow,
      async ackAndClaimDue(params) {
        if (params.acks.length > 0 && failures-- > 0) {
          await new Promise<void>((resolve) => setImmediate(resolve))
          throw new Unavailable({ operation: 'ackAndClaimDue', detail: 'connection reset', maybeCommitted: false })
        }
        return slow.ackAndClaimDue(params)
      },
    }
    const clock = new ManualClock(start)
    const mb = makeMatchbox({ hostId: 'riding-fails', store, jobStore, clock, random: Random.make(5), closeStores: () => store.close() })
    const q = mb.queue('riding-fails', { visibilityTimeoutS: 10 })
    const payloads = Array.from({ length: 12 }, (_, index) => `job-${index}`)
    await q.enqueueMany(payloads.map((payload) => ({ payload })))
    const ran: string[] = []
    const heard: Array<[string, string | null]> = []
    const stop = q.work(
      async (job) => {
        ran.push(`${String(job.payload)}#${job.attempts}`)
      },
      { concurrency: 2, batch: 4, onError: (error, job) => heard.push([(error as { _tag?: string })._tag ?? String(error), job === null ? null : String(job.payload)]) },
    )
    await until(() => heard.length > 0, 'the failure was reported')
    // Reported with a job whose ack rode on the statement (one report per back-off step).
    expect(heard[0]?.[0]).toBe('Unavailable')
    expect(payloads).toContain(heard[0]?.[1])
    // The loops wait out the back-off; the jobs whose acks failed lapse and run again.
    const left = async () => {
      const counts = await q.counts()
      return counts.pending + counts.processing
    }
    for (let second = 0; second < 30 && (await left()) > 0; second++) {
      clock.advance(1_000)
      await settle(10)
    }
    await stop()
    expect(new Set(ran.map((entry) => entry.split('#')[0]))).toEqual(new Set(payloads))
    expect(ran).toContain(`${heard[0]?.[1]}#2`)
    expect(await q.counts()).toEqual({ pending: 0, processing: 0, dead: 0 })
    await mb.close()
  })

  it('stop while acks wait for the claim at the store: they are sent once it returns, and stop resolves after them', async () => {
    const store = makeMemoryStore()
    const inner = makeMemoryJobStore({ queueRanges: store })
    let held: Array<() => void> = []
    let holding = false
    const jobStore: JobStore = {
      ...inner,
      async ackAndClaimDue(params) {
        if (holding) await new Promise<void>((resume) => held.push(resume))
        return inner.ackAndClaimDue(params)
      },
      async claimDue(params) {
        if (holding) await new Promise<void>((resume) => held.push(resume))
        return inner.claimDue(params)
      },
    }
    const mb = makeMatchbox({ hostId: 'riding-stop', store, jobStore, clock: new ManualClock(start), random: Random.make(6), closeStores: () => store.close() })
    const q = mb.queue('riding-stop')
    await q.enqueueMany(Array.from({ length: 20 }, (_, index) => ({ payload: index })))
    const ran: number[] = []
    const stop = q.work(
      async (job) => {
        ran.push(job.payload as number)
        // Once the first jobs ran, the local queue's next claim is held at the store.
        if (ran.length === 2) holding = true
      },
      { concurrency: 2, batch: 8 },
    )
    await until(() => held.length > 0 && ran.length === 8, 'the first fill ran while the next claim is held')
    let stopped = false
    const stopping = stop().then(() => {
      stopped = true
    })
    await settle(20)
    expect(stopped).toBe(false)
    holding = false
    for (const resume of held.splice(0)) resume()
    await stopping
    // Every job that ran is acked (riding, or alone once the worker stopped); the rest wait.
    expect(await q.counts()).toEqual({ pending: 20 - ran.length, processing: 0, dead: 0 })
    await mb.close()
  })

  it('refuses a bad batch with InvalidInput', async () => {
    const { mb } = await engine()
    const q = mb.queue('bad')
    for (const batch of [0, 1.5, 1_001, Number.NaN]) {
      expect(() => q.work(async () => {}, { batch }), String(batch)).toThrow(expect.objectContaining({ _tag: 'InvalidInput', field: 'options.batch' }))
    }
    await mb.close()
  })
})
