/**
 * SqlJobSchedules — the schedules of the SQL job store (SqlJobStore.ts): `putSchedule`,
 * `deleteSchedule`, `listSchedules`, the firing lease (`acquireLease`) and `fireSchedule`, the
 * store's one multi-statement transaction: fence on the lease, compare-and-set the schedule's
 * revision, then insert its occurrences through enqueueMany's insert (SqlJobEnqueue.ts's
 * `insertMany`), so an occurrence exists iff its firing is recorded.
 *
 * Invariants: inputs validated (JobInput.ts) before any SQL; rows decoded with assertions
 * (jobRows.ts); failures map into the store error catalogue. Does not: compute when a schedule
 * is due (the engine's Schedules.ts does), or read a clock.
 */
import { InvalidInput } from '../../../domain/errors.ts'
import { validateJson } from '../../../domain/Json.ts'
import { assert } from '../../../kernel/assert.ts'
import type { Driver } from '../../sql/Driver.ts'
import type { Schema } from '../../sql/Schema.ts'
import { type SqlSession, toStoreError } from '../../sql/SqlSession.ts'
import { toSafeInteger } from '../../queues/sql/SqlValues.ts'
import { checkCount, checkDurationMs, checkName, checkNewJob, checkScheduleKeys, checkTime, checkTimezone, scheduleKeyFields } from '../JobInput.ts'
import type { JobStore } from '../JobStore.ts'
import { decodeSchedule } from './jobRows.ts'
import type { EnqueueManyForm } from './jobSql.ts'
import { enqueueManyTexts, insertMany } from './SqlJobEnqueue.ts'
import * as scheduleSql from './scheduleSql.ts'

type Row = Record<string, unknown>

/** The schedule operations over `driver`'s migrated `schema`; `dueChannel` is the store's due signal. */
export function makeSqlJobSchedules(
  driver: Driver,
  schema: Schema,
  session: SqlSession,
  dueChannel: string,
): Pick<JobStore, 'putSchedule' | 'deleteSchedule' | 'listSchedules' | 'acquireLease' | 'fireSchedule'> {
  const sql = {
    enqueueMany: enqueueManyTexts(schema),
    putSchedule: scheduleSql.putScheduleSql(schema),
    deleteSchedule: scheduleSql.deleteScheduleSql(schema),
    getSchedule: scheduleSql.getScheduleSql(schema),
    listSchedules: scheduleSql.listSchedulesSql(schema),
    acquireLease: scheduleSql.acquireLeaseSql(schema),
    lockLease: scheduleSql.lockLeaseSql(schema),
    markFired: scheduleSql.markFiredSql(schema),
  }
  const write = (operation: string, text: string, params: ReadonlyArray<unknown>) => session.write<Row>(operation, text, params)
  const read = (operation: string, text: string, params: ReadonlyArray<unknown>) => session.read<Row>(operation, text, params)
  const { validated } = session
  return {
    async putSchedule(params) {
      const { name, spec, queue, payload, timezone, keys, nowMs } = validated('putSchedule', () => ({
        name: checkName('name', params.name),
        spec: checkName('spec', params.spec),
        queue: checkName('queue', params.queue),
        payload: validateJson('payload', params.payload),
        timezone: checkTimezone('timezone', params.timezone),
        keys: checkScheduleKeys(params),
        nowMs: checkTime('nowMs', params.nowMs),
      }))
      const keyValues = scheduleKeyFields.map((field) => keys[field] ?? null)
      const [changed] = await write('putSchedule', sql.putSchedule, [name, spec, queue, JSON.stringify(payload), nowMs, timezone, ...keyValues])
      if (changed !== undefined) return decodeSchedule(changed)
      const [current] = await read('putSchedule', sql.getSchedule, [name])
      assert(current !== undefined, `schedule ${name} neither changed nor exists`)
      return decodeSchedule(current)
    },

    async deleteSchedule(params) {
      const name = validated('deleteSchedule', () => checkName('name', params.name))
      return (await write('deleteSchedule', sql.deleteSchedule, [name])).length === 1
    },

    async listSchedules() {
      return (await read('listSchedules', sql.listSchedules, [])).map(decodeSchedule)
    },

    async acquireLease(params) {
      const { name, holder, nowMs, ttlMs } = validated('acquireLease', () => ({
        name: checkName('name', params.name),
        holder: checkName('holder', params.holder),
        nowMs: checkTime('nowMs', params.nowMs),
        ttlMs: checkDurationMs('ttlMs', params.ttlMs, 1),
      }))
      const [row] = await write('acquireLease', sql.acquireLease, [name, holder, nowMs, ttlMs])
      return row === undefined ? null : { fence: toSafeInteger(row.fence, 'fence') }
    },

    fireSchedule: (params) => fireSchedule(driver, session, sql, dueChannel, params),
  }
}

// Fences on the lease, compares-and-sets the schedule's revision, then inserts its occurrences,
// in one transaction: 'fenced' or 'conflict' when a step refused (nothing written), else 'fired'.
async function fireSchedule(
  driver: Driver,
  session: SqlSession,
  sql: { readonly lockLease: string; readonly markFired: string; readonly enqueueMany: (form: EnqueueManyForm) => string },
  dueChannel: string,
  params: Parameters<JobStore['fireSchedule']>[0],
): ReturnType<JobStore['fireSchedule']> {
  const checked = session.validated('fireSchedule', () => {
    if (!Array.isArray(params.jobs)) throw new InvalidInput({ field: 'jobs', reason: 'must be an array' })
    return {
      leaseName: checkName('leaseName', params.leaseName),
      fence: checkCount('fence', params.fence, 1, Number.MAX_SAFE_INTEGER),
      name: checkName('name', params.name),
      expectedRevision: checkCount('expectedRevision', params.expectedRevision, 1, Number.MAX_SAFE_INTEGER),
      lastFiredMs: checkTime('lastFiredMs', params.lastFiredMs),
      jobs: params.jobs.map((job, index) => checkNewJob(job, `jobs[${index}]`)),
      nowMs: checkTime('nowMs', params.nowMs),
    }
  })
  try {
    return await driver.transaction(async (tx) => {
      const fenced = await tx.query(sql.lockLease, [checked.leaseName, checked.fence])
      if (fenced.rows.length === 0) return 'fenced' as const
      const marked = await tx.query(sql.markFired, [checked.name, checked.expectedRevision, checked.lastFiredMs])
      if (marked.rows.length === 0) return 'conflict' as const
      await insertMany(async (values, form) => (await tx.query<Row>(sql.enqueueMany(form), values)).rows, checked.jobs, checked.nowMs, dueChannel)
      return 'fired' as const
    })
  } catch (error) {
    throw toStoreError('fireSchedule', true, error)
  }
}
