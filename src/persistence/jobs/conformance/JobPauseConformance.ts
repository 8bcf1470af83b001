/**
 * JobPauseConformance — paused queues (JobStore.ts's "Paused queues"): while a queue is paused it
 * accepts enqueues, no claim operation claims from it (claim, claimMany, claimDue,
 * ackAndClaimDue, a claimed enqueue), the due-time reads hand out none of its rows, and the jobs
 * already claimed can still be acked and retried; other queues are untouched. Resuming makes its
 * rows due again, those whose task went to Matching during the pause included, and so the lapsed
 * claims whose lapse did.
 */
import { describe, expect, it } from 'vitest'
import type { JobFixture } from './JobFixture.ts'

/** Registers the pause tests. */
export function describeJobPauseConformance(fixture: JobFixture): void {
  const store = () => fixture.store()

  describe('paused queues', () => {
    it('a paused queue accepts enqueues and no claim of any kind claims from it; another queue is untouched', async () => {
      const queue = fixture.queue('paused')
      const other = fixture.queue('running')
      expect(await store().pauseQueue({ queue, nowMs: 1_000 })).toBe(true)
      const pending = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
      expect(pending.state).toBe('pending')
      expect(await store().claim({ id: pending.id, claimToken: fixture.id('t'), nowMs: 2_000 })).toEqual({ kind: 'obsolete', reason: 'paused' })
      expect(await store().claimMany({ claims: [{ id: pending.id, claimToken: fixture.id('t') }], nowMs: 2_000 })).toEqual([{ kind: 'obsolete', reason: 'paused' }])
      expect(await store().claimDue({ queue, nowMs: 2_000, claimTokens: [fixture.id('t')] })).toEqual([])
      expect((await store().ackAndClaimDue({ acks: [], queue, nowMs: 2_000, claimTokens: [fixture.id('t')] })).claimed).toEqual([])
      const eager = await store().enqueue({ job: fixture.job(queue), nowMs: 2_000, claimToken: fixture.id('t') })
      expect([eager.state, eager.claimToken, eager.attempts]).toEqual(['pending', null, 0])
      expect(await store().getJob({ queue, id: eager.id })).toMatchObject({ state: 'pending', claimToken: null })
      expect(await store().takeDue({ nowMs: 2_000, reserveUntilMs: 9_000, limit: 10, queues: [queue] })).toEqual([])
      expect(await store().nextDueMs({ nowMs: 0, queues: [queue] })).toBeNull()
      expect((await store().dueQueues({ nowMs: 2_000, limit: 10_000 })).some((entry) => entry.queue === queue)).toBe(false)
      expect(await store().countJobs({ queue })).toEqual({ pending: 2, processing: 0, dead: 0 })

      const elsewhere = await store().enqueue({ job: fixture.job(other), nowMs: 1_000 })
      expect(await store().claim({ id: elsewhere.id, claimToken: fixture.id('t'), nowMs: 2_000 })).toMatchObject({ kind: 'claimed' })
    })

    it('a job claimed before the pause is still acked, retried and failed by its holder; a lapsed one is not reclaimed', async () => {
      const queue = fixture.queue('in-flight')
      const acked = await fixture.claimed(queue, 1_000)
      const retried = await fixture.claimed(queue, 1_000)
      const lapsing = await fixture.claimed(queue, 1_000)
      await store().pauseQueue({ queue, nowMs: 1_500 })
      expect(await store().ack({ id: acked.id, claimToken: acked.claimToken as string, nowMs: 2_000 })).toBe(true)
      expect(await store().retry({ id: retried.id, claimToken: retried.claimToken as string, error: 'later', delayMs: 0, nowMs: 2_000 })).toEqual({ kind: 'retried', runAtMs: 2_000 })
      expect(await store().claim({ id: retried.id, claimToken: fixture.id('t'), nowMs: 3_000 })).toEqual({ kind: 'obsolete', reason: 'paused' })
      const afterDeadline = (lapsing.deadlineMs as number) + 1
      expect(await store().claim({ id: lapsing.id, claimToken: fixture.id('t'), nowMs: afterDeadline })).toEqual({ kind: 'obsolete', reason: 'paused' })
      expect(await store().claim({ id: lapsing.id, claimToken: fixture.id('t'), nowMs: 2_000 })).toEqual({ kind: 'already-started' })
    })

    it('ackAndClaimDue with riding acks in a paused queue acks them and claims none of its due rows', async () => {
      const queue = fixture.queue('paused-riding')
      const [one, two, three] = [await fixture.claimed(queue, 1_000), await fixture.claimed(queue, 1_000), await fixture.claimed(queue, 1_000)]
      const due = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
      await store().pauseQueue({ queue, nowMs: 1_500 })
      const ref = (job: typeof one) => ({ id: job.id, claimToken: job.claimToken as string })
      // One riding ack and several: each its own statement text.
      expect(await store().ackAndClaimDue({ acks: [ref(one)], queue, nowMs: 2_000, claimTokens: [fixture.id('t')] })).toEqual({ acked: [one.id], claimed: [] })
      const several = await store().ackAndClaimDue({ acks: [ref(two), ref(three)], queue, nowMs: 2_000, claimTokens: [fixture.id('t'), fixture.id('t')] })
      expect([[...several.acked].sort(), several.claimed]).toEqual([[two.id, three.id].sort(), []])
      expect(await store().getJob({ queue, id: due.id })).toMatchObject({ state: 'pending', claimToken: null })
    })

    it('resume makes the queue claimable again, its rows whose task went to Matching due at the resume', async () => {
      const queue = fixture.queue('resume')
      const job = await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 })
      const [reserved] = await store().takeDue({ nowMs: 1_000, reserveUntilMs: 60_000, limit: 10, queues: [queue] })
      expect(await store().confirmDelivered({ deliveries: [{ id: job.id, revision: reserved?.revision ?? 0 }] })).toBe(1)
      await store().pauseQueue({ queue, nowMs: 1_500 })
      // The task reached a claim during the pause: refused, and dropped by whoever delivered it.
      expect(await store().claim({ id: job.id, claimToken: fixture.id('t'), nowMs: 2_000 })).toEqual({ kind: 'obsolete', reason: 'paused' })
      expect(await store().resumeQueue({ queue, nowMs: 5_000 })).toBe(true)
      expect((await store().takeDue({ nowMs: 5_000, reserveUntilMs: 60_000, limit: 10, queues: [queue] })).map((due) => [due.id, due.dueMs])).toEqual([[job.id, 5_000]])
      expect(await store().claim({ id: job.id, claimToken: fixture.id('t'), nowMs: 5_000 })).toMatchObject({ kind: 'claimed' })
    })

    it('resume makes a lapsed claim due again when its lapse went to Matching before the pause and was refused during it', async () => {
      const queue = fixture.queue('resume-lapsed')
      const job = await fixture.claimed(queue, 1_000)
      const lapsedMs = (job.deadlineMs as number) + 1
      const [reserved] = await store().takeDue({ nowMs: lapsedMs, reserveUntilMs: lapsedMs + 60_000, limit: 10, queues: [queue] })
      expect(reserved?.id).toBe(job.id)
      expect(await store().confirmDelivered({ deliveries: [{ id: job.id, revision: reserved?.revision ?? 0 }] })).toBe(1)
      await store().pauseQueue({ queue, nowMs: lapsedMs + 1 })
      expect(await store().claim({ id: job.id, claimToken: fixture.id('t'), nowMs: lapsedMs + 2 })).toEqual({ kind: 'obsolete', reason: 'paused' })
      expect(await store().resumeQueue({ queue, nowMs: lapsedMs + 10 })).toBe(true)
      expect((await store().takeDue({ nowMs: lapsedMs + 10, reserveUntilMs: lapsedMs + 60_000, limit: 10, queues: [queue] })).map((due) => [due.id, due.dueMs])).toEqual([[job.id, lapsedMs + 10]])
      expect(await store().claim({ id: job.id, claimToken: fixture.id('t'), nowMs: lapsedMs + 10 })).toMatchObject({ kind: 'claimed' })
    })

    it('pausing twice and resuming a running queue change nothing; the pause is readable and listed', async () => {
      const queue = fixture.queue('twice')
      expect(await store().queuePause({ queue })).toBeNull()
      expect(await store().resumeQueue({ queue, nowMs: 1_000 })).toBe(false)
      expect(await store().pauseQueue({ queue, nowMs: 1_000 })).toBe(true)
      expect(await store().pauseQueue({ queue, nowMs: 2_000 })).toBe(false)
      expect(await store().queuePause({ queue })).toEqual({ pausedAtMs: 1_000 })
      expect((await store().pausedQueues({ limit: 1_000 })).filter((entry) => entry.queue === queue)).toEqual([{ queue, pausedAtMs: 1_000 }])
      expect(await store().resumeQueue({ queue, nowMs: 3_000 })).toBe(true)
      expect(await store().queuePause({ queue })).toBeNull()
      expect(await store().resumeQueue({ queue, nowMs: 3_000 })).toBe(false)
    })
  })
}
