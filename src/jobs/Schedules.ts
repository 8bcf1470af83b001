/**
 * Schedules — `mb.schedule(name, spec, queue, payload)` and `mb.runSchedules()` (seed 004 §6):
 * recurring enqueues, fired exactly once across hosts.
 *
 * `runSchedules` takes (or renews) the schedules lease — one row with a fencing token that grows
 * on every takeover — and, for each schedule, enqueues its due occurrences and records the last
 * one fired in ONE transaction that re-checks the fence and compares-and-sets the schedule's
 * revision. A deposed leader's firing is refused by the fence; two hosts reading the same
 * schedule cannot both fire it (the revision); the last-fired state lives in the database, so a
 * restart neither repeats nor skips an occurrence (catch-up is bounded per call by
 * `scheduleCatchUpMax`; the rest follow on the next call).
 *
 * Nothing runs this on its own: the caller decides the cadence (seed 004 §6, "no ambient
 * sweeper"). Occurrence jobs carry the default queue stamps and runAt = the occurrence time.
 */
import { validateJson } from '../domain/Json.ts'
import { validateName } from '../domain/QueueKey.ts'
import { randomId } from '../kernel/Ids.ts'
import { priorityDefault, scheduleCatchUpMax, scheduleLeaseTtlMs } from '../kernel/Limits.ts'
import { defaultStamps, validateQueueName } from './QueueOptions.ts'
import type { JobsRuntime } from './Runtime.ts'
import { occurrencesOf, parseScheduleSpec } from './ScheduleSpec.ts'

/** The lease every host's `runSchedules` competes for. */
export const schedulesLeaseName = 'schedules'

/**
 * Registers (or updates) schedule `name`: throws `InvalidSpec` for a bad spec and `InvalidInput`
 * for a bad name, queue or payload, writing nothing. Re-registering the same schedule keeps its
 * firing state; changing spec, queue or payload restarts it from now.
 */
export async function registerSchedule(runtime: JobsRuntime, name: string, spec: string, queue: string, payload: unknown): Promise<void> {
  runtime.refuseIfClosed()
  const validName = validateName('name', name)
  parseScheduleSpec(spec)
  const validQueue = validateQueueName('queue', queue)
  const validPayload = validateJson('payload', payload)
  await runtime.jobStore.putSchedule({ name: validName, spec: spec.trim(), queue: validQueue, payload: validPayload, nowMs: runtime.now() })
}

/** One round of every schedule under the lease; returns how many jobs it enqueued (0 when another host leads). */
export async function runSchedules(runtime: JobsRuntime): Promise<number> {
  runtime.refuseIfClosed()
  const { jobStore } = runtime
  const nowMs = runtime.now()
  const lease = await jobStore.acquireLease({ name: schedulesLeaseName, holder: runtime.hostId, nowMs, ttlMs: scheduleLeaseTtlMs })
  if (lease === null) return 0
  let enqueued = 0
  for (const schedule of await jobStore.listSchedules()) {
    const times = occurrencesOf(parseScheduleSpec(schedule.spec), schedule.anchorMs, schedule.lastFiredMs, nowMs, scheduleCatchUpMax)
    const last = times.at(-1)
    if (last === undefined) continue
    const jobs = times.map((runAtMs) => ({
      id: randomId(runtime.ids),
      queue: schedule.queue,
      payload: schedule.payload,
      priority: priorityDefault,
      runAtMs,
      expiresAtMs: null,
      ...defaultStamps,
    }))
    const fired = await jobStore.fireSchedule({ leaseName: schedulesLeaseName, fence: lease.fence, name: schedule.name, expectedRevision: schedule.revision, lastFiredMs: last, jobs, nowMs })
    if (fired === 'fenced') break
    if (fired === 'fired') {
      enqueued += jobs.length
      runtime.announceDue(schedule.queue, nowMs, true)
    }
  }
  return enqueued
}
