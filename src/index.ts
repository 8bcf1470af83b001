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
export { InvalidSpec } from './domain/errors.ts'
// Jobs (seed 004 on the History role): the embedding API of issue #5.
export { open, type OpenOptions, type StoreOption } from './jobs/open.ts'
export type { Matchbox } from './jobs/Matchbox.ts'
export type { JobQueue } from './jobs/JobQueue.ts'
export type { Job, JobHandle } from './jobs/JobHandle.ts'
export type { EnqueueOptions, QueueOptions } from './jobs/QueueOptions.ts'
export type { WorkOptions } from './jobs/Worker.ts'
export type { JobState } from './persistence/jobs/JobStore.ts'
