/**
 * Heartbeats — one worker's heartbeats for the jobs its handlers are running, on one timer.
 *
 * A running job beats once its deadline is a `workerHeartbeatDivisor`-th nearer (the remaining
 * time divided by the divisor: at once for a job that starts with less than the divisor's
 * milliseconds left, at least 1 ms after a beat), and again after each beat the store accepted
 * (from the deadline it moved) or that failed; a refused beat (the claim lapsed or the job was
 * cancelled) ends its beats. The worker holds one timer, armed for the earliest beat due: a job
 * starting or ending costs a map entry, not a timer, and a timer that fires for a job that
 * ended meanwhile only re-arms for the next one.
 *
 * Invariants: a job beats at its own due time (the timer is re-armed whenever an earlier beat
 * is added), at most one beat per job is in flight, and none starts after `stop(job)`.
 */
import type { CancelTimer, Clock } from '../kernel/Clock.ts'
import { workerHeartbeatDivisor } from '../kernel/Limits.ts'
import type { JobHandle } from './JobHandle.ts'

/** The heartbeats of one worker. */
export interface Heartbeats {
  /** Beats for `job` until `stop(job)`. */
  start(job: JobHandle): void
  /** Ends `job`'s beats; a beat already at the store finishes, and starts no next one. */
  stop(job: JobHandle): void
  /** Ends every job's beats and the timer (the worker stopped). */
  close(): void
}

/** Makes a worker's heartbeats; `failed` hears a beat the store could not take, with its start time. */
export function makeHeartbeats(clock: Clock, now: () => number, failed: (error: unknown, job: JobHandle, startedMs: number) => void): Heartbeats {
  // The next beat of each running job, epoch ms; a job whose beat is at the store is absent
  // until it returns, and `running` says whether it is still wanted then.
  const dueAt = new Map<JobHandle, number>()
  const running = new Set<JobHandle>()
  let timerAtMs = Number.POSITIVE_INFINITY
  let cancelTimer: CancelTimer = () => {}

  // `soonestMs` after now at the earliest: 0 for the first beat of a job whose claim still holds,
  // so that a job handed to its handler with less than a divisor's worth of milliseconds left
  // beats at once instead of at its deadline (where the store refuses it); 1 otherwise, so beats
  // never repeat at one instant (and a claim already lapsed is not asked about at once).
  const schedule = (job: JobHandle, soonestMs = 1): void => {
    const atMs = now() + Math.max(soonestMs, Math.floor((job.deadline - now()) / workerHeartbeatDivisor))
    dueAt.set(job, atMs)
    if (atMs < timerAtMs) arm(atMs)
  }
  const arm = (atMs: number): void => {
    cancelTimer()
    timerAtMs = atMs
    cancelTimer = clock.setTimer(atMs - now(), fire)
  }
  const fire = (): void => {
    timerAtMs = Number.POSITIVE_INFINITY
    const nowMs = now()
    let nextMs = Number.POSITIVE_INFINITY
    for (const [job, atMs] of dueAt) {
      if (atMs <= nowMs) {
        dueAt.delete(job)
        beat(job)
      } else if (atMs < nextMs) nextMs = atMs
    }
    if (nextMs < timerAtMs) arm(nextMs)
  }
  const beat = (job: JobHandle): void => {
    const startedMs = now()
    job.heartbeat().then(
      (renewed) => {
        if (renewed && running.has(job)) schedule(job)
      },
      (error: unknown) => {
        failed(error, job, startedMs)
        if (running.has(job)) schedule(job)
      },
    )
  }
  return {
    start(job) {
      running.add(job)
      schedule(job, job.deadline > now() ? 0 : 1)
    },
    stop(job) {
      running.delete(job)
      dueAt.delete(job)
    },
    close() {
      running.clear()
      dueAt.clear()
      cancelTimer()
      timerAtMs = Number.POSITIVE_INFINITY
    },
  }
}
