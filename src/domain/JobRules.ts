/**
 * JobRules — the job contract's rules, pure: which claim is valid, which job is claimable, which
 * lapsed claim ran out of attempts, which job expired, what a sweep or a refused claim makes of a
 * job, when a dead job's retention is over, and the two dead reasons the contract pins.
 *
 * This module is the source of truth for every job store. The memory store calls these functions;
 * the SQL statements (persistence/jobs/sql/jobSql.ts) spell the same rules in their WHERE clauses,
 * because there they must run inside the database, atomically with the write, and take the dead
 * reasons from the constants here. The job store conformance suite checks the two agree at every
 * edge.
 *
 * The edges, one reading everywhere:
 * - a claim is valid while `now < deadline`; at its deadline it has lapsed;
 * - a job is runnable from its runAt on (`runAt <= now`);
 * - a job is expired from its expiresAt on (`expiresAt <= now`);
 * - a lapsed claim at its attempt budget died at its deadline with "max attempts exceeded",
 *   unless the job expired at or before that deadline — then it is the sweep's, as "expired";
 * - a dead job's retention is over at `diedAt + retention <= now`.
 *
 * Does not: change a job, read a clock, or know about due times and delivery (stores own those).
 */

/** A job's state; absence (acked, cancelled, purged) is not a state. */
export type JobState = 'pending' | 'processing' | 'dead'

/** The `lastError` of a job that ran out of attempts: a retry at its budget, or a lapsed claim at it. */
export const deadReasonExhausted = 'max attempts exceeded'

/** The `lastError` of a job `sweepExpired` moved to dead because its expiresAt passed. */
export const deadReasonExpired = 'expired'

/**
 * The first line of the error a person wants to see first for a job, at most `lengthMax`
 * characters: why it died, followed — when it died of the contract's reasons (its budget, its
 * expiry) — by the handler's last error, which says what went wrong; else the handler's last
 * error. Empty when neither is known.
 */
export function errorSummary(job: { readonly lastError: string | null; readonly lastHandlerError: string | null }, lengthMax: number): string {
  const firstLine = (text: string | null) => (text ?? '').split('\n')[0] ?? ''
  const died = firstLine(job.lastError)
  const handler = firstLine(job.lastHandlerError)
  const text = died === '' ? handler : handler === '' || handler === died ? died : `${died}: ${handler}`
  return text.length > lengthMax ? `${text.slice(0, lengthMax - 1)}…` : text
}

/** The dead reasons the contract pins; any other `lastError` is the error a caller's `fail` gave. */
export type DeadReason = typeof deadReasonExhausted | typeof deadReasonExpired

/** The fields of a live job the rules read; a stored job record has them all. */
export interface JobRuleFields {
  readonly state: JobState
  /** Claims so far, fresh or reclaim. */
  readonly attempts: number
  readonly maxAttempts: number
  readonly runAtMs: number
  readonly expiresAtMs: number | null
  /** The current claim's deadline: non-null exactly while processing. */
  readonly deadlineMs: number | null
  /** The current claim's fence: non-null exactly while processing. */
  readonly claimToken: string | null
}

/** Expired: its expiresAt is at or before now. */
export function isExpired(job: Pick<JobRuleFields, 'expiresAtMs'>, nowMs: number): boolean {
  return job.expiresAtMs !== null && job.expiresAtMs <= nowMs
}

/** The one validity predicate of every handle operation: processing, `claimToken` current, `now < deadline`. */
export function isValidClaim(job: JobRuleFields, claimToken: string, nowMs: number): boolean {
  return job.state === 'processing' && job.claimToken === claimToken && job.deadlineMs !== null && nowMs < job.deadlineMs
}

/** A processing job whose claim is still live (`now < deadline`), whoever holds it. */
export function isClaimLive(job: Pick<JobRuleFields, 'state' | 'deadlineMs'>, nowMs: number): boolean {
  return job.state === 'processing' && job.deadlineMs !== null && nowMs < job.deadlineMs
}

/** Every attempt of its budget used: a retry now dead-letters it, and a lapsed claim cannot be renewed. */
export function isOutOfAttempts(job: Pick<JobRuleFields, 'attempts' | 'maxAttempts'>): boolean {
  return job.attempts >= job.maxAttempts
}

/**
 * Claimable now: unexpired, within its budget, and either pending and runnable (`runAt <= now`)
 * or processing with a lapsed claim (`deadline <= now`). A claim counts one more attempt.
 */
export function isClaimable(job: JobRuleFields, nowMs: number): boolean {
  if (isExpired(job, nowMs) || isOutOfAttempts(job)) return false
  if (job.state === 'pending') return job.runAtMs <= nowMs
  return job.state === 'processing' && job.deadlineMs !== null && job.deadlineMs <= nowMs
}

/**
 * The exhaustion rule: a processing job whose claim lapsed (`deadline <= now`) with its budget
 * used, and that had not expired by its deadline. It died at its deadline with
 * `deadReasonExhausted`, whoever notices first (a claim, the due-time scan or the sweep).
 */
export function isExhausted(job: JobRuleFields, nowMs: number): boolean {
  return (
    job.state === 'processing' &&
    job.deadlineMs !== null &&
    job.deadlineMs <= nowMs &&
    isOutOfAttempts(job) &&
    (job.expiresAtMs === null || job.expiresAtMs > job.deadlineMs)
  )
}

/** How a sweep at `nowMs` kills an expired live job: exhausted at its deadline, else expired now. */
export function sweptDeath(job: JobRuleFields, nowMs: number): { readonly reason: DeadReason; readonly diedAtMs: number } {
  return isExhausted(job, nowMs) ? { reason: deadReasonExhausted, diedAtMs: job.deadlineMs as number } : { reason: deadReasonExpired, diedAtMs: nowMs }
}

/**
 * Why a claim at `nowMs` of a live job that is neither claimable nor exhausted is refused: its
 * claim is live (`already-started`, a duplicate delivery), it expired, or it is not due yet.
 */
export function claimRefusal(job: Pick<JobRuleFields, 'state' | 'deadlineMs' | 'expiresAtMs'>, nowMs: number): 'already-started' | 'expired' | 'not-due' {
  if (isClaimLive(job, nowMs)) return 'already-started'
  return isExpired(job, nowMs) ? 'expired' : 'not-due'
}

/** A dead job whose retention is over (`diedAt + retention <= now`); a null retention keeps it forever. */
export function isRetentionOver(job: { readonly diedAtMs: number | null; readonly deadLetterRetentionMs: number | null }, nowMs: number): boolean {
  return job.diedAtMs !== null && job.deadLetterRetentionMs !== null && job.diedAtMs + job.deadLetterRetentionMs <= nowMs
}
