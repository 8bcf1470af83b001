/**
 * MemoryJobStore — the JobStore contract (JobStore.ts) in process memory: fast, for tests, the
 * simulator's fast mode and `open({ store: 'memory' })`.
 *
 * Owns: live rows (pending, processing) and dead rows in two maps, as the SQL store keeps two
 * tables (schedules and leases live in MemoryJobSchedules.ts, the admin reads in MemoryJobAdmin.ts,
 * the pause operations in MemoryJobPauses.ts over the map of paused queues every claim here reads,
 * the per-key concurrency guard every claim here asks in MemoryConcurrencySlots.ts, the rate
 * guard in MemoryRateBuckets.ts). Every operation validates first
 * (JobInput.ts), then runs to completion synchronously inside its promise, so each one is atomic
 * as the SQL statements are.
 *
 * Invariants: values go in and come out as copies (no caller can mutate stored state); claim
 * fields are set exactly while processing; every rule is a call into domain/JobRules.ts, the
 * rules the SQL statements spell out in their WHERE clauses (persistence/jobs/sql/jobSql.ts).
 *
 * Length: past 400 lines (about 630), and `makeMemoryJobStore` is one function of about 530,
 * because every operation is a closure over the maps it changes synchronously (that is what
 * makes each atomic); the pauses, schedules, admin reads, concurrency slots, rate buckets and
 * claim fences already live apart. Splitting the rest means one state record that the
 * operations share as module functions, as the SQL store's parts do over their session; it is
 * not done yet, and the simulator's traces on memory are the check it needs (byte-identical).
 *
 * Claim fences are checked against the memory Matching store it is composed with
 * (MemoryClaimFence.ts), in the same synchronous step as the claim they guard; a fenced call
 * awaits nothing between its check and its last write.
 *
 * Does not: persist anything, or refuse a transactional enqueue's `tx` silently — it is
 * `InvalidInput` here, since there is no transaction to join.
 */
import { InvalidInput } from '../../domain/errors.ts'
import { claimRefusal, deadReasonExhausted, deadReasonExpired, isClaimable, isExhausted, isExpired, isOutOfAttempts, isRetentionOver, isValidClaim, sweptDeath } from '../../domain/JobRules.ts'
import { assert } from '../../kernel/assert.ts'
import { jobAttemptErrorsKept, jobClaimsKept } from '../../kernel/Limits.ts'
import { registerSizes } from '../../kernel/Sizes.ts'
import {
  checkClaimRef,
  checkClaims,
  checkCount,
  checkDurationMs,
  checkError,
  checkEnqueue,
  checkFence,
  checkJobRef,
  checkName,
  checkNewJobs,
  checkProgress,
  checkQueues,
  checkSkipKeys,
  checkTokens,
  checkStack,
  checkTime,
  isRated,
} from './JobInput.ts'
import { makeMemorySlots } from './MemoryConcurrencySlots.ts'
import { makeMemoryBuckets } from './MemoryRateBuckets.ts'
import { makeMemoryFenceCheck, type QueueRangeReader } from './MemoryClaimFence.ts'
import { makeMemoryJobAdmin } from './MemoryJobAdmin.ts'
import { makeMemoryJobPauses } from './MemoryJobPauses.ts'
import { makeMemorySchedules } from './MemoryJobSchedules.ts'
import { type AttemptError, type ClaimOutcome, type DueJob, fairnessStride, fairnessStrideMax, insertedJobRecord, type JobRecord, type JobStore, type NewJob } from './JobStore.ts'

interface LiveRow {
  job: JobRecord
  dueMs: number | null
  readySeq: number
  revision: number
  /** A keyed job's fairness pass (jobSql's migration 010 says how it is drawn); absent without a key. */
  fairPass?: number
  /** A limited job's concurrency key (JobStore.ts's "Concurrency keys"); absent without one. */
  concurrencyKey?: string
  /** A keyed job's fairness key, whose rate bucket its claims take from (MemoryRateBuckets.ts); absent without one. */
  fairnessKey?: string
  /** Set by every claim: the claim order key it displaced, which `release` restores. */
  unclaimed?: { readonly dueMs: number | null; readonly readySeq: number }
}

const copy = <T>(value: T): T => structuredClone(value)

// `job`'s attempt history with this attempt's error appended, the oldest dropped past the bound.
const withAttemptError = (job: JobRecord, error: string, stack: string | null, atMs: number, retryAtMs?: number): ReadonlyArray<AttemptError> =>
  [...job.attemptErrors, retryAtMs === undefined ? { attempt: job.attempts, error, stack, atMs } : { attempt: job.attempts, error, stack, atMs, retryAtMs }].slice(-jobAttemptErrorsKept)

/** What a memory job store is composed with. */
export interface MemoryJobStoreOptions {
  /**
   * The range ids of the memory Matching store beside it (a MemoryStore is one), against which
   * claim fences are checked; absent: no physical queue is known and every fence is refused.
   */
  readonly queueRanges?: QueueRangeReader
}

// A pending job of a concurrency key `takeDue` was told to pass over (`skipConcurrencyKeys`).
function isSkipped(row: LiveRow, skipped: ReadonlySet<string>): boolean {
  return row.job.state === 'pending' && row.concurrencyKey !== undefined && skipped.has(row.concurrencyKey)
}

/** Makes an empty memory job store. */
export function makeMemoryJobStore(options: MemoryJobStoreOptions = {}): JobStore {
  const holdFence = makeMemoryFenceCheck(options.queueRanges)
  const live = new Map<string, LiveRow>()
  const dead = new Map<string, JobRecord>()
  // Dead jobs' concurrency keys, which `retryDead` gives back (the SQL dead_jobs row keeps them).
  const deadKeys = new Map<string, string>()
  // Paused queues and when each was paused (JobStore.ts's "Paused queues").
  const paused = new Map<string, number>()
  let readySeq = 0

  // A lapsed claim past the job's expiry (jobSql.ts's `lapsedExpiredKeyed`, without the key).
  const isLapsedExpired = (job: JobRecord, nowMs: number): boolean => job.state === 'processing' && job.deadlineMs !== null && job.deadlineMs <= nowMs && job.expiresAtMs !== null && job.expiresAtMs <= nowMs

  const bury = (row: LiveRow, lastError: string, diedAtMs: number): void => {
    live.delete(row.job.id)
    if (row.concurrencyKey !== undefined) deadKeys.set(row.job.id, row.concurrencyKey)
    dead.set(row.job.id, { ...row.job, state: 'dead', claimToken: null, deadlineMs: null, lastError, diedAtMs })
  }

  // The live job of `queue` holding `key`, as the SQL stores' partial unique index sees it.
  const holderOf = (queue: string, key: string | null): LiveRow | undefined => {
    if (key === null) return undefined
    for (const row of live.values()) if (row.job.queue === queue && row.job.key === key) return row
    return undefined
  }

  const insert = (job: NewJob, nowMs: number): JobRecord => {
    const holder = holderOf(job.queue, job.key ?? null)
    // The holder as SQL stores answer it: the whole row, read as getJob reads it.
    if (holder !== undefined) return { ...copy(holder.job), ...keysOfRow(holder) }
    assert(!live.has(job.id) && !dead.has(job.id), `job id ${job.id} is already taken`)
    const record = insertedJobRecord(job, nowMs, null, copy(job.payload))
    const dueMs = Math.max(job.runAtMs, nowMs)
    const row: LiveRow = { job: record, dueMs, readySeq: ++readySeq, revision: 1 }
    if (job.fairnessKey !== undefined && job.fairnessKey !== null) {
      row.fairPass = nextPass(job, dueMs)
      row.fairnessKey = job.fairnessKey
    }
    buckets.setLimits(job, nowMs)
    if (job.concurrencyKey !== undefined && job.concurrencyKey !== null) {
      row.concurrencyKey = job.concurrencyKey
      slots.setLimit(job.queue, job.concurrencyKey, job.concurrencyLimit as number)
    }
    live.set(job.id, row)
    return copy(record)
  }

  // A keyed job's pass, as enqueueSql's `fair` form draws it: V is the claim order key of the head
  // of the queue's pending rows at the job's priority (the job's due time when there is none); a
  // key new to the queue starts at V, a known one at max(V, its last pass + stride).
  const lastPasses = new Map<string, Map<string, number>>()
  const nextPass = (job: NewJob, dueMs: number): number => {
    let virtualNow = Number.POSITIVE_INFINITY
    for (const row of live.values()) {
      if (row.job.queue === job.queue && row.job.priority === job.priority && row.job.state === 'pending' && row.dueMs !== null) {
        virtualNow = Math.min(virtualNow, orderKey(row))
      }
    }
    if (virtualNow === Number.POSITIVE_INFINITY) virtualNow = dueMs
    const passes = lastPasses.get(job.queue) ?? new Map<string, number>()
    lastPasses.set(job.queue, passes)
    const last = passes.get(job.fairnessKey as string)
    const pass = last === undefined ? virtualNow : Math.max(virtualNow, last + fairnessStride(job.fairnessWeight ?? 1))
    passes.set(job.fairnessKey as string, pass)
    return pass
  }

  // A live row's keys and pass, as getJob answers them.
  const keysOfRow = (row: LiveRow): Pick<JobRecord, 'fairnessKey' | 'fairPass' | 'concurrencyKey'> => ({
    ...(row.fairnessKey === undefined ? {} : { fairnessKey: row.fairnessKey, fairPass: row.fairPass as number }),
    ...(row.concurrencyKey === undefined ? {} : { concurrencyKey: row.concurrencyKey }),
  })

  // Forgets the keys of `queue` whose last pass is a longest stride behind its virtual now (the
  // head of its pending rows at any priority, or now): they would enter there anyway.
  const forgetIdleKeys = (queue: string, nowMs: number): void => {
    const passes = lastPasses.get(queue)
    if (passes === undefined) return
    let virtualNow = nowMs
    for (const row of live.values()) if (row.job.queue === queue && row.job.state === 'pending' && row.dueMs !== null) virtualNow = Math.min(virtualNow, orderKey(row))
    for (const [key, last] of passes) if (last + fairnessStrideMax <= virtualNow) passes.delete(key)
    if (passes.size === 0) lastPasses.delete(queue)
  }

  // Claim order among claimable rows: priority, then due time, then ready order. A row whose task
  // is with Matching (due null) was due before any row still in the store: it comes first.
  // Within a priority a keyed row sorts by its fairness pass (or its due time, if later).
  const orderKey = (row: LiveRow): number => (row.dueMs === null ? Number.NEGATIVE_INFINITY : Math.max(row.fairPass ?? Number.NEGATIVE_INFINITY, row.dueMs))
  const claimOrder = (a: LiveRow, b: LiveRow): number =>
    b.job.priority - a.job.priority || (orderKey(a) === orderKey(b) ? 0 : orderKey(a) < orderKey(b) ? -1 : 1) || a.readySeq - b.readySeq

  // Claims a claimable row for `claimToken`: an attempt, the deadline from its visibility stamp, due then.
  const claimRow = (row: LiveRow, claimToken: string, nowMs: number): JobRecord => {
    const deadlineMs = nowMs + row.job.visibilityTimeoutMs
    const attempts = row.job.attempts + 1
    const claims = [...(row.job.claims ?? []), { attempt: attempts, atMs: nowMs }].slice(-jobClaimsKept)
    row.job = { ...row.job, state: 'processing', attempts, claimedAtMs: nowMs, claimToken, deadlineMs, claims }
    // A due time still ahead is a reservation (the task is with Matching), not a place to keep.
    row.unclaimed = { dueMs: row.dueMs !== null && row.dueMs <= nowMs ? row.dueMs : null, readySeq: row.readySeq }
    row.dueMs = deadlineMs
    row.readySeq = ++readySeq
    row.revision++
    return row.job
  }

  const validRow = (id: string, claimToken: string, nowMs: number): LiveRow | undefined => {
    const row = live.get(id)
    return row !== undefined && isValidClaim(row.job, claimToken, nowMs) ? row : undefined
  }

  // `claim` after validation, synchronously, so a fenced batch writes in the step it was checked in.
  const claimOne = (id: string, claimToken: string, nowMs: number): ClaimOutcome => {
    const row = live.get(id)
    if (row === undefined) return { kind: 'obsolete', reason: dead.has(id) ? 'dead' : 'missing' }
    const job = row.job
    const isPaused = paused.has(job.queue)
    if (isClaimable(job, nowMs)) {
      if (isPaused) return { kind: 'obsolete', reason: 'paused' }
      if (!slots.hasRoom(row, slots.held())) {
        slots.park(row, nowMs)
        return { kind: 'obsolete', reason: 'limited' }
      }
      if (!buckets.take(row, nowMs)) {
        // Due again at its next token, as rateSql.ts's `parkRatedSql` makes it.
        row.dueMs = buckets.parkUntil(row, nowMs)
        row.revision++
        return { kind: 'obsolete', reason: 'limited' }
      }
      return { kind: 'claimed', job: copy(claimRow(row, claimToken, nowMs)) }
    }
    if (isExhausted(job, nowMs)) {
      bury(row, deadReasonExhausted, job.deadlineMs as number)
      return { kind: 'obsolete', reason: 'exhausted' }
    }
    const refusal = claimRefusal(job, nowMs)
    if (refusal === 'not-due' && isPaused) return { kind: 'obsolete', reason: 'paused' }
    return refusal === 'already-started' ? { kind: refusal } : { kind: 'obsolete', reason: refusal }
  }

  // `ackMany` after validation: the ids whose claim was valid, deleted.
  const ackValid = (claims: ReadonlyArray<{ readonly id: string; readonly claimToken: string }>, nowMs: number): string[] => {
    const acked: string[] = []
    for (const claim of claims) if (validRow(claim.id, claim.claimToken, nowMs) !== undefined && live.delete(claim.id)) acked.push(claim.id)
    return acked
  }

  // `release` after validation: back to pending in the place the claim displaced, due by now.
  const releaseValid = (claims: ReadonlyArray<{ readonly id: string; readonly claimToken: string }>, nowMs: number): string[] => {
    const judged = new Set<string>()
    const released: string[] = []
    for (const claim of claims) {
      if (judged.has(claim.id)) continue
      judged.add(claim.id)
      const row = validRow(claim.id, claim.claimToken, nowMs)
      if (row === undefined) continue
      const unclaimedDueMs = row.unclaimed?.dueMs ?? null
      // The claim given back is taken off the job's claims: it never reached a handler.
      const claims = (row.job.claims ?? []).slice(0, -1)
      row.job = { ...row.job, state: 'pending', attempts: Math.max(0, row.job.attempts - 1), claimedAtMs: null, claimToken: null, deadlineMs: null, claims }
      row.dueMs = unclaimedDueMs === null ? nowMs : Math.min(unclaimedDueMs, nowMs)
      row.readySeq = row.unclaimed?.readySeq ?? row.readySeq
      delete row.unclaimed
      row.revision++
      released.push(claim.id)
    }
    return released
  }

  // `claimDue` after validation. As the SQL statement does, the head leaves out keys already full,
  // then admits each key's rows while its limit leaves room (so a batch may come back short).
  const claimDueRows = (queue: string, nowMs: number, tokens: ReadonlyArray<string>): JobRecord[] => {
    if (paused.has(queue)) return []
    // A row whose task is with Matching is claimed here too, in its place: its task, delivered
    // later, finds the job started (or gone) and ends.
    const held = slots.held()
    const head = [...live.values()]
      .filter((row) => row.job.queue === queue && (row.dueMs === null || row.dueMs <= nowMs) && isClaimable(row.job, nowMs) && slots.hasRoom(row, held) && buckets.hasToken(row, nowMs))
      .sort(claimOrder)
      .slice(0, tokens.length)
    const admitted = head.filter((row) => {
      if (!slots.hasRoom(row, held)) return false
      slots.take(row, held)
      return true
    })
    // Then the rate guard over what the concurrency guard admitted, in claim order (rateSql.ts).
    const started = admitted.filter((row) => buckets.take(row, nowMs))
    return started.map((row, index) => copy(claimRow(row, tokens[index] as string, nowMs)))
  }

  const slots = makeMemorySlots(live)
  const buckets = makeMemoryBuckets()

  const refuseTx = (tx: unknown): void => {
    if (tx !== undefined) throw new InvalidInput({ field: 'tx', reason: 'needs a PostgreSQL store; the memory store has no transaction to join' })
  }

  const store: JobStore = {
    kind: 'memory',

    async enqueueMany(params, tx) {
      refuseTx(tx)
      const jobs = checkNewJobs(params.jobs)
      const nowMs = checkTime('nowMs', params.nowMs)
      // All or nothing: every id is free before the first insert (a later job holding an earlier
      // one's key answers with it, as a second enqueue would).
      for (const job of jobs) assert(!live.has(job.id) && !dead.has(job.id), `job id ${job.id} is already taken`)
      return jobs.map((job) => insert(job, nowMs)).map(({ id, runAtMs }) => ({ id, runAtMs }))
    },

    async enqueue(params, tx) {
      refuseTx(tx)
      const { job, nowMs, claimToken, fence } = checkEnqueue(params)
      // A limited or rated job is inserted pending, its claim token and the fence guarding it
      // dropped; any other job of a queue with rate buckets is inserted pending (its fence held).
      const limited = (job.concurrencyKey !== undefined && job.concurrencyKey !== null) || isRated(job)
      if (!limited) holdFence(fence)
      const record = insert(job, nowMs)
      if (buckets.hasBuckets(job.queue)) return record
      // Inserted claimed (not a key's holder, not in a paused queue, not limited): as `claim` leaves a row.
      return claimToken === null || record.id !== job.id || paused.has(job.queue) || limited ? record : copy(claimRow(live.get(job.id) as LiveRow, claimToken, nowMs))
    },

    async getJob(params) {
      const { queue, id } = checkJobRef(params)
      const row = live.get(id)
      if (row !== undefined) return row.job.queue === queue ? { ...copy(row.job), ...keysOfRow(row) } : null
      const job = dead.get(id)
      return job !== undefined && job.queue === queue ? copy(job) : null
    },

    async claim(params) {
      const id = checkName('id', params.id)
      const claimToken = checkName('claimToken', params.claimToken)
      const nowMs = checkTime('nowMs', params.nowMs)
      holdFence(checkFence(params.fence))
      return claimOne(id, claimToken, nowMs)
    },

    async heartbeat(params) {
      const { id, claimToken } = checkClaimRef(params)
      const nowMs = checkTime('nowMs', params.nowMs)
      const extendMs = params.extendMs === null ? null : checkDurationMs('extendMs', params.extendMs, 1)
      const row = validRow(id, claimToken, nowMs)
      if (row === undefined) return null
      const deadlineMs = nowMs + (extendMs ?? row.job.visibilityTimeoutMs)
      row.job = { ...row.job, deadlineMs }
      row.dueMs = deadlineMs
      row.readySeq = ++readySeq
      row.revision++
      return copy(row.job)
    },

    async ack(params) {
      const { id, claimToken } = checkClaimRef(params)
      const nowMs = checkTime('nowMs', params.nowMs)
      return validRow(id, claimToken, nowMs) !== undefined && live.delete(id)
    },

    async claimMany(params) {
      const claims = checkClaims(params.claims)
      const nowMs = checkTime('nowMs', params.nowMs)
      const fence = checkFence(params.fence)
      if (claims.length === 0) return []
      holdFence(fence)
      return claims.map((claim) => claimOne(claim.id, claim.claimToken, nowMs))
    },

    async ackMany(params) {
      return ackValid(checkClaims(params.claims), checkTime('nowMs', params.nowMs))
    },

    async ackBatch(params) {
      return (await store.ackMany(params)).length
    },

    async release(params) {
      return releaseValid(checkClaims(params.claims), checkTime('nowMs', params.nowMs))
    },

    async retry(params) {
      const { id, claimToken } = checkClaimRef(params)
      // lastError stays dead-only (a budget death says why); the handler's error is kept apart.
      const error = checkError('error', params.error)
      const stack = checkStack('stack', params.stack)
      const delayMs = checkDurationMs('delayMs', params.delayMs, 0)
      const nowMs = checkTime('nowMs', params.nowMs)
      const row = validRow(id, claimToken, nowMs)
      if (row === undefined) return null
      const runAtMs = nowMs + delayMs
      // A death at the budget has no next attempt to be due.
      const retryAtMs = isOutOfAttempts(row.job) ? undefined : runAtMs
      row.job = { ...row.job, lastHandlerError: error, lastHandlerStack: stack, attemptErrors: withAttemptError(row.job, error, stack, nowMs, retryAtMs) }
      if (retryAtMs === undefined) {
        bury(row, deadReasonExhausted, nowMs)
        return { kind: 'dead' }
      }
      row.job = { ...row.job, state: 'pending', runAtMs, claimToken: null, deadlineMs: null }
      row.dueMs = runAtMs
      row.readySeq = ++readySeq
      row.revision++
      return { kind: 'retried', runAtMs }
    },

    async setProgress(params) {
      const { id, claimToken } = checkClaimRef(params)
      const nowMs = checkTime('nowMs', params.nowMs)
      const progress = checkProgress('progress', params.progress)
      const row = validRow(id, claimToken, nowMs)
      if (row === undefined) return false
      row.job = { ...row.job, progress: copy(progress), progressAtMs: nowMs }
      return true
    },

    async fail(params) {
      const { id, claimToken } = checkClaimRef(params)
      const error = checkError('error', params.error)
      const stack = checkStack('stack', params.stack)
      const nowMs = checkTime('nowMs', params.nowMs)
      const row = validRow(id, claimToken, nowMs)
      if (row === undefined) return false
      row.job = { ...row.job, lastHandlerError: error, lastHandlerStack: stack, attemptErrors: withAttemptError(row.job, error, stack, nowMs) }
      bury(row, error, nowMs)
      return true
    },

    async cancel(params) {
      const { queue, id } = checkJobRef(params)
      return live.get(id)?.job.queue === queue && live.delete(id)
    },

    async sweepExpired(params) {
      const queue = checkName('queue', params.queue)
      const nowMs = checkTime('nowMs', params.nowMs)
      // Retention applies to rows dead before this call, as the SQL statement's snapshot does.
      let purged = 0
      for (const [id, job] of dead) {
        if (job.queue === queue && isRetentionOver(job, nowMs) && dead.delete(id)) {
          deadKeys.delete(id)
          purged++
        }
      }
      let buried = 0
      for (const row of live.values()) {
        if (row.job.queue !== queue || !isExpired(row.job, nowMs)) continue
        const death = sweptDeath(row.job, nowMs)
        bury(row, death.reason, death.diedAtMs)
        buried++
      }
      forgetIdleKeys(queue, nowMs)
      return { dead: buried, purged }
    },

    async retryDead(params) {
      const { queue, id } = checkJobRef(params)
      const nowMs = checkTime('nowMs', params.nowMs)
      const job = dead.get(id)
      if (job === undefined || job.queue !== queue) return { kind: 'not-dead' }
      const holder = holderOf(queue, job.key)
      if (holder !== undefined) return { kind: 'key-taken', liveId: holder.job.id }
      dead.delete(id)
      const revived: JobRecord = {
        ...job,
        state: 'pending',
        attempts: 0,
        createdAtMs: nowMs,
        runAtMs: nowMs,
        claimedAtMs: null,
        expiresAtMs: job.expiresAtMs !== null && job.expiresAtMs > nowMs ? job.expiresAtMs : null,
        lastError: null,
        diedAtMs: null,
        progress: null,
        progressAtMs: null,
        // Attempt 0 in the claims marks the return: the attempt count starts again.
        claims: [...(job.claims ?? []), { attempt: 0, atMs: nowMs }].slice(-jobClaimsKept),
      }
      const concurrencyKey = deadKeys.get(id)
      deadKeys.delete(id)
      live.set(id, { job: revived, dueMs: nowMs, readySeq: ++readySeq, revision: 1, ...(concurrencyKey === undefined ? {} : { concurrencyKey }) })
      return { kind: 'retried', job: copy(revived) }
    },

    async claimDue(params) {
      const queue = checkName('queue', params.queue)
      const nowMs = checkTime('nowMs', params.nowMs)
      const tokens = checkTokens(params.claimTokens)
      const fence = checkFence(params.fence)
      if (tokens.length === 0) return []
      holdFence(fence)
      return claimDueRows(queue, nowMs, tokens)
    },

    async ackAndClaimDue(params) {
      const claims = checkClaims(params.acks)
      const queue = checkName('queue', params.queue)
      const nowMs = checkTime('nowMs', params.nowMs)
      const tokens = checkTokens(params.claimTokens)
      const fence = checkFence(params.fence)
      // The fence guards the claim and the acks riding on it; acks alone are `ackMany`'s.
      if (tokens.length > 0) holdFence(fence)
      const acked = ackValid(claims, nowMs)
      return { acked, claimed: tokens.length === 0 ? [] : claimDueRows(queue, nowMs, tokens) }
    },

    async takeDue(params) {
      const nowMs = checkTime('nowMs', params.nowMs)
      const reserveUntilMs = checkTime('reserveUntilMs', params.reserveUntilMs)
      const limit = checkCount('limit', params.limit, 0, 10_000)
      const queues = checkQueues(params.queues)
      const skipped = new Set(checkSkipKeys(params.skipConcurrencyKeys))
      const inScope = (row: LiveRow) => queues === null || queues.includes(row.job.queue)
      for (const row of live.values()) {
        if (!inScope(row) || row.dueMs === null || row.dueMs > nowMs) continue
        if (isExhausted(row.job, nowMs)) bury(row, deadReasonExhausted, row.job.deadlineMs as number)
        // A keyed job's lapsed claim that expired holds its slot until buried: buried now, as takeDueSql does.
        else if (row.concurrencyKey !== undefined && isLapsedExpired(row.job, nowMs)) bury(row, deadReasonExpired, nowMs)
      }
      // A pending job of a key at its limit is passed over, and of a key with room only as many
      // are reserved as it has room for, as the SQL statement does.
      const held = slots.held()
      const due = [...live.values()]
        .filter((row) => inScope(row) && row.dueMs !== null && row.dueMs <= nowMs && !isExpired(row.job, nowMs) && !paused.has(row.job.queue) && !isSkipped(row, skipped) && slots.hasRoom(row, held) && buckets.hasToken(row, nowMs))
        .sort(claimOrder)
        // One queue's reservations are capped at its queue-wide bucket's whole tokens, as in SQL.
        .slice(0, queues?.length === 1 ? Math.min(limit, buckets.queueTokens(queues[0] as string, nowMs) ?? limit) : limit)
        .filter((row) => slots.hasRoom(row, held) && (slots.take(row, held), true))
      return due.map((row): DueJob => {
        const dueMs = row.dueMs as number
        row.dueMs = reserveUntilMs
        row.revision++
        const keyed = row.concurrencyKey === undefined ? {} : { concurrencyKey: row.concurrencyKey }
        return { id: row.job.id, queue: row.job.queue, priority: row.job.priority, dueMs, readySeq: row.readySeq, revision: row.revision, expiresAtMs: row.job.expiresAtMs, ...keyed }
      })
    },

    async confirmDelivered(params) {
      if (!Array.isArray(params.deliveries)) throw new InvalidInput({ field: 'deliveries', reason: 'must be an array' })
      let confirmed = 0
      params.deliveries.forEach((delivery, index) => {
        const id = checkName(`deliveries[${index}].id`, delivery?.id)
        const revision = checkCount(`deliveries[${index}].revision`, delivery?.revision, 1, Number.MAX_SAFE_INTEGER)
        const row = live.get(id)
        if (row !== undefined && row.revision === revision) {
          row.dueMs = null
          confirmed++
        }
      })
      return confirmed
    },

    async releaseDelivered(params) {
      if (!Array.isArray(params.deliveries)) throw new InvalidInput({ field: 'deliveries', reason: 'must be an array' })
      const dueMs = checkTime('dueMs', params.dueMs)
      const deliveries = params.deliveries.map((delivery, index) => ({
        id: checkName(`deliveries[${index}].id`, delivery?.id),
        revision: checkCount(`deliveries[${index}].revision`, delivery?.revision, 1, Number.MAX_SAFE_INTEGER),
      }))
      let released = 0
      for (const delivery of deliveries) {
        const row = live.get(delivery.id)
        if (row !== undefined && row.revision === delivery.revision && row.dueMs !== null) {
          row.dueMs = dueMs
          released++
        }
      }
      return released
    },

    async nextDueMs(params) {
      const nowMs = checkTime('nowMs', params.nowMs)
      const queues = checkQueues(params.queues)
      let next: number | null = null
      for (const row of live.values()) {
        if (row.dueMs === null || row.dueMs <= nowMs || isExpired(row.job, nowMs) || paused.has(row.job.queue) || (queues !== null && !queues.includes(row.job.queue))) continue
        if (next === null || row.dueMs < next) next = row.dueMs
      }
      // A queue whose buckets are empty is due again at its next token.
      const token = buckets.nextTokenMs(queues, nowMs, (queue) => paused.has(queue))
      return next === null || (token !== null && token < next) ? token : next
    },

    async dueQueues(params) {
      const nowMs = checkTime('nowMs', params.nowMs)
      const limit = checkCount('limit', params.limit, 1, 10_000)
      const earliest = new Map<string, number>()
      for (const row of live.values()) {
        // A lapsed claim that expired only after its deadline still counts (dueQueuesSql says why).
        const judgedAtMs = row.job.state === 'processing' ? Math.min(row.dueMs ?? nowMs, nowMs) : nowMs
        const buriedByScan = row.job.state === 'processing' && row.concurrencyKey !== undefined
        if (row.dueMs === null || (isExpired(row.job, judgedAtMs) && !buriedByScan) || paused.has(row.job.queue)) continue
        const known = earliest.get(row.job.queue)
        if (known === undefined || row.dueMs < known) earliest.set(row.job.queue, row.dueMs)
      }
      return [...earliest]
        .map(([queue, nextDueMs]) => ({ queue, nextDueMs }))
        .sort((a, b) => a.nextDueMs - b.nextDueMs || (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0))
        .slice(0, limit)
    },

    async deliverableCount(params) {
      const queue = checkName('queue', params.queue)
      const nowMs = checkTime('nowMs', params.nowMs)
      const limit = checkCount('limit', params.limit, 1, 10_000)
      let count = 0
      if (paused.has(queue)) return 0
      for (const row of live.values()) {
        if (count >= limit) break
        if (row.job.queue === queue && row.dueMs === null && isClaimable(row.job, nowMs)) count++
      }
      return count
    },

    // A row with no due time had its task go to Matching, and a claim refused by the pause may
    // have dropped that task: pending rows are due at the resume, claimed ones (whose lapse went to
    // Matching) at the later of the resume and their deadline.
    ...makeMemoryJobPauses(paused, (queue, nowMs) => {
      for (const row of live.values()) {
        if (row.job.queue === queue && row.dueMs === null) {
          row.dueMs = row.job.state === 'processing' ? Math.max(nowMs, row.job.deadlineMs as number) : nowMs
          row.revision++
        }
      }
    }),
    ...makeMemorySchedules(insert),
    ...makeMemoryJobAdmin(() => [...live.values()].map((row) => row.job), () => dead.values()),

    async close() {},
  }
  // The fairness keys it remembers, over every queue (the long-soak bench and the sweep's test read it).
  return registerSizes(store, () => {
    let fairnessKeys = 0
    for (const passes of lastPasses.values()) fairnessKeys += passes.size
    return { fairnessKeys }
  })
}
