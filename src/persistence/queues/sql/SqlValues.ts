/**
 * SqlValues — turning rows that come back from PostgreSQL into domain values, checking them on
 * the way in (TigerBeetle: assert after read as well as before write).
 *
 * Owns: bigint conversion (pg returns int8 as a string, PGlite as a number or a bigint), and
 * decoding queue metadata, stored-row counts and stored tasks.
 *
 * Invariants: a value that fails these checks is a defect in the store or a tampered database,
 * never an expected outcome, so it is an `AssertionFailed`, not a `StoreError`.
 */
import { isMatchboxError } from '../../../domain/errors.ts'
import type { QueueKey } from '../../../domain/QueueKey.ts'
import { makeTask, type StoredTask } from '../../../domain/Task.ts'
import { assert } from '../../../kernel/assert.ts'
import type { QueueInspection, QueueMetadata } from '../Store.ts'

/** An int8 / numeric / int4 value as a JavaScript number; asserts it is a safe integer. */
export function toSafeInteger(value: unknown, what: string): number {
  const number = typeof value === 'bigint' ? Number(value) : typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value
  // Every decoded row calls this for each integer column: the messages are built only on failure.
  assert(typeof number === 'number' && Number.isSafeInteger(number), () => `${what}: ${String(value)} is not a safe integer`)
  if (typeof value === 'bigint') assert(BigInt(number) === value, () => `${what}: ${value} is not a safe integer`)
  return number
}

/** Columns of a `task_queues` row as the statements return them. */
export interface QueueRow {
  readonly range_id: unknown
  readonly last_task_id: unknown
  readonly ack_levels: unknown
  readonly updated_at_ms: unknown
}

/** Decodes a `task_queues` row of `key`; asserts its invariants. */
export function decodeMetadata(key: QueueKey, row: QueueRow): QueueMetadata {
  const rangeId = toSafeInteger(row.range_id, 'range_id')
  const lastTaskId = toSafeInteger(row.last_task_id, 'last_task_id')
  assert(rangeId >= 1, `range_id ${rangeId} < 1`)
  assert(lastTaskId >= 0, `last_task_id ${lastTaskId} < 0`)
  const stored = row.ack_levels
  assert(typeof stored === 'object' && stored !== null && !Array.isArray(stored), 'ack_levels is not an object')
  const ackLevels: Record<number, number> = {}
  for (const [subqueue, level] of Object.entries(stored)) {
    const index = toSafeInteger(subqueue, 'ack_levels subqueue')
    const ackLevel = toSafeInteger(level, `ack_levels[${subqueue}]`)
    assert(ackLevel >= 0 && ackLevel <= lastTaskId, `ack level ${ackLevel} of subqueue ${subqueue} outside 0…${lastTaskId}`)
    ackLevels[index] = ackLevel
  }
  return { key, rangeId, lastTaskId, ackLevels, updatedAtMs: toSafeInteger(row.updated_at_ms, 'updated_at_ms') }
}

/** Decodes `{"<subqueue>": count}` (a jsonb object built by the inspect statement). */
function decodeRowCounts(value: unknown): { storedRows: number; storedRowsBySubqueue: Record<number, number> } {
  const counts = value ?? {}
  assert(typeof counts === 'object' && !Array.isArray(counts), 'row counts are not an object')
  const storedRowsBySubqueue: Record<number, number> = {}
  let storedRows = 0
  for (const [subqueue, count] of Object.entries(counts as Record<string, unknown>)) {
    const rows = toSafeInteger(count, `row count of subqueue ${subqueue}`)
    assert(rows > 0, `row count ${rows} of subqueue ${subqueue}`)
    storedRowsBySubqueue[toSafeInteger(subqueue, 'subqueue')] = rows
    storedRows += rows
  }
  return { storedRows, storedRowsBySubqueue }
}

/** Metadata plus counts. */
export function decodeInspection(key: QueueKey, row: QueueRow & { readonly row_counts: unknown }): QueueInspection {
  return { metadata: decodeMetadata(key, row), ...decodeRowCounts(row.row_counts) }
}

/** Decodes a `tasks` row read from `subqueue`; asserts the task is valid and belongs there. */
export function decodeStoredTask(row: { readonly task_id: unknown; readonly data: unknown }, subqueue: number): StoredTask {
  const taskId = toSafeInteger(row.task_id, 'task_id')
  assert(taskId >= 1, `task_id ${taskId} < 1`)
  let task
  try {
    task = makeTask(row.data as Parameters<typeof makeTask>[0], `stored task ${taskId}`)
  } catch (error) {
    assert(!isMatchboxError(error), `stored task ${taskId} is invalid: ${error instanceof Error ? error.message : String(error)}`)
    throw error
  }
  assert(task.priority === subqueue, `stored task ${taskId} has priority ${task.priority} but sits in subqueue ${subqueue}`)
  return { taskId, task }
}
