/**
 * MemoryJobSchedules — the schedule and lease half of the memory job store (MemoryJobStore.ts):
 * registration (same spec, queue, payload, zone and job keys = unchanged), removal, the fenced lease, and
 * firing, which inserts its jobs through the store's own insert so they are ordinary rows.
 *
 * Invariants: the same as scheduleSql.ts spells out for the SQL stores; values are copied in
 * and out; every operation validates first and then runs to completion synchronously.
 */
import { InvalidInput } from '../../domain/errors.ts'
import { validateJson } from '../../domain/Json.ts'
import { checkCount, checkDurationMs, checkName, checkNewJob, checkScheduleKeys, checkTime, checkTimezone, scheduleKeyFields } from './JobInput.ts'
import type { JobRecord, JobStore, NewJob, ScheduleRecord } from './JobStore.ts'
import { copy } from './MemoryJobRows.ts'

// JSON with object keys sorted: equal exactly when PostgreSQL's jsonb values are equal.
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  )

/** The schedule operations of a memory job store; `insert` adds a pending job as `enqueue` does. */
export function makeMemorySchedules(
  insert: (job: NewJob, nowMs: number) => JobRecord,
): Pick<JobStore, 'putSchedule' | 'deleteSchedule' | 'listSchedules' | 'acquireLease' | 'fireSchedule'> {
  const schedules = new Map<string, ScheduleRecord>()
  const leases = new Map<string, { holder: string; fence: number; expiresAtMs: number }>()
  return {
    async putSchedule(params) {
      const name = checkName('name', params.name)
      const spec = checkName('spec', params.spec)
      const queue = checkName('queue', params.queue)
      const payload = validateJson('payload', params.payload)
      const timezone = checkTimezone('timezone', params.timezone)
      const keys = checkScheduleKeys(params)
      const nowMs = checkTime('nowMs', params.nowMs)
      const existing = schedules.get(name)
      if (
        existing !== undefined &&
        existing.spec === spec &&
        existing.queue === queue &&
        existing.timezone === timezone &&
        canonical(existing.payload) === canonical(payload) &&
        scheduleKeyFields.every((field) => existing[field] === keys[field])
      ) {
        return copy(existing)
      }
      const record: ScheduleRecord = { name, spec, queue, payload: copy(payload), anchorMs: nowMs, lastFiredMs: null, timezone, revision: (existing?.revision ?? 0) + 1, ...keys }
      schedules.set(name, record)
      return copy(record)
    },

    async deleteSchedule(params) {
      return schedules.delete(checkName('name', params.name))
    },

    async listSchedules() {
      return [...schedules.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map(copy)
    },

    async acquireLease(params) {
      const name = checkName('name', params.name)
      const holder = checkName('holder', params.holder)
      const nowMs = checkTime('nowMs', params.nowMs)
      const ttlMs = checkDurationMs('ttlMs', params.ttlMs, 1)
      const lease = leases.get(name)
      if (lease === undefined) {
        leases.set(name, { holder, fence: 1, expiresAtMs: nowMs + ttlMs })
        return { fence: 1 }
      }
      const live = lease.expiresAtMs > nowMs
      if (live && lease.holder !== holder) return null
      const fence = live ? lease.fence : lease.fence + 1
      leases.set(name, { holder, fence, expiresAtMs: nowMs + ttlMs })
      return { fence }
    },

    async fireSchedule(params) {
      const leaseName = checkName('leaseName', params.leaseName)
      const fence = checkCount('fence', params.fence, 1, Number.MAX_SAFE_INTEGER)
      const name = checkName('name', params.name)
      const expectedRevision = checkCount('expectedRevision', params.expectedRevision, 1, Number.MAX_SAFE_INTEGER)
      const lastFiredMs = checkTime('lastFiredMs', params.lastFiredMs)
      const nowMs = checkTime('nowMs', params.nowMs)
      if (!Array.isArray(params.jobs)) throw new InvalidInput({ field: 'jobs', reason: 'must be an array' })
      const jobs = params.jobs.map((job, index) => checkNewJob(job, `jobs[${index}]`))
      if (leases.get(leaseName)?.fence !== fence) return 'fenced'
      const schedule = schedules.get(name)
      if (schedule === undefined || schedule.revision !== expectedRevision) return 'conflict'
      for (const job of jobs) insert(job, nowMs)
      schedules.set(name, { ...schedule, lastFiredMs, revision: schedule.revision + 1 })
      return 'fired'
    },

  }
}
