/**
 * `job.signal`: a handler's AbortSignal aborts (reason `ClaimLost`) when its job is cancelled
 * while it runs — heard at `work`'s next heartbeat, within a third of the visibility timeout —
 * and when a heartbeat finds the claim lapsed; a handler that honours it stops, and its job,
 * cancelled, is never acked (no `job.completed`). A job that runs to its end is acked with its
 * signal never aborted. On the memory store, with a ManualClock and no sleeps.
 */
import { describe, expect, it } from 'vitest'
import { ClaimLost, type JobHandle, ManualClock, type MatchboxEvent, open } from '../src/index.ts'
import { settle, until } from './harness/settle.ts'

const start = 1_700_000_000_000

// The signal is the engine's: what it hears from a store is a heartbeat refused or failed, and
// the conformance suite pins those answers on every store.
describe.each(['memory'] as const)('job.signal on the %s store', (store) => {
  let stopHandler = (): void => {}
  it('aborts a running handler whose job is cancelled, at the next heartbeat; the job is never acked', async () => {
    const clock = new ManualClock(start)
    const events: MatchboxEvent[] = []
    const mb = await open({ store, clock, seed: 3, onEvent: (event) => events.push(event) })
    try {
      const q = mb.queue('renders', { visibilityTimeoutS: 30 })
      let seen: JobHandle | undefined
      let stoppedEarly = false
      // Lets the handler end if the test fails first, so close does not wait for it forever.
      let release = (): void => {}
      const released = new Promise<void>((resolve) => (release = resolve))
      stopHandler = release
      const stop = q.work(async (job) => {
        seen = job
        // Honours the signal: stops at its abort, as a fetch given the signal would.
        await Promise.race([new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve(), { once: true })), released])
        stoppedEarly = job.signal.aborted
      })
      const id = await q.enqueue({ frame: 1 })
      await until(() => seen !== undefined, 'the handler starts')
      expect(seen?.signal.aborted).toBe(false)
      expect(await q.cancel(id)).toBe(true)
      // The next heartbeat is due a third of the way to the deadline.
      clock.advance(10_000)
      await until(() => stoppedEarly, 'the handler hears the abort')
      expect(seen?.signal.reason).toBeInstanceOf(ClaimLost)
      expect((seen?.signal.reason as ClaimLost).message).toContain('cancelled')
      await stop()
      expect(events.some((event) => event.type === 'job.completed' && event.id === id)).toBe(false)
      expect(await q.getJob(id)).toBeNull()
    } finally {
      stopHandler()
      await mb.close()
    }
  })

  it('aborts when a heartbeat finds the claim lapsed, and never for a job that runs to its end', async () => {
    const clock = new ManualClock(start)
    const mb = await open({ store, clock, seed: 4 })
    try {
      const q = mb.queue('imports', { visibilityTimeoutS: 30 })
      await q.enqueue({ n: 1 })
      const job = await q.claim()
      clock.advance(30_000)
      expect(await job?.heartbeat()).toBe(false)
      expect(job?.signal.aborted).toBe(true)
      expect(job?.signal.reason).toBeInstanceOf(ClaimLost)

      let finished: JobHandle | undefined
      const stop = q.work(async (handle) => {
        finished = handle
      })
      await q.enqueue({ n: 2 })
      await until(() => finished !== undefined && finished.id !== job?.id, 'a fresh job runs')
      await settle()
      await stop()
      expect(finished?.signal.aborted).toBe(false)
    } finally {
      await mb.close()
    }
  })
})
