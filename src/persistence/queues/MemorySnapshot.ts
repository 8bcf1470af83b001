/**
 * MemorySnapshot — the memory store's export format (`matchbox.memory`, version 1) and its
 * validation.
 *
 * A snapshot is plain JSON data in a deterministic order (queues by canonical key, tasks by
 * queue then id, user data by namespace then family), so two stores in the same state export
 * byte-identical snapshots and a simulator trace can embed one.
 *
 * Validation checks everything before the store changes anything: the envelope (format,
 * version, exactly the known fields), every queue (canonical key encoding, unique, rangeId ≥ 1,
 * 0 ≤ ack level ≤ lastTaskId per subqueue), every task (a known queue, a valid task, unique id,
 * a registered subqueue, ack level < id ≤ lastTaskId) and every user-data entry (valid names, unique,
 * version ≥ 1, plain JSON). The first problem found is reported as `SnapshotInvalid` naming its
 * path, e.g. `queues[2].rangeId: must be an integer ≥ 1`.
 *
 * Does not: upgrade older formats or read newer ones — both are refused; a format change is a
 * new version number and a reader for it.
 */
import { InvalidInput, SnapshotInvalid } from '../../domain/errors.ts'
import { type JsonValue, validateJson } from '../../domain/Json.ts'
import { decodeQueueKey, type QueueKey, validateName } from '../../domain/QueueKey.ts'
import { makeTask, type Task } from '../../domain/Task.ts'
import { priorityMax } from '../../kernel/Limits.ts'

/** The format tag of a memory snapshot. */
export const memorySnapshotFormat = 'matchbox.memory'

/** The snapshot version this code writes and reads. */
export const memorySnapshotVersion = 1

/** One physical queue's metadata. `ackLevels` lists the subqueues ever used (as `QueueMetadata` does), keyed by subqueue. */
export interface MemorySnapshotQueue {
  /** Canonical encoding (`encodeQueueKey`). */
  readonly key: string
  readonly rangeId: number
  readonly lastTaskId: number
  readonly ackLevels: Readonly<Record<string, number>>
  readonly updatedAtMs: number
}

/** One stored task row; its subqueue is its priority. */
export interface MemorySnapshotTask {
  /** Canonical encoding of the queue that stores it. */
  readonly queue: string
  readonly taskId: number
  readonly task: Task
}

/** One queue family's user data. */
export interface MemorySnapshotUserData {
  readonly namespace: string
  readonly family: string
  readonly version: number
  readonly data: JsonValue
}

/** Everything a memory store holds, as plain JSON data. */
export interface MemorySnapshot {
  readonly format: typeof memorySnapshotFormat
  readonly version: typeof memorySnapshotVersion
  readonly queues: ReadonlyArray<MemorySnapshotQueue>
  readonly tasks: ReadonlyArray<MemorySnapshotTask>
  readonly userData: ReadonlyArray<MemorySnapshotUserData>
}

/** A validated queue, decoded and ready to load. `ackLevels[s]` is subqueue s's ack level, undefined if never used. */
export interface ValidSnapshotQueue {
  readonly key: QueueKey
  readonly encoded: string
  readonly rangeId: number
  readonly lastTaskId: number
  readonly ackLevels: ReadonlyArray<number | undefined>
  readonly updatedAtMs: number
}

/** A validated snapshot: fresh values (sharing nothing with the input), tasks sorted by queue then id. */
export interface ValidSnapshot {
  readonly queues: ReadonlyArray<ValidSnapshotQueue>
  readonly tasks: ReadonlyArray<MemorySnapshotTask>
  readonly userData: ReadonlyArray<MemorySnapshotUserData>
}

/** Orders strings by UTF-16 code units; canonical keys are ASCII, so this is byte order too. */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

function refuse(path: string, reason: string): never {
  throw new SnapshotInvalid({ problem: `${path}: ${reason}` })
}

// Domain validators speak InvalidInput with a field path; a snapshot speaks SnapshotInvalid.
function translated<T>(run: () => T): T {
  try {
    return run()
  } catch (error) {
    if (error instanceof InvalidInput) refuse(error.field, error.reason)
    throw error
  }
}

// A field as a path segment: `.name`, or `["odd key"]` unless it is all letters, digits, _ and $, so a key
// holding `:`, spaces or control characters cannot blur where the path ends.
function segmentOf(field: string): string {
  return /^[\w$]+$/.test(field) ? `.${field}` : `[${JSON.stringify(field)}]`
}

function record(path: string, value: unknown, fields: ReadonlyArray<string>): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) refuse(path, 'must be an object')
  const object = value as Record<string, unknown>
  for (const field of Object.keys(object)) if (!fields.includes(field)) refuse(`${path}${segmentOf(field)}`, 'is not a known field')
  for (const field of fields) if (!(field in object)) refuse(`${path}.${field}`, 'is missing')
  return object
}

function array(path: string, value: unknown): ReadonlyArray<unknown> {
  if (!Array.isArray(value)) refuse(path, 'must be an array')
  return value
}

function integer(path: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) refuse(path, `must be an integer ≥ ${min}`)
  return value
}

function parse(json: unknown): unknown {
  if (typeof json !== 'string') return json
  try {
    return JSON.parse(json)
  } catch (error) {
    return refuse('(snapshot)', `is not valid JSON (${error instanceof Error ? error.message : String(error)})`)
  }
}

function validateQueue(path: string, value: unknown): ValidSnapshotQueue {
  const entry = record(path, value, ['key', 'rangeId', 'lastTaskId', 'ackLevels', 'updatedAtMs'])
  if (typeof entry.key !== 'string') refuse(`${path}.key`, 'must be a canonical queue key string')
  const encoded = entry.key
  const key = translated(() => decodeQueueKey(encoded, `${path}.key`))
  const rangeId = integer(`${path}.rangeId`, entry.rangeId, 1)
  const lastTaskId = integer(`${path}.lastTaskId`, entry.lastTaskId, 0)
  const ackLevels = Array.from<number | undefined>({ length: priorityMax + 1 })
  const levels = entry.ackLevels
  if (typeof levels !== 'object' || levels === null || Array.isArray(levels)) refuse(`${path}.ackLevels`, 'must be an object keyed by subqueue')
  for (const [subqueue, level] of Object.entries(levels)) {
    const levelPath = `${path}.ackLevels${segmentOf(subqueue)}`
    if (!/^(0|[1-9][0-9]*)$/.test(subqueue) || Number(subqueue) > priorityMax) refuse(levelPath, `subqueue must be an integer in 0…${priorityMax}`)
    ackLevels[Number(subqueue)] = integer(levelPath, level, 0)
    if ((ackLevels[Number(subqueue)] as number) > lastTaskId) refuse(levelPath, `must be at most lastTaskId (${lastTaskId})`)
  }
  return { key, encoded, rangeId, lastTaskId, ackLevels, updatedAtMs: integer(`${path}.updatedAtMs`, entry.updatedAtMs, 0) }
}

function validateTask(path: string, value: unknown, queues: ReadonlyMap<string, ValidSnapshotQueue>, seen: Set<string>): MemorySnapshotTask {
  const entry = record(path, value, ['queue', 'taskId', 'task'])
  const queue = typeof entry.queue === 'string' ? queues.get(entry.queue) : undefined
  if (queue === undefined) refuse(`${path}.queue`, 'must be the key of a queue in `queues`')
  const taskId = integer(`${path}.taskId`, entry.taskId, 1)
  const fields = ['jobId', 'runId', 'kind', 'versionDirective', 'priority', 'createdAtMs', 'expiresAtMs']
  const raw = record(`${path}.task`, entry.task, fields)
  const directive = raw.versionDirective
  const directiveFields = (directive as { kind?: unknown } | null)?.kind === 'pinned' ? ['kind', 'version'] : ['kind']
  record(`${path}.task.versionDirective`, directive, directiveFields)
  const task = translated(() => makeTask(raw as never, `${path}.task`))
  if (taskId > queue.lastTaskId) refuse(`${path}.taskId`, `must be at most the queue's lastTaskId (${queue.lastTaskId})`)
  const ackLevel = queue.ackLevels[task.priority]
  if (ackLevel === undefined) refuse(`${path}.task.priority`, `subqueue ${task.priority} is not in the queue's ackLevels (a stored row's subqueue is always registered)`)
  if (taskId <= ackLevel) refuse(`${path}.taskId`, `must be above the ack level of subqueue ${task.priority} (${ackLevel})`)
  const identity = `${queue.encoded}#${taskId}`
  if (seen.has(identity)) refuse(`${path}.taskId`, `duplicates task ${taskId} of queue ${queue.encoded}`)
  seen.add(identity)
  return { queue: queue.encoded, taskId, task }
}

function validateUserData(path: string, value: unknown, seen: Set<string>): MemorySnapshotUserData {
  const entry = record(path, value, ['namespace', 'family', 'version', 'data'])
  const namespace = translated(() => validateName(`${path}.namespace`, entry.namespace))
  const family = translated(() => validateName(`${path}.family`, entry.family))
  const identity = JSON.stringify([namespace, family])
  if (seen.has(identity)) refuse(path, `duplicates the user data of ${namespace}/${family}`)
  seen.add(identity)
  const version = integer(`${path}.version`, entry.version, 1)
  const data = translated(() => validateJson(`${path}.data`, entry.data))
  return { namespace, family, version, data: structuredClone(data) }
}

/**
 * Validates a snapshot (an object, or its JSON text) completely and returns it decoded;
 * throws `SnapshotInvalid` naming the first problem's path. Pure: changes nothing.
 */
export function validateMemorySnapshot(json: unknown): ValidSnapshot {
  const root = record('(snapshot)', parse(json), ['format', 'version', 'queues', 'tasks', 'userData'])
  if (root.format !== memorySnapshotFormat) refuse('format', `must be "${memorySnapshotFormat}", got ${JSON.stringify(root.format)}`)
  if (root.version !== memorySnapshotVersion) {
    refuse('version', `must be ${memorySnapshotVersion} (this store reads only version ${memorySnapshotVersion}), got ${JSON.stringify(root.version)}`)
  }
  const queues = new Map<string, ValidSnapshotQueue>()
  array('queues', root.queues).forEach((value, index) => {
    const queue = validateQueue(`queues[${index}]`, value)
    if (queues.has(queue.encoded)) refuse(`queues[${index}].key`, `duplicates queue ${queue.encoded}`)
    queues.set(queue.encoded, queue)
  })
  const seenTasks = new Set<string>()
  const tasks = array('tasks', root.tasks).map((value, index) => validateTask(`tasks[${index}]`, value, queues, seenTasks))
  const seenUserData = new Set<string>()
  const userData = array('userData', root.userData).map((value, index) => validateUserData(`userData[${index}]`, value, seenUserData))
  return {
    queues: [...queues.values()].sort((a, b) => compareCodeUnits(a.encoded, b.encoded)),
    tasks: tasks.sort((a, b) => compareCodeUnits(a.queue, b.queue) || a.taskId - b.taskId),
    userData: userData.sort((a, b) => compareCodeUnits(a.namespace, b.namespace) || compareCodeUnits(a.family, b.family)),
  }
}
