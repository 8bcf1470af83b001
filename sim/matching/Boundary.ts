/**
 * Boundary — what committed at the store boundary, in commit order. The simulator runs one
 * store call at a time, so the order in which calls return is the order in which they
 * committed; checkers read this log, never the system's own beliefs.
 */
import type { QueueMetadata, SubqueueAckLevel } from '../../src/persistence/queues/Store.ts'

/** One committed store call. */
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
      /** Job ids of the rows this checkpoint deleted (read just before it ran). */
      readonly deletedJobIds: ReadonlyArray<string>
    }
  | { readonly op: 'relocate'; readonly hostId: string; readonly from: string; readonly fromRangeId: number; readonly to: string; readonly toRangeId: number; readonly moved: number }
  | { readonly op: 'userData'; readonly hostId: string; readonly family: string; readonly expectedVersion: number; readonly outcome: number | 'conflict' }
  | {
      /** A checkpoint refused with OwnershipLost that nonetheless deleted rows (read before and after it ran). */
      readonly op: 'refusedCheckpoint'
      readonly hostId: string
      readonly queue: string
      readonly rangeId: number
      readonly deletedJobIds: ReadonlyArray<string>
    }

/** Listens to committed store calls. */
export type BoundaryListener = (record: BoundaryRecord) => void
