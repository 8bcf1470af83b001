/**
 * Heartbeats on a ManualClock, with stand-in jobs whose `heartbeat()` the test answers: each job
 * beats at its own due time from one timer, a renewed beat schedules the next from the moved
 * deadline, a refused beat or `stop` ends a job's beats, a failed beat is reported and retried.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../kernel/Clock.ts'
import { workerHeartbeatDivisor } from '../kernel/Limits.ts'
import { makeHeartbeats } from './Heartbeats.ts'
import type { JobHandle } from './JobHandle.ts'

const start = 1_000_000

// A job whose heartbeats are recorded and answered by `answer` (true: renewed by `extendMs`).
function standIn(clock: ManualClock, id: string, deadline: number, beats: string[], answer: () => boolean | Error, extendMs = 10_000): JobHandle {
  let current = deadline
  return {
    id,
    get deadline() {
      return current
    },
    async heartbeat() {
      beats.push(`${id}@${clock.now() - start}`)
      const verdict = answer()
      if (verdict instanceof Error) throw verdict
      if (verdict) current = clock.now() + extendMs
      return verdict
    },
  } as unknown as JobHandle
}

async function flush(): Promise<void> {
  for (let turn = 0; turn < 5; turn++) await Promise.resolve()
}

// Moves time a millisecond at a time, letting each beat's answer land at the time it was sent.
async function advanceBy(clock: ManualClock, ms: number): Promise<void> {
  for (let step = 0; step < ms; step++) {
    clock.advance(1)
    await flush()
  }
}

describe('Heartbeats', () => {
  it('beats each running job at its own due time, on one timer', async () => {
    const clock = new ManualClock(start)
    const beats: string[] = []
    const heartbeats = makeHeartbeats(clock, () => clock.now(), () => {})
    const slow = standIn(clock, 'slow', start + 10_000 * workerHeartbeatDivisor, beats, () => true)
    const fast = standIn(clock, 'fast', start + 1_000 * workerHeartbeatDivisor, beats, () => true)
    heartbeats.start(slow)
    heartbeats.start(fast)
    // The later job's timer was replaced by the earlier one's: one timer for both.
    expect(clock.pendingTimerCount()).toBe(1)
    expect(clock.nextDueMs()).toBe(start + 1_000)
    await advanceBy(clock, 10_000)
    // fast renews to now + 10 s each time, so beats every 10 s / divisor after its first.
    const step = Math.floor(10_000 / workerHeartbeatDivisor)
    const expected: string[] = []
    for (let at = 1_000; at <= 10_000; at += step) expected.push(`fast@${at}`)
    expect(beats.filter((beat) => beat.startsWith('fast'))).toEqual(expected)
    expect(beats.filter((beat) => beat.startsWith('slow'))).toEqual(['slow@10000'])
    expect(clock.pendingTimerCount()).toBe(1)
    heartbeats.close()
    expect(clock.pendingTimerCount()).toBe(0)
  })

  it('a job that starts with less than a beat’s worth of time left beats at once, before its deadline', async () => {
    const clock = new ManualClock(start)
    const beats: string[] = []
    const heartbeats = makeHeartbeats(clock, () => clock.now(), () => {})
    heartbeats.start(standIn(clock, 'late', start + 1, beats, () => true))
    // Due now: the first timer runs at this instant, a millisecond before the deadline.
    clock.advance(0)
    await flush()
    expect(beats).toEqual(['late@0'])
    heartbeats.close()
  })

  it('stop ends a job’s beats; a refused beat ends them; a failed beat is reported and retried', async () => {
    const clock = new ManualClock(start)
    const beats: string[] = []
    const failures: string[] = []
    const heartbeats = makeHeartbeats(clock, () => clock.now(), (error, job, startedMs) => failures.push(`${job.id}: ${(error as Error).message} @${startedMs - start}`))
    const deadline = start + 1_000 * workerHeartbeatDivisor
    const stopped = standIn(clock, 'stopped', deadline, beats, () => true)
    const refused = standIn(clock, 'refused', deadline, beats, () => false)
    let fails = 1
    const flaky = standIn(clock, 'flaky', deadline, beats, () => (fails-- > 0 ? new Error('store down') : true))
    for (const job of [stopped, refused, flaky]) heartbeats.start(job)
    heartbeats.stop(stopped)
    await advanceBy(clock, 1_000)
    expect(beats).toEqual(['refused@1000', 'flaky@1000'])
    expect(failures).toEqual(['flaky: store down @1000'])
    await advanceBy(clock, 2_000)
    // The refused job beats no more; the flaky one beat again from its unmoved deadline.
    expect(beats.filter((beat) => beat.startsWith('refused'))).toEqual(['refused@1000'])
    expect(beats.filter((beat) => beat.startsWith('flaky')).length).toBeGreaterThanOrEqual(2)
    expect(beats.some((beat) => beat.startsWith('stopped'))).toBe(false)
    heartbeats.close()
  })
})
