/**
 * SqlJobPauses — pausing and resuming queues on the SQL job store (JobStore.ts's "Paused queues"):
 * a pause is a row of `queue_pauses`, which every claim statement checks inside itself
 * (pauseSql.ts's `notPaused`); resuming deletes it, makes the queue's rows whose task went to
 * Matching due again, and raises the queue's due signal, in one statement.
 *
 * Invariants: inputs validated before any SQL; one statement per operation.
 */
import { checkListLimit, checkName, checkTime } from '../JobInput.ts'
import type { JobStore } from '../JobStore.ts'
import type { Schema } from '../../sql/Schema.ts'
import type { SqlSession } from '../../sql/SqlSession.ts'
import { toSafeInteger } from '../../queues/sql/SqlValues.ts'
import { pausedQueuesSql, pauseQueueSql, queuePauseSql, resumeQueueSql } from './pauseSql.ts'

type Row = Record<string, unknown>

/** The pause operations over `session`'s migrated `schema`; `dueChannel` is the store's due signal. */
export function makeSqlJobPauses(schema: Schema, session: SqlSession, dueChannel: string): Pick<JobStore, 'pauseQueue' | 'resumeQueue' | 'queuePause' | 'pausedQueues'> {
  const sql = { pause: pauseQueueSql(schema), resume: resumeQueueSql(schema), queuePause: queuePauseSql(schema), paused: pausedQueuesSql(schema) }
  const { validated } = session
  return {
    async pauseQueue(params) {
      const { queue, nowMs } = validated('pauseQueue', () => ({ queue: checkName('queue', params.queue), nowMs: checkTime('nowMs', params.nowMs) }))
      return (await session.write<Row>('pauseQueue', sql.pause, [queue, nowMs])).length === 1
    },
    async resumeQueue(params) {
      const { queue, nowMs } = validated('resumeQueue', () => ({ queue: checkName('queue', params.queue), nowMs: checkTime('nowMs', params.nowMs) }))
      const [row] = await session.write<Row>('resumeQueue', sql.resume, [queue, nowMs, dueChannel])
      return toSafeInteger(row?.resumed ?? 0, 'resumed') === 1
    },
    async queuePause(params) {
      const queue = validated('queuePause', () => checkName('queue', params.queue))
      const [row] = await session.read<Row>('queuePause', sql.queuePause, [queue])
      return row === undefined ? null : { pausedAtMs: toSafeInteger(row.paused_at_ms, 'paused_at_ms') }
    },
    async pausedQueues(params) {
      const limit = validated('pausedQueues', () => checkListLimit('limit', params.limit))
      const rows = await session.read<Row>('pausedQueues', sql.paused, [limit])
      return rows.map((row) => ({ queue: row.queue as string, pausedAtMs: toSafeInteger(row.paused_at_ms, 'paused_at_ms') }))
    },
  }
}
