/**
 * PersistedQueue — what the store holds for one physical queue, read for people: metadata
 * (range id, ack level per subqueue, last task id), stored-row counts, and a bounded list of
 * stored tasks in task-id order. Shared by `matchbox lifecycle` (persistedQueue) and
 * `matchbox inspect`.
 *
 * Invariants: reads are paginated (at most `readPageSizeMax` rows per call) and bounded by
 * `tasksMax` per subqueue, so a queue with a million rows costs a few pages; the row counts
 * come from the store's own inspection, so `tasksOmitted` is what was not listed.
 *
 * Does not: know anything about a loaded owner. Stored rows include dispatched rows kept above
 * an ack gap; only the owner's memory (lifecycle's loadedQueueProgress) knows what is outstanding.
 */
import { encodeQueueKey, type QueueKey } from '../domain/QueueKey.ts'
import type { StoredTask, VersionDirective } from '../domain/Task.ts'
import { readPageSizeMax } from '../kernel/Limits.ts'
import type { QueueInspection, Store } from '../persistence/queues/Store.ts'

/** One stored task row, flattened for printing. */
export interface PersistedTaskRow {
  readonly taskId: number
  readonly subqueue: number
  readonly jobId: string
  readonly runId: string | null
  readonly kind: string
  readonly versionDirective: VersionDirective
  readonly priority: number
}

/** One physical queue as stored. */
export interface PersistedQueue {
  /** Canonical key encoding, `namespace/family/type/partition[@version]`. */
  readonly queue: string
  readonly key: QueueKey
  readonly rangeId: number
  /** Ack level per registered subqueue. */
  readonly ackLevels: Readonly<Record<number, number>>
  readonly lastTaskId: number
  /** Rows in the tasks table for this queue (includes dispatched rows above ack gaps). */
  readonly storedRows: number
  readonly storedRowsBySubqueue: Readonly<Record<number, number>>
  /** Up to `tasksMax` stored rows, in task-id order. */
  readonly tasks: ReadonlyArray<PersistedTaskRow>
  /** Stored rows not listed in `tasks`. */
  readonly tasksOmitted: number
}

/** Reads up to `limit` rows of one subqueue, in id order, one page at a time. */
async function readSubqueue(store: Store, key: QueueKey, subqueue: number, limit: number): Promise<StoredTask[]> {
  const rows: StoredTask[] = []
  let afterTaskId = 0
  while (rows.length < limit) {
    const pageSize = Math.min(readPageSizeMax, limit - rows.length)
    const page = await store.read({ key, subqueue, afterTaskId, limit: pageSize })
    rows.push(...page)
    const last = page.at(-1)
    if (last === undefined || page.length < pageSize) break
    afterTaskId = last.taskId
  }
  return rows
}

/** Describes a version directive in a few words: `unversioned`, `auto-upgrade`, `pinned v2`. */
export function describeDirective(directive: VersionDirective): string {
  return directive.kind === 'pinned' ? `pinned ${directive.version}` : directive.kind
}

/** The stored state of the queue `inspection` describes, with at most `tasksMax` tasks listed. */
export async function readPersistedQueue(store: Store, inspection: QueueInspection, tasksMax: number): Promise<PersistedQueue> {
  const { metadata } = inspection
  const subqueues = Object.keys(inspection.storedRowsBySubqueue).map(Number)
  const rows: StoredTask[] = []
  if (tasksMax > 0) for (const subqueue of subqueues) rows.push(...(await readSubqueue(store, metadata.key, subqueue, tasksMax)))
  const tasks = rows
    .sort((a, b) => a.taskId - b.taskId)
    .slice(0, tasksMax)
    .map(({ taskId, task }) => ({
      taskId,
      subqueue: task.priority,
      jobId: task.jobId,
      runId: task.runId,
      kind: task.kind,
      versionDirective: task.versionDirective,
      priority: task.priority,
    }))
  return {
    queue: encodeQueueKey(metadata.key),
    key: metadata.key,
    rangeId: metadata.rangeId,
    ackLevels: metadata.ackLevels,
    lastTaskId: metadata.lastTaskId,
    storedRows: inspection.storedRows,
    storedRowsBySubqueue: inspection.storedRowsBySubqueue,
    tasks,
    // A row may be added or deleted between the count and the reads on a live database.
    tasksOmitted: Math.max(0, inspection.storedRows - tasks.length),
  }
}

/** A per-subqueue record as `{0: 2, 3: 5}`, for one-line summaries. */
export function formatBySubqueue(record: Readonly<Record<number, number>>): string {
  return `{${Object.entries(record)
    .map(([subqueue, value]) => `${subqueue}: ${value}`)
    .join(', ')}}`
}
