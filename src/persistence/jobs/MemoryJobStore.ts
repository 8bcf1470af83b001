/**
 * MemoryJobStore — the JobStore contract (JobStore.ts) in process memory: fast, for tests, the
 * simulator's fast mode and `open({ store: 'memory' })`.
 *
 * Owns: putting the store together from its parts over one state record (MemoryJobRows.ts: live
 * rows and dead rows in two maps, as the SQL store keeps two tables, with the paused queues, the
 * ready order, the fence check, the slots and the buckets beside them), and the operations on a
 * job by id that belong to none of the parts (`getJob`, `cancel`, `retryDead`, and the sweep,
 * `sweepExpired`). The parts, each module functions over that record as the SQL store's parts
 * are over their session (sql/SqlJobStore.ts):
 * - MemoryJobEnqueue.ts: the inserts (`enqueue`, `enqueueMany`, and the insert schedules fire by);
 * - MemoryJobClaims.ts: the claims (`claim`, `claimMany`, `claimDue`, `ackAndClaimDue`), fenced or not;
 * - MemoryJobHandles.ts: a claim holder's operations (heartbeat, acks, progress, release, retry, fail);
 * - MemoryJobDueTimes.ts: delivery due-times (`takeDue`, `confirmDelivered`, …);
 * - MemoryClaimOrder.ts: the claim order and the fairness passes that place keyed rows in it;
 * - MemoryJobSchedules.ts: schedules and leases; MemoryJobPauses.ts: pausing and resuming queues;
 *   MemoryJobAdmin.ts: the admin reads;
 * - MemoryConcurrencySlots.ts, MemoryRateBuckets.ts, MemoryClaimFence.ts: the guards a claim asks;
 *   MemoryRowLocks.ts: the rows other transactions hold, which the skipping statements pass over.
 *
 * Every operation validates first (JobInput.ts), then runs to completion synchronously inside
 * its promise, so each one is atomic as the SQL statements are: a fenced call awaits nothing
 * between its check and its last write.
 *
 * Invariants: values go in and come out as copies (no caller can mutate stored state); claim
 * fields are set exactly while processing; every rule is a call into domain/JobRules.ts, the
 * rules the SQL statements spell out in their WHERE clauses (persistence/jobs/sql/jobSql.ts).
 *
 * Does not: persist anything, or refuse a transactional enqueue's `tx` silently — it is
 * `InvalidInput` here, since there is no transaction to join.
 */
import { isRetentionOver, isExpired, sweptDeath } from '../../domain/JobRules.ts'
import { jobClaimsKept } from '../../kernel/Limits.ts'
import { registerSizes } from '../../kernel/Sizes.ts'
import { checkJobRef, checkName, checkTime } from './JobInput.ts'
import type { JobRecord, JobStore } from './JobStore.ts'
import type { QueueRangeReader } from './MemoryClaimFence.ts'
import type { HeldHead } from './MemoryRowLocks.ts'
import { fairnessKeyCount, forgetIdleKeys } from './MemoryClaimOrder.ts'
import { makeMemoryJobAdmin } from './MemoryJobAdmin.ts'
import { makeMemoryJobClaims } from './MemoryJobClaims.ts'
import { makeMemoryJobDueTimes, rearmResumed } from './MemoryJobDueTimes.ts'
import { insert, makeMemoryJobEnqueue } from './MemoryJobEnqueue.ts'
import { makeMemoryJobHandles } from './MemoryJobHandles.ts'
import { makeMemoryJobPauses } from './MemoryJobPauses.ts'
import { bury, copy, holderOf, keysOfRow, makeMemoryJobState, type MemoryJobState } from './MemoryJobRows.ts'
import { makeMemorySchedules } from './MemoryJobSchedules.ts'

/** What a memory job store is composed with. */
export interface MemoryJobStoreOptions {
  /**
   * The range ids of the memory Matching store beside it (a MemoryStore is one), against which
   * claim fences are checked; absent: no physical queue is known and every fence is refused.
   */
  readonly queueRanges?: QueueRangeReader
  /**
   * The head statements of other transactions in flight at this moment, whose rows `claimDue`,
   * `ackAndClaimDue` and `takeDue` pass over as `FOR UPDATE SKIP LOCKED` does (MemoryRowLocks.ts):
   * the simulator's row-lock windows. Absent: no row is ever held, as in one process.
   */
  readonly heldHeads?: () => ReadonlyArray<HeldHead>
}

// Purges `queue`'s dead jobs past retention and buries its expired live ones, then forgets its idle fairness keys.
async function sweepExpired(state: MemoryJobState, params: Parameters<JobStore['sweepExpired']>[0]): ReturnType<JobStore['sweepExpired']> {
  const queue = checkName('queue', params.queue)
  const nowMs = checkTime('nowMs', params.nowMs)
  // Retention applies to rows dead before this call, as the SQL statement's snapshot does.
  let purged = 0
  for (const [id, job] of state.dead) {
    if (job.queue === queue && isRetentionOver(job, nowMs) && state.dead.delete(id)) {
      state.deadKeys.delete(id)
      purged++
    }
  }
  let buried = 0
  for (const row of state.live.values()) {
    if (row.job.queue !== queue || !isExpired(row.job, nowMs)) continue
    const death = sweptDeath(row.job, nowMs)
    bury(state, row, death.reason, death.diedAtMs)
    buried++
  }
  forgetIdleKeys(state, queue, nowMs)
  return { dead: buried, purged }
}

// Brings a dead job back pending, due now, with its attempts and claim history started again.
async function retryDead(state: MemoryJobState, params: Parameters<JobStore['retryDead']>[0]): ReturnType<JobStore['retryDead']> {
  const { queue, id } = checkJobRef(params)
  const nowMs = checkTime('nowMs', params.nowMs)
  const job = state.dead.get(id)
  if (job === undefined || job.queue !== queue) return { kind: 'not-dead' }
  const holder = holderOf(state, queue, job.key)
  if (holder !== undefined) return { kind: 'key-taken', liveId: holder.job.id }
  state.dead.delete(id)
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
  const concurrencyKey = state.deadKeys.get(id)
  state.deadKeys.delete(id)
  state.live.set(id, { job: revived, dueMs: nowMs, readySeq: ++state.readySeq, revision: 1, ...(concurrencyKey === undefined ? {} : { concurrencyKey }) })
  return { kind: 'retried', job: copy(revived) }
}

/** Makes an empty memory job store. */
export function makeMemoryJobStore(options: MemoryJobStoreOptions = {}): JobStore {
  const state = makeMemoryJobState(options.queueRanges, options.heldHeads)
  const { live, dead } = state
  const store: JobStore = {
    kind: 'memory',

    ...makeMemoryJobEnqueue(state),
    ...makeMemoryJobClaims(state),
    ...makeMemoryJobHandles(state),
    ...makeMemoryJobDueTimes(state),

    async getJob(params) {
      const { queue, id } = checkJobRef(params)
      const row = live.get(id)
      if (row !== undefined) return row.job.queue === queue ? { ...copy(row.job), ...keysOfRow(row) } : null
      const job = dead.get(id)
      return job !== undefined && job.queue === queue ? copy(job) : null
    },

    async cancel(params) {
      const { queue, id } = checkJobRef(params)
      return live.get(id)?.job.queue === queue && live.delete(id)
    },

    sweepExpired: (params) => sweepExpired(state, params),
    retryDead: (params) => retryDead(state, params),

    ...makeMemoryJobPauses(state.paused, (queue, nowMs) => rearmResumed(state, queue, nowMs)),
    ...makeMemorySchedules((job, nowMs) => insert(state, job, nowMs)),
    ...makeMemoryJobAdmin(() => [...live.values()].map((row) => row.job), () => dead.values()),

    async close() {},
  }
  // The fairness keys it remembers, over every queue (the long-soak bench and the sweep's test read it).
  return registerSizes(store, () => ({ fairnessKeys: fairnessKeyCount(state) }))
}
