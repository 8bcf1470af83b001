/**
 * RateChecker — "rate limit": a queue's rate limits hold across every engine, judged outside
 * them from the JobStore boundary. Every committed claim (straight from the store, by id for a
 * Matching delivery, riding on an ack, a lapsed job's again) starts a job and spends a token of
 * its queue's bucket and of its fairness key's (jobs without a key share one); a bucket refills
 * at `perSecond` up to `burst` by the claims' own stamps, and a stamp behind one the bucket has
 * seen refills nothing. A claim that commits while either bucket holds less than one token breaks
 * the limit: more jobs started than burst + perSecond × the span of the stamps allows.
 *
 * Each bucket is replayed in commit order from full at its first claim (the store creates it full
 * at the first enqueue that names the limit, and nothing spends it before a claim), so the model
 * allows exactly what the contract allows, with a millionth of a token of slack for rounding.
 *
 * Does not: judge how soon a limited job starts (prompt delivery passes over rate-limited queues).
 */
import type { JobBoundaryRecord } from './JobBoundary.ts'

/** A token bucket's limit, as the queue handle takes it. */
export interface SimRateLimit {
  readonly perSecond: number
  readonly burst: number
}

/** The rate limits of one queue (absent: none of that kind). */
export interface QueueRates {
  readonly rateLimit?: SimRateLimit
  readonly rateLimitPerKey?: SimRateLimit
}

interface Bucket {
  tokens: number
  refilledMs: number
}

// A token short of a whole one by at most this much is rounding, not a start too many.
const slack = 1e-6

/** The online rate check of one world. */
export class RateChecker {
  readonly #rates: Readonly<Record<string, QueueRates>>
  readonly #fail: (sentence: string) => void
  // Each job's fairness key ('' for none), from its enqueue.
  readonly #keyOf = new Map<string, string>()
  // Per bucket (`queue`, or `queue` + key for a per-key one): its replayed tokens.
  readonly #buckets = new Map<string, Bucket>()

  /** `rates` by queue name; `fail` records a violation of "rate limit". */
  constructor(rates: Readonly<Record<string, QueueRates>>, fail: (sentence: string) => void) {
    this.#rates = rates
    this.#fail = fail
  }

  /** Checks one committed JobStore call. */
  observe(record: JobBoundaryRecord): void {
    if (record.op === 'enqueue') {
      this.#keyOf.set(record.job.id, record.fairnessKey ?? '')
      return
    }
    if (record.op !== 'claim' || record.outcome.kind !== 'claimed') return
    const queue = record.outcome.job.queue
    const rates = this.#rates[queue]
    if (rates === undefined) return
    const key = this.#keyOf.get(record.id) ?? ''
    if (rates.rateLimit !== undefined) this.#spend(JSON.stringify([queue]), rates.rateLimit, record.nowMs, `job ${record.id} of ${queue} started at ${record.nowMs} past the queue's rate limit (${rates.rateLimit.perSecond}/s, burst ${rates.rateLimit.burst})`)
    if (rates.rateLimitPerKey !== undefined) {
      this.#spend(JSON.stringify([queue, key]), rates.rateLimitPerKey, record.nowMs, `job ${record.id} of ${queue} started at ${record.nowMs} past key ${key === '' ? '(none)' : key}'s rate limit (${rates.rateLimitPerKey.perSecond}/s, burst ${rates.rateLimitPerKey.burst})`)
    }
  }

  // Spends a token of bucket `name` at stamp `nowMs`, refilled first; fails when none was whole.
  #spend(name: string, limit: SimRateLimit, nowMs: number, sentence: string): void {
    const bucket = this.#buckets.get(name) ?? { tokens: limit.burst, refilledMs: nowMs }
    const tokens = Math.min(limit.burst, bucket.tokens + (Math.max(nowMs - bucket.refilledMs, 0) * limit.perSecond) / 1000)
    if (tokens < 1 - slack) this.#fail(`${sentence}: ${tokens.toFixed(3)} tokens left`)
    bucket.tokens = Math.max(tokens - 1, 0)
    bucket.refilledMs = Math.max(bucket.refilledMs, nowMs)
    this.#buckets.set(name, bucket)
  }
}
