/**
 * MemoryJobStore — the JobStore contract (JobStore.ts) in process memory: fast, for tests, the
 * simulator's fast mode and `open({ store: 'memory' })`.
 *
 * Owns: live rows (pending, processing) and dead rows in two maps, as the SQL store keeps two
 * tables; schedules and leases. Every operation validates first (JobInput.ts), then runs to
 * completion synchronously inside its promise, so each one is atomic as the SQL statements are.
 *
 * Invariants: values go in and come out as copies (no caller can mutate stored state); claim
 * fields are set exactly while processing; the predicates below are the same ones the SQL
 * statements spell out (persistence/jobs/sql/jobSql.ts).
 *
 * Does not: persist anything, or refuse a transactional enqueue's `tx` silently — it is
 * `InvalidInput` here, since there is no transaction to join.
 */
import { InvalidInput } from '../../domain/errors.ts'
import { validateJson } from '../../domain/Json.ts'
import { assert } from '../../kernel/assert.ts'
import { checkClaimRef, checkClaims, checkCount, checkDurationMs, checkError, checkJobRef, checkName, checkNewJob, checkQueues, checkTime } from './JobInput.ts'
import {
  type ClaimOutcome,
  type DueJob,
  expiredError,
  type JobRecord,
  type JobStore,
  maxAttemptsExceeded,
  type NewJob,
  type ScheduleRecord,
} from './JobStore.ts'

interface LiveRow {
  job: JobRecord
  dueMs: number | null
  readySeq: number
  revision: number
}

const copy = <T>(value: T): T => structuredClone(value)

// JSON with object keys sorted: equal exactly when PostgreSQL's jsonb values are equal.
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  )

const isExpired = (job: JobRecord, nowMs: number): boolean => job.expiresAtMs !== null && job.expiresAtMs <= nowMs

const isValidClaim = (job: JobRecord, claimToken: string, nowMs: number): boolean =>
  job.state === 'processing' && job.claimToken === claimToken && job.deadlineMs !== null && nowMs < job.deadlineMs

const isClaimable = (job: JobRecord, nowMs: number): boolean =>
  !isExpired(job, nowMs) &&
  job.attempts < job.maxAttempts &&
  ((job.state === 'pending' && job.runAtMs <= nowMs) || (job.state === 'processing' && (job.deadlineMs as number) <= nowMs))

// The exhaustion rule of JobStore.ts: lapsed at its budget, and not expired by its deadline.
const isExhausted = (job: JobRecord, nowMs: number): boolean =>
  job.state === 'processing' &&
  job.deadlineMs !== null &&
  job.deadlineMs <= nowMs &&
  job.attempts >= job.maxAttempts &&
  (job.expiresAtMs === null || job.expiresAtMs > job.deadlineMs)

/** Makes an empty memory job store. */
export function makeMemoryJobStore(): JobStore {
  const live = new Map<string, LiveRow>()
  const dead = new Map<string, JobRecord>()
  const schedules = new Map<string, ScheduleRecord>()
  const leases = new Map<string, { holder: string; fence: number; expiresAtMs: number }>()
  let readySeq = 0

  const bury = (row: LiveRow, lastError: string, diedAtMs: number): void => {
    live.delete(row.job.id)
    dead.set(row.job.id, { ...row.job, state: 'dead', claimToken: null, deadlineMs: null, lastError, diedAtMs })
  }

  const insert = (job: NewJob, nowMs: number): JobRecord => {
    assert(!live.has(job.id) && !dead.has(job.id), `job id ${job.id} is already taken`)
    const record: JobRecord = {
      ...copy(job),
      state: 'pending',
      attempts: 0,
      createdAtMs: nowMs,
      claimedAtMs: null,
      claimToken: null,
      deadlineMs: null,
      lastError: null,
      diedAtMs: null,
    }
    live.set(job.id, { job: record, dueMs: Math.max(job.runAtMs, nowMs), readySeq: ++readySeq, revision: 1 })
    return copy(record)
  }

  const validRow = (id: string, claimToken: string, nowMs: number): LiveRow | undefined => {
    const row = live.get(id)
    return row !== undefined && isValidClaim(row.job, claimToken, nowMs) ? row : undefined
  }

  return {
    kind: 'memory',

    async enqueue(params, tx) {
      if (tx !== undefined) throw new InvalidInput({ field: 'tx', reason: 'needs a PostgreSQL store; the memory store has no transaction to join' })
      const job = checkNewJob(params.job)
      return insert(job, checkTime('nowMs', params.nowMs))
    },

    async getJob(params) {
      const { queue, id } = checkJobRef(params)
      const job = live.get(id)?.job ?? dead.get(id)
      return job !== undefined && job.queue === queue ? copy(job) : null
    },

    async claim(params) {
      const id = checkName('id', params.id)
      const claimToken = checkName('claimToken', params.claimToken)
      const nowMs = checkTime('nowMs', params.nowMs)
      const row = live.get(id)
      if (row === undefined) return { kind: 'obsolete', reason: dead.has(id) ? 'dead' : 'missing' }
      const job = row.job
      if (isClaimable(job, nowMs)) {
        const deadlineMs = nowMs + job.visibilityTimeoutMs
        row.job = { ...job, state: 'processing', attempts: job.attempts + 1, claimedAtMs: nowMs, claimToken, deadlineMs }
        row.dueMs = deadlineMs
        row.readySeq = ++readySeq
        row.revision++
        return { kind: 'claimed', job: copy(row.job) }
      }
      if (isExhausted(job, nowMs)) {
        bury(row, maxAttemptsExceeded, job.deadlineMs as number)
        return { kind: 'obsolete', reason: 'exhausted' }
      }
      return classify(job, nowMs)
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

    async ackBatch(params) {
      const claims = checkClaims(params.claims)
      const nowMs = checkTime('nowMs', params.nowMs)
      let acked = 0
      for (const claim of claims) if (validRow(claim.id, claim.claimToken, nowMs) !== undefined && live.delete(claim.id)) acked++
      return acked
    },

    async retry(params) {
      const { id, claimToken } = checkClaimRef(params)
      // A retried job keeps no error (seed 004 §1: lastError is dead-only); a budget death says why.
      checkError('error', params.error)
      const delayMs = checkDurationMs('delayMs', params.delayMs, 0)
      const nowMs = checkTime('nowMs', params.nowMs)
      const row = validRow(id, claimToken, nowMs)
      if (row === undefined) return null
      if (row.job.attempts >= row.job.maxAttempts) {
        bury(row, maxAttemptsExceeded, nowMs)
        return { kind: 'dead' }
      }
      const runAtMs = nowMs + delayMs
      row.job = { ...row.job, state: 'pending', runAtMs, claimToken: null, deadlineMs: null }
      row.dueMs = runAtMs
      row.readySeq = ++readySeq
      row.revision++
      return { kind: 'retried', runAtMs }
    },

    async fail(params) {
      const { id, claimToken } = checkClaimRef(params)
      const error = checkError('error', params.error)
      const nowMs = checkTime('nowMs', params.nowMs)
      const row = validRow(id, claimToken, nowMs)
      if (row === undefined) return false
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
        if (job.queue !== queue || job.deadLetterRetentionMs === null) continue
        if ((job.diedAtMs as number) + job.deadLetterRetentionMs <= nowMs && dead.delete(id)) purged++
      }
      let buried = 0
      for (const row of live.values()) {
        if (row.job.queue !== queue || !isExpired(row.job, nowMs)) continue
        if (isExhausted(row.job, nowMs)) bury(row, maxAttemptsExceeded, row.job.deadlineMs as number)
        else bury(row, expiredError, nowMs)
        buried++
      }
      return { dead: buried, purged }
    },

    async takeDue(params) {
      const nowMs = checkTime('nowMs', params.nowMs)
      const reserveUntilMs = checkTime('reserveUntilMs', params.reserveUntilMs)
      const limit = checkCount('limit', params.limit, 1, 10_000)
      const queues = checkQueues(params.queues)
      const inScope = (row: LiveRow) => queues === null || queues.includes(row.job.queue)
      for (const row of live.values()) {
        if (inScope(row) && row.dueMs !== null && row.dueMs <= nowMs && isExhausted(row.job, nowMs)) bury(row, maxAttemptsExceeded, row.job.deadlineMs as number)
      }
      const due = [...live.values()]
        .filter((row) => inScope(row) && row.dueMs !== null && row.dueMs <= nowMs && !isExpired(row.job, nowMs))
        .sort((a, b) => b.job.priority - a.job.priority || (a.dueMs as number) - (b.dueMs as number) || a.readySeq - b.readySeq)
        .slice(0, limit)
      return due.map((row): DueJob => {
        const dueMs = row.dueMs as number
        row.dueMs = reserveUntilMs
        row.revision++
        return { id: row.job.id, queue: row.job.queue, priority: row.job.priority, dueMs, readySeq: row.readySeq, revision: row.revision, expiresAtMs: row.job.expiresAtMs }
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
        if (row.dueMs === null || isExpired(row.job, nowMs) || (queues !== null && !queues.includes(row.job.queue))) continue
        if (next === null || row.dueMs < next) next = row.dueMs
      }
      return next
    },

    async dueQueues(params) {
      const nowMs = checkTime('nowMs', params.nowMs)
      const limit = checkCount('limit', params.limit, 1, 10_000)
      const earliest = new Map<string, number>()
      for (const row of live.values()) {
        if (row.dueMs === null || isExpired(row.job, nowMs)) continue
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
      for (const row of live.values()) {
        if (count >= limit) break
        if (row.job.queue === queue && row.dueMs === null && isClaimable(row.job, nowMs)) count++
      }
      return count
    },

    async putSchedule(params) {
      const name = checkName('name', params.name)
      const spec = checkName('spec', params.spec)
      const queue = checkName('queue', params.queue)
      const payload = validateJson('payload', params.payload)
      const nowMs = checkTime('nowMs', params.nowMs)
      const existing = schedules.get(name)
      if (existing !== undefined && existing.spec === spec && existing.queue === queue && canonical(existing.payload) === canonical(payload)) {
        return copy(existing)
      }
      const record: ScheduleRecord = { name, spec, queue, payload: copy(payload), anchorMs: nowMs, lastFiredMs: null, revision: (existing?.revision ?? 0) + 1 }
      schedules.set(name, record)
      return copy(record)
    },

    async listSchedules() {
      return [...schedules.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map(copy)
    },

    async acquireLease(params) {
      const name = checkName('name', params.name)
      const holder = checkName('holder', params.holder)
      const nowMs = checkTime('nowMs', params.nowMs)
      const ttlMs = checkDurationMs('ttlMs', params.ttlMs, 1)
      const lease = leases.get(name)
      if (lease === undefined) {
        leases.set(name, { holder, fence: 1, expiresAtMs: nowMs + ttlMs })
        return { fence: 1 }
      }
      const live = lease.expiresAtMs > nowMs
      if (live && lease.holder !== holder) return null
      const fence = live ? lease.fence : lease.fence + 1
      leases.set(name, { holder, fence, expiresAtMs: nowMs + ttlMs })
      return { fence }
    },

    async fireSchedule(params) {
      const leaseName = checkName('leaseName', params.leaseName)
      const fence = checkCount('fence', params.fence, 1, Number.MAX_SAFE_INTEGER)
      const name = checkName('name', params.name)
      const expectedRevision = checkCount('expectedRevision', params.expectedRevision, 1, Number.MAX_SAFE_INTEGER)
      const lastFiredMs = checkTime('lastFiredMs', params.lastFiredMs)
      const nowMs = checkTime('nowMs', params.nowMs)
      if (!Array.isArray(params.jobs)) throw new InvalidInput({ field: 'jobs', reason: 'must be an array' })
      const jobs = params.jobs.map((job, index) => checkNewJob(job, `jobs[${index}]`))
      if (leases.get(leaseName)?.fence !== fence) return 'fenced'
      const schedule = schedules.get(name)
      if (schedule === undefined || schedule.revision !== expectedRevision) return 'conflict'
      for (const job of jobs) insert(job, nowMs)
      schedules.set(name, { ...schedule, lastFiredMs, revision: schedule.revision + 1 })
      return 'fired'
    },

    async close() {},
  }

  function classify(job: JobRecord, nowMs: number): ClaimOutcome {
    if (job.state === 'processing' && (job.deadlineMs as number) > nowMs) return { kind: 'already-started' }
    if (isExpired(job, nowMs)) return { kind: 'obsolete', reason: 'expired' }
    return { kind: 'obsolete', reason: 'not-due' }
  }
}
