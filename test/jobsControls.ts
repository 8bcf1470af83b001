/**
 * The operator's controls a handler sees, through the public API, written once and bound to the
 * memory, embedded and PostgreSQL stores (test/jobsControls.test.ts,
 * test/jobsControls.postgres.test.ts): progress, the attempt history and claims `getJob` returns
 * through death and a retry from dead, and `job.signal`. The handler's AbortSignal aborts:
 * - with a `ClaimLost` reason when its job is cancelled while it runs — heard at `work`'s next
 *   heartbeat, within a third of the visibility timeout — and when a heartbeat finds the claim
 *   lapsed; a handler that honours it stops, and one that ignores it cannot ack the cancelled
 *   job (its ack is refused; no `job.completed`);
 * - with a `WorkerStopped` reason when `stop({ graceS })` gives up waiting for the handler, which
 *   it does after `graceS` on the engine's clock, leaving the job to lapse and be delivered again.
 * A job that runs to its end is acked with its signal never aborted.
 *
 * No sleeps: a ManualClock; waits are on conditions, bounded by event-loop turns (`turnsMax`,
 * larger where the store does real I/O).
 */
import { expect, it } from 'vitest'
import { ClaimLost, InvalidInput, type JobHandle, type Matchbox, ManualClock, type MatchboxEvent, WorkerStopped } from '../src/index.ts'
import { settle, until } from './harness/settle.ts'

const start = 1_700_000_000_000

/** Opens a fresh engine on the store under test, on `clock`, hearing `onEvent`. */
export type OpenControlsEngine = (clock: ManualClock, seed: number, onEvent: (event: MatchboxEvent) => void) => Promise<Matchbox>

/** Registers the progress, history and `job.signal` cases against engines `openEngine` opens. */
export function describeJobControls(openEngine: OpenControlsEngine, turnsMax = 10_000): void {
  const waitFor = (condition: () => boolean, what: string): Promise<void> => until(condition, what, turnsMax)
  // Waits as `waitFor` does, moving `clock` 100 ms at a time (up to 20 s in all), for a wait that
  // may need engine time to pass. Each step first lets `engine` finish what the last one started
  // (`idle()`: its membership renewal, then its due-time passes), so the engine's clock moves only
  // as fast as its store answers: on a slow machine a clock that ran ahead of the store's round
  // trips would let the engine's own membership lapse again and again.
  const waitDrivingClock = async (engine: Matchbox, clock: ManualClock, condition: () => boolean, what: string): Promise<void> => {
    for (let step = 0; step < 200; step++) {
      await engine.idle()
      for (let turn = 0; turn < Math.ceil(turnsMax / 200) && !condition(); turn++) await new Promise<void>((resolve) => setImmediate(resolve))
      if (condition()) return
      clock.advance(100)
    }
    throw new Error(`condition never held: ${what} (clock moved 20 s in 100 ms steps)`)
  }
  // Settles `pending` while firing timers due now (a claim with no wait still ends on one).
  const withTimersDue = async <T>(clock: ManualClock, pending: Promise<T>): Promise<T> => {
    let settled = false
    void pending.then(
      () => (settled = true),
      () => (settled = true),
    )
    await until(
      () => {
        clock.advance(0)
        return settled
      },
      'the call settles',
      turnsMax,
    )
    return pending
  }

  it("keeps a worker's progress, every attempt's error and claim through death and a retry from dead", async () => {
    const clock = new ManualClock(start)
    const mb = await openEngine(clock, 2, () => {})
    try {
      const q = mb.queue('reports', { maxAttempts: 2, backoffBaseS: 0 })
      const id = await q.enqueue({ month: 'march' })
      let runs = 0
      const stop = q.work(async (job) => {
        runs++
        if (job.attempts === 2) expect(await job.progress({ pages: 12, of: 40 })).toBe(true)
        throw new Error(`attempt ${job.attempts} <failed>`)
      })
      await waitFor(() => runs === 2, 'both attempts run')
      // stop() resolves once the last retry, at the budget, has landed.
      await stop()
      const dead = await q.getJob(id)
      expect(dead).toMatchObject({ state: 'dead', lastError: 'max attempts exceeded', progress: { pages: 12, of: 40 }, progressAt: start })
      expect(dead?.attemptErrors?.map((entry) => [entry.attempt, entry.message, entry.retryAt])).toEqual([
        [1, 'attempt 1 <failed>', start],
        [2, 'attempt 2 <failed>', undefined],
      ])
      expect(dead?.claims).toEqual([
        { attempt: 1, at: start },
        { attempt: 2, at: start },
      ])
      expect(await q.retryDead(id)).toMatchObject({ retried: true })
      const revived = await q.getJob(id)
      expect(revived).toMatchObject({ state: 'pending', attempts: 0 })
      expect(revived?.progress).toBeUndefined()
      expect(revived?.claims?.at(-1)).toEqual({ attempt: 0, at: start })
      expect(revived?.attemptErrors).toHaveLength(2)
    } finally {
      await mb.close()
    }
  })

  it('aborts a running handler whose job is cancelled, at the next heartbeat; the job is never acked', async () => {
    const clock = new ManualClock(start)
    const events: MatchboxEvent[] = []
    const mb = await openEngine(clock, 3, (event) => events.push(event))
    // Lets the handler end if the test fails first, so close does not wait for it forever.
    let release = (): void => {}
    try {
      const q = mb.queue('renders', { visibilityTimeoutS: 30 })
      let seen: JobHandle | undefined
      let stoppedEarly = false
      const released = new Promise<void>((resolve) => (release = resolve))
      const stop = q.work(async (job) => {
        seen = job
        // Honours the signal: stops at its abort, as a fetch given the signal would.
        await Promise.race([new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve(), { once: true })), released])
        stoppedEarly = job.signal.aborted
      })
      const id = await q.enqueue({ frame: 1 })
      await waitFor(() => seen !== undefined, 'the handler starts')
      expect(seen?.signal.aborted).toBe(false)
      expect(await q.cancel(id)).toBe(true)
      // The next heartbeat is due a third of the way to the deadline.
      clock.advance(10_000)
      await waitFor(() => stoppedEarly, 'the handler hears the abort')
      expect(seen?.signal.reason).toBeInstanceOf(ClaimLost)
      expect((seen?.signal.reason as ClaimLost | undefined)?.message).toContain('cancelled')
      await stop()
      expect(events.some((event) => event.type === 'job.completed' && event.id === id)).toBe(false)
      expect(await q.getJob(id)).toBeNull()
    } finally {
      release()
      await mb.close()
    }
  })

  it('refuses the ack of a handler that ignores the abort of its cancelled job', async () => {
    const clock = new ManualClock(start)
    const events: MatchboxEvent[] = []
    const mb = await openEngine(clock, 5, (event) => events.push(event))
    let release = (): void => {}
    try {
      const q = mb.queue('exports', { visibilityTimeoutS: 30 })
      let seen: JobHandle | undefined
      let returned = false
      const released = new Promise<void>((resolve) => (release = resolve))
      // Ignores the signal: runs until the test lets it return, then `work` acks it.
      const stop = q.work(async (job) => {
        seen = job
        await released
        returned = true
      })
      const id = await q.enqueue({ n: 1 })
      await waitFor(() => seen !== undefined, 'the handler starts')
      expect(await q.cancel(id)).toBe(true)
      clock.advance(10_000)
      await waitFor(() => seen?.signal.aborted === true, 'the signal aborts')
      release()
      await waitFor(() => returned, 'the handler returns')
      await stop()
      expect(events.some((event) => event.type === 'job.completed' && event.id === id)).toBe(false)
      expect(await q.getJob(id)).toBeNull()

      // The same through a handle held by hand: the ack after a cancel is refused.
      const other = await q.enqueue({ n: 2 })
      const held = await withTimersDue(clock, q.claim())
      expect(held?.id).toBe(other)
      expect(await q.cancel(other)).toBe(true)
      expect(await held?.ack()).toBe(false)
      expect(await held?.heartbeat()).toBe(false)
      expect(held?.signal.reason).toBeInstanceOf(ClaimLost)
    } finally {
      release()
      await mb.close()
    }
  })

  it('aborts when a heartbeat finds the claim lapsed, and never for a job that runs to its end', async () => {
    const clock = new ManualClock(start)
    const mb = await openEngine(clock, 4, () => {})
    try {
      const q = mb.queue('imports', { visibilityTimeoutS: 30 })
      await q.enqueue({ n: 1 })
      const job = await withTimersDue(clock, q.claim())
      clock.advance(30_000)
      expect(await job?.heartbeat()).toBe(false)
      expect(job?.signal.aborted).toBe(true)
      expect(job?.signal.reason).toBeInstanceOf(ClaimLost)

      // Every handle a handler finished with: the lapsed first job runs again beside the fresh
      // one (the loop runs several at once), and either may finish last.
      const finished: JobHandle[] = []
      const fresh = (): JobHandle | undefined => finished.find((handle) => handle.id !== job?.id)
      const stop = q.work(async (handle) => {
        finished.push(handle)
      })
      await q.enqueue({ n: 2 })
      // The 30 s jump let this engine's own membership row lapse on a store with membership
      // (PostgreSQL): its view may have lost the queue, which it then acquires again after the
      // ownership-loss back-off, on the engine's clock. So the wait moves the clock in steps.
      await waitDrivingClock(mb, clock, () => fresh() !== undefined, 'a fresh job runs')
      await settle()
      await stop({ graceS: 5 })
      expect(fresh()?.signal.aborted).toBe(false)
    } finally {
      await mb.close()
    }
  })

  it('aborts the handlers still running when stop({ graceS }) gives up on them, at the grace on the engine clock', async () => {
    const clock = new ManualClock(start)
    const events: MatchboxEvent[] = []
    const mb = await openEngine(clock, 6, (event) => events.push(event))
    let release = (): void => {}
    try {
      const q = mb.queue('transcodes', { visibilityTimeoutS: 60 })
      let seen: JobHandle | undefined
      const released = new Promise<void>((resolve) => (release = resolve))
      // Ignores the signal: only the test ends it.
      const stop = q.work(async (job) => {
        seen = job
        await released
      })
      const id = await q.enqueue({ n: 1 })
      await waitFor(() => seen !== undefined, 'the handler starts')

      await expect(stop({ graceS: -1 })).rejects.toBeInstanceOf(InvalidInput)
      let stopped = false
      void stop({ graceS: 5 }).then(() => (stopped = true))
      await settle()
      clock.advance(4_999)
      await settle()
      expect(stopped).toBe(false)
      expect(seen?.signal.aborted).toBe(false)
      clock.advance(1)
      await waitFor(() => stopped, 'stop gives up and resolves')
      expect(seen?.signal.aborted).toBe(true)
      expect(seen?.signal.reason).toBeInstanceOf(WorkerStopped)
      expect((seen?.signal.reason as WorkerStopped | undefined)?.message).toContain('gave up')
      // Nobody renews the claim any more: once it lapses the job is delivered again.
      expect((await q.getJob(id))?.state).toBe('processing')
      clock.advance(60_000)
      const again = await withTimersDue(clock, q.claim())
      expect(again?.id).toBe(id)
      expect(again?.attempts).toBe(2)
      expect(await again?.ack()).toBe(true)
      expect(events.some((event) => event.type === 'job.completed' && event.id === id && event.attempt === 1)).toBe(false)
    } finally {
      release()
      await mb.close()
    }
  })
}
