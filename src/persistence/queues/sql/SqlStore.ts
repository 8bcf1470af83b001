/**
 * SqlStore — the Store (persistence/queues/Store.ts) written once over the `Driver` seam, so the
 * embedded (PGlite) and postgres (`pg`) stores run the same SQL.
 *
 * Owns: validating inputs (StoreInput.ts) before any SQL, running one statement per fenced
 * write (queueSql / taskSql / userDataSql), explaining a fenced write that matched nothing with
 * one extra read on that failure path only, and mapping every failure into the catalogue:
 *   - catalogue errors and assertions pass through;
 *   - driver failures become `Unavailable`, with `maybeCommitted` true only for a write whose
 *     statement was sent and whose outcome the server never reported (connection lost in flight);
 *   - server errors that can only mean a defect (syntax, undefined objects, integrity or data
 *     errors) are assertions: retrying cannot help, and hiding them would hide a bug.
 *
 * Invariants: every statement is parameterized; the quoted schema is the only interpolation;
 * rows are checked after read (SqlValues.ts); times are the caller's `nowMs` (floored to whole
 * milliseconds for the bigint columns), never a clock.
 *
 * Does not: open drivers or migrate (openSqlStore.ts), retry, or cache anything.
 */
import { InvalidInput, OwnershipLost, VersionConflict } from '../../../domain/errors.ts'
import { decodeQueueKey, encodeQueueKey, makeQueueKey, type QueueKey } from '../../../domain/QueueKey.ts'
import { AssertionFailed, assert } from '../../../kernel/assert.ts'
import type { Store } from '../Store.ts'
import * as input from '../StoreInput.ts'
import type { Driver } from '../../sql/Driver.ts'
import { acquireSql, currentQueueSql, currentRangesSql, inspectSql, listSql } from './queueSql.ts'
import type { Schema } from '../../sql/Schema.ts'
import { makeSqlSession } from '../../sql/SqlSession.ts'
import { decodeInspection, decodeMetadata, decodeStoredTask, type QueueRow, toSafeInteger } from './SqlValues.ts'
import { appendSql, checkpointSql, readSql, relocateSql } from './taskSql.ts'
import { getUserDataSql, insertUserDataSql, updateUserDataSql } from './userDataSql.ts'

/** Makes a Store over an already migrated schema. Closing the store closes the driver. */
export function makeSqlStore(driver: Driver, schema: Schema): Store {
  const sql = statementsOf(schema)

  const { write, read, validated, close } = makeSqlSession(driver)

  const currentRange = async (operation: string, queue: string): Promise<{ rangeId: number; lastTaskId: number } | null> => {
    const [row] = await read<{ range_id: unknown; last_task_id: unknown }>(operation, sql.currentQueue, [queue])
    return row === undefined ? null : { rangeId: toSafeInteger(row.range_id, 'range_id'), lastTaskId: toSafeInteger(row.last_task_id, 'last_task_id') }
  }

  return {
    kind: driver.kind,

    async acquire(params) {
      const { key, nowMs } = validated('acquire', () => input.checkAcquire(params))
      const queue = encodeQueueKey(key)
      const [row] = await write<QueueRow>('acquire', sql.acquire, [queue, key.namespace, key.family, key.type, key.partition, key.version, Math.floor(nowMs)])
      assert(row !== undefined, `acquire of ${queue} returned no row`)
      return decodeMetadata(key, row)
    },

    async append(params) {
      const { key, rangeId, tasks } = validated('append', () => input.checkAppend(params))
      const queue = encodeQueueKey(key)
      const [row] = await write<{ last_task_id: unknown; inserted_rows: unknown }>('append', sql.append, [queue, rangeId, tasks.length, JSON.stringify(tasks)])
      if (row === undefined) {
        const current = await currentRange('append', queue)
        assert(current?.rangeId !== rangeId, `append to ${queue} under its current range ${rangeId} matched nothing`)
        throw new OwnershipLost({ queue, rangeId, currentRangeId: current?.rangeId ?? null })
      }
      const lastTaskId = toSafeInteger(row.last_task_id, 'last_task_id')
      assert(toSafeInteger(row.inserted_rows, 'inserted_rows') === tasks.length, `append to ${queue} inserted ${String(row.inserted_rows)} of ${tasks.length} rows`)
      return { firstTaskId: lastTaskId - tasks.length + 1, lastTaskId }
    },

    async read(params) {
      const { key, subqueue, afterTaskId, limit } = validated('read', () => input.checkRead(params))
      const rows = await read<{ task_id: unknown; data: unknown }>('read', sql.read, [encodeQueueKey(key), subqueue, afterTaskId, limit])
      const tasks = rows.map((row) => decodeStoredTask(row, subqueue))
      tasks.forEach((task, index) => assert(index === 0 || (tasks[index - 1]?.taskId ?? 0) < task.taskId, 'read returned ids out of order'))
      return tasks
    },

    async checkpoint(params) {
      const { key, rangeId, ackLevels, nowMs } = validated('checkpoint', () => input.checkCheckpoint(params))
      const queue = encodeQueueKey(key)
      const [row] = await write<QueueRow & { deleted_rows: unknown }>('checkpoint', sql.checkpoint, [queue, rangeId, JSON.stringify(ackLevels), Math.floor(nowMs)])
      if (row !== undefined) return { metadata: decodeMetadata(key, row), deletedRows: toSafeInteger(row.deleted_rows, 'deleted_rows') }
      return checkpointRefused(await currentRange('checkpoint', queue), queue, rangeId, ackLevels)
    },

    async relocate(params) {
      const { from, fromRangeId, to, toRangeId, taskIds } = validated('relocate', () => input.checkRelocate(params))
      const fromQueue = encodeQueueKey(from)
      const toQueue = encodeQueueKey(to)
      const rows = await write<{ fenced: boolean; from_task_id: unknown; to_task_id: unknown; inserted_rows: unknown }>('relocate', sql.relocate, [
        fromQueue,
        fromRangeId,
        toQueue,
        toRangeId,
        JSON.stringify(taskIds),
      ])
      assert(rows.length >= 1, 'relocate returned no row')
      if (rows[0]?.fenced !== true) {
        const current = await read<{ queue_key: string; range_id: unknown }>('relocate', sql.currentRanges, [fromQueue, toQueue])
        return relocateRefused(current, { queue: fromQueue, rangeId: fromRangeId }, { queue: toQueue, rangeId: toRangeId })
      }
      const moved = rows.filter((row) => row.from_task_id !== null)
      assert(moved.length === 0 || toSafeInteger(rows[0]?.inserted_rows, 'inserted_rows') === moved.length, 'relocate inserted a different number of rows than it deleted')
      return moved.map((row) => ({ fromTaskId: toSafeInteger(row.from_task_id, 'from_task_id'), toTaskId: toSafeInteger(row.to_task_id, 'to_task_id') }))
    },

    async inspect(key) {
      const valid = validated('inspect', () => makeQueueKey(key))
      const [row] = await read<QueueRow & { row_counts: unknown }>('inspect', sql.inspect, [encodeQueueKey(valid)])
      return row === undefined ? null : decodeInspection(valid, row)
    },

    async list(filter) {
      const { namespace, family } = validated('list', () => input.checkListFilter(filter))
      const rows = await read<QueueRow & { queue_key: string; row_counts: unknown }>('list', sql.list, [namespace ?? null, family ?? null])
      return rows.map((row) => decodeInspection(decodeStoredKey(row.queue_key), row))
    },

    async getUserData(params) {
      const { namespace, family } = validated('getUserData', () => input.checkFamily(params))
      const [row] = await read<{ version: unknown; data: unknown }>('getUserData', sql.getUserData, [namespace, family])
      return row === undefined ? null : { namespace, family, version: toSafeInteger(row.version, 'user data version'), data: row.data as never }
    },

    async updateUserData(params) {
      const { namespace, family, expectedVersion, data, nowMs } = validated('updateUserData', () => input.checkUserDataUpdate(params))
      const json = JSON.stringify(data)
      const [row] =
        expectedVersion === 0
          ? await write<{ version: unknown; data: unknown }>('updateUserData', sql.insertUserData, [namespace, family, json, Math.floor(nowMs)])
          : await write<{ version: unknown; data: unknown }>('updateUserData', sql.updateUserData, [namespace, family, expectedVersion, json, Math.floor(nowMs)])
      if (row !== undefined) {
        const version = toSafeInteger(row.version, 'user data version')
        assert(version === expectedVersion + 1, `user data ${namespace}/${family} went from ${expectedVersion} to ${version}`)
        return { namespace, family, version, data: row.data as never }
      }
      const [current] = await read<{ version: unknown }>('updateUserData', sql.getUserData, [namespace, family])
      const currentVersion = current === undefined ? 0 : toSafeInteger(current.version, 'user data version')
      assert(currentVersion !== expectedVersion, `user data ${namespace}/${family} at the expected version ${expectedVersion} refused the write`)
      throw new VersionConflict({ subject: `userData ${namespace}/${family}`, expectedVersion, currentVersion })
    },

    close,
  }
}

// The store's statement texts for `schema`, built once per store.
function statementsOf(schema: Schema) {
  return {
    acquire: acquireSql(schema),
    currentQueue: currentQueueSql(schema),
    currentRanges: currentRangesSql(schema),
    inspect: inspectSql(schema),
    list: listSql(schema),
    append: appendSql(schema),
    read: readSql(schema),
    checkpoint: checkpointSql(schema),
    relocate: relocateSql(schema),
    getUserData: getUserDataSql(schema),
    insertUserData: insertUserDataSql(schema),
    updateUserData: updateUserDataSql(schema),
  }
}

// Why a checkpoint matched no row, from the queue's current range and last task id: its range was
// taken (OwnershipLost), or an ack level is past the last task id (InvalidInput).
function checkpointRefused(current: { rangeId: number; lastTaskId: number } | null, queue: string, rangeId: number, ackLevels: ReadonlyArray<{ readonly ackLevel: number }>): never {
  if (current === null || current.rangeId !== rangeId) throw new OwnershipLost({ queue, rangeId, currentRangeId: current?.rangeId ?? null })
  const index = ackLevels.findIndex((entry) => entry.ackLevel > current.lastTaskId)
  // index < 0: an append under this same range raised lastTaskId between our two statements.
  throw new InvalidInput({
    field: index < 0 ? 'ackLevels' : `ackLevels[${index}].ackLevel`,
    reason: `must be at most the queue's lastTaskId (${index < 0 ? 'as of the checkpoint' : current.lastTaskId})`,
  })
}

// Which side's range a refused relocation found taken, from both queues' current ranges.
function relocateRefused(current: ReadonlyArray<{ queue_key: string; range_id: unknown }>, from: { queue: string; rangeId: number }, to: { queue: string; rangeId: number }): never {
  const rangeOf = (queue: string): number | null => {
    const row = current.find((candidate) => candidate.queue_key === queue)
    return row === undefined ? null : toSafeInteger(row.range_id, 'range_id')
  }
  const fromCurrent = rangeOf(from.queue)
  if (fromCurrent !== from.rangeId) throw new OwnershipLost({ queue: from.queue, rangeId: from.rangeId, currentRangeId: fromCurrent })
  const toCurrent = rangeOf(to.queue)
  assert(toCurrent !== to.rangeId, `relocate ${from.queue} → ${to.queue} under current ranges matched nothing`)
  throw new OwnershipLost({ queue: to.queue, rangeId: to.rangeId, currentRangeId: toCurrent })
}

// A stored key that is not canonical is a tampered or corrupted row.
function decodeStoredKey(encoded: string): QueueKey {
  try {
    return decodeQueueKey(encoded, 'queue_key')
  } catch (error) {
    throw new AssertionFailed(`stored queue_key ${JSON.stringify(encoded)} is not canonical: ${error instanceof Error ? error.message : String(error)}`)
  }
}
