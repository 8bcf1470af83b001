/**
 * JobHandle — a claimed job as a worker holds it (seed 004 §2–§3), and `Job`, the snapshot
 * `getJob` returns.
 *
 * Every handle operation (ack, heartbeat, retry, fail) is the store's one validity predicate at
 * the clock's now: processing, deadline not passed, and this handle's claim token current.
 * Otherwise it returns false and nothing changes. `retry(err)` draws its delay from the
 * equal-jitter curve on the job's own backoff stamp and attempt count, capped at one hour;
 * `retry(err, delayS)` overrides it.
 *
 * Invariants: a handle never outlives its claim token — a reclaim elsewhere makes every op
 * false; delays and deadlines come from the job's stamps, never the queue handle's options.
 */
import { equalJitterDelayMs, retryDelayCapMs } from '../domain/Backoff.ts'
import type { JsonValue } from '../domain/Json.ts'
import { jobErrorLengthMax } from '../kernel/Limits.ts'
import type { JobRecord, JobState } from '../persistence/jobs/JobStore.ts'
import { secondsToMs } from './QueueOptions.ts'
import type { JobsRuntime } from './Runtime.ts'

/** A job as `getJob` sees it. Times are epoch ms; durations seconds. */
export interface Job {
  readonly id: string
  readonly queue: string
  readonly state: JobState
  readonly payload: JsonValue
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
}

/**
 * A claimed job. Each operation resolves true when it took effect, false when the claim was no
 * longer valid; it rejects with `ShuttingDown` (not retryable) once the engine is closed.
 */
export interface JobHandle {
  readonly id: string
  readonly queue: string
  readonly payload: JsonValue
  /** This claim's attempt number (1 on the first claim). */
  readonly attempts: number
  readonly maxAttempts: number
  readonly priority: number
  /** Fences this claim; use it to fence your own writes too. */
  readonly claimToken: string
  /** The claim's current deadline, epoch ms (moved by successful heartbeats). */
  readonly deadline: number
  /** Deletes the job: done. */
  ack(): Promise<boolean>
  /** Resets the deadline to now + `extendS` (default: the job's visibility timeout). A late heartbeat is refused. */
  heartbeat(extendS?: number): Promise<boolean>
  /** Back to pending after `delayS` (default: the retry curve); dead-letters with "max attempts exceeded" at the budget. */
  retry(error: unknown, delayS?: number): Promise<boolean>
  /** Dead-letters now with `error`. */
  fail(error: unknown): Promise<boolean>
}

/** The public snapshot of a stored job. */
export function toJob(record: JobRecord): Job {
  return {
    id: record.id,
    queue: record.queue,
    state: record.state,
    payload: record.payload,
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
  }
}

/** The text kept for a handler's error: its message, truncated to `jobErrorLengthMax`. */
export function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : typeof error === 'string' ? error : safeStringify(error)
  return text.replaceAll('\u0000', '\uFFFD').slice(0, jobErrorLengthMax)
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** Wraps a claimed record into a handle bound to `runtime`. */
export function makeJobHandle(runtime: JobsRuntime, claimed: JobRecord): JobHandle {
  const { jobStore, driver } = runtime
  const ref = { id: claimed.id, claimToken: claimed.claimToken as string }
  let deadline = claimed.deadlineMs as number
  return {
    id: claimed.id,
    queue: claimed.queue,
    payload: claimed.payload,
    attempts: claimed.attempts,
    maxAttempts: claimed.maxAttempts,
    priority: claimed.priority,
    claimToken: ref.claimToken,
    get deadline() {
      return deadline
    },
    async ack() {
      runtime.refuseIfStoresClosed()
      return jobStore.ack({ ...ref, nowMs: runtime.now() })
    },
    async heartbeat(extendS) {
      runtime.refuseIfStoresClosed()
      const extendMs = extendS === undefined ? null : secondsToMs('extendS', extendS, true)
      const renewed = await jobStore.heartbeat({ ...ref, extendMs, nowMs: runtime.now() })
      if (renewed === null) return false
      deadline = renewed.deadlineMs as number
      driver.notifyDue(deadline, claimed.queue)
      return true
    },
    async retry(error, delayS) {
      runtime.refuseIfStoresClosed()
      const delayMs =
        delayS === undefined
          ? equalJitterDelayMs(claimed.backoffBaseMs, claimed.attempts, runtime.random.float(), retryDelayCapMs)
          : secondsToMs('delayS', delayS, false)
      const outcome = await jobStore.retry({ ...ref, error: errorText(error), delayMs, nowMs: runtime.now() })
      if (outcome?.kind === 'retried') runtime.announceDue(claimed.queue, outcome.runAtMs, false)
      return outcome !== null
    },
    async fail(error) {
      runtime.refuseIfStoresClosed()
      return jobStore.fail({ ...ref, error: errorText(error), nowMs: runtime.now() })
    },
  }
}
