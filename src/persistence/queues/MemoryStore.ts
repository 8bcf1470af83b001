/**
 * MemoryStore — the Store contract (Store.ts) held in process memory, for tests and the
 * simulator's fast mode, with snapshot export/import (MemorySnapshot.ts).
 *
 * Invariants, the same as the SQL store's:
 * - every operation validates all of its input (StoreInput.ts) and checks every fence before it
 *   changes anything, and nothing after the first change can fail, so each call is atomic;
 * - the range fence is equality: a write with any range other than the queue's current one is
 *   `OwnershipLost`, with `currentRangeId: null` when the queue was never acquired;
 * - task ids come from one consecutive sequence per physical queue; every stored id of a
 *   subqueue is above that subqueue's ack level and at most `lastTaskId`;
 * - a subqueue is registered in `ackLevels` (at 0) the first time it is appended to, relocated
 *   into or checkpointed, and stays registered, so a new owner knows which subqueues to read;
 * - values crossing the boundary are copies in both directions: callers can neither change
 *   what is stored through an argument they keep nor through a result they are given.
 *
 * Costs: append O(batch), read O(log n + page), checkpoint O(log n) per subqueue plus amortized
 * compaction, inspect O(subqueues); list and relocate are O(n) and are not on the hot path.
 *
 * `updatedAtMs` is stored in whole milliseconds (floored), as the SQL store's bigint column is.
 *
 * Does not: read a clock (times come from callers), share state between instances, or persist
 * anything on its own — `exportSnapshot` is the way out.
 */
import { InvalidInput, OwnershipLost, refusal, Unavailable, VersionConflict } from '../../domain/errors.ts'
import type { JsonValue } from '../../domain/Json.ts'
import { encodeQueueKey, makeQueueKey, type QueueKey } from '../../domain/QueueKey.ts'
import type { StoredTask, Task } from '../../domain/Task.ts'
import { priorityMax } from '../../kernel/Limits.ts'
import { compareCodeUnits, type MemorySnapshot, type MemorySnapshotTask, memorySnapshotFormat, memorySnapshotVersion, type ValidSnapshot, validateMemorySnapshot } from './MemorySnapshot.ts'
import { copyTask, MemorySubqueue } from './MemorySubqueue.ts'
import type { AppendResult, CheckpointResult, QueueInspection, QueueMetadata, RelocatedTask, Store, UserData } from './Store.ts'
import { checkAcquire, checkAppend, checkCheckpoint, checkFamily, checkListFilter, checkRead, checkRelocate, checkUserDataUpdate } from './StoreInput.ts'

/** A Store in process memory that can export and import its whole state. */
export interface MemoryStore extends Store {
  readonly kind: 'memory'
  /** The whole state as plain JSON data in deterministic order (see MemorySnapshot.ts). */
  exportSnapshot(): MemorySnapshot
  /**
   * Replaces the whole state with a snapshot (an object or its JSON text). Validates everything
   * first: a snapshot with any problem is refused with `SnapshotInvalid` and the store is unchanged.
   */
  importSnapshot(json: unknown): void
  /**
   * The current range id of a physical queue, or null when it was never acquired: read at once,
   * with no await, so a caller checking a fence and writing in the same synchronous step sees no
   * acquire in between (the memory job store's claim fence, MemoryClaimFence.ts).
   */
  rangeIdOf(key: QueueKey): number | null
}

interface QueueState {
  readonly key: QueueKey
  readonly encoded: string
  rangeId: number
  lastTaskId: number
  /** Index = subqueue (priority); undefined until the subqueue is first appended to or checkpointed. */
  readonly ackLevels: Array<number | undefined>
  updatedAtMs: number
  /** Index = subqueue; created on first use. */
  readonly subqueues: Array<MemorySubqueue | undefined>
}

interface UserDataState {
  readonly namespace: string
  readonly family: string
  readonly version: number
  readonly data: JsonValue
}

const subqueueCount = priorityMax + 1

function makeQueueState(key: QueueKey, encoded: string, nowMs: number): QueueState {
  return {
    key,
    encoded,
    rangeId: 1,
    lastTaskId: 0,
    ackLevels: Array.from<number | undefined>({ length: subqueueCount }),
    updatedAtMs: nowMs,
    subqueues: Array.from<MemorySubqueue | undefined>({ length: subqueueCount }),
  }
}

function metadataOf(queue: QueueState): QueueMetadata {
  const ackLevels: Record<number, number> = {}
  queue.ackLevels.forEach((level, subqueue) => {
    if (level !== undefined) ackLevels[subqueue] = level
  })
  return { key: { ...queue.key }, rangeId: queue.rangeId, lastTaskId: queue.lastTaskId, ackLevels, updatedAtMs: queue.updatedAtMs }
}

function inspectionOf(queue: QueueState): QueueInspection {
  let storedRows = 0
  const storedRowsBySubqueue: Record<number, number> = {}
  queue.subqueues.forEach((rows, subqueue) => {
    if (rows === undefined || rows.size === 0) return
    storedRows += rows.size
    storedRowsBySubqueue[subqueue] = rows.size
  })
  return { metadata: metadataOf(queue), storedRows, storedRowsBySubqueue }
}

function subqueueOf(queue: QueueState, subqueue: number): MemorySubqueue {
  let rows = queue.subqueues[subqueue]
  if (rows === undefined) {
    rows = new MemorySubqueue()
    queue.subqueues[subqueue] = rows
  }
  return rows
}

function userDataKey(namespace: string, family: string): string {
  return `${encodeURIComponent(namespace)}/${encodeURIComponent(family)}`
}

function copyUserData(entry: UserDataState): UserData {
  return { namespace: entry.namespace, family: entry.family, version: entry.version, data: structuredClone(entry.data) }
}

// Creates `key`'s queue at range 1, or moves an existing one to its next range.
function acquireQueue(queues: Map<string, QueueState>, key: QueueKey, nowMs: number): QueueMetadata {
  const encoded = encodeQueueKey(key)
  const existing = queues.get(encoded)
  if (existing === undefined) {
    const queue = makeQueueState(key, encoded, Math.floor(nowMs))
    queues.set(encoded, queue)
    return metadataOf(queue)
  }
  existing.rangeId += 1
  existing.updatedAtMs = Math.floor(nowMs)
  return metadataOf(existing)
}

// Saves `ackLevels` on a fenced queue, deleting the rows they cover (none may pass its last id).
function checkpointQueue(queue: QueueState, ackLevels: ReadonlyArray<{ readonly subqueue: number; readonly ackLevel: number }>, nowMs: number): CheckpointResult {
  ackLevels.forEach(({ ackLevel }, index) => {
    if (ackLevel > queue.lastTaskId) {
      throw new InvalidInput({ field: `ackLevels[${index}].ackLevel`, reason: `must be at most the queue's lastTaskId (${queue.lastTaskId})` })
    }
  })
  let deletedRows = 0
  for (const { subqueue, ackLevel } of ackLevels) {
    const level = Math.max(queue.ackLevels[subqueue] ?? 0, ackLevel)
    queue.ackLevels[subqueue] = level
    deletedRows += queue.subqueues[subqueue]?.deleteThrough(level) ?? 0
  }
  queue.updatedAtMs = Math.floor(nowMs)
  return { metadata: metadataOf(queue), deletedRows }
}

// Moves the stored rows of `taskIds` from `source` to `destination` under fresh ids, in the order given.
function relocateRows(source: QueueState, destination: QueueState, taskIds: ReadonlyArray<number>): ReadonlyArray<RelocatedTask> {
  // Find every stored id first (read-only), then move: nothing can fail once moving starts.
  const found: Array<{ taskId: number; subqueue: number }> = []
  for (const taskId of taskIds) {
    const subqueue = source.subqueues.findIndex((rows) => rows?.has(taskId) === true)
    if (subqueue >= 0) found.push({ taskId, subqueue })
  }
  const taken = new Map<number, Task>()
  for (let subqueue = 0; subqueue < subqueueCount; subqueue++) {
    const ids = found.filter((row) => row.subqueue === subqueue).map((row) => row.taskId)
    const tasks = ids.length === 0 ? [] : (source.subqueues[subqueue] as MemorySubqueue).take(ids)
    ids.forEach((id, index) => taken.set(id, tasks[index] as Task))
  }
  return found.map(({ taskId, subqueue }) => {
    destination.lastTaskId += 1
    destination.ackLevels[subqueue] ??= 0
    subqueueOf(destination, subqueue).append(destination.lastTaskId, taken.get(taskId) as Task)
    return { fromTaskId: taskId, toTaskId: destination.lastTaskId }
  })
}

// The store's state as a snapshot: queues by name, their rows by id, user data by family.
function snapshotOf(queues: ReadonlyMap<string, QueueState>, userData: ReadonlyMap<string, UserDataState>): MemorySnapshot {
  const ordered = [...queues.values()].sort((a, b) => compareCodeUnits(a.encoded, b.encoded))
  const tasks: MemorySnapshotTask[] = []
  for (const queue of ordered) {
    const rows: MemorySnapshotTask[] = []
    for (const subqueue of queue.subqueues) {
      if (subqueue === undefined) continue
      for (const [taskId, task] of subqueue.rows()) rows.push({ queue: queue.encoded, taskId, task: copyTask(task) })
    }
    tasks.push(...rows.sort((a, b) => a.taskId - b.taskId))
  }
  return {
    format: memorySnapshotFormat,
    version: memorySnapshotVersion,
    queues: ordered.map((queue) => {
      const metadata = metadataOf(queue)
      return { key: queue.encoded, rangeId: metadata.rangeId, lastTaskId: metadata.lastTaskId, ackLevels: metadata.ackLevels, updatedAtMs: metadata.updatedAtMs }
    }),
    tasks,
    userData: [...userData.values()]
      .sort((a, b) => compareCodeUnits(a.namespace, b.namespace) || compareCodeUnits(a.family, b.family))
      .map(copyUserData),
  }
}

// The queues and user data of a validated snapshot, fresh (the store swaps them in whole).
function loadSnapshot(snapshot: ValidSnapshot): { queues: Map<string, QueueState>; userData: Map<string, UserDataState> } {
  const nextQueues = new Map<string, QueueState>()
  for (const entry of snapshot.queues) {
    const queue = makeQueueState(entry.key, entry.encoded, entry.updatedAtMs)
    queue.rangeId = entry.rangeId
    queue.lastTaskId = entry.lastTaskId
    entry.ackLevels.forEach((level, subqueue) => (queue.ackLevels[subqueue] = level))
    nextQueues.set(entry.encoded, queue)
  }
  // Tasks arrive sorted by queue then id, so each subqueue receives ascending ids.
  for (const row of snapshot.tasks) subqueueOf(nextQueues.get(row.queue) as QueueState, row.task.priority).append(row.taskId, row.task)
  const nextUserData = new Map<string, UserDataState>()
  for (const entry of snapshot.userData) nextUserData.set(userDataKey(entry.namespace, entry.family), entry)
  return { queues: nextQueues, userData: nextUserData }
}

/** A new, empty memory store. Instances share nothing. */
export function makeMemoryStore(): MemoryStore {
  let queues = new Map<string, QueueState>()
  let userData = new Map<string, UserDataState>()
  let closed = false

  function open(operation: string): void {
    if (closed) throw new Unavailable({ operation, detail: 'the memory store is closed', maybeCommitted: false })
  }

  // The queue if `rangeId` is its current range; otherwise OwnershipLost, before any change.
  function fenced(key: QueueKey, rangeId: number): QueueState {
    const encoded = encodeQueueKey(key)
    const queue = queues.get(encoded)
    if (queue === undefined || queue.rangeId !== rangeId) {
      // An answer to a stale owner, not a failure of the store: no stack trace to capture.
      throw refusal(() => new OwnershipLost({ queue: encoded, rangeId, currentRangeId: queue?.rangeId ?? null }))
    }
    return queue
  }

  return {
    kind: 'memory',

    async acquire(params): Promise<QueueMetadata> {
      open('acquire')
      const { key, nowMs } = checkAcquire(params)
      return acquireQueue(queues, key, nowMs)
    },

    async append(params): Promise<AppendResult> {
      open('append')
      const { key, rangeId, tasks } = checkAppend(params)
      const queue = fenced(key, rangeId)
      const firstTaskId = queue.lastTaskId + 1
      // checkAppend's tasks are fresh copies made by makeTask, so they can be stored as they are.
      tasks.forEach((task, index) => {
        queue.ackLevels[task.priority] ??= 0
        subqueueOf(queue, task.priority).append(firstTaskId + index, task)
      })
      queue.lastTaskId += tasks.length
      return { firstTaskId, lastTaskId: queue.lastTaskId }
    },

    async read(params): Promise<ReadonlyArray<StoredTask>> {
      open('read')
      const { key, subqueue, afterTaskId, limit } = checkRead(params)
      const rows = queues.get(encodeQueueKey(key))?.subqueues[subqueue]
      return rows === undefined ? [] : rows.readAfter(afterTaskId, limit)
    },

    async checkpoint(params): Promise<CheckpointResult> {
      open('checkpoint')
      const { key, rangeId, ackLevels, nowMs } = checkCheckpoint(params)
      return checkpointQueue(fenced(key, rangeId), ackLevels, nowMs)
    },

    async relocate(params): Promise<ReadonlyArray<RelocatedTask>> {
      open('relocate')
      const { from, fromRangeId, to, toRangeId, taskIds } = checkRelocate(params)
      const source = fenced(from, fromRangeId)
      return relocateRows(source, fenced(to, toRangeId), taskIds)
    },

    async inspect(key): Promise<QueueInspection | null> {
      open('inspect')
      const queue = queues.get(encodeQueueKey(makeQueueKey(key)))
      return queue === undefined ? null : inspectionOf(queue)
    },

    async list(filter): Promise<ReadonlyArray<QueueInspection>> {
      open('list')
      const { namespace, family } = checkListFilter(filter)
      return [...queues.values()]
        .filter((queue) => (namespace === undefined || queue.key.namespace === namespace) && (family === undefined || queue.key.family === family))
        .sort((a, b) => compareCodeUnits(a.encoded, b.encoded))
        .map(inspectionOf)
    },

    async getUserData(params): Promise<UserData | null> {
      open('getUserData')
      const { namespace, family } = checkFamily(params)
      const entry = userData.get(userDataKey(namespace, family))
      return entry === undefined ? null : copyUserData(entry)
    },

    async updateUserData(params): Promise<UserData> {
      open('updateUserData')
      const { namespace, family, expectedVersion, data } = checkUserDataUpdate(params)
      const id = userDataKey(namespace, family)
      const currentVersion = userData.get(id)?.version ?? 0
      if (currentVersion !== expectedVersion) {
        throw refusal(() => new VersionConflict({ subject: `userData ${namespace}/${family}`, expectedVersion, currentVersion }))
      }
      const entry: UserDataState = { namespace, family, version: currentVersion + 1, data: structuredClone(data) }
      userData.set(id, entry)
      return copyUserData(entry)
    },

    async close(): Promise<void> {
      closed = true
    },

    exportSnapshot(): MemorySnapshot {
      return snapshotOf(queues, userData)
    },

    importSnapshot(json: unknown): void {
      const loaded = loadSnapshot(validateMemorySnapshot(json))
      queues = loaded.queues
      userData = loaded.userData
    },

    rangeIdOf(key: QueueKey): number | null {
      return queues.get(encodeQueueKey(key))?.rangeId ?? null
    },
  }
}
