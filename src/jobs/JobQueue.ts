/**
 * JobQueue — the queue handle users hold (`mb.queue(name, options)`, `mb.outbox(name)`):
 * enqueue, enqueueMany, claim, getJob, cancel, ackBatch, sweepExpired and work.
 *
 * Claims go through Claimer.ts (lazy-correct, local or forwarded to the queue's owner). The
 * handle's partition count, if it names one, is checked against the stored one at the first
 * enqueue or claim (QueueRouting.ts).
 *
 * Invariants: every input is validated before anything is written (`InvalidInput`); every job
 * is stamped with this handle's resolved options at enqueue; with `tx` the insert is a plain
 * statement on the caller's transaction and the driver finds the row once it commits.
 *
 * Does not: sweep on its own.
 */
import { InvalidInput } from '../domain/errors.ts'
import { validateJson, validateJsonMeasured } from '../domain/Json.ts'
import { checkBatchBytes, isRated } from '../persistence/jobs/JobInput.ts'
import { ackBatchSizeMax, claimWaitMsMax, enqueueBatchSizeMax } from '../kernel/Limits.ts'
import { jobIdOf, jobIdTime, randomId } from '../kernel/Ids.ts'
import type { EnqueuedJob, JobStamps, NewJob } from '../persistence/jobs/JobStore.ts'
import { claimNext } from './Claimer.ts'
import type { JsonValue } from '../domain/Json.ts'
import { type Job, type JobHandle, toJob } from './JobHandle.ts'
import { makeQueueAdmin, type QueueAdmin } from './QueueAdmin.ts'
import { type EnqueueManyOptions, type EnqueueOptions, type QueueRateLimits, resolveEnqueueManyOptions, resolveEnqueueOptions, type ResolvedEnqueue } from './QueueOptions.ts'
import type { JobsRuntime } from './Runtime.ts'
import { fenced } from './StoreClaims.ts'
import { startWorkers, type StopWork, type WorkOptions } from './Worker.ts'

/**
 * What `enqueue` accepts: the queue's payload type, or — on a queue opened without one
 * (`mb.queue(name)`, payloads typed as any JSON) — anything, checked at run time.
 */
export type PayloadInput<T> = [JsonValue] extends [T] ? ([T] extends [JsonValue] ? unknown : T) : T

/** One job of `enqueueMany`: its payload and the per-job options of `enqueue` (all but `tx`). */
export type EnqueueManyJob<T = JsonValue> = { readonly payload: PayloadInput<T> } & Omit<EnqueueOptions, 'tx'>

/**
 * A queue handle. Every method rejects with a typed Matchbox error on bad input or an unavailable
 * store, and with `ShuttingDown` (not retryable) once its engine is closed.
 */
export interface JobQueue<T = JsonValue> extends QueueAdmin<T> {
  /** The queue's name (an outbox's is `outbox:<name>`). */
  readonly name: string
  /**
   * Enqueues `payload` (plain JSON, checked at run time); returns the job's id — the new job's,
   * or with `options.key` the live job already holding that key, in which case nothing is written.
   */
  enqueue(payload: PayloadInput<T>, options?: EnqueueOptions): Promise<string>
  /**
   * Enqueues up to 1,000 jobs in one statement, all or nothing; returns their ids in the order
   * given. Each job is `{ payload, ...options }` with the options `enqueue` takes for one job
   * (priority, runAt or delayMs, expiresAt, key, maxAttempts); `options.tx` puts the whole batch
   * on the caller's transaction. Keys behave as in `enqueue`: a job whose key a live job holds —
   * or an earlier job of the same batch — answers with that job's id and writes nothing.
   * Any invalid job refuses the batch with `InvalidInput` naming it (`jobs[3].payload`); more
   * than 1,000 jobs or 16 MiB of payload JSON in all, with field `jobs`.
   */
  enqueueMany(jobs: ReadonlyArray<EnqueueManyJob<T>>, options?: EnqueueManyOptions): Promise<ReadonlyArray<string>>
  /** Claims the next job in claim order (priority DESC, runAt ASC, enqueue order), waiting up to `waitMs` (default 0). */
  claim(options?: { readonly waitMs?: number }): Promise<JobHandle<T> | null>
  /** The job in any state, dead included; null when acked, cancelled, purged or unknown. */
  getJob(id: string): Promise<Job<T> | null>
  /** Deletes a pending or processing job, whoever holds it; false for dead or unknown jobs. */
  cancel(id: string): Promise<boolean>
  /** Acks many claims at once, each under the validity predicate; returns how many were acked. */
  ackBatch(jobs: ReadonlyArray<Pick<JobHandle, 'id' | 'claimToken'>>): Promise<number>
  /** Moves jobs past expiresAt (pending and processing) to dead and purges dead jobs past retention. */
  sweepExpired(): Promise<{ readonly dead: number; readonly purged: number }>
  /**
   * Runs `handler` on claimed jobs: return → ack, throw → retry(err) (the error and its stack are
   * recorded on the job); heartbeats for it. Returns `stop`, which waits for the running handlers
   * (at most `graceS` with `stop({ graceS })`: then it aborts their `job.signal` and resolves).
   */
  work(handler: (job: JobHandle<T>) => Promise<unknown>, options?: WorkOptions): StopWork
}

/** Makes a queue handle over `name` whose jobs carry `stamps`. */
export function makeJobQueue<T = JsonValue>(
  runtime: JobsRuntime,
  name: string,
  stamps: JobStamps,
  partitions?: number,
  fairnessWeights: ReadonlyMap<string, number> = new Map(),
  concurrencyPerKey: number | null = null,
  rateLimits: QueueRateLimits = { rateLimit: null, rateLimitPerKey: null },
): JobQueue<T> {
  const { jobStore } = runtime
  if (concurrencyPerKey !== null) runtime.limitedQueues.add(name)
  // The engine's short claims of a limited queue come back at its next token (StoreClaims.ts).
  if (rateLimits.rateLimit !== null || rateLimits.rateLimitPerKey !== null) runtime.rateLimited.add(name)
  const newJob = jobMaker(runtime, name, stamps, fairnessWeights, concurrencyPerKey, rateLimits)
  const queue: JobQueue<T> = {
    name,
    ...makeQueueAdmin<T>(runtime, name),

    async enqueue(payload, options) {
      runtime.refuseIfClosed()
      const resolved = resolveEnqueueOptions(options)
      refuseTxOffPostgres(runtime, resolved.tx)
      const nowMs = runtime.now()
      const job = newJob(validateJson('payload', payload), resolved, nowMs)
      await runtime.routing.load(name, partitions)
      if (resolved.tx === undefined) {
        const handed = await enqueueToWaitingWorker(runtime, name, job, nowMs)
        if (handed !== null) return handed
        // Another engine's claim may wait for it (HandOvers.ts): then it is claimed for that claim.
        const answer = await runtime.handOvers?.enqueue(job, nowMs)
        if (answer !== undefined && answer !== null) {
          if (answer.handedTo === undefined) runtime.announceDue(name, Math.max(answer.runAtMs, nowMs), true)
          return answer.id
        }
      }
      const stored = await jobStore.enqueue({ job, nowMs }, resolved.tx)
      // With tx the row is invisible until the caller commits: the store's own signal (raised
      // at commit) and the driver's scan find it then.
      runtime.announceDue(name, Math.max(stored.runAtMs, nowMs), true)
      return stored.id
    },

    async enqueueMany(jobs, options) {
      runtime.refuseIfClosed()
      const { tx } = resolveEnqueueManyOptions(options)
      refuseTxOffPostgres(runtime, tx)
      if (!Array.isArray(jobs) || jobs.length > enqueueBatchSizeMax) {
        throw new InvalidInput({ field: 'jobs', reason: `must be an array of at most ${enqueueBatchSizeMax} jobs ({ payload, ...options })` })
      }
      const nowMs = runtime.now()
      const idTime = jobIdTime(nowMs)
      const { batch, bytesMax } = resolveBatch(jobs, (payload, resolved) => newJob(payload, resolved, nowMs, idTime))
      if (batch.length === 0) return []
      // The store checks the total too, but only after the queue's routing is loaded (and, on a
      // new queue, written): a batch too large must write nothing.
      checkBatchBytes(batch.map((job) => job.payload), bytesMax)
      await runtime.routing.load(name, partitions)
      const stored = await jobStore.enqueueMany({ jobs: batch, nowMs }, tx)
      announceBatchDue(runtime, name, stored, nowMs)
      return stored.map((job) => job.id)
    },

    async claim(options = {}) {
      if (typeof options !== 'object' || options === null) throw new InvalidInput({ field: 'options', reason: 'must be an object' })
      for (const key of Object.keys(options)) if (key !== 'waitMs') throw new InvalidInput({ field: `options.${key}`, reason: 'is not an option (known: waitMs)' })
      const waitMs = options.waitMs === undefined ? 0 : options.waitMs
      if (typeof waitMs !== 'number' || !Number.isFinite(waitMs) || waitMs < 0 || waitMs > claimWaitMsMax) {
        throw new InvalidInput({ field: 'options.waitMs', reason: `must be a number of ms in 0…${claimWaitMsMax}` })
      }
      await runtime.routing.load(name, partitions)
      return (await claimNext(runtime, name, waitMs, true)) as JobHandle<T> | null
    },

    async getJob(id) {
      runtime.refuseIfStoresClosed()
      const record = await jobStore.getJob({ queue: name, id })
      return record === null ? null : toJob<T>(record)
    },

    async cancel(id) {
      runtime.refuseIfStoresClosed()
      return jobStore.cancel({ queue: name, id })
    },

    async ackBatch(jobs) {
      runtime.refuseIfStoresClosed()
      if (!Array.isArray(jobs) || jobs.length > ackBatchSizeMax) {
        throw new InvalidInput({ field: 'jobs', reason: `must be an array of at most ${ackBatchSizeMax} claimed jobs` })
      }
      return jobStore.ackBatch({ claims: jobs.map((job) => ({ id: job?.id, claimToken: job?.claimToken })), nowMs: runtime.now() })
    },

    async sweepExpired() {
      runtime.refuseIfStoresClosed()
      return jobStore.sweepExpired({ queue: name, nowMs: runtime.now() })
    },

    work(handler, options) {
      runtime.refuseIfClosed()
      // Payloads are stored as plain JSON; T is the caller's description of them.
      return startWorkers(runtime, name, handler as (job: JobHandle) => Promise<unknown>, options, partitions)
    },
  }
  return queue
}

// A job of queue `name`, stamped with the handle's options and the enqueue's own; `idTime` is
// `jobIdTime(nowMs)`, made once for a batch's jobs. Built field by field rather than by spreads:
// a batch makes one per job.
function jobMaker(
  runtime: JobsRuntime,
  name: string,
  stamps: JobStamps,
  fairnessWeights: ReadonlyMap<string, number>,
  concurrencyPerKey: number | null,
  rateLimits: QueueRateLimits,
): (payload: JsonValue, resolved: ResolvedEnqueue, nowMs: number, idTime?: string) => NewJob {
  return (payload, resolved, nowMs, idTime = jobIdTime(nowMs)) => {
    const job: Mutable<NewJob> = {
      id: jobIdOf(runtime.ids, idTime),
      queue: name,
      payload,
      priority: resolved.priority,
      runAtMs: resolved.runAtMs ?? nowMs + (resolved.delayMs ?? 0),
      expiresAtMs: resolved.expiresAtMs,
      visibilityTimeoutMs: stamps.visibilityTimeoutMs,
      maxAttempts: resolved.maxAttempts ?? stamps.maxAttempts,
      backoffBaseMs: stamps.backoffBaseMs,
      deadLetterRetentionMs: stamps.deadLetterRetentionMs,
      key: resolved.key,
    }
    if (resolved.fairnessKey !== null) {
      job.fairnessKey = resolved.fairnessKey
      // The handle's weight for the key wins over the enqueue's.
      job.fairnessWeight = fairnessWeights.get(resolved.fairnessKey) ?? resolved.fairnessWeight ?? 1
    }
    // A concurrency key limits only through a handle with a limit; on any other it is dropped.
    if (resolved.concurrencyKey !== null && concurrencyPerKey !== null) {
      job.concurrencyKey = resolved.concurrencyKey
      job.concurrencyLimit = concurrencyPerKey
    }
    // The handle's rate limits ride on every job, so the queue's buckets hold the latest.
    if (rateLimits.rateLimit !== null) job.rateLimit = rateLimits.rateLimit
    if (rateLimits.rateLimitPerKey !== null) job.rateLimitPerKey = rateLimits.rateLimitPerKey
    return job
  }
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

// The options of an enqueue that gives none: every default.
const defaultEnqueue: ResolvedEnqueue = Object.freeze(resolveEnqueueOptions({}))

// Whether a job of `enqueueMany` names its payload and nothing else.
function isPayloadOnly(record: Record<string, unknown>): boolean {
  const keys = Object.keys(record)
  return keys.length === 1 && keys[0] === 'payload'
}

// The options one job of `enqueueMany` names beside its payload.
function resolveItemOptions(record: Record<string, unknown>, field: string): ResolvedEnqueue {
  const { payload: _payload, ...itemOptions } = record
  return resolveEnqueueOptions(itemOptions, field)
}

// One job of `enqueueMany` validated: its payload, with validateJsonMeasured's bound of its size,
// and its options; a job that is not an object or names `tx` is refused. `field` names the job
// in a refusal and `payloadField` its payload.
function resolveItem(item: unknown, field: string, payloadField: string): { readonly payload: JsonValue; readonly bytesMax: number; readonly resolved: ResolvedEnqueue } {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new InvalidInput({ field, reason: 'must be an object { payload, ...options }' })
  const record = item as Record<string, unknown>
  // A job of its payload alone, the common case, takes every default: it has no options to read.
  const payloadOnly = isPayloadOnly(record)
  if (!payloadOnly && 'tx' in record) throw new InvalidInput({ field: `${field}.tx`, reason: "is the batch's option: enqueueMany(jobs, { tx })" })
  const measured = validateJsonMeasured(payloadField, record.payload)
  return { payload: measured.value, bytesMax: measured.bytesMax, resolved: payloadOnly ? defaultEnqueue : resolveItemOptions(record, field) }
}

// `enqueueMany`'s jobs validated into new jobs (`make`), with the largest payload's size sum for
// the batch's byte check. Each job is checked under placeholder names, so an accepted batch
// builds no `jobs[i]` labels; a refused job is checked again under its own, which refuses it the
// same way.
function resolveBatch(jobs: ReadonlyArray<unknown>, make: (payload: JsonValue, resolved: ResolvedEnqueue) => NewJob): { readonly batch: NewJob[]; readonly bytesMax: number } {
  let bytesMax = 0
  // Array.from visits holes too: a sparse array's missing job is refused, not skipped.
  const batch = Array.from(jobs, (item: unknown, index) => {
    let resolved: ReturnType<typeof resolveItem>
    try {
      resolved = resolveItem(item, 'job', 'job.payload')
    } catch (error) {
      if (error instanceof InvalidInput) resolveItem(item, `jobs[${index}]`, `jobs[${index}].payload`)
      throw error
    }
    bytesMax += resolved.bytesMax
    return make(resolved.payload, resolved.resolved)
  })
  return { batch, bytesMax }
}

// A batch's jobs may come due at different times. The first is announced; so is the first after
// it, if any: a pass the first wakes may find nothing left to reserve and read no due time, while
// the timer the second arms runs a scan, which reads the next due time and so finds the rest.
function announceBatchDue(runtime: JobsRuntime, queue: string, stored: ReadonlyArray<EnqueuedJob>, nowMs: number): void {
  let first = Number.POSITIVE_INFINITY
  for (const job of stored) first = Math.min(first, Math.max(job.runAtMs, nowMs))
  runtime.announceDue(queue, first, true)
  let later = Number.POSITIVE_INFINITY
  for (const job of stored) {
    const dueMs = Math.max(job.runAtMs, nowMs)
    if (dueMs > first && dueMs < later) later = dueMs
  }
  if (later !== Number.POSITIVE_INFINITY) runtime.announceDue(queue, later, true)
}

// A transactional enqueue runs on the caller's PostgreSQL transaction: on any other store it
// would write where the engine never looks (or, on memory, nowhere), so it is refused up front.
function refuseTxOffPostgres(runtime: JobsRuntime, tx: unknown): void {
  if (tx !== undefined && runtime.jobStore.kind !== 'postgres') {
    throw new InvalidInput({ field: 'options.tx', reason: `needs a PostgreSQL store (this engine's is ${runtime.jobStore.kind}); nothing was written` })
  }
}

/**
 * Eager dispatch (Temporal's eager activity dispatch): when a worker of this engine waits in
 * Matching for `queue`, the job is claimable now, and the due-time driver has delivered every
 * row due so far (nothing older can be claimable and undelivered), the job is inserted already
 * claimed and handed to that worker — one statement from enqueue to handler, no delivery pass,
 * no Matching task. The claim is an ordinary one (its deadline lapses into a redelivery like any
 * other). Returns the job's id, or null to enqueue the ordinary way.
 */
async function enqueueToWaitingWorker(runtime: JobsRuntime, queue: string, job: NewJob, nowMs: number): Promise<string | null> {
  // A limited or rated job is never inserted claimed (its claim goes through the guards).
  const limited = (job.concurrencyKey !== undefined && job.concurrencyKey !== null) || isRated(job)
  if (limited || job.runAtMs > nowMs || (job.expiresAtMs !== null && job.expiresAtMs <= nowMs) || !runtime.driver.isQuiet()) return null
  const dispatch = runtime.dispatch.of(queue)
  const claimId = dispatch.reserveFirst()
  if (claimId === undefined) return null
  const claimToken = randomId(runtime.random)
  let stored
  try {
    // Inserted claimed, it is the owner's claim: fenced as one. Refused, it is enqueued as any other.
    stored = await fenced(runtime, queue, (fence) => runtime.jobStore.enqueue({ job, nowMs, claimToken, fence }), async () => null)
  } catch (error) {
    dispatch.release(claimId)
    throw error
  }
  if (stored === null) {
    dispatch.release(claimId)
    return null
  }
  if (stored.claimToken !== claimToken) {
    // A live job holds the key: nothing was inserted. The claim goes back to the head of the line.
    dispatch.release(claimId)
    runtime.announceDue(queue, Math.max(stored.runAtMs, nowMs), true)
    return stored.id
  }
  runtime.driver.notifyDue(stored.deadlineMs as number, queue)
  dispatch.handOver(stored, claimId)
  return stored.id
}
