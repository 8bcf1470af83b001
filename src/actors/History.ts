/**
 * History — the seam through which Matching asks the owner of execution state to record that a
 * task started. Matching knows nothing about what
 * a task means; History decides.
 *
 * Production plugs in Jobs (src/jobs); the simulator plugs in a scripted History with rejection
 * schedules; an embedding service may plug in its own.
 */
import type { JsonValue } from '../domain/Json.ts'
import type { QueueKey } from '../domain/QueueKey.ts'
import type { Task } from '../domain/Task.ts'

/** The poller a task is being started for. */
export interface PollerInfo {
  /** The worker's self-chosen identity (for traces and History's records). */
  readonly identity: string
  /** The deployment version the poller runs, or null for unversioned workers. */
  readonly version: string | null
}

/**
 * The partition a task is delivered from, and its range id when the delivery began. History may
 * fence what it writes with it — a job claim commits only while the partition's stored range id is
 * still this one — so a delivery retried after another engine took the partition writes nothing.
 */
export interface StartOrigin {
  readonly key: QueueKey
  readonly rangeId: number
}

/**
 * History's answer. `started` hands the poller `response` (e.g. a job claim); `already-started`
 * and `obsolete` mean the delivery is handled and the poller keeps waiting; `retryable` keeps the
 * delivery pending and Matching retries it with backoff.
 */
export type RecordStartResult =
  | { readonly kind: 'started'; readonly response: JsonValue }
  | { readonly kind: 'already-started' }
  | { readonly kind: 'obsolete' }
  | { readonly kind: 'retryable'; readonly reason: string }

/** The History role. A rejected promise is treated as a retryable failure. */
export interface History {
  /** Records that `task`, delivered from `origin`, starts for `poller`, atomically with whatever History tracks. */
  recordTaskStarted(task: Task, poller: PollerInfo, origin: StartOrigin): Promise<RecordStartResult>
}
