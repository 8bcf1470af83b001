/**
 * JobInput — validation of every JobStore operation's parameters, shared by all job stores so
 * they refuse exactly the same inputs with exactly the same `InvalidInput` (field + reason),
 * before anything is written.
 *
 * Times are whole epoch milliseconds (safe integers ≥ 0); durations are whole milliseconds
 * within `jobDurationSMax`; error texts are strings of at most `jobErrorLengthMax` characters.
 *
 * Does not: apply defaults or convert seconds (the jobs layer does, src/jobs/QueueOptions.ts).
 *
 * Length: past 400 lines because it holds one checker per JobStore operation, side by side, so a
 * reader sees every store's refusals in one place; each checker is a few lines of the shared
 * field checks at the top.
 */
import { InvalidInput } from '../../domain/errors.ts'
import { assert } from '../../kernel/assert.ts'
import { type JsonValue, validateJson, validateJsonMeasured } from '../../domain/Json.ts'
import { makeQueueKey, validateName } from '../../domain/QueueKey.ts'
import { validatePriority } from '../../domain/Task.ts'
import { ackBatchSizeMax, enqueueBatchBytesMax, enqueueBatchSizeMax, jobDurationSMax, jobErrorLengthMax, jobErrorStackLengthMax, jobListLimitMax, jobMaxAttemptsMax, jobProgressBytesMax, waiterTokensMax } from '../../kernel/Limits.ts'
import type { ClaimFence, ClaimRef, JobState, NewJob, RateLimit, ScheduleJobKeys, SqlClient, Waiter } from './JobStore.ts'

const durationMsMax = jobDurationSMax * 1000

/** A whole epoch-ms time ≥ 0. */
export function checkTime(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidInput({ field, reason: 'must be a whole epoch-ms number ≥ 0' })
  }
  return value
}

/** A whole number of milliseconds in min…durationMsMax. */
export function checkDurationMs(field: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > durationMsMax) {
    throw new InvalidInput({ field, reason: `must be a whole number of ms in ${min}…${durationMsMax}` })
  }
  return value
}

/** An integer in min…max. */
export function checkCount(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new InvalidInput({ field, reason: `must be an integer in ${min}…${max}` })
  }
  return value
}

/** An error text kept on a dead job. */
export function checkError(field: string, value: unknown): string {
  if (typeof value !== 'string') throw new InvalidInput({ field, reason: 'must be a string' })
  if (value.length > jobErrorLengthMax) throw new InvalidInput({ field, reason: `must be at most ${jobErrorLengthMax} characters` })
  if (value.includes('\u0000')) throw new InvalidInput({ field, reason: 'contains a NUL character, which PostgreSQL text cannot store' })
  return value
}

/** A handler's stack kept with its error: null, or a string of at most `jobErrorStackLengthMax` characters. */
export function checkStack(field: string, value: unknown): string | null {
  if (value === undefined || value === null) return null
  if (typeof value !== 'string') throw new InvalidInput({ field, reason: 'must be a string or null' })
  if (value.length > jobErrorStackLengthMax) throw new InvalidInput({ field, reason: `must be at most ${jobErrorStackLengthMax} characters` })
  if (value.includes('\u0000')) throw new InvalidInput({ field, reason: 'contains a NUL character, which PostgreSQL text cannot store' })
  return value
}

/** A progress value: plain JSON of at most `jobProgressBytesMax` bytes as JSON text. */
export function checkProgress(field: string, value: unknown): JsonValue {
  const progress = validateJson(field, value)
  const bytes = Buffer.byteLength(JSON.stringify(progress), 'utf8')
  if (bytes > jobProgressBytesMax) throw new InvalidInput({ field, reason: `must be at most ${jobProgressBytesMax} bytes as JSON (it is ${bytes})` })
  return progress
}

/** A job key: null, or a name (non-empty, at most 1000 UTF-8 bytes, no control characters). */
function checkKey(field: string, value: unknown): string | null {
  return value === undefined || value === null ? null : validateName(field, value)
}

/** A job state to list. */
export function checkState(field: string, value: unknown): JobState {
  if (value !== 'pending' && value !== 'processing' && value !== 'dead') throw new InvalidInput({ field, reason: "must be 'pending', 'processing' or 'dead'" })
  return value
}

/** A page size of `listJobs`: 1…jobListLimitMax. */
export function checkListLimit(field: string, value: unknown): number {
  return checkCount(field, value, 1, jobListLimitMax)
}

/** An IANA time zone name the runtime knows (`Europe/Paris`, `UTC`), or null for UTC. */
export function checkTimezone(field: string, value: unknown): string | null {
  if (value === undefined || value === null) return null
  const name = validateName(field, value)
  try {
    // Intl refuses unknown zones with a RangeError; it reads no clock.
    new Intl.DateTimeFormat('en-US', { timeZone: name })
  } catch {
    throw new InvalidInput({ field, reason: `is not a time zone this runtime knows (an IANA name such as "Europe/Paris")` })
  }
  return name
}

/** A job to enqueue, fully resolved. */
export function checkNewJob(job: NewJob, field = 'job'): NewJob {
  return checkNewJobMeasured(job, field).job
}

/**
 * `checkNewJob`, also answering an upper bound of its payload's JSON text in UTF-8 bytes
 * (validateJsonMeasured's), so a batch can bound its total without serialising each payload.
 */
export function checkNewJobMeasured(job: NewJob, field = 'job'): { readonly job: NewJob; readonly bytesMax: number } {
  if (typeof job !== 'object' || job === null) throw new InvalidInput({ field, reason: 'must be an object' })
  // Checked in the order of the fields, so a job with several offenders names the first.
  const id = validateName(`${field}.id`, job.id)
  const queue = validateName(`${field}.queue`, job.queue)
  const payload = validateJsonMeasured(`${field}.payload`, job.payload)
  const checked: NewJob = {
    id,
    queue,
    payload: payload.value,
    priority: validatePriority(`${field}.priority`, job.priority),
    runAtMs: checkTime(`${field}.runAtMs`, job.runAtMs),
    expiresAtMs: job.expiresAtMs === null ? null : checkTime(`${field}.expiresAtMs`, job.expiresAtMs),
    maxAttempts: checkCount(`${field}.maxAttempts`, job.maxAttempts, 1, jobMaxAttemptsMax),
    visibilityTimeoutMs: checkDurationMs(`${field}.visibilityTimeoutMs`, job.visibilityTimeoutMs, 1),
    backoffBaseMs: checkDurationMs(`${field}.backoffBaseMs`, job.backoffBaseMs, 0),
    deadLetterRetentionMs: job.deadLetterRetentionMs === null ? null : checkDurationMs(`${field}.deadLetterRetentionMs`, job.deadLetterRetentionMs, 0),
    key: checkKey(`${field}.key`, job.key),
    ...checkFairness(field, job),
    ...checkConcurrency(field, job),
    ...checkRates(field, job),
  }
  return { job: checked, bytesMax: payload.bytesMax }
}

/**
 * The bounds of a rate limit: past a million a second no database starts that many jobs, and
 * the bound keeps a bucket's arithmetic far inside a double's exact range.
 */
export const ratePerSecondMax = 1_000_000
/** The most tokens a bucket may hold (see `ratePerSecondMax`). */
export const rateBurstMax = 1_000_000

/** A rate limit: `{ perSecond, burst }`, perSecond finite in (0, 1,000,000], burst a whole number 1…1,000,000. */
export function checkRateLimit(field: string, value: unknown): RateLimit {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidInput({ field, reason: 'must be an object { perSecond, burst }' })
  const { perSecond, burst, ...rest } = value as Record<string, unknown>
  const unknown = Object.keys(rest)
  if (unknown.length > 0) throw new InvalidInput({ field: `${field}.${unknown[0]}`, reason: 'is not an option (perSecond, burst)' })
  if (typeof perSecond !== 'number' || !Number.isFinite(perSecond) || perSecond <= 0 || perSecond > ratePerSecondMax) {
    throw new InvalidInput({ field: `${field}.perSecond`, reason: `must be a finite number above 0, at most ${ratePerSecondMax}` })
  }
  if (typeof burst !== 'number' || !Number.isSafeInteger(burst) || burst < 1 || burst > rateBurstMax) {
    throw new InvalidInput({ field: `${field}.burst`, reason: `must be a whole number from 1 to ${rateBurstMax}` })
  }
  return { perSecond, burst }
}

// A job's rate limits, resolved: absent when not given (its record keeps the shape it had).
function checkRates(field: string, job: NewJob): { rateLimit?: RateLimit; rateLimitPerKey?: RateLimit } {
  return {
    ...(job.rateLimit === undefined || job.rateLimit === null ? {} : { rateLimit: checkRateLimit(`${field}.rateLimit`, job.rateLimit) }),
    ...(job.rateLimitPerKey === undefined || job.rateLimitPerKey === null ? {} : { rateLimitPerKey: checkRateLimit(`${field}.rateLimitPerKey`, job.rateLimitPerKey) }),
  }
}

/** Whether a job carries a rate limit. */
export const isRated = (job: NewJob): boolean => (job.rateLimit ?? null) !== null || (job.rateLimitPerKey ?? null) !== null

/**
 * The most jobs of one concurrency key a queue may let process at once: a limit is for keeping a
 * tenant or a partner's API to a few jobs at a time; past ten thousand it limits nothing a
 * single database could run, and the bound keeps the counts far inside an integer column.
 */
export const concurrencyLimitMax = 10_000

/** A per-key concurrency limit: a whole number 1…10,000. */
export function checkConcurrencyLimit(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > concurrencyLimitMax) {
    throw new InvalidInput({ field, reason: `must be a whole number from 1 to ${concurrencyLimitMax}` })
  }
  return value
}

/** A concurrency key: null, or a name of at most 64 UTF-8 bytes (a fairness key's bound). */
export function checkConcurrencyKey(field: string, value: unknown): string | null {
  return checkFairnessKey(field, value)
}

// A job's concurrency key and limit, resolved: absent for a job without a key (its record keeps
// the shape it had); a key needs its limit, and a limit without a key is a caller's mistake.
function checkConcurrency(field: string, job: NewJob): { concurrencyKey?: string; concurrencyLimit?: number } {
  const concurrencyKey = checkConcurrencyKey(`${field}.concurrencyKey`, job.concurrencyKey)
  if (concurrencyKey === null) {
    if (job.concurrencyLimit !== undefined) throw new InvalidInput({ field: `${field}.concurrencyLimit`, reason: 'limits a concurrency key: give concurrencyKey too' })
    return {}
  }
  return { concurrencyKey, concurrencyLimit: checkConcurrencyLimit(`${field}.concurrencyLimit`, job.concurrencyLimit) }
}

/** The bounds of a fairness key's weight, and of the key's UTF-8 length. */
export const fairnessWeightMin = 0.001
export const fairnessWeightMax = 1000
export const fairnessKeyBytesMax = 64

/** A fairness weight: a finite number in 0.001…1000. */
export function checkFairnessWeight(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < fairnessWeightMin || value > fairnessWeightMax) {
    throw new InvalidInput({ field, reason: `must be a number from ${fairnessWeightMin} to ${fairnessWeightMax}` })
  }
  return value
}

/** A fairness key: null, or a name of at most 64 UTF-8 bytes. */
export function checkFairnessKey(field: string, value: unknown): string | null {
  if (value === undefined || value === null) return null
  const key = validateName(field, value)
  if (Buffer.byteLength(key, 'utf8') > fairnessKeyBytesMax) throw new InvalidInput({ field, reason: `must be at most ${fairnessKeyBytesMax} bytes as UTF-8` })
  return key
}

// A job's fairness key and weight, resolved: absent for a job without a key (its record keeps
// the shape it had), the weight 1 when none is given.
function checkFairness(field: string, job: NewJob): { fairnessKey?: string; fairnessWeight?: number } {
  const fairnessKey = checkFairnessKey(`${field}.fairnessKey`, job.fairnessKey)
  if (fairnessKey === null) {
    if (job.fairnessWeight !== undefined) checkFairnessWeight(`${field}.fairnessWeight`, job.fairnessWeight)
    return {}
  }
  return { fairnessKey, fairnessWeight: job.fairnessWeight === undefined ? 1 : checkFairnessWeight(`${field}.fairnessWeight`, job.fairnessWeight) }
}

/**
 * A schedule's job keys (`putSchedule`), each absent when not given: a priority, a fairness key
 * with an optional weight, a concurrency key with its limit. A weight without a key, or a key and
 * limit without the other, is refused: a schedule keeps only what its jobs will carry.
 */
export function checkScheduleKeys(params: ScheduleJobKeys): ScheduleJobKeys {
  const fairnessKey = checkFairnessKey('fairnessKey', params.fairnessKey)
  if (fairnessKey === null && params.fairnessWeight !== undefined) throw new InvalidInput({ field: 'fairnessWeight', reason: 'weights a fairness key: give fairnessKey too' })
  const concurrencyKey = checkConcurrencyKey('concurrencyKey', params.concurrencyKey)
  if ((concurrencyKey === null) !== (params.concurrencyLimit === undefined)) {
    throw new InvalidInput(concurrencyKey === null ? { field: 'concurrencyLimit', reason: 'limits a concurrency key: give concurrencyKey too' } : { field: 'concurrencyLimit', reason: 'is needed with a concurrency key' })
  }
  return {
    ...(params.priority === undefined ? {} : { priority: validatePriority('priority', params.priority) }),
    ...(fairnessKey === null ? {} : { fairnessKey }),
    ...(params.fairnessWeight === undefined ? {} : { fairnessWeight: checkFairnessWeight('fairnessWeight', params.fairnessWeight) }),
    ...(concurrencyKey === null ? {} : { concurrencyKey, concurrencyLimit: checkConcurrencyLimit('concurrencyLimit', params.concurrencyLimit) }),
  }
}

/** The fields of a schedule's job keys, in one order (stores compare and copy them by it). */
export const scheduleKeyFields = ['priority', 'fairnessKey', 'fairnessWeight', 'concurrencyKey', 'concurrencyLimit'] as const

/** A claim's range fence, or null when the call carries none: a valid physical queue key and a range id ≥ 1. */
export function checkFence(fence: ClaimFence | undefined): ClaimFence | null {
  if (fence === undefined) return null
  if (typeof fence !== 'object' || fence === null) throw new InvalidInput({ field: 'fence', reason: 'must be an object { queueKey, rangeId } or absent' })
  return { queueKey: makeQueueKey(fence.queueKey, 'fence.queueKey'), rangeId: checkCount('fence.rangeId', fence.rangeId, 1, Number.MAX_SAFE_INTEGER) }
}

/**
 * The parameters of `enqueue`: the job, the time, and an optional claim token, which only a job
 * claimable at `nowMs` may carry (runAt not after it, not expired by it), with an optional fence,
 * which only a claim token may carry (a producer's enqueue owns nothing to fence).
 */
export function checkEnqueue(params: { readonly job: NewJob; readonly nowMs: number; readonly claimToken?: string; readonly fence?: ClaimFence; readonly toWaiter?: boolean }): {
  job: NewJob
  nowMs: number
  claimToken: string | null
  fence: ClaimFence | null
  toWaiter: boolean
} {
  const job = checkNewJob(params.job)
  const nowMs = checkTime('nowMs', params.nowMs)
  const fence = checkFence(params.fence)
  const toWaiter = params.toWaiter ?? false
  if (typeof toWaiter !== 'boolean') throw new InvalidInput({ field: 'toWaiter', reason: 'must be a boolean' })
  if (params.claimToken === undefined) {
    if (fence !== null) throw new InvalidInput({ field: 'fence', reason: 'fences a claimed insert only: give a claimToken, or no fence' })
    return { job, nowMs, claimToken: null, fence, toWaiter }
  }
  if (toWaiter) throw new InvalidInput({ field: 'toWaiter', reason: "takes a waiter's claim token: give it or a claimToken, not both" })
  const claimToken = validateName('claimToken', params.claimToken)
  if (job.runAtMs > nowMs || (job.expiresAtMs !== null && job.expiresAtMs <= nowMs)) {
    throw new InvalidInput({ field: 'claimToken', reason: 'only a job claimable now (runAt reached, not expired) can be enqueued claimed' })
  }
  return { job, nowMs, claimToken, fence, toWaiter }
}

// 1…waiterTokensMax distinct names: each registers one waiter.
function checkWaiterTokens(tokens: ReadonlyArray<string>): ReadonlyArray<string> {
  if (!Array.isArray(tokens) || tokens.length === 0 || tokens.length > waiterTokensMax) throw new InvalidInput({ field: 'claimTokens', reason: `must be an array of 1 to ${waiterTokensMax} tokens` })
  const checked = Array.from(tokens, (token, index) => validateName(`claimTokens[${index}]`, token))
  if (new Set(checked).size !== checked.length) throw new InvalidInput({ field: 'claimTokens', reason: 'must not name a token twice' })
  return checked
}

const refuseMissingFence = (): never => {
  throw new InvalidInput({ field: 'fence', reason: "is required: a waiter is the owner's claim, fenced by its partition's range" })
}

/** Waiters to register (`addWaiters`): names, 1…waiterTokensMax distinct tokens, times as epoch ms, and their fence. */
export function checkWaiters(params: Omit<Waiter, 'claimToken'> & { readonly claimTokens: ReadonlyArray<string>; readonly nowMs: number }): Omit<Waiter, 'claimToken'> & { readonly claimTokens: ReadonlyArray<string>; readonly nowMs: number } {
  return {
    queue: validateName('queue', params.queue),
    claimTokens: checkWaiterTokens(params.claimTokens),
    hostId: validateName('hostId', params.hostId),
    untilMs: checkTime('untilMs', params.untilMs),
    nowMs: checkTime('nowMs', params.nowMs),
    fence: checkFence(params.fence) ?? refuseMissingFence(),
  }
}

/**
 * The jobs of `enqueueMany`: an array of 0…enqueueBatchSizeMax jobs, each checked as `enqueue`
 * checks its job (fields named `jobs[i]…`), whose payloads serialize to at most
 * enqueueBatchBytesMax bytes in all. Two jobs with one id are a caller's bug (ids are
 * drawn, never chosen), asserted rather than refused.
 */
export function checkNewJobs(jobs: ReadonlyArray<NewJob>): ReadonlyArray<NewJob> {
  if (!Array.isArray(jobs) || jobs.length > enqueueBatchSizeMax) {
    throw new InvalidInput({ field: 'jobs', reason: `must be an array of at most ${enqueueBatchSizeMax} jobs` })
  }
  let bytesMax = 0
  let first: { readonly given: NewJob; readonly checked: NewJob } | undefined
  const ids = new Set<string>()
  // Array.from visits holes too: a sparse array's missing job is refused, not skipped.
  const checked = Array.from(jobs, (job, index) => {
    let measured: { readonly job: NewJob; readonly bytesMax: number }
    try {
      measured = first === undefined ? checkNewJobMeasured(job, 'job') : checkLikeFirst(job, first.given, first.checked)
    } catch (error) {
      // The refusal names the job: the full check of it, labelled, refuses it the same way.
      if (error instanceof InvalidInput) checkNewJobMeasured(job, `jobs[${index}]`)
      throw error
    }
    first ??= { given: job, checked: measured.job }
    bytesMax += measured.bytesMax
    ids.add(measured.job.id)
    return measured.job
  })
  if (bytesMax > enqueueBatchBytesMax) checkBatchBytes(checked.map((job) => job.payload), bytesMax)
  assert(ids.size === checked.length, 'enqueueMany was given two jobs with one id')
  return checked
}

/**
 * A later job of a batch checked after its first job, which passed (`given` as the caller gave
 * it, `checked` as checked): a field the same as the first's (Object.is) passes as the first's did, so only the
 * id, the payload and the fields that differ are checked. A job with a fairness or concurrency
 * key, or rate limits, takes the whole check. Refusals carry a placeholder field: the caller
 * names the job by checking it again in full.
 */
function checkLikeFirst(job: NewJob, given: NewJob, checked: NewJob): { readonly job: NewJob; readonly bytesMax: number } {
  if (typeof job !== 'object' || job === null || !isPlain(job)) return checkNewJobMeasured(job, 'job')
  // In checkNewJobMeasured's order, so a job with several offenders is refused for the first.
  const id = validateName('job.id', job.id)
  const queue = Object.is(job.queue, given.queue) ? checked.queue : validateName('job.queue', job.queue)
  const payload = validateJsonMeasured('job.payload', job.payload)
  const same: NewJob = {
    id,
    queue,
    payload: payload.value,
    priority: Object.is(job.priority, given.priority) ? checked.priority : validatePriority('job.priority', job.priority),
    runAtMs: Object.is(job.runAtMs, given.runAtMs) ? checked.runAtMs : checkTime('job.runAtMs', job.runAtMs),
    expiresAtMs: Object.is(job.expiresAtMs, given.expiresAtMs) ? checked.expiresAtMs : job.expiresAtMs === null ? null : checkTime('job.expiresAtMs', job.expiresAtMs),
    maxAttempts: Object.is(job.maxAttempts, given.maxAttempts) ? checked.maxAttempts : checkCount('job.maxAttempts', job.maxAttempts, 1, jobMaxAttemptsMax),
    visibilityTimeoutMs: Object.is(job.visibilityTimeoutMs, given.visibilityTimeoutMs) ? checked.visibilityTimeoutMs : checkDurationMs('job.visibilityTimeoutMs', job.visibilityTimeoutMs, 1),
    backoffBaseMs: Object.is(job.backoffBaseMs, given.backoffBaseMs) ? checked.backoffBaseMs : checkDurationMs('job.backoffBaseMs', job.backoffBaseMs, 0),
    deadLetterRetentionMs:
      Object.is(job.deadLetterRetentionMs, given.deadLetterRetentionMs)
        ? checked.deadLetterRetentionMs
        : job.deadLetterRetentionMs === null
          ? null
          : checkDurationMs('job.deadLetterRetentionMs', job.deadLetterRetentionMs, 0),
    key: Object.is(job.key, given.key) ? (checked.key ?? null) : checkKey('job.key', job.key),
  }
  return { job: same, bytesMax: payload.bytesMax }
}

// A job without fairness or concurrency keys or rate limits: its checked record has only the
// fields every job has (checkFairness, checkConcurrency and checkRates add nothing for it).
const isPlain = (job: NewJob): boolean =>
  (job.fairnessKey ?? null) === null &&
  job.fairnessWeight === undefined &&
  (job.concurrencyKey ?? null) === null &&
  job.concurrencyLimit === undefined &&
  (job.rateLimit ?? null) === null &&
  (job.rateLimitPerKey ?? null) === null

/**
 * Refuses a batch whose payloads serialize to more than enqueueBatchBytesMax bytes in all.
 * `bytesMax`, when given, bounds the total from above (validateJsonMeasured's bounds summed):
 * within the limit, nothing is serialised.
 */
export function checkBatchBytes(payloads: ReadonlyArray<JsonValue>, bytesMax = Number.POSITIVE_INFINITY): void {
  if (bytesMax <= enqueueBatchBytesMax) return
  let bytes = 0
  for (const payload of payloads) bytes += Buffer.byteLength(JSON.stringify(payload), 'utf8')
  if (bytes > enqueueBatchBytesMax) throw new InvalidInput({ field: 'jobs', reason: `payloads serialize to more than ${enqueueBatchBytesMax} bytes in all; split the batch` })
}

/** A claim reference of a handle operation. */
export function checkClaimRef(params: ClaimRef, field = ''): ClaimRef {
  const prefix = field === '' ? '' : `${field}.`
  return { id: validateName(`${prefix}id`, params?.id), claimToken: validateName(`${prefix}claimToken`, params?.claimToken) }
}

/** The claims of `ackBatch`: 0…ackBatchSizeMax references. */
export function checkClaims(claims: ReadonlyArray<ClaimRef>): ReadonlyArray<ClaimRef> {
  if (!Array.isArray(claims) || claims.length > ackBatchSizeMax) {
    throw new InvalidInput({ field: 'claims', reason: `must be an array of at most ${ackBatchSizeMax} claims` })
  }
  return claims.map((claim, index) => checkClaimRef(claim, `claims[${index}]`))
}

/** `releaseHandedOver`'s input: a queue name, 0…ackBatchSizeMax waiter tokens, and now. */
export function checkHandedOver(params: { readonly queue: string; readonly claimTokens: ReadonlyArray<string>; readonly nowMs: number }): {
  readonly queue: string
  readonly claimTokens: ReadonlyArray<string>
  readonly nowMs: number
} {
  return { queue: checkName('queue', params.queue), claimTokens: checkTokens(params.claimTokens), nowMs: checkTime('nowMs', params.nowMs) }
}

/** The claim tokens of `claimDue`: 0…ackBatchSizeMax of them, one per job it may claim. */
export function checkTokens(tokens: ReadonlyArray<string>): ReadonlyArray<string> {
  if (!Array.isArray(tokens) || tokens.length > ackBatchSizeMax) {
    throw new InvalidInput({ field: 'claimTokens', reason: `must be an array of at most ${ackBatchSizeMax} tokens` })
  }
  // The field names the token's index only when one is refused (so an accepted batch builds no labels).
  return tokens.map((token, index) => {
    try {
      return validateName('claimTokens', token)
    } catch {
      return validateName(`claimTokens[${index}]`, token)
    }
  })
}

/** A (queue, id) pair. */
export function checkJobRef(params: { queue: string; id: string }): { queue: string; id: string } {
  return { queue: validateName('queue', params?.queue), id: validateName('id', params?.id) }
}

/** A lease or schedule name. */
export function checkName(field: string, value: unknown): string {
  return validateName(field, value)
}

/** An optional queue filter: null, or an array of 1…ackBatchSizeMax queue names. */
/** The concurrency keys a due-time pass passes over: absent or at most 1,000 keys. */
export function checkSkipKeys(value: ReadonlyArray<string> | undefined): ReadonlyArray<string> {
  if (value === undefined) return []
  if (!Array.isArray(value) || value.length > ackBatchSizeMax) throw new InvalidInput({ field: 'skipConcurrencyKeys', reason: `must be an array of at most ${ackBatchSizeMax} concurrency keys` })
  return value.map((key, index) => {
    const checked = checkConcurrencyKey(`skipConcurrencyKeys[${index}]`, key)
    if (checked === null) throw new InvalidInput({ field: `skipConcurrencyKeys[${index}]`, reason: 'must be a concurrency key, not null' })
    return checked
  })
}

export function checkQueues(value: ReadonlyArray<string> | null): ReadonlyArray<string> | null {
  if (value === null) return null
  if (!Array.isArray(value) || value.length === 0 || value.length > ackBatchSizeMax) {
    throw new InvalidInput({ field: 'queues', reason: `must be null or an array of 1…${ackBatchSizeMax} queue names` })
  }
  return value.map((queue, index) => validateName(`queues[${index}]`, queue))
}

/**
 * The caller's transaction: a `pg` client (`Client` or `PoolClient`) inside an open transaction.
 * Its state is read from the client itself (`getTransactionStatus()`, the status the server sent
 * with its last ReadyForQuery), so the check costs no statement. A client whose transaction
 * committed or rolled back, or never began, would run the insert in autocommit, and one in an
 * aborted transaction would fail it; both are refused here, before anything is written. A Pool
 * runs each statement in a transaction of its own, so it is refused too (it reports no status).
 * The status is as of the client's last answered statement: a BEGIN sent without waiting for it
 * (pg deprecates queueing queries so) is not seen yet.
 */
export function checkTx(field: string, tx: unknown): SqlClient | undefined {
  if (tx === undefined) return undefined
  if (typeof tx !== 'object' || tx === null || typeof (tx as SqlClient).query !== 'function') {
    throw new InvalidInput({ field, reason: 'must be a pg client inside an open transaction' })
  }
  const status = (tx as { getTransactionStatus?: unknown }).getTransactionStatus
  if (typeof status !== 'function') throw new InvalidInput({ field, reason: 'must be a pg client (pool.connect(), not the pool) inside an open transaction' })
  const state: unknown = status.call(tx)
  if (state === 'E') throw new InvalidInput({ field, reason: 'is inside an aborted transaction (a statement of it failed): roll it back; nothing was written' })
  if (state !== 'T') throw new InvalidInput({ field, reason: 'is not inside an open transaction (it committed, rolled back, never began, or the client is not connected): nothing was written' })
  return tx as SqlClient
}
