/**
 * SqlJobStore — the JobStore contract (persistence/jobs/JobStore.ts) written once over the SQL
 * `Driver` seam, so the embedded (PGlite) and postgres (`pg`) stores run the same statements
 * (jobSql.ts, scheduleSql.ts) on the tables of migrations 003 and 004.
 *
 * Owns: putting the store together from its parts over one session, and the operations on a job
 * by id that belong to none of them (`getJob`, `cancel`, and the sweep, `sweepExpired`). Every part
 * validates inputs (JobInput.ts) before any SQL, runs one statement per transition, decodes rows
 * with assertions after read (jobRows.ts), and maps failures into the catalogue exactly as the
 * Matching Store does (`toStoreError`). The parts:
 * - SqlJobEnqueue.ts: the inserts (`enqueue`, `enqueueMany`, with or without the caller's
 *   transaction);
 * - SqlJobClaims.ts: the claims (`claim`, `claimMany`, `claimDue`, `ackAndClaimDue`), fenced or not,
 *   and which queues are claimed under the admission steps;
 * - SqlJobHandles.ts: a claim holder's operations (heartbeat, acks, progress, release, retry, fail);
 * - SqlJobDueTimes.ts: delivery due-times (`takeDue`, `confirmDelivered`, …);
 * - SqlJobSchedules.ts: schedules and their one multi-statement transaction, `fireSchedule`;
 * - SqlJobPauses.ts: pausing and resuming queues; SqlJobAdmin.ts: the operator's counts, pages
 *   and `retryDead`;
 * - jobTexts.ts: the statements whose text depends on the call's shape, shared by the parts.
 *
 * Does not: migrate (openSqlJobStore does, through the shared migration runner), read a clock,
 * or retry.
 */
import { deadReasonExhausted, deadReasonExpired } from '../../../domain/JobRules.ts'
import { assert } from '../../../kernel/assert.ts'
import type { Driver } from '../../sql/Driver.ts'
import type { Schema } from '../../sql/Schema.ts'
import { makeSqlSession, openMigrated } from '../../sql/SqlSession.ts'
import { toSafeInteger } from '../../queues/sql/SqlValues.ts'
import { checkJobRef, checkName, checkTime } from '../JobInput.ts'
import type { JobStore } from '../JobStore.ts'
import { dueChannelOf } from '../../bus/Channels.ts'
import { decodeJob } from './jobRows.ts'
import * as jobSql from './jobSql.ts'
import { makeJobTexts } from './jobTexts.ts'
import { makeSqlJobAdmin } from './SqlJobAdmin.ts'
import { makeSqlJobClaims } from './SqlJobClaims.ts'
import { makeSqlJobDueTimes } from './SqlJobDueTimes.ts'
import { makeSqlJobEnqueue } from './SqlJobEnqueue.ts'
import { makeSqlJobHandles } from './SqlJobHandles.ts'
import { makeSqlJobPauses } from './SqlJobPauses.ts'
import { makeSqlJobSchedules } from './SqlJobSchedules.ts'

type Row = Record<string, unknown>

/** Makes a JobStore over an already migrated schema. `close` closes the driver (idempotent). */
export function makeSqlJobStore(driver: Driver, schema: Schema): JobStore {
  const dueChannel = dueChannelOf(schema.name)
  const texts = makeJobTexts(schema)
  const sql = { getJob: jobSql.getJobSql(schema), cancel: jobSql.cancelSql(schema), sweepExpired: jobSql.sweepExpiredSql(schema) }
  const session = makeSqlSession(driver)
  const { validated } = session
  const handles = makeSqlJobHandles(schema, session, texts, dueChannel)
  return {
    kind: driver.kind,

    ...makeSqlJobEnqueue(schema, session, dueChannel),
    ...makeSqlJobPauses(schema, session, dueChannel),
    ...makeSqlJobClaims(schema, session, texts, handles),
    ...handles,
    ...makeSqlJobDueTimes(schema, session, texts),
    ...makeSqlJobSchedules(driver, schema, session, dueChannel),
    ...makeSqlJobAdmin(driver, schema, session, dueChannel),

    async getJob(params) {
      const { queue, id } = validated('getJob', () => checkJobRef(params))
      const rows = await session.read<Row>('getJob', sql.getJob, [id, queue])
      assert(rows.length <= 1, `job ${id} is both live and dead`)
      return rows[0] === undefined ? null : decodeJob(rows[0])
    },

    async cancel(params) {
      const { queue, id } = validated('cancel', () => checkJobRef(params))
      return (await session.write<Row>('cancel', sql.cancel, [id, queue])).length === 1
    },

    async sweepExpired(params) {
      const { queue, nowMs } = validated('sweepExpired', () => ({ queue: checkName('queue', params.queue), nowMs: checkTime('nowMs', params.nowMs) }))
      const [row] = await session.write<Row>('sweepExpired', sql.sweepExpired, [queue, nowMs, deadReasonExhausted, deadReasonExpired])
      assert(row !== undefined, 'sweepExpired returned no row')
      return { dead: toSafeInteger(row.dead, 'dead'), purged: toSafeInteger(row.purged, 'purged') }
    },

    close: session.close,
  }
}

/** Migrates `driver`'s database (every migration, Matching's included) and returns a JobStore over it. */
export async function openSqlJobStore(driver: Driver, options: { readonly schema?: string } = {}): Promise<JobStore> {
  return openMigrated(driver, options.schema, (schema) => makeSqlJobStore(driver, schema))
}
