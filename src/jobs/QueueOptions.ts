/**
 * QueueOptions — what a user may pass to `mb.queue(name, options)` and `queue.enqueue(payload,
 * options)`, its validation, and its resolution into the stamps every job carries.
 *
 * Invariants: unknown keys, negative or non-finite numbers, priorities outside 0–9 and
 * non-integer times are a typed `InvalidInput` naming the field, raised before anything is
 * written; an explicit `undefined` means "not given"; seconds become whole milliseconds here
 * and nowhere else.
 *
 * Does not: talk to a store. Outbox queues use `outboxStamps` and take no options of their own.
 */
import { InvalidInput } from '../domain/errors.ts'
import { validateName } from '../domain/QueueKey.ts'
import { validatePriority } from '../domain/Task.ts'
import {
  backoffBaseSDefault,
  jobDurationSMax,
  jobMaxAttemptsMax,
  maxAttemptsDefault,
  outboxBackoffBaseS,
  outboxMaxAttempts,
  outboxVisibilityTimeoutS,
  priorityDefault,
  visibilityTimeoutSDefault,
} from '../kernel/Limits.ts'
import { checkConcurrencyKey, checkConcurrencyLimit, checkFairnessKey, checkFairnessWeight, checkRateLimit, checkTx } from '../persistence/jobs/JobInput.ts'
import type { JobStamps, RateLimit, SqlClient } from '../persistence/jobs/JobStore.ts'
import { checkPartitions } from './QueueRouting.ts'

/** Options of a queue handle; each job enqueued through the handle is stamped with them. */
export interface QueueOptions {
  /** How long a claim lasts without a heartbeat, seconds (default 300). */
  readonly visibilityTimeoutS?: number
  /** Claims a job may have, fresh or reclaim (default 3). */
  readonly maxAttempts?: number
  /** Base of the retry curve, seconds (default 5). */
  readonly backoffBaseS?: number
  /** How long dead jobs are kept before `sweepExpired` deletes them, seconds (default: forever). */
  readonly deadLetterRetentionS?: number | null
  /**
   * Matching partitions of the queue, stored by the first engine that uses it and the same for
   * every engine afterwards (default 1, at most 64). One keeps the strict claim order across the
   * queue; several let several engines share a hot queue, with the order held per partition.
   */
  readonly partitions?: number
  /**
   * Weights of fairness keys for this handle's enqueues, overriding the weight an enqueue gives
   * (`{ tenantA: 5 }`): at most 1,000 keys, each at most 64 UTF-8 bytes, weights 0.001…1000.
   */
  readonly fairnessWeights?: Readonly<Record<string, number>>
  /**
   * At most this many jobs of one `concurrencyKey` processing at once (1…10,000), across every
   * engine on the database: the store's claims skip a key at its limit and take the next job.
   * The limit is the key's: the latest enqueue of the key sets it, so give the queue's handles one
   * limit. Without it, a `concurrencyKey` limits nothing.
   */
  readonly concurrencyPerKey?: number
  /**
   * At most `burst` + `perSecond` × t of the queue's jobs started in any t seconds, across every
   * engine on the database (perSecond > 0, ≤ 1,000,000; burst a whole number 1…1,000,000): a
   * token bucket in the database that every claim takes from. The limit is the queue's: the
   * latest enqueue through a handle with one sets it, and it then holds every claim of the
   * queue, whichever handle or engine enqueued or claims — give the queue's handles one limit.
   */
  readonly rateLimit?: RateLimitOptions
  /**
   * The same per fairness key: each key has its own bucket, and the jobs without a key share
   * one (the implicit key). A key without a token is skipped: the claims take other keys' jobs.
   */
  readonly rateLimitPerKey?: RateLimitOptions
}

/** A rate limit: tokens a second and the most held at once. */
export interface RateLimitOptions {
  readonly perSecond: number
  readonly burst: number
}

/** A queue handle's rate limits, validated; null where it sets none. */
export interface QueueRateLimits {
  readonly rateLimit: RateLimit | null
  readonly rateLimitPerKey: RateLimit | null
}

/** How many keys a queue handle's `fairnessWeights` may name. */
export const fairnessWeightsMax = 1000

/** Options of one enqueue. Times are a `Date` or epoch milliseconds. */
export interface EnqueueOptions {
  /** 0–9, higher is claimed first (default 0). */
  readonly priority?: number
  /** Not claimable before this time (default: now). Give `runAt` or `delayMs`, not both. */
  readonly runAt?: Date | number
  /** Not claimable for this many milliseconds from now (the engine's clock). */
  readonly delayMs?: number
  /** `sweepExpired` moves the job to dead from this time on; claims refuse it (default: never). */
  readonly expiresAt?: Date | number
  /**
   * Makes the enqueue idempotent: while a job of this queue holding `key` is live (pending or
   * processing), enqueueing again with the key writes nothing and returns that job's id. Once
   * it is acked, cancelled or dead the key is free again. The database enforces it (a unique
   * index), so concurrent enqueues from many processes leave one job. Non-empty, at most 1000
   * UTF-8 bytes, no control characters.
   */
  readonly key?: string
  /** Overrides the queue's attempt budget for this job. */
  readonly maxAttempts?: number
  /**
   * The job's fairness key (a tenant, a customer; at most 64 UTF-8 bytes): within a priority the
   * queue's keys take turns in proportion to their weights, FIFO within a key, so one key's
   * backlog does not hold back another's jobs. Without it the job takes the turns of one more
   * key of weight 1 that all unkeyed jobs share, in a queue that has keys; in a queue without
   * any it is ordered by its due time.
   * In `enqueueMany` each job takes its own key and weight, ordered as that many `enqueue` calls
   * in the array's order would be.
   */
  readonly fairnessKey?: string
  /** The key's weight, 0.001…1000 (default 1); the queue handle's `fairnessWeights` win over it. */
  readonly fairnessWeight?: number
  /**
   * The job's concurrency key (a tenant, an API account; at most 64 UTF-8 bytes): with the
   * handle's `concurrencyPerKey`, at most that many of the queue's jobs with this key are
   * processing at once. On a handle without `concurrencyPerKey` it is accepted and limits nothing
   * (the job is stored without a key).
   */
  readonly concurrencyKey?: string
  /** A `pg` client inside the caller's open transaction: the job exists iff that transaction commits. */
  readonly tx?: SqlClient
}

/** Options of one `enqueueMany` call, for the whole batch. */
export interface EnqueueManyOptions {
  /** A `pg` client inside the caller's open transaction: the jobs exist iff that transaction commits. */
  readonly tx?: SqlClient
}

/** Enqueue options, validated. */
export interface ResolvedEnqueue {
  readonly priority: number
  /** An absolute time, or null for now. */
  readonly runAtMs: number | null
  /** A delay from now, or null. */
  readonly delayMs: number | null
  readonly key: string | null
  readonly expiresAtMs: number | null
  readonly maxAttempts: number | null
  readonly fairnessKey: string | null
  /** The weight the enqueue gave, or null (the queue's override or 1 applies). */
  readonly fairnessWeight: number | null
  readonly concurrencyKey: string | null
  readonly tx: SqlClient | undefined
}

/** Prefix of the queues backing outboxes; user queues may not start with it. */
export const outboxPrefix = 'outbox:'

/** The fixed stamps of outbox queues. */
export const outboxStamps: JobStamps = {
  visibilityTimeoutMs: outboxVisibilityTimeoutS * 1000,
  maxAttempts: outboxMaxAttempts,
  backoffBaseMs: outboxBackoffBaseS * 1000,
  deadLetterRetentionMs: null,
}

/** The stamps of a queue opened without options. */
export const defaultStamps: JobStamps = {
  visibilityTimeoutMs: visibilityTimeoutSDefault * 1000,
  maxAttempts: maxAttemptsDefault,
  backoffBaseMs: backoffBaseSDefault * 1000,
  deadLetterRetentionMs: null,
}

function knownKeys(field: string, value: unknown, keys: ReadonlyArray<string>): Record<string, unknown> {
  if (value === undefined) return {}
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidInput({ field, reason: 'must be an object' })
  for (const key of Object.keys(value)) {
    if (!keys.includes(key)) throw new InvalidInput({ field: `${field}.${key}`, reason: `is not an option (known: ${keys.join(', ')})` })
  }
  return value as Record<string, unknown>
}

/** Seconds → whole ms; finite, ≥ 0 (or > 0 when `positive`), at most `jobDurationSMax`. */
export function secondsToMs(field: string, value: unknown, positive: boolean): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > jobDurationSMax) {
    throw new InvalidInput({ field, reason: `must be a finite number of seconds in 0…${jobDurationSMax}` })
  }
  const ms = Math.round(value * 1000)
  if (positive && ms < 1) throw new InvalidInput({ field, reason: 'must be at least 1 ms' })
  return ms
}

function attempts(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > jobMaxAttemptsMax) {
    throw new InvalidInput({ field, reason: `must be an integer in 1…${jobMaxAttemptsMax}` })
  }
  return value
}

function epochMs(field: string, value: unknown): number {
  // A Date is only converted, never read from the clock.
  const ms = value instanceof Date ? value.getTime() : value
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) {
    throw new InvalidInput({ field, reason: 'must be a valid Date or a whole epoch-ms number ≥ 0' })
  }
  return ms
}

/** Validates a user queue name (not an outbox's reserved name). */
export function validateQueueName(field: string, name: unknown): string {
  const valid = validateName(field, name)
  if (valid.startsWith(outboxPrefix)) throw new InvalidInput({ field, reason: `must not start with "${outboxPrefix}" (reserved for outboxes)` })
  return valid
}

/** The partition count a queue handle asks for, if any. */
export function requestedPartitions(options: unknown, field = 'options'): number | undefined {
  const given = knownKeys(field, options, queueOptionKeys)
  return given.partitions === undefined ? undefined : checkPartitions(`${field}.partitions`, given.partitions)
}

const queueOptionKeys = ['visibilityTimeoutS', 'maxAttempts', 'backoffBaseS', 'deadLetterRetentionS', 'partitions', 'fairnessWeights', 'concurrencyPerKey', 'rateLimit', 'rateLimitPerKey']

/** A queue handle's rate limits, validated (JobInput.ts's `checkRateLimit`). */
export function resolveRateLimits(options: unknown, field = 'options'): QueueRateLimits {
  const given = knownKeys(field, options, queueOptionKeys)
  return {
    rateLimit: given.rateLimit === undefined ? null : checkRateLimit(`${field}.rateLimit`, given.rateLimit),
    rateLimitPerKey: given.rateLimitPerKey === undefined ? null : checkRateLimit(`${field}.rateLimitPerKey`, given.rateLimitPerKey),
  }
}

/** A queue handle's per-key concurrency limit, validated, or null when it sets none. */
export function resolveConcurrencyPerKey(options: unknown, field = 'options'): number | null {
  const given = knownKeys(field, options, queueOptionKeys).concurrencyPerKey
  return given === undefined ? null : checkConcurrencyLimit(`${field}.concurrencyPerKey`, given)
}

/** A queue handle's fairness weight overrides, validated (an empty map when none are given). */
export function resolveFairnessWeights(options: unknown, field = 'options'): ReadonlyMap<string, number> {
  const given = knownKeys(field, options, queueOptionKeys).fairnessWeights
  const weights = new Map<string, number>()
  if (given === undefined) return weights
  if (typeof given !== 'object' || given === null || Array.isArray(given)) throw new InvalidInput({ field: `${field}.fairnessWeights`, reason: 'must be an object { key: weight }' })
  const entries = Object.entries(given)
  if (entries.length > fairnessWeightsMax) throw new InvalidInput({ field: `${field}.fairnessWeights`, reason: `must name at most ${fairnessWeightsMax} keys (it names ${entries.length})` })
  for (const [key, weight] of entries) {
    weights.set(checkFairnessKey(`${field}.fairnessWeights key`, key) as string, checkFairnessWeight(`${field}.fairnessWeights.${key}`, weight))
  }
  return weights
}

/** Resolves a queue handle's options over the defaults into stamps. */
export function resolveQueueOptions(options: unknown, field = 'options'): JobStamps {
  const given = knownKeys(field, options, queueOptionKeys)
  const retention = given.deadLetterRetentionS
  return {
    visibilityTimeoutMs: given.visibilityTimeoutS === undefined ? defaultStamps.visibilityTimeoutMs : secondsToMs(`${field}.visibilityTimeoutS`, given.visibilityTimeoutS, true),
    maxAttempts: given.maxAttempts === undefined ? defaultStamps.maxAttempts : attempts(`${field}.maxAttempts`, given.maxAttempts),
    backoffBaseMs: given.backoffBaseS === undefined ? defaultStamps.backoffBaseMs : secondsToMs(`${field}.backoffBaseS`, given.backoffBaseS, false),
    deadLetterRetentionMs: retention === undefined || retention === null ? null : secondsToMs(`${field}.deadLetterRetentionS`, retention, false),
  }
}

/** Validates one enqueue's options. */
export function resolveEnqueueOptions(options: unknown, field = 'options'): ResolvedEnqueue {
  const given = knownKeys(field, options, ['priority', 'runAt', 'delayMs', 'expiresAt', 'maxAttempts', 'key', 'fairnessKey', 'fairnessWeight', 'concurrencyKey', 'tx'])
  if (given.runAt !== undefined && given.delayMs !== undefined) throw new InvalidInput({ field: `${field}.delayMs`, reason: 'give runAt or delayMs, not both' })
  const delayMs = given.delayMs
  if (delayMs !== undefined && (typeof delayMs !== 'number' || !Number.isSafeInteger(delayMs) || delayMs < 0 || delayMs > jobDurationSMax * 1000)) {
    throw new InvalidInput({ field: `${field}.delayMs`, reason: `must be a whole number of ms in 0…${jobDurationSMax * 1000}` })
  }
  const tx = checkTx(`${field}.tx`, given.tx)
  return {
    priority: given.priority === undefined ? priorityDefault : validatePriority(`${field}.priority`, given.priority),
    runAtMs: given.runAt === undefined ? null : epochMs(`${field}.runAt`, given.runAt),
    delayMs: delayMs === undefined ? null : (delayMs as number),
    key: given.key === undefined ? null : validateName(`${field}.key`, given.key),
    expiresAtMs: given.expiresAt === undefined ? null : epochMs(`${field}.expiresAt`, given.expiresAt),
    maxAttempts: given.maxAttempts === undefined ? null : attempts(`${field}.maxAttempts`, given.maxAttempts),
    fairnessKey: checkFairnessKey(`${field}.fairnessKey`, given.fairnessKey),
    fairnessWeight: given.fairnessWeight === undefined ? null : checkFairnessWeight(`${field}.fairnessWeight`, given.fairnessWeight),
    concurrencyKey: checkConcurrencyKey(`${field}.concurrencyKey`, given.concurrencyKey),
    tx,
  }
}

/** Validates the options of one `enqueueMany` call. */
export function resolveEnqueueManyOptions(options: unknown, field = 'options'): { readonly tx: SqlClient | undefined } {
  return { tx: checkTx(`${field}.tx`, knownKeys(field, options, ['tx']).tx) }
}
