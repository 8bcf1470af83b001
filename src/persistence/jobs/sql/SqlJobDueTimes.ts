/**
 * SqlJobDueTimes — the delivery due-times of the SQL job store (JobStore.ts's "Delivery
 * due-times"): `takeDue` reserves due rows in claim order, `confirmDelivered` clears a
 * reservation once Matching holds the task, `releaseDelivered` makes rows due again, and the reads
 * a due-time driver plans by (`nextDueMs`, `dueQueues`, `deliverableCount`).
 *
 * Invariants: inputs validated (JobInput.ts) before any SQL; one statement per operation; rows
 * decoded with assertions. Does not: claim, hand tasks to Matching (the engine's DueDriver does),
 * or read a clock.
 */
import { InvalidInput } from '../../../domain/errors.ts'
import { deadReasonExhausted, deadReasonExpired } from '../../../domain/JobRules.ts'
import type { Schema } from '../../sql/Schema.ts'
import type { SqlSession } from '../../sql/SqlSession.ts'
import { toSafeInteger } from '../../queues/sql/SqlValues.ts'
import { checkCount, checkName, checkQueues, checkSkipKeys, checkTime } from '../JobInput.ts'
import type { DueJob, JobStore } from '../JobStore.ts'
import { nullableInteger } from './jobRows.ts'
import * as jobSql from './jobSql.ts'
import type { JobTexts } from './jobTexts.ts'

type Row = Record<string, unknown>

/** The due-time operations over `session`'s migrated `schema` and its shape-chosen `texts`. */
export function makeSqlJobDueTimes(
  schema: Schema,
  session: SqlSession,
  texts: JobTexts,
): Pick<JobStore, 'takeDue' | 'confirmDelivered' | 'releaseDelivered' | 'nextDueMs' | 'dueQueues' | 'deliverableCount'> {
  const sql = {
    confirmDelivered: jobSql.confirmDeliveredSql(schema),
    releaseDelivered: jobSql.releaseDeliveredSql(schema),
    deliverableCount: jobSql.deliverableCountSql(schema),
    dueQueues: jobSql.dueQueuesSql(schema),
  }
  const write = (operation: string, text: string, params: ReadonlyArray<unknown>) => session.write<Row>(operation, text, params)
  const read = (operation: string, text: string, params: ReadonlyArray<unknown>) => session.read<Row>(operation, text, params)
  const { validated } = session
  return {
    async takeDue(params) {
      const { nowMs, reserveUntilMs, limit, queues, skipKeys } = validated('takeDue', () => ({
        nowMs: checkTime('nowMs', params.nowMs),
        reserveUntilMs: checkTime('reserveUntilMs', params.reserveUntilMs),
        limit: checkCount('limit', params.limit, 0, 10_000),
        queues: checkQueues(params.queues),
        skipKeys: checkSkipKeys(params.skipConcurrencyKeys),
      }))
      const rows = await write('takeDue', texts.takeDue(queues), [nowMs, reserveUntilMs, limit, queues, deadReasonExhausted, deadReasonExpired, skipKeys])
      // RETURNING order is unspecified; claim order is the contract.
      return rows.map(decodeDueJob).sort((a, b) => b.priority - a.priority || a.dueMs - b.dueMs || a.readySeq - b.readySeq)
    },

    async confirmDelivered(params) {
      const deliveries = validated('confirmDelivered', () => checkDeliveries(deliveryList(params.deliveries)))
      if (deliveries.length === 0) return 0
      const rows = await write('confirmDelivered', sql.confirmDelivered, [deliveries.map((d) => d.id), deliveries.map((d) => d.revision)])
      return rows.length
    },

    async releaseDelivered(params) {
      const { deliveries, dueMs } = validated('releaseDelivered', () => {
        const list = deliveryList(params.deliveries)
        return { dueMs: checkTime('dueMs', params.dueMs), deliveries: checkDeliveries(list) }
      })
      if (deliveries.length === 0) return 0
      const rows = await write('releaseDelivered', sql.releaseDelivered, [deliveries.map((d) => d.id), deliveries.map((d) => d.revision), Math.floor(dueMs)])
      return rows.length
    },

    async nextDueMs(params) {
      const { nowMs, queues } = validated('nextDueMs', () => ({ nowMs: checkTime('nowMs', params.nowMs), queues: checkQueues(params.queues) }))
      const [row] = await read('nextDueMs', texts.nextDue(queues), [nowMs, queues])
      return nullableInteger(row?.next_due_ms, 'next_due_ms')
    },

    async dueQueues(params) {
      const { nowMs, limit } = validated('dueQueues', () => ({ nowMs: checkTime('nowMs', params.nowMs), limit: checkCount('limit', params.limit, 1, 10_000) }))
      const rows = await read('dueQueues', sql.dueQueues, [nowMs, limit])
      return rows.map((row) => ({ queue: row.queue as string, nextDueMs: toSafeInteger(row.next_due_ms, 'next_due_ms') }))
    },

    async deliverableCount(params) {
      const { queue, nowMs, limit } = validated('deliverableCount', () => ({
        queue: checkName('queue', params.queue),
        nowMs: checkTime('nowMs', params.nowMs),
        limit: checkCount('limit', params.limit, 1, 10_000),
      }))
      const [row] = await read('deliverableCount', sql.deliverableCount, [queue, nowMs, limit])
      return toSafeInteger(row?.deliverable ?? 0, 'deliverable')
    },
  }
}

// A due job as `takeDue` answers it, from one of its statement's rows.
function decodeDueJob(row: Row): DueJob {
  return {
    id: row.id as string,
    queue: row.queue as string,
    priority: toSafeInteger(row.priority, 'priority'),
    dueMs: toSafeInteger(row.previous_due_ms, 'previous_due_ms'),
    readySeq: toSafeInteger(row.ready_seq, 'ready_seq'),
    revision: toSafeInteger(row.revision, 'revision'),
    expiresAtMs: nullableInteger(row.expires_at_ms, 'expires_at_ms'),
    ...(row.concurrency_key === null ? {} : { concurrencyKey: row.concurrency_key as string }),
  }
}

type UncheckedDelivery = { readonly id?: unknown; readonly revision?: unknown } | null | undefined

// `deliveries` if it is an array; checked before anything else, as the memory store does.
function deliveryList(deliveries: unknown): ReadonlyArray<UncheckedDelivery> {
  if (!Array.isArray(deliveries)) throw new InvalidInput({ field: 'deliveries', reason: 'must be an array' })
  return deliveries as ReadonlyArray<UncheckedDelivery>
}

// Each delivery's id and revision, checked in order.
function checkDeliveries(list: ReadonlyArray<UncheckedDelivery>): Array<{ id: string; revision: number }> {
  return list.map((delivery, index) => ({
    id: checkName(`deliveries[${index}].id`, delivery?.id),
    revision: checkCount(`deliveries[${index}].revision`, delivery?.revision, 1, Number.MAX_SAFE_INTEGER),
  }))
}
