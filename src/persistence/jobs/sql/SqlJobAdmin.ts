/**
 * SqlJobAdmin — the operator's half of the SQL job store (SqlJobStore.ts): counts by state, keyset
 * pages by id, and `retryDead`, which moves a dead job back in one statement inside a
 * transaction that it rolls back when the job's key turns out to be held by a live job (the
 * partial unique index decides, so a concurrent keyed enqueue can never lose the dead job).
 *
 * Invariants: inputs are validated (JobInput.ts) before any SQL; rows are decoded with
 * assertions (jobRows.ts); failures map into the store error catalogue.
 */
import { assert } from '../../../kernel/assert.ts'
import type { Driver, Queryable } from '../../sql/Driver.ts'
import type { Schema } from '../../sql/Schema.ts'
import { type SqlSession, toStoreError } from '../../sql/SqlSession.ts'
import { toSafeInteger } from '../../queues/sql/SqlValues.ts'
import { checkJobRef, checkListLimit, checkName, checkState, checkTime } from '../JobInput.ts'
import type { JobStore, RetryDeadOutcome } from '../JobStore.ts'
import { decodeJob } from './jobRows.ts'
import * as jobSql from './jobSql.ts'

type Row = Record<string, unknown>

// Thrown inside retryDead's transaction to roll back a move whose key turned out to be held.
class KeyTaken extends Error {}

/** The admin operations over `driver`'s migrated `schema`; `dueChannel` is the store's due signal. */
export function makeSqlJobAdmin(
  driver: Driver,
  schema: Schema,
  session: SqlSession,
  dueChannel: string,
): Pick<JobStore, 'countJobs' | 'countQueues' | 'listJobs' | 'retryDead'> {
  const sql = {
    countJobs: jobSql.countJobsSql(schema),
    countQueues: jobSql.countQueuesSql(schema),
    listLiveJobs: jobSql.listLiveJobsSql(schema),
    listDeadJobs: jobSql.listDeadJobsSql(schema),
    retryDead: jobSql.retryDeadSql(schema),
    keyHolder: jobSql.keyHolderSql(schema),
    getJob: jobSql.getJobSql(schema),
  }
  const read = (operation: string, text: string, params: ReadonlyArray<unknown>) => session.read<Row>(operation, text, params)
  const { validated } = session
  return {
    async countJobs(params) {
      const queue = validated('countJobs', () => checkName('queue', params.queue))
      const [row] = await read('countJobs', sql.countJobs, [queue])
      assert(row !== undefined, 'countJobs returned no row')
      return { pending: toSafeInteger(row.pending, 'pending'), processing: toSafeInteger(row.processing, 'processing'), dead: toSafeInteger(row.dead, 'dead') }
    },

    async countQueues(params) {
      const limit = validated('countQueues', () => checkListLimit('limit', params.limit))
      const rows = await read('countQueues', sql.countQueues, [limit])
      return rows.map((row) => ({
        queue: row.queue as string,
        pending: toSafeInteger(row.pending, 'pending'),
        processing: toSafeInteger(row.processing, 'processing'),
        dead: toSafeInteger(row.dead, 'dead'),
      }))
    },

    async listJobs(params) {
      const { queue, state, limit, afterId } = validated('listJobs', () => ({
        queue: checkName('queue', params.queue),
        state: checkState('state', params.state),
        limit: checkListLimit('limit', params.limit),
        afterId: params.afterId === null ? null : checkName('afterId', params.afterId),
      }))
      const rows =
        state === 'dead'
          ? await read('listJobs', sql.listDeadJobs, [queue, afterId, limit])
          : await read('listJobs', sql.listLiveJobs, [queue, state, afterId, limit])
      return rows.map(decodeJob)
    },

    async retryDead(params) {
      const { queue, id, nowMs } = validated('retryDead', () => ({ ...checkJobRef(params), nowMs: checkTime('nowMs', params.nowMs) }))
      let key: string | null = null
      try {
        return await driver.transaction(async (tx: Queryable): Promise<RetryDeadOutcome> => {
          const { rows } = await tx.query<Row>(sql.retryDead, [id, queue, nowMs, dueChannel])
          const [row] = rows
          assert(row !== undefined, 'retryDead returned no row')
          if (toSafeInteger(row.moved, 'moved') === 0) return { kind: 'not-dead' }
          if (row.id === null) {
            key = row.job_key as string | null
            throw new KeyTaken()
          }
          return { kind: 'retried', job: decodeJob(row) }
        })
      } catch (error) {
        if (!(error instanceof KeyTaken)) throw toStoreError('retryDead', true, error)
      }
      // The move was rolled back: the dead job stays, its key held by a live job.
      const [dead] = await read('retryDead', sql.getJob, [id, queue])
      const holderKey = key ?? (dead?.job_key as string | null | undefined) ?? null
      const [holder] = holderKey === null ? [] : await read('retryDead', sql.keyHolder, [queue, holderKey])
      return holder === undefined ? { kind: 'not-dead' } : { kind: 'key-taken', liveId: holder.id as string }
    },

  }
}
