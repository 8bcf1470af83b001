/**
 * StoreInput — validation of every Store operation's parameters, shared by all stores so they
 * refuse exactly the same inputs with exactly the same `InvalidInput` (field + reason), before
 * anything is written.
 *
 * Each `check…` returns the validated, normalized parameters or throws `InvalidInput`.
 */
import { InvalidInput } from '../../domain/errors.ts'
import { type JsonValue, validateJson } from '../../domain/Json.ts'
import { makeQueueKey, type QueueKey, validateName } from '../../domain/QueueKey.ts'
import { makeTask, type Task, validatePriority } from '../../domain/Task.ts'
import { appendBatchSizeMax, readPageSizeMax, relocateBatchSizeMax } from '../../kernel/Limits.ts'
import type { SubqueueAckLevel } from './Store.ts'

function count(field: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new InvalidInput({ field, reason: `must be an integer ≥ ${min}` })
  }
  return value
}

function time(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidInput({ field, reason: 'must be a finite epoch-ms number ≥ 0' })
  }
  return value
}

/** A range id: an integer ≥ 1. */
function checkRangeId(field: string, value: unknown): number {
  return count(field, value, 1)
}

/** Parameters of `acquire`. */
export function checkAcquire(params: { key: QueueKey; nowMs: number }): { key: QueueKey; nowMs: number } {
  return { key: makeQueueKey(params.key), nowMs: time('nowMs', params.nowMs) }
}

/** Parameters of `append`: 1…appendBatchSizeMax valid tasks. */
export function checkAppend(params: { key: QueueKey; rangeId: number; tasks: ReadonlyArray<Task>; nowMs: number }): {
  key: QueueKey
  rangeId: number
  tasks: ReadonlyArray<Task>
  nowMs: number
} {
  const key = makeQueueKey(params.key)
  const rangeId = checkRangeId('rangeId', params.rangeId)
  if (!Array.isArray(params.tasks) || params.tasks.length === 0 || params.tasks.length > appendBatchSizeMax) {
    throw new InvalidInput({ field: 'tasks', reason: `must be an array of 1…${appendBatchSizeMax} tasks` })
  }
  const tasks = params.tasks.map((task, index) => makeTask(task, `tasks[${index}]`))
  return { key, rangeId, tasks, nowMs: time('nowMs', params.nowMs) }
}

/** Parameters of `read`. */
export function checkRead(params: { key: QueueKey; subqueue: number; afterTaskId: number; limit: number }): {
  key: QueueKey
  subqueue: number
  afterTaskId: number
  limit: number
} {
  const limit = count('limit', params.limit, 1)
  if (limit > readPageSizeMax) throw new InvalidInput({ field: 'limit', reason: `must be at most ${readPageSizeMax}` })
  return {
    key: makeQueueKey(params.key),
    subqueue: validatePriority('subqueue', params.subqueue),
    afterTaskId: count('afterTaskId', params.afterTaskId, 0),
    limit,
  }
}

/** Parameters of `checkpoint`: at least one subqueue, each named once. */
export function checkCheckpoint(params: {
  key: QueueKey
  rangeId: number
  ackLevels: ReadonlyArray<SubqueueAckLevel>
  nowMs: number
}): { key: QueueKey; rangeId: number; ackLevels: ReadonlyArray<SubqueueAckLevel>; nowMs: number } {
  if (!Array.isArray(params.ackLevels) || params.ackLevels.length === 0) {
    throw new InvalidInput({ field: 'ackLevels', reason: 'must list at least one subqueue' })
  }
  const seen = new Set<number>()
  const ackLevels = params.ackLevels.map((entry, index) => {
    const subqueue = validatePriority(`ackLevels[${index}].subqueue`, entry?.subqueue)
    if (seen.has(subqueue)) throw new InvalidInput({ field: `ackLevels[${index}].subqueue`, reason: 'is listed twice' })
    seen.add(subqueue)
    return { subqueue, ackLevel: count(`ackLevels[${index}].ackLevel`, entry?.ackLevel, 0) }
  })
  return { key: makeQueueKey(params.key), rangeId: checkRangeId('rangeId', params.rangeId), ackLevels, nowMs: time('nowMs', params.nowMs) }
}

/** Parameters of `relocate`: distinct queues, 1…relocateBatchSizeMax distinct ids. */
export function checkRelocate(params: {
  from: QueueKey
  fromRangeId: number
  to: QueueKey
  toRangeId: number
  taskIds: ReadonlyArray<number>
  nowMs: number
}): { from: QueueKey; fromRangeId: number; to: QueueKey; toRangeId: number; taskIds: ReadonlyArray<number>; nowMs: number } {
  const from = makeQueueKey(params.from, 'from')
  const to = makeQueueKey(params.to, 'to')
  if (JSON.stringify(from) === JSON.stringify(to)) throw new InvalidInput({ field: 'to', reason: 'must differ from `from`' })
  if (!Array.isArray(params.taskIds) || params.taskIds.length === 0 || params.taskIds.length > relocateBatchSizeMax) {
    throw new InvalidInput({ field: 'taskIds', reason: `must be an array of 1…${relocateBatchSizeMax} ids` })
  }
  const taskIds = [...new Set(params.taskIds.map((id, index) => count(`taskIds[${index}]`, id, 1)))].sort((a, b) => a - b)
  return {
    from,
    fromRangeId: checkRangeId('fromRangeId', params.fromRangeId),
    to,
    toRangeId: checkRangeId('toRangeId', params.toRangeId),
    taskIds,
    nowMs: time('nowMs', params.nowMs),
  }
}

/** A (namespace, family) pair. */
export function checkFamily(params: { namespace: string; family: string }): { namespace: string; family: string } {
  return { namespace: validateName('namespace', params.namespace), family: validateName('family', params.family) }
}

/** Parameters of `updateUserData`. */
export function checkUserDataUpdate(params: {
  namespace: string
  family: string
  expectedVersion: number
  data: JsonValue
  nowMs: number
}): { namespace: string; family: string; expectedVersion: number; data: JsonValue; nowMs: number } {
  return {
    ...checkFamily(params),
    expectedVersion: count('expectedVersion', params.expectedVersion, 0),
    data: validateJson('data', params.data),
    nowMs: time('nowMs', params.nowMs),
  }
}

/** Optional `list` filter. */
export function checkListFilter(filter: { namespace?: string; family?: string } | undefined): { namespace?: string; family?: string } {
  const result: { namespace?: string; family?: string } = {}
  if (filter?.namespace !== undefined) result.namespace = validateName('filter.namespace', filter.namespace)
  if (filter?.family !== undefined) result.family = validateName('filter.family', filter.family)
  return result
}
