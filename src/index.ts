/**
 * Matchbox — the public surface. A curated list of exports and nothing else: what is not
 * exported here is internal and may change without notice.
 */
export { ManualClock, RealClock, type Clock } from './kernel/Clock.ts'
export { Random } from './kernel/Random.ts'
export {
  InvalidInput,
  isMatchboxError,
  Overloaded,
  OwnershipLost,
  ShuttingDown,
  SnapshotInvalid,
  Unavailable,
  VersionConflict,
  type MatchboxError,
  type StoreError,
} from './domain/errors.ts'
export { decodeQueueKey, encodeQueueKey, makeQueueKey, type PartitionKey, type QueueKey, type TaskType } from './domain/QueueKey.ts'
export { makeTask, type StoredTask, type Task, type TaskInput, type VersionDirective } from './domain/Task.ts'
export type { JsonValue } from './domain/Json.ts'
export type { QueueInspection, QueueMetadata, Store, StoreKind, UserData } from './persistence/Store.ts'
