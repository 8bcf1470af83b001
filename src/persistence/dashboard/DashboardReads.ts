/**
 * DashboardReads — what the operator's dashboard reads beyond the JobStore contract: every
 * queue's counts (capped), a queue's jobs newest first, its pending jobs by fairness key (capped),
 * a search by id or key, the engines and
 * the physical queues they own, and the two writes the contract lacks (deleting dead jobs, the
 * ids of a queue's dead jobs for bulk actions).
 *
 * Invariants: every read is bounded — counts stop at `countCap` and say so (`capped`), pages by
 * keyset on the job id (ids sort by creation time, so id order is age order), never OFFSET and
 * never a count over a table. The SQL implementation (sql/SqlDashboardReads.ts) answers each from
 * an index; `makeContractReads` answers from the JobStore contract alone, for the memory store,
 * where the tables are in-process and small.
 *
 * Does not: render anything or validate what a person typed (the dashboard does).
 */
import { InvalidInput } from '../../domain/errors.ts'
import type { JobRecord, JobState, JobStore } from '../jobs/JobStore.ts'

/** A count that stopped at a cap: `capped` means "at least `count`". */
export interface CappedCount {
  readonly count: number
  readonly capped: boolean
}

/** One queue as the queues page shows it. */
export interface QueueSummary {
  readonly queue: string
  readonly pending: CappedCount
  readonly processing: CappedCount
  readonly dead: CappedCount
  /** Pending jobs whose run time is still ahead. */
  readonly scheduledLater: CappedCount
  /** Creation time of the oldest pending job; null when none is pending. */
  readonly oldestPendingCreatedAtMs: number | null
  /**
   * Jobs that died per minute over the last `throughputMinutes` minutes, newest minute first
   * (index 0 is the minute ending now). Completions are not counted: an acked job is deleted and
   * the store keeps no trace of it.
   */
  readonly diedPerMinute: ReadonlyArray<number>
  /** True when deaths of the last hour passed the count cap and older minutes are undercounted. */
  readonly diedCapped: boolean
}

/** Minutes of history behind the queues page's deaths chart. */
export const throughputMinutes = 60

/** Buckets death times into `throughputMinutes` minutes ending at `nowMs`, newest first. */
export function bucketDeaths(diedAtMs: ReadonlyArray<number>, nowMs: number): number[] {
  const buckets = Array.from({ length: throughputMinutes }, () => 0)
  for (const died of diedAtMs) {
    const minute = Math.floor((nowMs - died) / 60_000)
    if (minute >= 0 && minute < throughputMinutes) buckets[minute] = (buckets[minute] ?? 0) + 1
  }
  return buckets
}

/** An engine's membership row. */
export interface EngineRow {
  readonly hostId: string
  readonly lastSeenMs: number
  readonly expiresAtMs: number
}

/** A physical queue's metadata row: who may write it is fenced by `rangeId`. */
export interface PhysicalQueueRow {
  readonly queueKey: string
  readonly namespace: string
  readonly family: string
  readonly taskType: string
  readonly partition: number
  readonly version: string | null
  readonly rangeId: number
  readonly lastTaskId: number
  readonly updatedAtMs: number
}

/** One fairness key's pending jobs (`key` null: the jobs without a key). */
export interface KeyBacklog {
  readonly key: string | null
  readonly pending: number
}

/** A queue's pending jobs by fairness key; `capped`: counted over the first `countCap` only, each count a lower bound. */
export interface FairnessBacklog {
  readonly keys: ReadonlyArray<KeyBacklog>
  readonly capped: boolean
}

/** The dashboard's reads (and its two writes). */
export interface DashboardReads {
  /** Whether counts and pages come from SQL indexes (true) or the in-process contract (false). */
  readonly indexed: boolean
  /** The first `limit` queues by name that hold jobs, each counted up to `countCap`. */
  queues(params: { readonly nowMs: number; readonly limit: number; readonly countCap: number }): Promise<ReadonlyArray<QueueSummary>>
  /** Up to `limit` jobs of `queue` in `state`, newest first, older than `beforeId` (null: from the newest). */
  jobsPage(params: { readonly queue: string; readonly state: JobState; readonly limit: number; readonly beforeId: string | null }): Promise<ReadonlyArray<JobRecord>>
  /** Jobs whose id is `text` (any queue), or — given `queue` — whose key is `text` in that queue. */
  findJobs(params: { readonly text: string; readonly queue: string | null; readonly limit: number }): Promise<ReadonlyArray<JobRecord>>
  /** Every engine row (live or expired), by host id, at most `limit`. */
  hosts(params: { readonly limit: number }): Promise<ReadonlyArray<EngineRow>>
  /** Physical queue metadata rows, by namespace, family and partition, at most `limit`. */
  physicalQueues(params: { readonly limit: number }): Promise<ReadonlyArray<PhysicalQueueRow>>
  /**
   * The pending jobs of `queue` counted by fairness key, most first, at most `limit` keys, over at
   * most `countCap` pending jobs (in id order, so the oldest): how far behind each tenant is.
   */
  pendingByFairnessKey(params: { readonly queue: string; readonly limit: number; readonly countCap: number }): Promise<FairnessBacklog>
  /** The paused queues and when each was paused, by name, at most `limit`. */
  pausedQueues(params: { readonly limit: number }): Promise<ReadonlyArray<{ readonly queue: string; readonly pausedAtMs: number }>>
  /** The ids of up to `limit` dead jobs of `queue`, oldest first. */
  deadIds(params: { readonly queue: string; readonly limit: number }): Promise<ReadonlyArray<string>>
  /** Deletes the dead jobs of `queue` named in `ids`; returns how many were deleted. */
  deleteDead(params: { readonly queue: string; readonly ids: ReadonlyArray<string> }): Promise<number>
}

const capped = (count: number, cap: number): CappedCount => (count > cap ? { count: cap, capped: true } : { count, capped: false })

// Every job of `queue` in `state`, in id order, read page by page through the contract.
async function allJobs(jobStore: JobStore, queue: string, state: JobState): Promise<JobRecord[]> {
  const jobs: JobRecord[] = []
  for (let afterId: string | null = null; ; ) {
    const page: ReadonlyArray<JobRecord> = await jobStore.listJobs({ queue, state, limit: 1_000, afterId })
    jobs.push(...page)
    if (page.length < 1_000) return jobs
    afterId = page.at(-1)?.id ?? null
  }
}

/**
 * Dashboard reads from the JobStore contract alone (the memory store). Pages are cut from whole
 * lists, which is fine in-process and would not be on a database; engines and physical queues
 * are not visible through the contract, so those lists are empty, and neither are fairness keys,
 * so no queue shows pending jobs by key; dead jobs cannot be deleted.
 */
export function makeContractReads(jobStore: JobStore): DashboardReads {
  return {
    indexed: false,
    async queues({ nowMs, limit, countCap }) {
      const counts = await jobStore.countQueues({ limit })
      return Promise.all(
        counts.map(async (row) => {
          const pending = await allJobs(jobStore, row.queue, 'pending')
          const died = (await allJobs(jobStore, row.queue, 'dead')).map((job) => job.diedAtMs ?? 0)
          return {
            queue: row.queue,
            pending: capped(row.pending, countCap),
            processing: capped(row.processing, countCap),
            dead: capped(row.dead, countCap),
            scheduledLater: capped(pending.filter((job) => job.runAtMs > nowMs).length, countCap),
            oldestPendingCreatedAtMs: pending.length === 0 ? null : Math.min(...pending.map((job) => job.createdAtMs)),
            diedPerMinute: bucketDeaths(died, nowMs),
            diedCapped: false,
          }
        }),
      )
    },
    async jobsPage({ queue, state, limit, beforeId }) {
      const newestFirst = (await allJobs(jobStore, queue, state)).reverse()
      return newestFirst.filter((job) => beforeId === null || job.id < beforeId).slice(0, limit)
    },
    async findJobs({ text, queue, limit }) {
      const queues = queue === null ? (await jobStore.countQueues({ limit: 1_000 })).map((row) => row.queue) : [queue]
      const found: JobRecord[] = []
      for (const name of queues) {
        const byId = await jobStore.getJob({ queue: name, id: text })
        if (byId !== null) found.push(byId)
        if (queue !== null) for (const state of ['pending', 'processing', 'dead'] as const) found.push(...(await allJobs(jobStore, name, state)).filter((job) => job.key === text && job.id !== text))
      }
      return found.slice(0, limit)
    },
    // The contract's job records do not carry fairness keys: no table on the memory store.
    pendingByFairnessKey: async () => ({ keys: [], capped: false }),
    pausedQueues: (params) => jobStore.pausedQueues(params),
    hosts: async () => [],
    physicalQueues: async () => [],
    async deadIds({ queue, limit }) {
      return (await jobStore.listJobs({ queue, state: 'dead', limit, afterId: null })).map((job) => job.id)
    },
    async deleteDead() {
      throw new InvalidInput({ field: 'action', reason: 'deleting dead jobs needs a SQL store (embedded or PostgreSQL); the memory store keeps them until retried or purged' })
    },
  }
}
