/**
 * `work` overlaps a job's ack with the next claim: a loop claims and runs its next job while the
 * previous job's ack is still on its way to the store, at most one ack per loop in flight, and
 * `stop()` resolves only once that ack has landed. The job store's acks wait on a gate here, so
 * the test holds an ack in flight and watches what the loop does meanwhile. A loop whose next
 * claim goes straight to the store sends the ack in that claim's statement instead, which the
 * other loops' claims and acks of the turn share.
 *
 * No sleeps: waits are on conditions; the clock does not move.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock, Random, Unavailable } from '../src/index.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { withRoundTrips } from './harness/roundTrips.ts'
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
    const acks = gatedAcks(makeMemoryJobStore({ queueRanges: store }))
    const mb = makeMatchbox({ hostId: 'overlap', store, jobStore: acks.store, clock, random: Random.make(11), closeStores: () => store.close() })
    const q = mb.queue('q')
    const ran: string[] = []
    const stop = q.work(async (job) => {
      ran.push(job.payload as string)
    })
    // The loop finds no job in the store and waits in line: each enqueue hands it its job, and
    // the queue stays drained, so each next claim waits in line too instead of going to the
    // store with the ack (which the next test covers).
    await settle(20)
    const first = await q.enqueue('first')
    await until(() => ran.length === 1 && acks.held() === 1, 'the first job ran and its ack is held')
    const second = await q.enqueue('second')
    // The second job runs while the first ack is held; its own ack waits for that one.
    await until(() => ran.length === 2, 'second job ran while the first ack was held')
    await settle()
    expect(ran).toEqual(['first', 'second'])
    expect(acks.held()).toBe(1)
    expect(await q.getJob(first)).not.toBeNull()

    acks.open()
    await until(() => acks.held() === 1, 'the second ack is in flight once the first landed')
    expect(await q.getJob(first)).toBeNull()

    let stopped = false
    const stopping = stop().then(() => {
      stopped = true
    })
    await settle()
    expect(stopped).toBe(false)
    acks.open()
    await stopping
    for (const id of [first, second]) expect(await q.getJob(id)).toBeNull()
    await mb.close()
  })

  it('with concurrency 1 and due jobs in the store, a job’s ack rides on the statement that claims the next one', async () => {
    const clock = new ManualClock(1_700_000_000_000)
    const store = makeMemoryStore()
    const inner = makeMemoryJobStore({ queueRanges: store })
    const calls: string[] = []
    const jobStore: JobStore = {
      ...inner,
      async claimDue(params) {
        calls.push(`claimDue ×${params.claimTokens.length}`)
        return inner.claimDue(params)
      },
      async ackMany(params) {
        calls.push(`ackMany ×${params.claims.length}`)
        return inner.ackMany(params)
      },
      async ackAndClaimDue(params) {
        const answer = await inner.ackAndClaimDue(params)
        calls.push(`ackAndClaimDue ${answer.acked.length > 0 ? 'acked' : 'refused'}, claimed ${answer.claimed.length}`)
        return answer
      },
    }
    const mb = makeMatchbox({ hostId: 'riding', store, jobStore, clock, random: Random.make(12), closeStores: () => store.close() })
    const completed: string[] = []
    mb.on('job.completed', (event) => completed.push(event.id))
    const q = mb.queue('q')
    const ids = await q.enqueueMany(['a', 'b', 'c'].map((payload) => ({ payload })))
    const ran: string[] = []
    const stop = q.work(async (job) => {
      ran.push(job.payload as string)
    })
    await until(() => completed.length === 3, 'every job was acked')
    await stop()
    expect(ran).toEqual(['a', 'b', 'c'])
    expect(completed).toEqual(ids)
    // The first claim alone; each ack then claims the next job (the last finds none).
    expect(calls).toEqual(['claimDue ×1', 'ackAndClaimDue acked, claimed 1', 'ackAndClaimDue acked, claimed 1', 'ackAndClaimDue acked, claimed 0'])
    expect(await q.counts()).toEqual({ pending: 0, processing: 0, dead: 0 })
    await mb.close()
  })
  it('with several loops and due jobs in the store, the acks of a turn ride on the statement that claims the turn’s next jobs', async () => {
    const store = makeMemoryStore()
    const { store: jobStore, statements, ridingPerStatement } = withRoundTrips(makeMemoryJobStore({ queueRanges: store }))
    const mb = makeMatchbox({ hostId: 'riding-loops', store, jobStore, clock: new ManualClock(1_700_000_000_000), random: Random.make(14), closeStores: () => store.close() })
    const completed: string[] = []
    mb.on('job.completed', (event) => completed.push(event.id))
    const q = mb.queue('q')
    const ids = await q.enqueueMany(Array.from({ length: 40 }, (_, index) => ({ payload: index })))
    const stop = q.work(async () => {}, { concurrency: 4 })
    await until(() => completed.length === 40, 'every job was acked')
    await stop()
    expect([...completed].sort()).toEqual([...ids].sort())
    expect(await q.counts()).toEqual({ pending: 0, processing: 0, dead: 0 })
    // Nearly every ack rode on a claim, and loops' acks and claims that meet in a batch share its
    // statement: fewer statements than jobs, where acking and claiming apart takes more than one
    // a job here (each batcher sends a lone call at once while fewer than two batches are out).
    expect(Math.max(...ridingPerStatement)).toBeGreaterThanOrEqual(2)
    expect(ridingPerStatement.reduce((sum, count) => sum + count, 0)).toBeGreaterThanOrEqual(36)
    expect(statements.length).toBeLessThan(40)
    await mb.close()
  })

  it('a failed statement fails the ack with the claim: onError hears it with the job, which is delivered again', async () => {
    const clock = new ManualClock(1_700_000_000_000)
    const store = makeMemoryStore()
    const inner = makeMemoryJobStore({ queueRanges: store })
    let failures = 1
    const jobStore: JobStore = {
      ...inner,
      async ackAndClaimDue(params) {
        if (failures-- > 0) throw new Unavailable({ operation: 'ackAndClaimDue', detail: 'connection reset', maybeCommitted: false })
        return inner.ackAndClaimDue(params)
      },
    }
    const mb = makeMatchbox({ hostId: 'riding-fails', store, jobStore, clock, random: Random.make(13), closeStores: () => store.close() })
    const q = mb.queue('q', { visibilityTimeoutS: 10 })
    await q.enqueueMany(['a', 'b'].map((payload) => ({ payload })))
    const ran: string[] = []
    const heard: Array<[string, string | null]> = []
    const stop = q.work(
      async (job) => {
        ran.push(`${String(job.payload)}#${job.attempts}`)
      },
      { onError: (error, job) => heard.push([(error as { _tag?: string })._tag ?? String(error), job === null ? null : String(job.payload)]) },
    )
    await until(() => heard.length === 1, 'the failure was reported')
    expect(heard).toEqual([['Unavailable', 'a']])
    // Job a was not acked: its claim lapses and it runs again; b runs meanwhile.
    for (let second = 0; second < 12 && ran.length < 3; second++) {
      clock.advance(1_000)
      await settle(10)
    }
    await until(() => ran.length === 3, 'a ran again')
    await stop()
    expect(ran.slice(0, 2)).toEqual(['a#1', 'b#1'])
    expect(ran.slice(2)).toEqual(['a#2'])
    expect(await q.counts()).toEqual({ pending: 0, processing: 0, dead: 0 })
    await mb.close()
  })
})
