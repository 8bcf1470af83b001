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
 * carry the default queue stamps, runAt = the occurrence time, and the schedule's priority and
 * keys (`ScheduleOptions`).
 */
import { InvalidInput } from '../domain/errors.ts'
import { type JsonValue, validateJson } from '../domain/Json.ts'
import { validateName } from '../domain/QueueKey.ts'
import { jobId } from '../kernel/Ids.ts'
import { priorityDefault, scheduleCatchUpMax, scheduleLeaseTtlMs } from '../kernel/Limits.ts'
import { defaultStamps, validateQueueName } from './QueueOptions.ts'
import type { JobsRuntime } from './Runtime.ts'
import { checkScheduleKeys, checkTimezone } from '../persistence/jobs/JobInput.ts'
import type { NewJob, ScheduleJobKeys, ScheduleRecord } from '../persistence/jobs/JobStore.ts'
import { nextOccurrence, occurrencesOf, parseScheduleSpec } from './ScheduleSpec.ts'

/** The lease every host's `runSchedules` competes for. */
const schedulesLeaseName = 'schedules'

/**
 * Options of `mb.schedule`. The keys are the occurrence jobs' own, as `enqueue` gives them; the
 * schedule keeps them, so every host that fires it enqueues the same jobs. Its weight is the
 * weight (no handle is asked: the firing host may have none for the queue), and a concurrency key
 * takes its limit here, for the same reason.
 */
export interface ScheduleOptions {
  /** IANA time zone the cron fields are read in (`Europe/Paris`); default UTC. Cron specs only. */
  readonly timezone?: string
  /** The occurrence jobs' priority, 0…9 (default 0). */
  readonly priority?: number
  /** The occurrence jobs' fairness key (at most 64 UTF-8 bytes), as `enqueue`'s `fairnessKey`. */
  readonly fairnessKey?: string
  /** The fairness key's weight, 0.001…1000 (default 1); needs `fairnessKey`. */
  readonly fairnessWeight?: number
  /** The occurrence jobs' concurrency key (at most 64 UTF-8 bytes); needs `concurrencyPerKey`. */
  readonly concurrencyKey?: string
  /** At most this many of the queue's jobs with `concurrencyKey` process at once, 1…10,000. */
  readonly concurrencyPerKey?: number
}

/** A registered schedule as `mb.listSchedules()` shows it. Times are epoch ms. */
export interface ScheduleInfo {
  readonly name: string
  readonly spec: string
  readonly queue: string
  readonly payload: JsonValue
  /** Null for UTC. */
  readonly timezone: string | null
  /** The occurrence jobs' priority. */
  readonly priority: number
  /** The occurrence jobs' fairness key and its weight; null when none. */
  readonly fairnessKey: string | null
  readonly fairnessWeight: number | null
  /** The occurrence jobs' concurrency key and its limit; null when none. */
  readonly concurrencyKey: string | null
  readonly concurrencyPerKey: number | null
  /** The latest occurrence enqueued; null before the first. */
  readonly lastFiredAt: number | null
  /** The next occurrence `runSchedules` will enqueue once it is due; null when the spec has none. */
  readonly nextRunAt: number | null
}

const scheduleOptionKeys = ['timezone', 'priority', 'fairnessKey', 'fairnessWeight', 'concurrencyKey', 'concurrencyPerKey']

function resolveScheduleOptions(options: unknown): { timezone: string | null; keys: ScheduleJobKeys } {
  if (options === undefined) return { timezone: null, keys: {} }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new InvalidInput({ field: 'options', reason: 'must be an object' })
  for (const key of Object.keys(options)) if (!scheduleOptionKeys.includes(key)) throw new InvalidInput({ field: `options.${key}`, reason: `is not an option (known: ${scheduleOptionKeys.join(', ')})` })
  const { timezone, concurrencyPerKey, ...rest } = options as ScheduleOptions
  // The store reads a null zone as UTC; a caller's null is refused, as null is everywhere else.
  if (timezone === null) throw new InvalidInput({ field: 'options.timezone', reason: 'must be an IANA time zone name (leave it out for UTC)' })
  return { timezone: checkTimezone('options.timezone', timezone), keys: scheduleKeysOf({ ...rest, ...(concurrencyPerKey === undefined ? {} : { concurrencyLimit: concurrencyPerKey }) }) }
}

// The store's check of the job keys, its fields named as the caller gave them (`options.…`).
function scheduleKeysOf(given: ScheduleJobKeys): ScheduleJobKeys {
  try {
    return checkScheduleKeys(given)
  } catch (error) {
    if (!(error instanceof InvalidInput)) throw error
    throw new InvalidInput({ field: `options.${error.field === 'concurrencyLimit' ? 'concurrencyPerKey' : error.field}`, reason: error.reason })
  }
}

// A schedule's occurrence job for `runAtMs`: the default stamps, and the schedule's keys.
function occurrenceJob(runtime: JobsRuntime, schedule: ScheduleRecord, runAtMs: number, nowMs: number): NewJob {
  return {
    id: jobId(runtime.ids, nowMs),
    queue: schedule.queue,
    payload: schedule.payload,
    priority: schedule.priority ?? priorityDefault,
    runAtMs,
    expiresAtMs: null,
    ...defaultStamps,
    ...(schedule.fairnessKey === undefined ? {} : { fairnessKey: schedule.fairnessKey, fairnessWeight: schedule.fairnessWeight ?? 1 }),
    ...(schedule.concurrencyKey === undefined ? {} : { concurrencyKey: schedule.concurrencyKey, concurrencyLimit: schedule.concurrencyLimit }),
  }
}

/**
 * Registers (or updates) schedule `name`: throws `InvalidSpec` for a bad spec and `InvalidInput`
 * for a bad name, queue, payload or option, writing nothing. Re-registering the same schedule
 * keeps its firing state; changing spec, queue, payload, zone or a job key restarts it from now.
 */
export async function registerSchedule(runtime: JobsRuntime, name: string, spec: string, queue: string, payload: unknown, options?: ScheduleOptions): Promise<void> {
  runtime.refuseIfClosed()
  const validName = validateName('name', name)
  const { timezone, keys } = resolveScheduleOptions(options)
  parseScheduleSpec(spec, timezone)
  const validQueue = validateQueueName('queue', queue)
  const validPayload = validateJson('payload', payload)
  await runtime.jobStore.putSchedule({ name: validName, spec: spec.trim(), queue: validQueue, payload: validPayload, timezone, ...keys, nowMs: runtime.now() })
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
    priority: schedule.priority ?? priorityDefault,
    fairnessKey: schedule.fairnessKey ?? null,
    fairnessWeight: schedule.fairnessKey === undefined ? null : (schedule.fairnessWeight ?? 1),
    concurrencyKey: schedule.concurrencyKey ?? null,
    concurrencyPerKey: schedule.concurrencyLimit ?? null,
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
    const jobs = times.map((runAtMs) => occurrenceJob(runtime, schedule, runAtMs, nowMs))
    const fired = await jobStore.fireSchedule({ leaseName: schedulesLeaseName, fence: lease.fence, name: schedule.name, expectedRevision: schedule.revision, lastFiredMs: last, jobs, nowMs })
    if (fired === 'fenced') break
    if (fired === 'fired') {
      enqueued += jobs.length
      runtime.announceDue(schedule.queue, nowMs, true)
    }
  }
  return enqueued
}
