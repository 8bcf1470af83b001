/**
 * rateSql — the rate-limit guard (migration 012) as SQL fragments that the job statements of
 * jobSql.ts embed, so that every statement moving a job to processing takes its tokens in that
 * same statement.
 *
 * A queue with limits has token buckets in `rate_buckets`: one for the whole queue and one per
 * fairness key (`rateKeyOf`: '' for jobs without one, which share it). A bucket holds, at time
 * t, min(burst, tokens + (t − refilled_ms) · per_second / 1000), read through a lock on its row,
 * never from the statement's snapshot: under READ COMMITTED, `SELECT … FOR UPDATE` waits for a
 * concurrent writer and returns the row as it committed, so two claims from two pools serialize
 * on the bucket and never both spend its last token. A claim admits, of its candidates, per key
 * as many as the key's bucket holds whole tokens, then of those, in claim order, as many as the
 * queue's bucket holds; each claimed job takes one token of each (a lapsed claim claimed again
 * starts its handler again, so it takes tokens too). A missing bucket does not limit.
 *
 * Clock: `now` is the caller's. `refilled_ms` never moves back (GREATEST), and time before it
 * refills nothing, so a caller whose clock is behind spends tokens but mints none; a caller
 * ahead of the others mints its lead once, and the others refill nothing until they catch up.
 *
 * Lock order: every claim locks the buckets it touches in (queue, per_key, rate_key) order (the
 * queue's bucket first), after its jobs and concurrency slots, in one fragment.
 *
 * Does not: create buckets for claims (a limited enqueue writes its queue's and key's,
 * `bucketRowsCtes`), or delete them.
 */
import type { Schema } from '../../sql/Schema.ts'

const bucketsTable = (schema: Schema): string => `${schema.quoted}.rate_buckets`

/** A job row's bucket key (`row` the jobs row's name): its fairness key, or '' for the implicit key of unkeyed jobs. */
export const rateKeyOf = (row: string): string => `(COALESCE(${row}.fairness_key, '') COLLATE "C")`

// A bucket's tokens at `now` (SQL expressions over the bucket row `bucket`).
const refilled = (bucket: string, now: string): string =>
  `LEAST(${bucket}.burst::double precision, ${bucket}.tokens + GREATEST(${now} - ${bucket}.refilled_ms, 0) * ${bucket}.per_second / 1000.0)`

// The whole tokens of a count: a refill computed in floating point may fall a hair short of a
// whole token at the very millisecond `next_token_ms` names it.
const whole = (tokens: string): string => `floor(${tokens} + 1e-9)`

/** The options of `rateAdmitCtes`. */
export interface RateAdmitOptions {
  /** A CTE of candidate rows to claim, already admitted by the concurrency guard: id, queue, fairness_key and the order columns. */
  readonly candidates: string
  /** Claim order among candidates (columns of `candidates` prefixed `c.`). */
  readonly order: string
  /** The statement's now (an SQL expression). */
  readonly now: string
  /**
   * The candidates are at most one row (a claim by id): the same admission without the ranking
   * (its two buckets are already in key order, the queue's first), so that the claim of a queue
   * without buckets pays two empty index probes and little else.
   */
  readonly single?: boolean
}

/**
 * The CTEs `rate_locked`, `rate_admitted` and `rate_taken`: `rate_admitted` is the candidates
 * a claim may start — of each key's, in `order`, as many as its bucket's whole tokens, then of
 * those, in `order`, as many as the queue's bucket's — and `rate_taken` writes each touched
 * bucket's tokens once (a bucket nothing was taken from is left as it is: a refill is a function
 * of the row and the time, so writing it would change nothing). Unlimited queues have no
 * buckets: the lock probes find none, and every candidate is admitted.
 */
export function rateAdmitCtes(schema: Schema, options: RateAdmitOptions): string {
  const { candidates, order, now } = options
  if (options.single === true) return singleAdmitCtes(schema, candidates, now)
  return `rate_locked AS (
  SELECT bucket.queue, bucket.per_key, bucket.rate_key, bucket.per_second, GREATEST(bucket.refilled_ms, ${now}) AS refilled_ms, ${refilled('bucket', now)} AS tokens
  FROM (
    SELECT DISTINCT c.queue, false AS per_key, ('' COLLATE "C") AS rate_key FROM ${candidates} AS c
    UNION SELECT DISTINCT c.queue, true AS per_key, ${rateKeyOf('c')} AS rate_key FROM ${candidates} AS c
    ORDER BY 1, 2, 3
  ) AS touched
  CROSS JOIN LATERAL (SELECT * FROM ${bucketsTable(schema)} AS bucket WHERE bucket.queue = touched.queue AND bucket.per_key = touched.per_key AND bucket.rate_key = touched.rate_key FOR UPDATE) AS bucket
), rate_admitted AS (
  SELECT c.* FROM (
    SELECT c.*, row_number() OVER (PARTITION BY c.queue ORDER BY ${order}) AS rate_queue_rank FROM (
      SELECT c.* FROM (
        SELECT c.*, row_number() OVER (PARTITION BY c.queue, ${rateKeyOf('c')} ORDER BY ${order}) AS rate_key_rank FROM ${candidates} AS c
      ) AS c
      LEFT JOIN rate_locked AS by_key ON by_key.queue = c.queue AND by_key.per_key AND by_key.rate_key = ${rateKeyOf('c')}
      WHERE by_key.queue IS NULL OR c.rate_key_rank <= ${whole('by_key.tokens')}
    ) AS c
  ) AS c
  LEFT JOIN rate_locked AS whole_queue ON whole_queue.queue = c.queue AND NOT whole_queue.per_key
  WHERE whole_queue.queue IS NULL OR c.rate_queue_rank <= ${whole('whole_queue.tokens')}
), rate_taken AS (
  UPDATE ${bucketsTable(schema)} AS bucket
  SET tokens = GREATEST(locked.tokens - taken.taken, 0), refilled_ms = locked.refilled_ms,
      next_token_ms = ${nextTokenOf('locked.tokens - taken.taken', 'locked.refilled_ms', 'locked.per_second')}
  FROM rate_locked AS locked JOIN (
    SELECT c.queue, false AS per_key, ('' COLLATE "C") AS rate_key, count(*) AS taken FROM rate_admitted AS c GROUP BY c.queue
    UNION ALL
    SELECT c.queue, true AS per_key, ${rateKeyOf('c')} AS rate_key, count(*) AS taken FROM rate_admitted AS c GROUP BY c.queue, ${rateKeyOf('c')}
  ) AS taken ON taken.queue = locked.queue AND taken.per_key = locked.per_key AND taken.rate_key = locked.rate_key
  WHERE bucket.queue = locked.queue AND bucket.per_key = locked.per_key AND bucket.rate_key = locked.rate_key
  RETURNING bucket.queue
)`
}

// `rateAdmitCtes` for at most one candidate: admitted when each of its buckets that exists holds a whole token.
const singleAdmitCtes = (schema: Schema, candidates: string, now: string): string => `rate_locked AS (
  SELECT bucket.queue, bucket.per_key, bucket.rate_key, bucket.per_second, GREATEST(bucket.refilled_ms, ${now}) AS refilled_ms, ${refilled('bucket', now)} AS tokens
  FROM (
    SELECT c.queue, false AS per_key, ('' COLLATE "C") AS rate_key FROM ${candidates} AS c
    UNION ALL SELECT c.queue, true AS per_key, ${rateKeyOf('c')} AS rate_key FROM ${candidates} AS c
  ) AS touched
  CROSS JOIN LATERAL (SELECT * FROM ${bucketsTable(schema)} AS bucket WHERE bucket.queue = touched.queue AND bucket.per_key = touched.per_key AND bucket.rate_key = touched.rate_key FOR UPDATE) AS bucket
), rate_admitted AS (
  SELECT c.* FROM ${candidates} AS c WHERE NOT EXISTS (SELECT 1 FROM rate_locked AS locked WHERE ${whole('locked.tokens')} < 1)
), rate_taken AS (
  UPDATE ${bucketsTable(schema)} AS bucket
  SET tokens = GREATEST(locked.tokens - 1, 0), refilled_ms = locked.refilled_ms, next_token_ms = ${nextTokenOf('locked.tokens - 1', 'locked.refilled_ms', 'locked.per_second')}
  FROM rate_locked AS locked
  WHERE bucket.queue = locked.queue AND bucket.per_key = locked.per_key AND bucket.rate_key = locked.rate_key AND EXISTS (SELECT 1 FROM rate_admitted)
  RETURNING bucket.queue
)`

// When a bucket left with `tokens` at `refilledMs` next holds a whole token: 0 if it holds one
// (whatever a caller's clock, a refill never takes tokens away).
const nextTokenOf = (tokens: string, refilledMs: string, perSecond: string): string =>
  `CASE WHEN ${tokens} >= 1 THEN 0 ELSE ${refilledMs} + ceil((1 - GREATEST(${tokens}, 0)) * 1000.0 / ${perSecond})::bigint END`

/**
 * A head read's pre-filter (`row` the jobs row's name, `now` an SQL expression): the row's key
 * bucket and its queue's bucket are not empty as of the statement's snapshot (their
 * `next_token_ms` not after `now`, read through rate_buckets_empty). With `queue` (an SQL
 * expression) only that queue's buckets are read, once per statement: the queue's as a one-time
 * filter, the empty keys as a hashed subplan. It only keeps empty buckets' jobs out of the head,
 * so that they do not take the places of other keys' jobs; `rateAdmitCtes` decides through the lock.
 */
export const rateHasToken = (schema: Schema, row: string, now: string, queue?: string): string => {
  const empty = `${bucketsTable(schema)} AS empty WHERE empty.next_token_ms > ${now}`
  return queue === undefined
    ? `${row}.queue NOT IN (SELECT empty.queue FROM ${empty} AND NOT empty.per_key) AND (${row}.queue, ${rateKeyOf(row)}) NOT IN (SELECT empty.queue, empty.rate_key FROM ${empty} AND empty.per_key)`
    : `NOT EXISTS (SELECT 1 FROM ${empty} AND empty.queue = ${queue} AND NOT empty.per_key) AND ${rateKeyOf(row)} NOT IN (SELECT empty.rate_key FROM ${empty} AND empty.queue = ${queue} AND empty.per_key)`
}

/**
 * The whole tokens of queue `queue`'s queue-wide bucket at `now` (SQL expressions) as of the
 * statement's snapshot, or 2^31 − 1 when it has none: a bound on what a reservation may take.
 */
export const queueTokensCap = (schema: Schema, queue: string, now: string): string =>
  `COALESCE((SELECT ${whole(refilled('bucket', now))}::integer FROM ${bucketsTable(schema)} AS bucket WHERE bucket.queue = ${queue} AND NOT bucket.per_key AND bucket.rate_key = ''), 2147483647)`

/** Whether queue `queue` (an SQL expression) has a bucket: one probe of the primary key's prefix. */
export const queueHasBuckets = (schema: Schema, queue: string): string => `EXISTS (SELECT 1 FROM ${bucketsTable(schema)} AS bucket WHERE bucket.queue = ${queue})`

/**
 * The CTEs `rate_source`, `rate_rows` and `rate_limits`: for each row of `source` — a query of
 * (queue, per_key, rate_key, per_second, burst), one per bucket a statement's enqueues limit —
 * creates the bucket full (burst tokens) at `now` if it is missing, and writes its limits if they
 * differ (its tokens capped at the new burst; its next token set to 0, "holds one", for the next claim to judge
 * under the lock: the head's pre-filter errs toward reading it). An UPDATE locks only the rows it changes,
 * so an enqueue of a queue whose limits are unchanged holds no lock its claims would wait on.
 */
export function bucketRowsCtes(schema: Schema, source: string, now: string): string {
  return `rate_source AS (
  ${source}
), rate_rows AS (
  INSERT INTO ${bucketsTable(schema)} (queue, per_key, rate_key, tokens, refilled_ms, next_token_ms, per_second, burst)
  SELECT queue, per_key, rate_key, burst, ${now}, 0, per_second, burst FROM rate_source
  ON CONFLICT (queue, per_key, rate_key) DO NOTHING
  RETURNING queue
), rate_limits AS (
  UPDATE ${bucketsTable(schema)} AS bucket SET per_second = given.per_second, burst = given.burst, tokens = LEAST(bucket.tokens, given.burst), next_token_ms = 0
  FROM rate_source AS given
  WHERE bucket.queue = given.queue AND bucket.per_key = given.per_key AND bucket.rate_key = given.rate_key AND (bucket.per_second <> given.per_second OR bucket.burst <> given.burst)
  RETURNING bucket.queue
)`
}

/**
 * `bucketRowsCtes` for one enqueue in queue `queue`: `$first`…`$first+4` are the queue-wide
 * per second and burst, the per-key per second and burst (each pair null when not limited),
 * and the job's bucket key.
 */
export function bucketRowCte(schema: Schema, queue: string, first: number, now: string): string {
  const [perSecond, burst, keyPerSecond, keyBurst, key] = [0, 1, 2, 3, 4].map((offset) => `$${first + offset}`)
  return bucketRowsCtes(
    schema,
    `SELECT ${queue} AS queue, false AS per_key, ('' COLLATE "C") AS rate_key, ${perSecond}::double precision AS per_second, ${burst}::integer AS burst WHERE ${perSecond}::double precision IS NOT NULL
  UNION ALL
  SELECT ${queue}, true, (${key}::text COLLATE "C"), ${keyPerSecond}::double precision, ${keyBurst}::integer WHERE ${keyPerSecond}::double precision IS NOT NULL`,
    now,
  )
}

/**
 * The CTEs `rated_job` and `rated`, `$1` id, `$2` now; `claimableNow` the claimable rule over
 * `job` at `$2` (jobSql.ts spells it), the queue not paused; `unless` a CTE whose rows rule the
 * park out (the job was parked for its key's limit instead). After a claim of job `$1` was
 * refused for its buckets: the job is made due when the later of its queue's and its key's
 * buckets next holds a token (now, if one came meanwhile), its revision moved on, so that a task
 * Matching dropped is delivered again then. `rated_job` holds the job's id when it is claimable
 * and its queue has buckets.
 */
export function parkRatedCtes(schema: Schema, claimableNow: string, unless: string): string {
  return `rated_job AS (
  SELECT job.id, GREATEST($2::bigint, (
    SELECT max(bucket.next_token_ms) FROM ${bucketsTable(schema)} AS bucket
    WHERE bucket.queue = job.queue AND (NOT bucket.per_key OR bucket.rate_key = ${rateKeyOf('job')})
  )) AS due_ms
  FROM ${schema.quoted}.jobs AS job
  WHERE job.id = $1::text AND ${queueHasBuckets(schema, 'job.queue')} AND ${claimableNow} AND NOT EXISTS (SELECT 1 FROM ${unless})
), rated AS (
  UPDATE ${schema.quoted}.jobs AS parked SET due_ms = rated_job.due_ms, revision = parked.revision + 1
  FROM rated_job WHERE parked.id = rated_job.id
  RETURNING parked.id
)`
}

/**
 * The earliest time after `now` (an SQL expression) at which a bucket of the queues `filter`
 * (an SQL condition on `queue`) next holds a token: a queue whose claims found its buckets
 * empty is due again then.
 */
export const nextTokenSql = (schema: Schema, now: string, filter: string): string =>
  `SELECT min(next_token_ms) AS due_ms FROM ${bucketsTable(schema)} WHERE next_token_ms > ${now} AND ${filter}`
