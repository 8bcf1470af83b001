/**
 * Schedules — `mb.schedule(name, spec, queue, payload)` and `mb.runSchedules()`:
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
 * Nothing runs this on its own: the caller decides the cadence (the job contract, "no ambient
 * sweeper"), by calling it or by starting `startMaintenance` (Maintenance.ts). Occurrence jobs
 * carry the default queue stamps and runAt = the occurrence time.
 */
import { InvalidInput } from '../domain/errors.ts'
import { type JsonValue, validateJson } from '../domain/Json.ts'
import { validateName } from '../domain/QueueKey.ts'
import { jobId } from '../kernel/Ids.ts'
import { priorityDefault, scheduleCatchUpMax, scheduleLeaseTtlMs } from '../kernel/Limits.ts'
import { defaultStamps, validateQueueName } from './QueueOptions.ts'
import type { JobsRuntime } from './Runtime.ts'
import { checkTimezone } from '../persistence/jobs/JobInput.ts'
import { nextOccurrence, occurrencesOf, parseScheduleSpec } from './ScheduleSpec.ts'

/** The lease every host's `runSchedules` competes for. */
const schedulesLeaseName = 'schedules'

/** Options of `mb.schedule`. */
export interface ScheduleOptions {
  /** IANA time zone the cron fields are read in (`Europe/Paris`); default UTC. Cron specs only. */
  readonly timezone?: string
}

/** A registered schedule as `mb.listSchedules()` shows it. Times are epoch ms. */
export interface ScheduleInfo {
  readonly name: string
  readonly spec: string
  readonly queue: string
  readonly payload: JsonValue
  /** Null for UTC. */
  readonly timezone: string | null
  /** The latest occurrence enqueued; null before the first. */
  readonly lastFiredAt: number | null
  /** The next occurrence `runSchedules` will enqueue once it is due; null when the spec has none. */
  readonly nextRunAt: number | null
}

function resolveScheduleOptions(options: unknown): { timezone: string | null } {
  if (options === undefined) return { timezone: null }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new InvalidInput({ field: 'options', reason: 'must be an object' })
  for (const key of Object.keys(options)) if (key !== 'timezone') throw new InvalidInput({ field: `options.${key}`, reason: 'is not an option (known: timezone)' })
  const { timezone } = options as ScheduleOptions
  // The store reads a null zone as UTC; a caller's null is refused, as null is everywhere else.
  if (timezone === null) throw new InvalidInput({ field: 'options.timezone', reason: 'must be an IANA time zone name (leave it out for UTC)' })
  return { timezone: checkTimezone('options.timezone', timezone) }
}

/**
 * Registers (or updates) schedule `name`: throws `InvalidSpec` for a bad spec and `InvalidInput`
 * for a bad name, queue or payload, writing nothing. Re-registering the same schedule keeps its
 * firing state; changing spec, queue or payload restarts it from now.
 */
export async function registerSchedule(runtime: JobsRuntime, name: string, spec: string, queue: string, payload: unknown, options?: ScheduleOptions): Promise<void> {
  runtime.refuseIfClosed()
  const validName = validateName('name', name)
  const { timezone } = resolveScheduleOptions(options)
  parseScheduleSpec(spec, timezone)
  const validQueue = validateQueueName('queue', queue)
  const validPayload = validateJson('payload', payload)
  await runtime.jobStore.putSchedule({ name: validName, spec: spec.trim(), queue: validQueue, payload: validPayload, timezone, nowMs: runtime.now() })
}

/** Removes schedule `name`; false when there was none. Jobs it already enqueued stay. */
export async function unregisterSchedule(runtime: JobsRuntime, name: string): Promise<boolean> {
  runtime.refuseIfClosed()
  return runtime.jobStore.deleteSchedule({ name: validateName('name', name) })
}

/** Every registered schedule, by name, with its next occurrence. */
export async function describeSchedules(runtime: JobsRuntime): Promise<ReadonlyArray<ScheduleInfo>> {
  runtime.refuseIfStoresClosed()
  return (await runtime.jobStore.listSchedules()).map((schedule) => ({
    name: schedule.name,
    spec: schedule.spec,
    queue: schedule.queue,
    payload: schedule.payload,
    timezone: schedule.timezone,
    lastFiredAt: schedule.lastFiredMs,
    nextRunAt: nextOccurrence(parseScheduleSpec(schedule.spec, schedule.timezone), schedule.anchorMs, schedule.lastFiredMs),
  }))
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
    const times = occurrencesOf(parseScheduleSpec(schedule.spec, schedule.timezone), schedule.anchorMs, schedule.lastFiredMs, nowMs, scheduleCatchUpMax)
    const last = times.at(-1)
    if (last === undefined) continue
    const jobs = times.map((runAtMs) => ({
      id: jobId(runtime.ids, nowMs),
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
