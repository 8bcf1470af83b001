/**
 * jobRows — decoding the rows of the job tables into contract records, with the contract's shape
 * invariants asserted after every read, and the parameters of the enqueue statement.
 *
 * Does not: run statements (SqlJobStore.ts and its parts do) or validate caller input (JobInput.ts does).
 */
import { assert } from '../../../kernel/assert.ts'
import { toSafeInteger } from '../../queues/sql/SqlValues.ts'
import { type AttemptError, type ClaimEntry, type EnqueuedJob, fairnessStride, type JobRecord, type JobState, type NewJob, type ScheduleRecord } from '../JobStore.ts'

type Row = Record<string, unknown>

/** A nullable bigint column as a number. */
export const nullableInteger = (value: unknown, what: string): number | null => (value === null || value === undefined ? null : toSafeInteger(value, what))

const nullableText = (value: unknown): string | null => (value as string | null | undefined) ?? null

// The attempt history as stored (a jsonb array, or null on rows from before it was kept).
function decodeAttemptErrors(value: unknown, id: string): ReadonlyArray<AttemptError> {
  if (value === null || value === undefined) return []
  const entries = typeof value === 'string' ? (JSON.parse(value) as unknown) : value
  assert(Array.isArray(entries), () => `job ${id}: attempt_errors is not an array`)
  return entries.map((entry: Record<string, unknown>) => {
    assert(typeof entry.error === 'string' && typeof entry.attempt === 'number' && typeof entry.atMs === 'number', () => `job ${id}: an attempt error of the wrong shape`)
    const decoded = { attempt: entry.attempt, error: entry.error, stack: typeof entry.stack === 'string' ? entry.stack : null, atMs: entry.atMs }
    return typeof entry.retryAtMs === 'number' ? { ...decoded, retryAtMs: entry.retryAtMs } : decoded
  })
}

// The claim history as stored (a jsonb array, or null on rows from before it was kept).
function decodeClaims(value: unknown, id: string): ReadonlyArray<ClaimEntry> {
  if (value === null || value === undefined) return []
  const entries = typeof value === 'string' ? (JSON.parse(value) as unknown) : value
  assert(Array.isArray(entries), () => `job ${id}: claim_history is not an array`)
  return entries.map((entry: Record<string, unknown>) => {
    assert(typeof entry.attempt === 'number' && typeof entry.atMs === 'number', () => `job ${id}: a claim of the wrong shape`)
    return { attempt: entry.attempt, atMs: entry.atMs }
  })
}

// A whole-row read's keys and fairness pass.
const decodeKeys = (row: Row): Pick<JobRecord, 'fairnessKey' | 'fairPass' | 'concurrencyKey'> => ({
  ...(row.fairness_key === null ? {} : { fairnessKey: row.fairness_key as string }),
  // An unkeyed job of a queue with keys has the implicit key's pass.
  ...(row.fair_pass === null || row.fair_pass === undefined ? {} : { fairPass: toSafeInteger(row.fair_pass, 'fair_pass') }),
  ...(row.concurrency_key === null ? {} : { concurrencyKey: row.concurrency_key as string }),
})

/** Decodes a job row (live or dead); asserts the contract's shape invariants. */
export function decodeJob(row: Row): JobRecord {
  const state = row.state as JobState
  assert(state === 'pending' || state === 'processing' || state === 'dead', `job state ${String(row.state)}`)
  const job: JobRecord = {
    id: row.id as string,
    queue: row.queue as string,
    state,
    payload: row.payload as never,
    priority: toSafeInteger(row.priority, 'priority'),
    attempts: toSafeInteger(row.attempts, 'attempts'),
    maxAttempts: toSafeInteger(row.max_attempts, 'max_attempts'),
    visibilityTimeoutMs: toSafeInteger(row.visibility_timeout_ms, 'visibility_timeout_ms'),
    backoffBaseMs: toSafeInteger(row.backoff_base_ms, 'backoff_base_ms'),
    deadLetterRetentionMs: nullableInteger(row.dead_letter_retention_ms, 'dead_letter_retention_ms'),
    createdAtMs: toSafeInteger(row.created_at_ms, 'created_at_ms'),
    runAtMs: toSafeInteger(row.run_at_ms, 'run_at_ms'),
    claimedAtMs: nullableInteger(row.claimed_at_ms, 'claimed_at_ms'),
    expiresAtMs: nullableInteger(row.expires_at_ms, 'expires_at_ms'),
    claimToken: nullableText(row.claim_token),
    deadlineMs: nullableInteger(row.deadline_ms, 'deadline_ms'),
    key: nullableText(row.job_key),
    lastError: nullableText(row.last_error),
    diedAtMs: nullableInteger(row.died_at_ms, 'died_at_ms'),
    lastHandlerError: nullableText(row.last_handler_error),
    lastHandlerStack: nullableText(row.last_handler_stack),
    attemptErrors: decodeAttemptErrors(row.attempt_errors, row.id as string),
    claims: decodeClaims(row.claim_history, row.id as string),
    progress: row.progress === undefined ? null : (row.progress as never),
    progressAtMs: nullableInteger(row.progress_at_ms, 'progress_at_ms'),
    // Only a whole-row read (getJob's statement) selects the keys.
    ...(row.fairness_key === undefined ? {} : decodeKeys(row)),
  }
  assert(typeof job.id === 'string' && typeof job.queue === 'string', 'job id or queue is not text')
  // Every claim decodes a row: the messages are built only for one that breaks an invariant.
  assert((job.state === 'processing') === (job.claimToken !== null && job.deadlineMs !== null), () => `job ${job.id}: claim fields do not match state ${job.state}`)
  assert((job.state === 'dead') === (job.lastError !== null && job.diedAtMs !== null), () => `job ${job.id}: dead fields do not match state ${job.state}`)
  assert(job.attempts >= 0 && job.maxAttempts >= 1, () => `job ${job.id}: attempts ${job.attempts} of ${job.maxAttempts}`)
  assert(job.lastHandlerStack === null || job.lastHandlerError !== null, () => `job ${job.id}: a handler stack without its error`)
  return job
}

/**
 * The jobs a claim statement answered, in claim order (`rank`; rows come in any order). A row
 * carries its job as the json of the row in column `job` or as its own columns (jobSql.ts's
 * `claimedRows`); the row of nulls of a claim that took none carries none.
 */
export function claimedInOrder(rows: ReadonlyArray<Row>): JobRecord[] {
  const claimed: Array<{ readonly rank: number; readonly job: JobRecord }> = []
  for (const row of rows) {
    const source = 'job' in row ? (row.job as Row | null) : row.id === null ? null : row
    if (source !== null) claimed.push({ rank: Number(row.rank), job: decodeJob(source) })
  }
  return claimed.sort((a, b) => a.rank - b.rank).map((entry) => entry.job)
}

/** Decodes a schedule row. */
export function decodeSchedule(row: Row): ScheduleRecord {
  return {
    name: row.name as string,
    spec: row.spec as string,
    queue: row.queue as string,
    payload: row.payload as never,
    anchorMs: toSafeInteger(row.anchor_ms, 'anchor_ms'),
    lastFiredMs: nullableInteger(row.last_fired_ms, 'last_fired_ms'),
    timezone: nullableText(row.timezone),
    revision: toSafeInteger(row.revision, 'revision'),
    // Each job key only when the schedule gives it, as the memory store keeps it.
    ...(row.priority === null || row.priority === undefined ? {} : { priority: toSafeInteger(row.priority, 'priority') }),
    ...(row.fairness_key === null || row.fairness_key === undefined ? {} : { fairnessKey: row.fairness_key as string }),
    ...(row.fairness_weight === null || row.fairness_weight === undefined ? {} : { fairnessWeight: Number(row.fairness_weight) }),
    ...(row.concurrency_key === null || row.concurrency_key === undefined ? {} : { concurrencyKey: row.concurrency_key as string, concurrencyLimit: toSafeInteger(row.concurrency_limit, 'concurrency_limit') }),
  }
}

/** Where `enqueueParams` puts the payload's JSON text. */
export const enqueuePayloadParam = 2

/** The parameters of `enqueueSql`. The due channel rides in every enqueue: the INSERT signals the queue's owner itself, at commit. */
export const enqueueParams = (job: NewJob, nowMs: number, dueChannel: string, claimToken: string | null = null): unknown[] => [
  job.id,
  job.queue,
  JSON.stringify(job.payload),
  job.priority,
  job.maxAttempts,
  job.visibilityTimeoutMs,
  job.backoffBaseMs,
  job.deadLetterRetentionMs,
  nowMs,
  job.runAtMs,
  job.expiresAtMs,
  dueChannel,
  job.key ?? null,
  claimToken,
]

/**
 * The parameters of `enqueueManySql` (its keyed form when `fair`): the jobs as one JSON
 * document, in the order of `jobs` (each payload inside a one-element array: a JSON null field
 * would read back as SQL NULL), now, the due channel, and the first job's queue, priority, max
 * attempts, visibility, backoff and runAt, which a job's object repeats only where its own
 * differ; for the unkeyed form, the batch's queues last. `jobs` is not empty.
 */
export function enqueueManyParams(jobs: ReadonlyArray<NewJob>, nowMs: number, dueChannel: string, fair: boolean): unknown[] {
  const first = jobs[0]
  assert(first !== undefined, 'enqueueMany sends at least one job')
  const documents: Array<Record<string, unknown>> = []
  const queues = new Set<string>()
  for (const job of jobs) {
    documents.push(enqueueManyDocument(job, first))
    queues.add(job.queue)
  }
  const params = [JSON.stringify(documents), nowMs, dueChannel, first.queue, first.priority, first.maxAttempts, first.visibilityTimeoutMs, first.backoffBaseMs, first.runAtMs]
  return fair ? params : [...params, [...queues]]
}

// One job of `enqueueManyParams`' document: its id and payload, the fields that differ from the
// batch's first job, and the nullable ones only when set, so an ordinary job's object is as small
// as it can be (and built without spreading).
function enqueueManyDocument(job: NewJob, first: NewJob): Record<string, unknown> {
  const document: Record<string, unknown> = { id: job.id, payload: [job.payload] }
  if (job.queue !== first.queue) document.queue = job.queue
  if (job.priority !== first.priority) document.priority = job.priority
  if (job.maxAttempts !== first.maxAttempts) document.max_attempts = job.maxAttempts
  if (job.visibilityTimeoutMs !== first.visibilityTimeoutMs) document.visibility_timeout_ms = job.visibilityTimeoutMs
  if (job.backoffBaseMs !== first.backoffBaseMs) document.backoff_base_ms = job.backoffBaseMs
  if (job.runAtMs !== first.runAtMs) document.run_at_ms = job.runAtMs
  if (job.deadLetterRetentionMs !== null) document.dead_letter_retention_ms = job.deadLetterRetentionMs
  if (job.expiresAtMs !== null) document.expires_at_ms = job.expiresAtMs
  if (job.key !== null) document.job_key = job.key
  // Only a limited job names its concurrency key.
  if (job.concurrencyKey !== undefined && job.concurrencyKey !== null) {
    document.concurrency_key = job.concurrencyKey
    document.concurrency_limit = job.concurrencyLimit
  }
  // Likewise only a rated job names its limits.
  if (job.rateLimit !== undefined && job.rateLimit !== null) {
    document.rate_per_second = job.rateLimit.perSecond
    document.rate_burst = job.rateLimit.burst
  }
  if (job.rateLimitPerKey !== undefined && job.rateLimitPerKey !== null) {
    document.key_rate_per_second = job.rateLimitPerKey.perSecond
    document.key_rate_burst = job.rateLimitPerKey.burst
  }
  // And only a keyed job its fairness key and stride (enqueueManySql's `fair` form reads them).
  if (job.fairnessKey !== undefined && job.fairnessKey !== null) {
    document.fairness_key = job.fairnessKey
    document.fair_stride = fairnessStride(job.fairnessWeight ?? 1)
  }
  return document
}

/**
 * One answer row of `enqueueManySql` (a keyed job's), as the asked job's id and the job holding
 * its place: the job itself when it was inserted (its runAt the one it was sent with, from `sent`
 * by id), else the key's holder with its runAt.
 */
export function decodeEnqueued(row: Row, sent: ReadonlyMap<string, NewJob>): { readonly askedId: string; readonly answer: EnqueuedJob } {
  const id = row.id as string
  if (row.asked_id !== null && row.asked_id !== undefined) return { askedId: row.asked_id as string, answer: { id, runAtMs: toSafeInteger(row.run_at_ms, 'run_at_ms') } }
  const job = sent.get(id)
  assert(job !== undefined && job.key !== null, () => `enqueueMany answered ${id}, which it was not sent with a key`)
  return { askedId: id, answer: { id, runAtMs: job.runAtMs } }
}
