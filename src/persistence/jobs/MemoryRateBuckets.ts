/**
 * MemoryRateBuckets — the rate-limit guard of the memory job store (MemoryJobStore.ts), the
 * mirror of the SQL store's `rate_buckets` (rateSql.ts), with its arithmetic spelled the same
 * way: a bucket per queue and per (queue, fairness key), the implicit key '' for jobs without
 * one; tokens refilled by min(burst, tokens + elapsed × perSecond / 1000) where elapsed never
 * counts time before the bucket's `refilledMs` (a caller whose clock is behind mints nothing);
 * `nextTokenMs` kept as the SQL row keeps it, so the head's pre-filter, `takeDue` and
 * `nextDueMs` answer what SQL answers. The memory store runs each operation synchronously, so
 * a claim's reading and spending of tokens is one atomic step, as one SQL statement under the
 * bucket's row lock is.
 *
 * Does not: change a row's state (the store's claims do); forget a bucket (nor does SQL).
 */
import type { NewJob, RateLimit } from './JobStore.ts'

/** What the guard reads of a live row. */
export interface RatedRow {
  readonly job: { readonly queue: string }
  /** The job's fairness key; absent without one (the implicit key's bucket). */
  readonly fairnessKey?: string
}

interface Bucket {
  tokens: number
  refilledMs: number
  nextTokenMs: number
  perSecond: number
  burst: number
}

/** The guard over a store's buckets. */
export interface MemoryBuckets {
  /** Records the limits an enqueue of `job` gave (creating its buckets full at `nowMs`). */
  setLimits(job: NewJob, nowMs: number): void
  /** Whether `queue` has a bucket: its enqueues are never inserted claimed. */
  hasBuckets(queue: string): boolean
  /** The head's pre-filter: neither of `row`'s buckets is empty as of `nowMs` by its `nextTokenMs`. */
  hasToken(row: RatedRow, nowMs: number): boolean
  /** Takes a token of each of `row`'s buckets when both hold a whole one at `nowMs`; false (nothing taken) otherwise. */
  take(row: RatedRow, nowMs: number): boolean
  /** The whole tokens of `queue`'s queue-wide bucket at `nowMs`; null when it has none. */
  queueTokens(queue: string, nowMs: number): number | null
  /** When the later of `row`'s buckets next holds a token, not before `nowMs`; null when its queue has no bucket. */
  parkUntil(row: RatedRow, nowMs: number): number | null
  /** The earliest next token after `nowMs` of the buckets of `queues` (null: every queue), or null. */
  nextTokenMs(queues: ReadonlyArray<string> | null, nowMs: number, isPaused: (queue: string) => boolean): number | null
}

// rateSql.ts's `whole`: a refill in floating point may fall a hair short of its whole token.
const wholeTokens = (tokens: number): number => Math.floor(tokens + 1e-9)

/** Makes an empty guard. */
export function makeMemoryBuckets(): MemoryBuckets {
  const buckets = new Map<string, Bucket>()
  const queues = new Set<string>()
  const slotOf = (queue: string, perKey: boolean, key: string): string => JSON.stringify([queue, perKey, key])
  const bucketsOf = (row: RatedRow): Bucket[] =>
    [buckets.get(slotOf(row.job.queue, false, '')), buckets.get(slotOf(row.job.queue, true, row.fairnessKey ?? ''))].filter((bucket) => bucket !== undefined)
  const tokensAt = (bucket: Bucket, nowMs: number): number => Math.min(bucket.burst, bucket.tokens + (Math.max(nowMs - bucket.refilledMs, 0) * bucket.perSecond) / 1000)
  const put = (queue: string, perKey: boolean, key: string, limit: RateLimit, nowMs: number): void => {
    queues.add(queue)
    const slot = slotOf(queue, perKey, key)
    const bucket = buckets.get(slot)
    if (bucket === undefined) {
      buckets.set(slot, { tokens: limit.burst, refilledMs: nowMs, nextTokenMs: 0, perSecond: limit.perSecond, burst: limit.burst })
    } else if (bucket.perSecond !== limit.perSecond || bucket.burst !== limit.burst) {
      Object.assign(bucket, { perSecond: limit.perSecond, burst: limit.burst, tokens: Math.min(bucket.tokens, limit.burst), nextTokenMs: 0 })
    }
  }
  return {
    setLimits(job, nowMs) {
      if (job.rateLimit !== undefined && job.rateLimit !== null) put(job.queue, false, '', job.rateLimit, nowMs)
      if (job.rateLimitPerKey !== undefined && job.rateLimitPerKey !== null) put(job.queue, true, job.fairnessKey ?? '', job.rateLimitPerKey, nowMs)
    },
    hasBuckets: (queue) => queues.has(queue),
    // A queue without buckets (every unlimited queue) answers at once: the head reads ask per row.
    hasToken: (row, nowMs) => !queues.has(row.job.queue) || bucketsOf(row).every((bucket) => bucket.nextTokenMs <= nowMs),
    take(row, nowMs) {
      if (!queues.has(row.job.queue)) return true
      const touched = bucketsOf(row)
      if (touched.some((bucket) => wholeTokens(tokensAt(bucket, nowMs)) < 1)) return false
      for (const bucket of touched) {
        const left = Math.max(tokensAt(bucket, nowMs) - 1, 0)
        bucket.refilledMs = Math.max(bucket.refilledMs, nowMs)
        bucket.tokens = left
        bucket.nextTokenMs = left >= 1 ? 0 : bucket.refilledMs + Math.ceil(((1 - left) * 1000) / bucket.perSecond)
      }
      return true
    },
    queueTokens(queue, nowMs) {
      const bucket = buckets.get(slotOf(queue, false, ''))
      return bucket === undefined ? null : wholeTokens(tokensAt(bucket, nowMs))
    },
    parkUntil(row, nowMs) {
      if (!queues.has(row.job.queue)) return null
      return Math.max(nowMs, ...bucketsOf(row).map((bucket) => bucket.nextTokenMs))
    },
    nextTokenMs(only, nowMs, isPaused) {
      let next: number | null = null
      for (const [slot, bucket] of buckets) {
        const [queue] = JSON.parse(slot) as [string]
        if ((only !== null && !only.includes(queue)) || isPaused(queue) || bucket.nextTokenMs <= nowMs) continue
        next = next === null ? bucket.nextTokenMs : Math.min(next, bucket.nextTokenMs)
      }
      return next
    },
  }
}
