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
export type { QueueInspection, QueueMetadata, Store, StoreKind, UserData } from './persistence/queues/Store.ts'
export { InvalidSpec } from './domain/errors.ts'
// Jobs: the embedding API (queues, workers, schedules, events, admin).
export { open, type OpenOptions, type StoreOption } from './jobs/open.ts'
export type { Matchbox } from './jobs/Matchbox.ts'
export type { EnqueueManyJob, JobQueue, PayloadInput } from './jobs/JobQueue.ts'
export type { AttemptErrorInfo, HandlerError, Job, JobHandle } from './jobs/JobHandle.ts'
export { ClaimLost, WorkerStopped } from './jobs/JobHandle.ts'
export type { EnqueueManyOptions, EnqueueOptions, QueueOptions, RateLimitOptions } from './jobs/QueueOptions.ts'
export type { JobPage, ListOptions, QueueAdmin, RetryDeadResult } from './jobs/QueueAdmin.ts'
export type { ScheduleInfo, ScheduleOptions } from './jobs/Schedules.ts'
export type { MaintenanceOptions } from './jobs/Maintenance.ts'
export type {
  JobCompletedEvent,
  JobDeadEvent,
  JobRetriedEvent,
  JobStartedEvent,
  Logger,
  MatchboxEvent,
  MatchboxEventOf,
  MatchboxEventType,
  StoreRecoveredEvent,
  StoreUnavailableEvent,
} from './jobs/Events.ts'
export type { StopOptions, StopWork, WorkOptions } from './jobs/Worker.ts'
export type { JobCounts } from './persistence/jobs/JobStore.ts'
export type { JobState } from './domain/JobRules.ts'
// The operator's web dashboard, as a node:http request handler to mount at a path prefix.
export { dashboardHandler, type DashboardOptions, type DashboardRequestHandler } from './dashboard/DashboardHandler.ts'
export type { BasicAuth } from './dashboard/Security.ts'
export type { SimulatorReplay } from './dashboard/SystemPages.ts'
// Matching: a host over a History you provide, for services that own execution state.
export {
  type AddTaskOutcome,
  type AddTaskRequest,
  layerMatchingHost,
  layerMatchingHostWith,
  MatchingClock,
  MatchingHistory,
  type MatchingHost,
  type MatchingHostOptions,
  MatchingHostService,
  MatchingStore,
  makeMatchingHost,
  type PolledTask,
  type PollRequest,
} from './actors/MatchingHost.ts'
export type { History, PollerInfo, RecordStartResult } from './actors/History.ts'
export { makeDynamicMembership, makeStaticMembership, type Membership } from './actors/Membership.ts'
// Stores: memory (tests, simulation), embedded (PGlite) and PostgreSQL, one contract.
export { makeMemoryStore, type MemoryStore } from './persistence/queues/MemoryStore.ts'
export { openEmbeddedStore, openPostgresStore } from './persistence/queues/sql/openSqlStore.ts'
export { openEmbeddedMembershipStore, openPostgresMembershipStore } from './persistence/membership/sql/SqlMembershipStore.ts'
export type { MembershipStore } from './persistence/membership/MembershipStore.ts'
