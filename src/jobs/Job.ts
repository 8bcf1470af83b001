/**
 * Job — a stored job as `getJob` and the admin reads show it to a user: `Job`, its handler
 * errors, and `toJob`, which builds it from the store's record (times in epoch ms, durations in
 * seconds, absent fields left out rather than null where the record has nothing to say).
 *
 * Does not: act on a job (a claimed job's handle does, JobHandle.ts) or read the store.
 */
import type { JsonValue } from '../domain/Json.ts'
import type { JobState } from '../domain/JobRules.ts'
import type { JobRecord } from '../persistence/jobs/JobStore.ts'

/** The error a handler's latest `retry` or `fail` (or throw in `work`) recorded. */
export interface HandlerError {
  readonly message: string
  /** The error's stack, capped at `jobErrorStackLengthMax` characters; absent when it had none. */
  readonly stack?: string
}

/** A job as `getJob` sees it, its payload typed as the queue's. Times are epoch ms; durations seconds. */
export interface Job<T = JsonValue> {
  readonly id: string
  readonly queue: string
  readonly state: JobState
  readonly payload: T
  /** Its idempotency key, if enqueued with one. */
  readonly key?: string
  /** Claims so far, fresh or reclaim. */
  readonly attempts: number
  readonly maxAttempts: number
  readonly priority: number
  readonly createdAt: number
  /** Not claimable before this (a retry moves it). */
  readonly runAt: number
  /** Time of the latest claim; null before the first. */
  readonly claimedAt: number | null
  readonly expiresAt: number | null
  readonly visibilityTimeoutS: number
  readonly backoffBaseS: number
  readonly deadLetterRetentionS: number | null
  /** Why it died (dead jobs only). */
  readonly lastError?: string
  /** When it died (dead jobs only). */
  readonly diedAt?: number
  /** The latest handler error, pending or dead (a budget death keeps it beside `lastError`). */
  readonly lastHandlerError?: HandlerError
  /**
   * The handler errors of its latest attempts, oldest first: one per attempt that recorded one
   * (`retry`, `fail`, a throw in `work`), at most `jobAttemptErrorsKept` (10). Absent before the first.
   */
  readonly attemptErrors?: ReadonlyArray<AttemptErrorInfo>
  /**
   * Its latest claims, oldest first: each attempt's number and claim time, and attempt 0 where an
   * operator retried it from dead (its attempts count from 0 again); at most `jobClaimsKept` (10)
   * entries; a claim given back unused is not among them. Absent before the first.
   */
  readonly claims?: ReadonlyArray<{ readonly attempt: number; readonly at: number }>
  /** The latest value its handler passed to `job.progress`; absent before the first. */
  readonly progress?: JsonValue
  /** When `progress` was stored. */
  readonly progressAt?: number
}

/** One attempt's handler error in `Job.attemptErrors`. */
export interface AttemptErrorInfo extends HandlerError {
  /** The attempt (1 for the first claim) whose handler gave it. */
  readonly attempt: number
  /** When it was recorded, epoch ms. */
  readonly at: number
  /** When the next attempt was due, for an error `retry` (or a throw in `work`) recorded short of the budget. */
  readonly retryAt?: number
}

/** The public snapshot of a stored job. */
export function toJob<T = JsonValue>(record: JobRecord): Job<T> {
  return {
    id: record.id,
    queue: record.queue,
    state: record.state,
    payload: record.payload as T,
    ...(record.key === null ? {} : { key: record.key }),
    attempts: record.attempts,
    maxAttempts: record.maxAttempts,
    priority: record.priority,
    createdAt: record.createdAtMs,
    runAt: record.runAtMs,
    claimedAt: record.claimedAtMs,
    expiresAt: record.expiresAtMs,
    visibilityTimeoutS: record.visibilityTimeoutMs / 1000,
    backoffBaseS: record.backoffBaseMs / 1000,
    deadLetterRetentionS: record.deadLetterRetentionMs === null ? null : record.deadLetterRetentionMs / 1000,
    ...(record.lastError === null ? {} : { lastError: record.lastError }),
    ...(record.diedAtMs === null ? {} : { diedAt: record.diedAtMs }),
    ...(record.lastHandlerError === null
      ? {}
      : { lastHandlerError: { message: record.lastHandlerError, ...(record.lastHandlerStack === null ? {} : { stack: record.lastHandlerStack }) } }),
    ...(record.attemptErrors.length === 0
      ? {}
      : {
          attemptErrors: record.attemptErrors.map((entry) => ({
            attempt: entry.attempt,
            message: entry.error,
            ...(entry.stack === null ? {} : { stack: entry.stack }),
            at: entry.atMs,
            ...(entry.retryAtMs === undefined ? {} : { retryAt: entry.retryAtMs }),
          })),
        }),
    ...(record.claims === undefined || record.claims.length === 0 ? {} : { claims: record.claims.map((entry) => ({ attempt: entry.attempt, at: entry.atMs })) }),
    ...(record.progress === null ? {} : { progress: record.progress }),
    ...(record.progressAtMs === null || record.progressAtMs === undefined ? {} : { progressAt: record.progressAtMs }),
  }
}
