/**
 * MemoryJobDueTimes — the delivery due-times of the memory job store (JobStore.ts's "Delivery
 * due-times"), the mirror of SqlJobDueTimes.ts: `takeDue` reserves due rows in claim order
 * (MemoryClaimOrder.ts), passing over the rows other transactions hold (MemoryRowLocks.ts),
 * `confirmDelivered` clears a reservation once Matching holds the task, `releaseDelivered` makes
 * rows due again, and the reads a due-time driver plans by
 * (`nextDueMs`, `dueQueues`, `deliverableCount`); also the rows a resumed queue makes due again
 * (`rearmResumed`, for MemoryJobPauses.ts).
 *
 * Invariants: inputs validated (JobInput.ts) before any change; a reservation moves the row's
 * revision on, and only a delivery at that revision confirms or releases it; `takeDue` buries
 * what its SQL statement buries (exhausted claims, a keyed job's lapsed claim past its expiry)
 * before it reserves.
 *
 * Does not: claim, hand tasks to Matching (the engine's DueDriver does), or read a clock.
 */
import { InvalidInput } from '../../domain/errors.ts'
import { deadReasonExhausted, deadReasonExpired, isClaimable, isExhausted, isExpired } from '../../domain/JobRules.ts'
import { checkCount, checkName, checkQueues, checkSkipKeys, checkTime } from './JobInput.ts'
import type { DueJob, JobRecord, JobStore } from './JobStore.ts'
import { claimOrder } from './MemoryClaimOrder.ts'
import { bury, type LiveRow, type MemoryJobState } from './MemoryJobRows.ts'
import { rowsHeldBy } from './MemoryRowLocks.ts'

// A lapsed claim past the job's expiry (jobSql.ts's `lapsedExpiredKeyed`, without the key).
const isLapsedExpired = (job: JobRecord, nowMs: number): boolean => job.state === 'processing' && job.deadlineMs !== null && job.deadlineMs <= nowMs && job.expiresAtMs !== null && job.expiresAtMs <= nowMs

// A pending job of a concurrency key `takeDue` was told to pass over (`skipConcurrencyKeys`).
function isSkipped(row: LiveRow, skipped: ReadonlySet<string>): boolean {
  return row.job.state === 'pending' && row.concurrencyKey !== undefined && skipped.has(row.concurrencyKey)
}

// Reserves up to `limit` due rows until `reserveUntilMs`, in claim order, after burying what is dead.
async function takeDue(state: MemoryJobState, params: Parameters<JobStore['takeDue']>[0]): ReturnType<JobStore['takeDue']> {
  const { live, paused, slots, buckets } = state
  const nowMs = checkTime('nowMs', params.nowMs)
  const reserveUntilMs = checkTime('reserveUntilMs', params.reserveUntilMs)
  const limit = checkCount('limit', params.limit, 0, 10_000)
  const queues = checkQueues(params.queues)
  const skipped = new Set(checkSkipKeys(params.skipConcurrencyKeys))
  const inScope = (row: LiveRow) => queues === null || queues.includes(row.job.queue)
  for (const row of live.values()) {
    if (!inScope(row)) continue
    const isDue = row.dueMs !== null && row.dueMs <= nowMs
    if (isDue && isExhausted(row.job, nowMs)) bury(state, row, deadReasonExhausted, row.job.deadlineMs as number)
    // A keyed job's lapsed claim that expired holds its slot until buried: buried now, as takeDueSql
    // does — whether its row is due or its task is with Matching (due null), whose claim may never come.
    else if ((isDue || row.dueMs === null) && row.concurrencyKey !== undefined && isLapsedExpired(row.job, nowMs)) bury(state, row, deadReasonExpired, nowMs)
  }
  // A pending job of a key at its limit is passed over, and of a key with room only as many
  // are reserved as it has room for, as the SQL statement does.
  const held = slots.held()
  // Rows another transaction holds are passed over (FOR UPDATE SKIP LOCKED, MemoryRowLocks.ts).
  const locked = rowsHeldBy(state, state.heldHeads(), nowMs)
  const due = [...live.values()]
    .filter((row) => inScope(row) && !locked.has(row.job.id) && row.dueMs !== null && row.dueMs <= nowMs && !isExpired(row.job, nowMs) && !paused.has(row.job.queue) && !isSkipped(row, skipped) && slots.hasRoom(row, held) && buckets.hasToken(row, nowMs))
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
}

// The earliest due queues, one entry a queue, earliest first (ties by name).
async function dueQueues(state: MemoryJobState, params: Parameters<JobStore['dueQueues']>[0]): ReturnType<JobStore['dueQueues']> {
  const nowMs = checkTime('nowMs', params.nowMs)
  const limit = checkCount('limit', params.limit, 1, 10_000)
  const earliest = new Map<string, number>()
  for (const row of state.live.values()) {
    // A lapsed claim that expired only after its deadline still counts (dueQueuesSql says why).
    const judgedAtMs = row.job.state === 'processing' ? Math.min(row.dueMs ?? nowMs, nowMs) : nowMs
    const buriedByScan = row.job.state === 'processing' && row.concurrencyKey !== undefined
    if (row.dueMs === null || (isExpired(row.job, judgedAtMs) && !buriedByScan) || state.paused.has(row.job.queue)) continue
    const known = earliest.get(row.job.queue)
    if (known === undefined || row.dueMs < known) earliest.set(row.job.queue, row.dueMs)
  }
  return [...earliest]
    .map(([queue, nextDueMs]) => ({ queue, nextDueMs }))
    .sort((a, b) => a.nextDueMs - b.nextDueMs || (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0))
    .slice(0, limit)
}

/**
 * Makes the rows of resumed `queue` whose task went to Matching due again: a claim refused by the
 * pause may have dropped that task. Pending rows are due at the resume, claimed ones (whose lapse
 * went to Matching) at the later of the resume and their deadline.
 */
export function rearmResumed(state: MemoryJobState, queue: string, nowMs: number): void {
  for (const row of state.live.values()) {
    if (row.job.queue === queue && row.dueMs === null) {
      row.dueMs = row.job.state === 'processing' ? Math.max(nowMs, row.job.deadlineMs as number) : nowMs
      row.revision++
    }
  }
}

/** The due-time operations over `state`. */
export function makeMemoryJobDueTimes(state: MemoryJobState): Pick<JobStore, 'takeDue' | 'confirmDelivered' | 'releaseDelivered' | 'nextDueMs' | 'dueQueues' | 'deliverableCount'> {
  const { live, paused, buckets } = state
  return {
    takeDue: (params) => takeDue(state, params),

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

    dueQueues: (params) => dueQueues(state, params),

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
  }
}
