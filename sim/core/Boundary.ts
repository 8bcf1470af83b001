/**
 * Boundary — what happened at the store boundary, in order. The simulator runs one store call
 * at a time, so the order in which calls return is the order in which they committed; checkers
 * read this log, never the system's own beliefs.
 *
 * Two kinds of record: what committed (acquire, append, checkpoint, relocate, userData, and a
 * refused checkpoint that deleted rows anyway), and what was attempted — every physical-queue
 * call a host made (`attempt`, when it made it) and the answer the store gave that host
 * (`answered`, when the host heard it: a crashed host hears nothing). Attempts carry the queue
 * instance that made them, so a write refused by the fence is still seen.
 *
 * Rows: a checkpoint and a relocation carry the rows they actually removed and added, read
 * before and after the call ran (simulation only), not what the request implied.
 */
import type { QueueMetadata, SubqueueAckLevel } from '../../src/persistence/queues/Store.ts'

/** One stored row, as the checkers see it. */
export interface RowRef {
  readonly subqueue: number
  readonly taskId: number
  readonly jobId: string
}

/** The physical-queue calls a host makes that the instance checkers follow. */
export type AttemptCall = 'acquire' | 'append' | 'checkpoint' | 'relocate'

/**
 * Who made a call: a host process (`incarnation` counts its restarts) and the queue instance
 * within it. Instances are derived from the call sequence per host process and queue: an
 * acquire starts a new instance (unless it retries a failed acquire), and a write belongs to
 * the instance whose acquire returned the range it carries.
 */
export interface CallerTag {
  readonly hostId: string
  readonly incarnation: number
  /** `host-2.1 default/family-0/activity/1#3`: host, incarnation, queue, instance number. */
  readonly instance: string
}

/** One store call at the boundary. */
export type BoundaryRecord =
  | { readonly op: 'acquire'; readonly hostId: string; readonly queue: string; readonly metadata: QueueMetadata }
  | { readonly op: 'append'; readonly hostId: string; readonly queue: string; readonly rangeId: number; readonly taskIds: ReadonlyArray<number>; readonly jobIds: ReadonlyArray<string> }
  | {
      readonly op: 'checkpoint'
      readonly hostId: string
      readonly queue: string
      readonly rangeId: number
      readonly ackLevels: ReadonlyArray<SubqueueAckLevel>
      readonly metadata: QueueMetadata
      /** Job ids of the rows this checkpoint deleted (the rows that disappeared while it ran). */
      readonly deletedJobIds: ReadonlyArray<string>
      /** The rows that disappeared while it ran, every subqueue. */
      readonly deletedRows: ReadonlyArray<RowRef>
    }
  | {
      readonly op: 'relocate'
      readonly hostId: string
      readonly from: string
      readonly fromRangeId: number
      readonly to: string
      readonly toRangeId: number
      readonly moved: number
      /** The ids the caller asked to move. */
      readonly taskIds: ReadonlyArray<number>
      /** Rows of `from` with those ids before the call. */
      readonly sourceRows: ReadonlyArray<RowRef>
      /** Rows that disappeared from `from` while it ran. */
      readonly removedRows: ReadonlyArray<RowRef>
      /** Rows that appeared in `to` while it ran. */
      readonly addedRows: ReadonlyArray<RowRef>
    }
  | { readonly op: 'userData'; readonly hostId: string; readonly family: string; readonly expectedVersion: number; readonly outcome: number | 'conflict' }
  | {
      /** A checkpoint refused with OwnershipLost that nonetheless deleted rows (read before and after it ran). */
      readonly op: 'refusedCheckpoint'
      readonly hostId: string
      readonly queue: string
      readonly rangeId: number
      readonly deletedJobIds: ReadonlyArray<string>
    }
  | {
      /** A host made a physical-queue call (before it ran; it may never run). */
      readonly op: 'attempt'
      readonly caller: CallerTag
      readonly call: AttemptCall
      readonly queue: string
      /** The range the call carries (null for an acquire). */
      readonly rangeId: number | null
      /** True for an acquire that retries this instance's failed acquire. */
      readonly retry: boolean
    }
  | {
      /** The answer a host heard to a call it attempted: `ok` or the error's tag. */
      readonly op: 'answered'
      readonly caller: CallerTag
      readonly call: AttemptCall
      readonly queue: string
      readonly rangeId: number | null
      readonly answer: string
      /** For OwnershipLost, the queue the error names (a relocation's may name either side). */
      readonly lostQueue: string | null
      /**
       * True when the instance had already unloaded (a clean drain) when the answer came: it
       * changes nothing. Null when the call was not tied to an actor's step (a retirement's calls,
       * or a world whose hosts report no steps).
       */
      readonly afterUnload: boolean | null
    }

  | {
      /** A queue instance unloaded (its step said so), and why: `drained`, `ownership-lost`, … */
      readonly op: 'unloaded'
      readonly caller: CallerTag
      readonly queue: string
      readonly reason: string
    }

/** Listens to store calls at the boundary. */
export type BoundaryListener = (record: BoundaryRecord) => void
