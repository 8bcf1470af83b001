/**
 * SqlJobHandles — the operations of a claim's holder on the SQL job store (SqlJobStore.ts):
 * `heartbeat`, `ack`, `ackMany`, `ackBatch`, `setProgress`, `release`, `releaseHandedOver`, `retry` and `fail`. Each is
 * one statement with JobStore.ts's validity predicate inside it (processing, deadline not passed,
 * the caller's claim token current), so a reclaim racing one of them has exactly one winner.
 *
 * Invariants: inputs validated (JobInput.ts) before any SQL; rows decoded with assertions
 * (jobRows.ts). Does not: claim (SqlJobClaims.ts), fence (a holder's operation is judged by its
 * claim token, not by a range), read a clock, or retry.
 */
import { deadReasonExhausted } from '../../../domain/JobRules.ts'
import { assert } from '../../../kernel/assert.ts'
import type { Schema } from '../../sql/Schema.ts'
import type { SqlSession } from '../../sql/SqlSession.ts'
import { toSafeInteger } from '../../queues/sql/SqlValues.ts'
import { checkClaimRef, checkClaims, checkDurationMs, checkHandedOver, checkError, checkProgress, checkStack, checkTime } from '../JobInput.ts'
import type { JobStore } from '../JobStore.ts'
import { decodeJob } from './jobRows.ts'
import * as jobSql from './jobSql.ts'
import type { JobTexts } from './jobTexts.ts'

type Row = Record<string, unknown>

/** The holder's operations over `session`'s migrated `schema` and its shape-chosen `texts`; `dueChannel` is the store's due signal. */
export function makeSqlJobHandles(
  schema: Schema,
  session: SqlSession,
  texts: JobTexts,
  dueChannel: string,
): Pick<JobStore, 'heartbeat' | 'ack' | 'setProgress' | 'ackMany' | 'ackBatch' | 'release' | 'releaseHandedOver' | 'retry' | 'fail'> {
  const sql = {
    heartbeat: jobSql.heartbeatSql(schema),
    ack: jobSql.ackSql(schema),
    release: jobSql.releaseSql(schema),
    releaseHandedOver: jobSql.releaseHandedOverSql(schema),
    setProgress: jobSql.setProgressSql(schema),
    retry: jobSql.retrySql(schema),
    fail: jobSql.failSql(schema),
  }
  const write = (operation: string, text: string, params: ReadonlyArray<unknown>) => session.write<Row>(operation, text, params)
  const { validated } = session
  return {
    async heartbeat(params) {
      const { id, claimToken, nowMs, extendMs } = validated('heartbeat', () => ({
        ...checkClaimRef(params),
        nowMs: checkTime('nowMs', params.nowMs),
        extendMs: params.extendMs === null ? null : checkDurationMs('extendMs', params.extendMs, 1),
      }))
      const [row] = await write('heartbeat', sql.heartbeat, [id, claimToken, nowMs, extendMs])
      return row === undefined ? null : decodeJob(row)
    },

    async ack(params) {
      const { id, claimToken, nowMs } = validated('ack', () => ({ ...checkClaimRef(params), nowMs: checkTime('nowMs', params.nowMs) }))
      return (await write('ack', sql.ack, [id, claimToken, nowMs])).length === 1
    },

    async setProgress(params) {
      const { id, claimToken, nowMs, progress } = validated('setProgress', () => ({ ...checkClaimRef(params), nowMs: checkTime('nowMs', params.nowMs), progress: checkProgress('progress', params.progress) }))
      return (await write('setProgress', sql.setProgress, [id, claimToken, nowMs, JSON.stringify(progress)])).length === 1
    },

    async ackMany(params) {
      const { claims, nowMs } = validated('ackMany', () => ({ claims: checkClaims(params.claims), nowMs: checkTime('nowMs', params.nowMs) }))
      if (claims.length === 0) return []
      const rows = await write('ackMany', ...texts.ack(claims, nowMs))
      return rows.map((row) => row.id as string)
    },

    async ackBatch(params) {
      const { claims, nowMs } = validated('ackBatch', () => ({ claims: checkClaims(params.claims), nowMs: checkTime('nowMs', params.nowMs) }))
      if (claims.length === 0) return 0
      const rows = await write('ackBatch', ...texts.ack(claims, nowMs))
      return rows.length
    },

    async release(params) {
      const { claims, nowMs } = validated('release', () => ({ claims: checkClaims(params.claims), nowMs: checkTime('nowMs', params.nowMs) }))
      if (claims.length === 0) return []
      const rows = await write('release', sql.release, [claims.map((claim) => claim.id), claims.map((claim) => claim.claimToken), nowMs, dueChannel])
      return rows.map((row) => row.id as string)
    },

    async releaseHandedOver(params) {
      const { queue, claimTokens, nowMs } = validated('releaseHandedOver', () => checkHandedOver(params))
      if (claimTokens.length === 0) return []
      const rows = await write('releaseHandedOver', sql.releaseHandedOver, [queue, claimTokens, nowMs, dueChannel])
      return rows.map((row) => ({ id: row.id as string, claimToken: row.token as string }))
    },

    retry: (params) => retry(session, sql.retry, params),

    async fail(params) {
      const { id, claimToken, nowMs, error, stack } = validated('fail', () => ({
        ...checkClaimRef(params),
        nowMs: checkTime('nowMs', params.nowMs),
        error: checkError('error', params.error),
        stack: checkStack('stack', params.stack),
      }))
      return (await write('fail', sql.fail, [id, claimToken, nowMs, error, stack])).length === 1
    },
  }
}

// Makes the job due again after `delayMs`, or buries it when its attempts are spent: one
// statement (`text`), whose branch answers which.
async function retry(session: SqlSession, text: string, params: Parameters<JobStore['retry']>[0]): ReturnType<JobStore['retry']> {
  const { id, claimToken, nowMs, delayMs, error, stack } = session.validated('retry', () => ({
    error: checkError('error', params.error),
    stack: checkStack('stack', params.stack),
    ...checkClaimRef(params),
    nowMs: checkTime('nowMs', params.nowMs),
    delayMs: checkDurationMs('delayMs', params.delayMs, 0),
  }))
  const rows = await session.write<Row>('retry', text, [id, claimToken, nowMs, delayMs, error, stack, deadReasonExhausted])
  assert(rows.length <= 1, `retry of ${id} took both branches`)
  const [row] = rows
  if (row === undefined) return null
  return row.outcome === 'dead' ? { kind: 'dead' } : { kind: 'retried', runAtMs: toSafeInteger(row.run_at_ms, 'run_at_ms') }
}
