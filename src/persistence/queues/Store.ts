/**
 * Store — the persistence contract every store implements (DESIGN.md §4, upstream Matching).
 *
 * Three resources: physical queue metadata (`task_queues`), spooled tasks (`tasks`) and
 * queue-family user data (`task_queue_user_data`). Every mutating call on a physical queue
 * carries the caller's range id and is refused with `OwnershipLost` — nothing written — when
 * that range is no longer the queue's. Fencing holds across independent connections: the SQL
 * store locks the metadata row in the same transaction as the write.
 *
 * Subqueues: a physical queue keeps one subqueue per task priority level present (0…9). Task
 * ids come from one consecutive sequence per physical queue; each subqueue has its own ack
 * level (memory-only read levels live in the actor). A task's subqueue is its priority.
 *
 * Errors: operations reject with a `StoreError` (domain/errors.ts) and nothing else for
 * expected failures. `Unavailable.maybeCommitted` is true when a write may have committed.
 *
 * Time: operations that stamp rows take `nowMs` from the caller; no store reads a clock.
 */
import type { JsonValue } from '../../domain/Json.ts'
import type { QueueKey } from '../../domain/QueueKey.ts'
import type { StoredTask, Task } from '../../domain/Task.ts'

/** Which implementation a store is. */
export type StoreKind = 'memory' | 'embedded' | 'postgres'

/** Durable metadata of one physical queue. */
export interface QueueMetadata {
  readonly key: QueueKey
  /** Ownership fence: 1 at creation, +1 on every acquire, never reset. */
  readonly rangeId: number
  /** Highest task id allocated (0 = none yet). */
  readonly lastTaskId: number
  /** Ack level per subqueue (priority level) ever appended to, relocated into or checkpointed; absent = 0 and never used. */
  readonly ackLevels: Readonly<Record<number, number>>
  /** When the row was last acquired or checkpointed, whole epoch ms (a fractional `nowMs` is floored; informational). */
  readonly updatedAtMs: number
}

/** Metadata plus what is stored, for `inspect` and gauges. Stored rows include dispatched rows above ack gaps. */
export interface QueueInspection {
  readonly metadata: QueueMetadata
  /** Rows stored in `tasks` for this queue, all subqueues. */
  readonly storedRows: number
  /** Rows stored per subqueue; subqueues with none are absent. */
  readonly storedRowsBySubqueue: Readonly<Record<number, number>>
}

/** Versioned configuration of a queue family (namespace, family). */
export interface UserData {
  readonly namespace: string
  readonly family: string
  /** 1 after the first write, +1 on every update. */
  readonly version: number
  readonly data: JsonValue
}

/** One subqueue's new ack level, for `checkpoint`. */
export interface SubqueueAckLevel {
  readonly subqueue: number
  readonly ackLevel: number
}

/** What `append` allocated: ids `firstTaskId…lastTaskId`, in the order the tasks were given. */
export interface AppendResult {
  readonly firstTaskId: number
  readonly lastTaskId: number
}

/** What `checkpoint` left behind. */
export interface CheckpointResult {
  readonly metadata: QueueMetadata
  /** Task rows deleted by this checkpoint. */
  readonly deletedRows: number
}

/** One row moved by `relocate`. */
export interface RelocatedTask {
  readonly fromTaskId: number
  readonly toTaskId: number
}

/** The Store contract. All three stores (memory, embedded, postgres) pass one conformance suite. */
export interface Store {
  /** Which implementation this is. */
  readonly kind: StoreKind

  /**
   * Takes ownership of a physical queue in one transaction: creates it at range 1, ack 0,
   * last id 0, or increments its range. Returns the metadata under the new range.
   */
  acquire(params: { readonly key: QueueKey; readonly nowMs: number }): Promise<QueueMetadata>

  /**
   * Appends tasks in one transaction: checks the range (else `OwnershipLost`, nothing
   * written), allocates consecutive ids from `lastTaskId`, updates it, inserts the rows.
   * Each task goes to the subqueue of its priority. A subqueue appended to for the first time
   * is registered in the metadata's `ackLevels` at 0 (so a new owner knows which subqueues to
   * read after a load without scanning all ten). An empty batch is `InvalidInput`.
   */
  append(params: {
    readonly key: QueueKey
    readonly rangeId: number
    readonly tasks: ReadonlyArray<Task>
    readonly nowMs: number
  }): Promise<AppendResult>

  /**
   * Reads stored tasks of one subqueue with id > `afterTaskId`, in id order, at most `limit`
   * (1…readPageSizeMax). Unfenced: reading never changes anything. A missing queue reads empty.
   */
  read(params: {
    readonly key: QueueKey
    readonly subqueue: number
    readonly afterTaskId: number
    readonly limit: number
  }): Promise<ReadonlyArray<StoredTask>>

  /**
   * Saves ack levels in one transaction: checks the range, raises each listed subqueue's ack
   * level (never lowers it: a lower value leaves it as is), and deletes that subqueue's rows at
   * or below its ack level. An ack level above `lastTaskId` is `InvalidInput`.
   */
  checkpoint(params: {
    readonly key: QueueKey
    readonly rangeId: number
    readonly ackLevels: ReadonlyArray<SubqueueAckLevel>
    readonly nowMs: number
  }): Promise<CheckpointResult>

  /**
   * Moves the listed rows from one physical queue to another in one transaction, both fenced:
   * deletes them from `from` and inserts them into `to` with fresh consecutive ids (in source
   * id order), keeping each row's subqueue (registering it at `to` as an append would). Ids not
   * stored at `from` are skipped. When both ranges are stale, `OwnershipLost` names `from`. At most
   * `relocateBatchSizeMax` ids; `from` and `to` must differ.
   */
  relocate(params: {
    readonly from: QueueKey
    readonly fromRangeId: number
    readonly to: QueueKey
    readonly toRangeId: number
    readonly taskIds: ReadonlyArray<number>
    readonly nowMs: number
  }): Promise<ReadonlyArray<RelocatedTask>>

  /** Metadata and stored-row counts of one physical queue, or null if it was never acquired. */
  inspect(key: QueueKey): Promise<QueueInspection | null>

  /** Every physical queue (optionally of one namespace / family), ordered by canonical key compared as bytes (it is ASCII). */
  list(filter?: { readonly namespace?: string; readonly family?: string }): Promise<ReadonlyArray<QueueInspection>>

  /** A family's user data, or null if never written. */
  getUserData(params: { readonly namespace: string; readonly family: string }): Promise<UserData | null>

  /**
   * Writes a family's user data if its version is `expectedVersion` (0 = absent), making it
   * `expectedVersion + 1`; otherwise `VersionConflict` and nothing changes.
   */
  updateUserData(params: {
    readonly namespace: string
    readonly family: string
    readonly expectedVersion: number
    readonly data: JsonValue
    readonly nowMs: number
  }): Promise<UserData>

  /** Releases connections this store opened (a caller's own Pool is left open). */
  close(): Promise<void>
}
