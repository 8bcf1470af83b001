/**
 * MemoryJobEnqueue — the inserting half of the memory job store (MemoryJobStore.ts): `enqueue`
 * and `enqueueMany`, the mirror of SqlJobEnqueue.ts, and `insert`, the one way a pending row
 * enters, which schedules fire through too (MemoryJobSchedules.ts). An insert records its
 * job's concurrency limit and rate limits, draws a job's fairness pass in its
 * turn (MemoryFairPasses.ts, MemoryClaimOrder.ts), and takes the next ready order.
 *
 * Keys: a keyed job whose key a live job holds answers with the holder and writes nothing; in a
 * batch, a later job holding an earlier one's key answers with it, as a second enqueue would.
 *
 * Invariants: every input is validated (JobInput.ts) before any insert, and every id of a batch
 * is free before the first (all or nothing); a claimed insert holds its fence in the same
 * synchronous step, unless the job is limited or rated (it is then inserted pending, its claim
 * token and fence dropped).
 *
 * Waiters (HandOver.ts): `addWaiters` and `removeWaiters` keep the claims registered as waiting,
 * and an enqueue with `toWaiter` takes the first of its queue as the SQL statement does; the
 * `handed` message is the caller's to send (this store has no transport).
 *
 * Does not: join a caller's transaction — a `tx` is `InvalidInput` here, since there is none.
 */
import { InvalidInput } from '../../domain/errors.ts'
import { assert } from '../../kernel/assert.ts'
import { isClaimable } from '../../domain/JobRules.ts'
import { validateName } from '../../domain/QueueKey.ts'
import { isHandOverCandidate } from './HandOver.ts'
import { checkEnqueue, checkNewJobs, checkTime, checkWaiters, isRated } from './JobInput.ts'
import { insertedJobRecord, type JobRecord, type JobStore, type NewJob, type Waiter } from './JobStore.ts'
import { nextPass } from './MemoryClaimOrder.ts'
import { turnOf } from './MemoryFairPasses.ts'
import { claimRow } from './MemoryJobClaims.ts'
import { copy, holderOf, keysOfRow, type LiveRow, type MemoryJobState } from './MemoryJobRows.ts'

/** Inserts `job` pending, due at the later of its run time and `nowMs`; answers a copy of the record, or of the live holder of its key. */
export function insert(state: MemoryJobState, job: NewJob, nowMs: number): JobRecord {
  const holder = holderOf(state, job.queue, job.key ?? null)
  // The holder as SQL stores answer it: the whole row, read as getJob reads it.
  if (holder !== undefined) return { ...copy(holder.job), ...keysOfRow(holder) }
  assert(!state.live.has(job.id) && !state.dead.has(job.id), `job id ${job.id} is already taken`)
  const record = insertedJobRecord(job, nowMs, null, copy(job.payload))
  const dueMs = Math.max(job.runAtMs, nowMs)
  const row: LiveRow = { job: record, dueMs, readySeq: ++state.readySeq, revision: 1 }
  const turn = turnOf(state.lastPasses, job)
  if (turn !== null) row.fairPass = nextPass(state, job, dueMs, turn)
  if (job.fairnessKey !== undefined && job.fairnessKey !== null) row.fairnessKey = job.fairnessKey
  state.buckets.setLimits(job, nowMs)
  if (job.concurrencyKey !== undefined && job.concurrencyKey !== null) {
    row.concurrencyKey = job.concurrencyKey
    state.slots.setLimit(job.queue, job.concurrencyKey, job.concurrencyLimit as number)
  }
  state.live.set(job.id, row)
  return copy(record)
}

/**
 * The waiter `job` goes to (HandOver.ts), taken out of the store's waiters: the queue's first
 * registered that still waits, when its fence is current, the job may be handed over, the queue
 * is neither paused nor rated, and no other row of it is claimable now.
 */
function takeWaiter(state: MemoryJobState, job: NewJob, nowMs: number): Waiter | undefined {
  const { queue } = job
  if (!isHandOverCandidate(job, nowMs, Buffer.byteLength(JSON.stringify(job.payload), 'utf8')) || state.paused.has(queue) || state.buckets.hasBuckets(queue)) return undefined
  for (const row of state.live.values()) if (row.job.queue === queue && (row.dueMs === null || row.dueMs <= nowMs) && isClaimable(row.job, nowMs)) return undefined
  // The first waiter of the queue still waiting under its partition's current range; one whose
  // engine lost the partition is passed over (its engine takes it back, or it expires).
  for (const waiter of state.waiters.values()) {
    if (waiter.queue !== queue || waiter.untilMs <= nowMs || !isFenceCurrent(state, waiter)) continue
    state.waiters.delete(waiter.claimToken)
    return waiter
  }
  return undefined
}

// Whether the waiter's fence is still its partition's range (the check `holdFence` makes, as a boolean).
function isFenceCurrent(state: MemoryJobState, waiter: Waiter): boolean {
  try {
    state.holdFence(waiter.fence)
    return true
  } catch {
    return false
  }
}

const refuseTx = (tx: unknown): void => {
  if (tx !== undefined) throw new InvalidInput({ field: 'tx', reason: 'needs a PostgreSQL store; the memory store has no transaction to join' })
}

/** The insert operations over `state`. */
export function makeMemoryJobEnqueue(state: MemoryJobState): Pick<JobStore, 'enqueue' | 'enqueueMany' | 'addWaiters' | 'removeWaiters'> {
  const { live, dead } = state
  return {
    async addWaiters(params) {
      const { nowMs, claimTokens, ...waiter } = checkWaiters(params)
      for (const [token, known] of state.waiters) if (known.queue === waiter.queue && known.untilMs <= nowMs) state.waiters.delete(token)
      for (const claimToken of claimTokens) {
        state.waiters.delete(claimToken)
        state.waiters.set(claimToken, { ...waiter, claimToken })
      }
    },

    async removeWaiters(params) {
      if (!Array.isArray(params.claimTokens)) throw new InvalidInput({ field: 'claimTokens', reason: 'must be an array of tokens' })
      return params.claimTokens.map((token, index) => validateName(`claimTokens[${index}]`, token)).filter((token) => state.waiters.delete(token))
    },

    async enqueueMany(params, tx) {
      refuseTx(tx)
      const jobs = checkNewJobs(params.jobs)
      const nowMs = checkTime('nowMs', params.nowMs)
      // All or nothing: every id is free before the first insert (a later job holding an earlier
      // one's key answers with it, as a second enqueue would).
      for (const job of jobs) assert(!live.has(job.id) && !dead.has(job.id), `job id ${job.id} is already taken`)
      return jobs.map((job) => insert(state, job, nowMs)).map(({ id, runAtMs }) => ({ id, runAtMs }))
    },

    async enqueue(params, tx) {
      refuseTx(tx)
      const { job, nowMs, claimToken, fence, toWaiter } = checkEnqueue(params)
      const waiter = toWaiter ? takeWaiter(state, job, nowMs) : undefined
      if (waiter !== undefined) {
        insert(state, job, nowMs)
        return { ...copy(claimRow(state, live.get(job.id) as LiveRow, waiter.claimToken, nowMs)), handedTo: { hostId: waiter.hostId, fence: waiter.fence } }
      }
      // A limited or rated job is inserted pending, its claim token and the fence guarding it
      // dropped; any other job of a queue with rate buckets is inserted pending (its fence held).
      const limited = (job.concurrencyKey !== undefined && job.concurrencyKey !== null) || isRated(job)
      if (!limited) state.holdFence(fence)
      const record = insert(state, job, nowMs)
      if (state.buckets.hasBuckets(job.queue)) return record
      // Inserted claimed (not a key's holder, not in a paused queue, not limited): as `claim` leaves a row.
      return claimToken === null || record.id !== job.id || state.paused.has(job.queue) || limited ? record : copy(claimRow(state, live.get(job.id) as LiveRow, claimToken, nowMs))
    },
  }
}
