/**
 * MemoryJobRows — the state of one memory job store (MemoryJobStore.ts) and the row steps its
 * parts share: live rows (pending, processing) and dead rows in two maps, as the SQL store keeps
 * two tables, with the paused queues, the ready order counter, the fairness passes, the claim
 * fence check, the concurrency slots, the rate buckets and what other transactions hold locked
 * (MemoryRowLocks.ts) beside them in one record
 * (`MemoryJobState`). Every part of the store (MemoryJobEnqueue.ts, MemoryJobClaims.ts,
 * MemoryJobHandles.ts, MemoryJobDueTimes.ts, …) is module functions over that record, as the SQL
 * store's parts are over their session.
 *
 * Invariants: a job id is in at most one of `live` and `dead`; `deadKeys` holds a key only for a
 * dead job; claim fields are set exactly while processing; values leave as copies (`copy`).
 * Every change to the record happens inside one synchronous step of an operation, which is what
 * makes each operation atomic.
 *
 * Does not: validate input (the operations do, JobInput.ts, before any change), or decide a rule
 * (domain/JobRules.ts does).
 */
import { isValidClaim } from '../../domain/JobRules.ts'
import { type ClaimFence, type JobRecord, type Waiter } from './JobStore.ts'
import { makeMemoryFenceCheck, type QueueRangeReader } from './MemoryClaimFence.ts'
import { makeMemorySlots, type MemorySlots } from './MemoryConcurrencySlots.ts'
import { makeMemoryBuckets, type MemoryBuckets } from './MemoryRateBuckets.ts'

/** A head statement of another transaction in flight (MemoryRowLocks.ts computes the rows it holds): the queues it reads (null: every queue), how many rows it asks for, and whether it claims or reserves. */
export interface HeldHead {
  readonly queues: ReadonlyArray<string> | null
  readonly rows: number
  readonly kind: 'claim' | 'reserve'
  /** A claim's fence (JobStore.ts `ClaimFence`): a claim whose fence no longer holds reads, and so locks, no row. */
  readonly fence?: ClaimFence | null
  /** A reservation's concurrency keys to pass over (`takeDue`'s `skipConcurrencyKeys`): their pending rows it never reads. */
  readonly skipKeys?: ReadonlyArray<string>
}

/** A pending or processing job with what the store orders and guards it by. */
export interface LiveRow {
  job: JobRecord
  dueMs: number | null
  readySeq: number
  revision: number
  /** The job's fairness pass (jobSql's migration 010 says how it is drawn); absent when it took no turn (MemoryFairPasses.ts). */
  fairPass?: number
  /** A limited job's concurrency key (JobStore.ts's "Concurrency keys"); absent without one. */
  concurrencyKey?: string
  /** A keyed job's fairness key, whose rate bucket its claims take from (MemoryRateBuckets.ts); absent without one. */
  fairnessKey?: string
  /** Set by every claim: the claim order key it displaced, which `release` restores. */
  unclaimed?: { readonly dueMs: number | null; readonly readySeq: number }
}

/** Everything one memory job store holds, shared by its parts. */
export interface MemoryJobState {
  /** Pending and processing jobs by id. */
  readonly live: Map<string, LiveRow>
  /** Dead jobs by id. */
  readonly dead: Map<string, JobRecord>
  /** Dead jobs' concurrency keys, which `retryDead` gives back (the SQL dead_jobs row keeps them). */
  readonly deadKeys: Map<string, string>
  /** Paused queues and when each was paused (JobStore.ts's "Paused queues"). */
  readonly paused: Map<string, number>
  /** Fairness passes by queue, then by fairness key: each key's last pass (MemoryClaimOrder.ts). */
  readonly lastPasses: Map<string, Map<string, number>>
  /** The last ready order given; each insert, claim, heartbeat, retry and revival takes the next. */
  readySeq: number
  /** Passes a null fence and one at its queue's current range; throws `OwnershipLost` otherwise. */
  readonly holdFence: (fence: ClaimFence | null) => void
  /** The per-key concurrency guard over `live`. */
  readonly slots: MemorySlots
  /** The rate guard. */
  readonly buckets: MemoryBuckets
  /** Claims registered as waiters (HandOver.ts), by claim token, in the order they registered. */
  readonly waiters: Map<string, Waiter>
  /** The head statements of other transactions in flight now, whose rows the skipping statements pass over (MemoryRowLocks.ts). */
  readonly heldHeads: () => ReadonlyArray<HeldHead>
}

/**
 * Makes an empty store state whose fences are checked against `queueRanges` (absent: every fence
 * is refused) and whose rows other transactions hold as `heldHeads` says (absent: none).
 */
export function makeMemoryJobState(queueRanges: QueueRangeReader | undefined, heldHeads: () => ReadonlyArray<HeldHead> = () => []): MemoryJobState {
  const live = new Map<string, LiveRow>()
  return {
    live,
    dead: new Map(),
    deadKeys: new Map(),
    paused: new Map(),
    lastPasses: new Map(),
    readySeq: 0,
    holdFence: makeMemoryFenceCheck(queueRanges),
    slots: makeMemorySlots(live),
    buckets: makeMemoryBuckets(),
    waiters: new Map(),
    heldHeads,
  }
}

/** A deep copy: what goes in or comes out, so no caller can mutate stored state. */
export const copy = <T>(value: T): T => structuredClone(value)

/** Moves `row` to the dead jobs, its claim cleared, keeping its concurrency key for `retryDead`. */
export function bury(state: MemoryJobState, row: LiveRow, lastError: string, diedAtMs: number): void {
  state.live.delete(row.job.id)
  if (row.concurrencyKey !== undefined) state.deadKeys.set(row.job.id, row.concurrencyKey)
  state.dead.set(row.job.id, { ...row.job, state: 'dead', claimToken: null, deadlineMs: null, lastError, diedAtMs })
}

/** The live job of `queue` holding `key`, as the SQL stores' partial unique index sees it. */
export function holderOf(state: MemoryJobState, queue: string, key: string | null): LiveRow | undefined {
  if (key === null) return undefined
  for (const row of state.live.values()) if (row.job.queue === queue && row.job.key === key) return row
  return undefined
}

/** A live row's keys and pass, as getJob answers them. */
export function keysOfRow(row: LiveRow): Pick<JobRecord, 'fairnessKey' | 'fairPass' | 'concurrencyKey'> {
  return {
    ...(row.fairnessKey === undefined ? {} : { fairnessKey: row.fairnessKey }),
    ...(row.fairPass === undefined ? {} : { fairPass: row.fairPass }),
    ...(row.concurrencyKey === undefined ? {} : { concurrencyKey: row.concurrencyKey }),
  }
}

/** The live row of `id` when `claimToken` is its valid claim at `nowMs` (JobRules.ts's `isValidClaim`). */
export function validRow(state: MemoryJobState, id: string, claimToken: string, nowMs: number): LiveRow | undefined {
  const row = state.live.get(id)
  return row !== undefined && isValidClaim(row.job, claimToken, nowMs) ? row : undefined
}
