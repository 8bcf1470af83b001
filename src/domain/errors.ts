/**
 * The error catalogue — every expected failure in Matchbox, as a tagged value.
 *
 * Each error says whether retrying the same call can succeed (`retryable`) and whether a write
 * may have committed even though the caller saw a failure (`maybeCommitted`, e.g. a connection
 * lost mid-commit). Callers switch on `_tag`; Effect code catches them with `catchTag`.
 *
 * Does not: describe bugs. A broken invariant is an `AssertionFailed` (kernel/assert.ts) and
 * crashes.
 */
import { Data } from 'effect'

/** A caller passed something malformed; nothing was written. */
export class InvalidInput extends Data.TaggedError('InvalidInput')<{
  /** The offending field, dotted: `key.family`, `tasks[3].priority`. */
  readonly field: string
  /** What is wrong with it, in words. */
  readonly reason: string
}> {
  readonly retryable = false
  readonly maybeCommitted = false
  override get message(): string {
    return `invalid ${this.field}: ${this.reason}`
  }
}

/** The caller's range id is no longer the queue's: another owner acquired it. Nothing was written. */
export class OwnershipLost extends Data.TaggedError('OwnershipLost')<{
  /** Canonical encoding of the physical queue. */
  readonly queue: string
  /** The range id the caller wrote with. */
  readonly rangeId: number
  /** The queue's current range id, or null if the queue row does not exist. */
  readonly currentRangeId: number | null
}> {
  readonly retryable = false
  readonly maybeCommitted = false
  override get message(): string {
    return `ownership of ${this.queue} lost: wrote with range ${this.rangeId}, current is ${this.currentRangeId ?? 'none'}`
  }
}

/** An optimistic update lost: the stored version is not the expected one. Nothing was written. */
export class VersionConflict extends Data.TaggedError('VersionConflict')<{
  /** What was being updated, e.g. `userData default/emails`. */
  readonly subject: string
  readonly expectedVersion: number
  readonly currentVersion: number
}> {
  readonly retryable = false
  readonly maybeCommitted = false
  override get message(): string {
    return `${this.subject}: expected version ${this.expectedVersion}, found ${this.currentVersion}`
  }
}

/** The store could not be reached or failed transiently. `maybeCommitted` is true when a write was in flight. */
export class Unavailable extends Data.TaggedError('Unavailable')<{
  /** The operation that failed, e.g. `append`. */
  readonly operation: string
  /** The underlying failure, in words. */
  readonly detail: string
  readonly maybeCommitted: boolean
  /** When known, the time the refusal ends (a queue waiting out its restart delay), in epoch ms. */
  readonly retryAtMs?: number
}> {
  readonly retryable = true
  override get message(): string {
    return `${this.operation} unavailable${this.maybeCommitted ? ' (may have committed)' : ''}: ${this.detail}`
  }
}

/** A bounded buffer is full; the caller should back off or go elsewhere. Nothing was accepted. */
export class Overloaded extends Data.TaggedError('Overloaded')<{
  /** Which bound was hit, e.g. `appendQueueSizeMax`. */
  readonly limit: string
  readonly size: number
}> {
  readonly retryable = true
  readonly maybeCommitted = false
  override get message(): string {
    return `overloaded: ${this.limit} (${this.size}) reached`
  }
}

/**
 * The component is shutting down or draining and refuses the call; nothing was done.
 *
 * Two cases, told apart by `closed`: a part handing over (a Matching partition unloading, a
 * queue draining) refuses for a moment and the call may go elsewhere — retryable; an engine
 * whose `close()` began refuses for good — retrying on it cannot succeed, so it is not
 * retryable (open another engine).
 */
export class ShuttingDown extends Data.TaggedError('ShuttingDown')<{
  readonly component: string
  /** True when the component was closed for good by its owner (absent: a hand-over). */
  readonly closed?: boolean
}> {
  readonly maybeCommitted = false
  /** False once the component is closed for good; true for a hand-over. */
  get retryable(): boolean {
    return this.closed !== true
  }
  override get message(): string {
    return this.closed === true ? `${this.component} is closed` : `${this.component} is shutting down`
  }
}

/** A snapshot could not be imported; the store is unchanged. */
export class SnapshotInvalid extends Data.TaggedError('SnapshotInvalid')<{
  /** What is wrong, naming the path inside the snapshot. */
  readonly problem: string
}> {
  readonly retryable = false
  readonly maybeCommitted = false
  override get message(): string {
    return `snapshot rejected: ${this.problem}`
  }
}

/** A schedule spec is neither `@every <n>s|m|h` nor a valid 5-field cron expression. Nothing was written. */
export class InvalidSpec extends Data.TaggedError('InvalidSpec')<{
  /** The spec as given. */
  readonly spec: string
  /** What is wrong with it, in words. */
  readonly reason: string
}> {
  readonly retryable = false
  readonly maybeCommitted = false
  override get message(): string {
    return `invalid schedule spec ${JSON.stringify(this.spec)}: ${this.reason}`
  }
}

/**
 * An embedded data directory is held by another opener — another process, or another store in
 * this one — and two PGlite instances on one directory would corrupt it. Nothing was opened.
 */
export class DataDirInUse extends Data.TaggedError('DataDirInUse')<{
  /** The directory, as an absolute path. */
  readonly dataDir: string
  /** The holder's process id. */
  readonly pid: number
  /** The host the holder runs on. */
  readonly hostname: string
}> {
  readonly retryable = false
  readonly maybeCommitted = false
  override get message(): string {
    return (
      `data directory ${this.dataDir} is in use by process ${this.pid} on ${this.hostname}; close that store first ` +
      '(.matchbox.lock in the directory names the holder: remove it only if that process is not a Matchbox)'
    )
  }
}

/** Every error a Store operation may fail with. */
export type StoreError = InvalidInput | OwnershipLost | VersionConflict | Unavailable

/** Every expected Matchbox error. */
export type MatchboxError = StoreError | Overloaded | ShuttingDown | SnapshotInvalid | InvalidSpec | DataDirInUse

const tags = new Set(['InvalidInput', 'OwnershipLost', 'VersionConflict', 'Unavailable', 'Overloaded', 'ShuttingDown', 'SnapshotInvalid', 'InvalidSpec', 'DataDirInUse'])

/** True for any error in this catalogue. */
export function isMatchboxError(error: unknown): error is MatchboxError {
  return typeof error === 'object' && error !== null && tags.has((error as { _tag?: unknown })._tag as string)
}

/**
 * Builds an error without capturing a stack trace, for refusals that are answers rather than
 * failures: a request that reached a host owning none of its partitions, or a queue or partition
 * that is unloading. Callers retry or route elsewhere and never read the stack, and a busy router
 * can make thousands of them a second, where capturing one is most of their cost. The error is
 * otherwise the same value (tag, fields, message).
 */
export function refusal<E extends MatchboxError>(make: () => E): E {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return make()
  } finally {
    Error.stackTraceLimit = limit
  }
}
