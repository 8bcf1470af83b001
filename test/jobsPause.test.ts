/**
 * `queue.pause()` / `resume()` / `isPaused()` through the public API on the memory and embedded
 * stores, with a worker waiting on the queue: while paused, enqueues are accepted and neither
 * the worker nor a direct claim gets a job — a job claimed before the pause still acks; once
 * resumed, the worker runs every job. Another queue keeps running meanwhile. (The store-level
 * rules are in the conformance suite on all three stores; the browser test pauses a queue on
 * PostgreSQL from the dashboard while a worker of another engine waits.)
 *
 * No sleeps: a ManualClock; waits are on conditions.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock, open } from '../src/index.ts'
import { settle, until } from './harness/settle.ts'

const start = 1_700_000_000_000

describe.each(['memory', 'embedded'] as const)('queue pause on the %s store', (store) => {
  it('stops every claim of the queue while paused, keeps accepting enqueues, and delivers all on resume', async () => {
    const clock = new ManualClock(start)
    const mb = await open({ store, clock, seed: 5 })
    try {
      const q = mb.queue('reports')
      const other = mb.queue('emails')
      const early = await q.enqueue({ n: 0 })
      const held = await q.claim()
      expect(held?.id).toBe(early)

      expect(await q.isPaused()).toBe(false)
      expect(await q.pause()).toBe(true)
      expect(await q.pause()).toBe(false)
      expect(await q.isPaused()).toBe(true)

      const ran: string[] = []
      const stop = q.work(async (job) => void ran.push(job.id))
      const stopOther = other.work(async (job) => void ran.push(job.id))
      const ids = [await q.enqueue({ n: 1 }), await q.enqueue({ n: 2 })]
      const elsewhere = await other.enqueue({ n: 3 })
      await until(() => ran.includes(elsewhere), 'the other queue runs its job')
      // Past the due-time driver's safety scan and a claim wait, twice over.
      for (let i = 0; i < 6; i++) {
        clock.advance(5_000)
        await settle()
      }
      expect(ran).toEqual([elsewhere])
      expect(await q.claim()).toBeNull()
      expect(await q.counts()).toMatchObject({ pending: 2, processing: 1 })
      // A job claimed before the pause is its holder's to finish.
      expect(await held?.ack()).toBe(true)

      expect(await q.resume()).toBe(true)
      expect(await q.isPaused()).toBe(false)
      await until(() => ids.every((id) => ran.includes(id)), 'the resumed queue runs both jobs')
      await stop()
      await stopOther()
    } finally {
      await mb.close()
    }
  })
})
