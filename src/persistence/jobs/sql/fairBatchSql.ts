/**
 * fairBatchSql — the fairness passes of `enqueueManySql`'s keyed form: every keyed job of the
 * batch gets the pass that enqueueing the batch's jobs one by one, in their order, would give it
 * (jobSql.ts's `fairPassCte`, migration 010), and each key's row of fairness_passes is written
 * once, with its last job's pass, in the same statement.
 *
 * How one statement gets the one-by-one passes. A job's V is the claim order key of the head of
 * its queue's pending rows at its priority. Inserting a keyed job never lowers that head (its pass
 * is at least V), so within a (queue, priority) V is the head read from the snapshot, lowered by
 * the batch's earlier unkeyed jobs' due times; on a priority with no pending row the first job of
 * the batch there starts it (V = that job's due time) and becomes the head. A key's passes then
 * follow pass = max(V, previous + stride): with S the key's running sum of strides in the batch
 * and L its last pass before it, pass = S + max(L, the running max of V − S) — a window over the
 * key's jobs by position. The caller (SqlJobEnqueue.ts) sends all of a key's jobs in one
 * statement at one priority, so a key's first job there is also its first job of the statement.
 *
 * Jobs whose job key a live job holds write nothing and so step nothing: they are left out before
 * any pass is drawn (the caller sends each job key once per statement). The batch's keys' rows
 * are read locked, in key order, so an enqueue of a key on another connection queues behind the
 * statement and continues from its last pass; a key new to the queue that another statement
 * creates meanwhile is merged as `fairPassCte` merges it (the later writer steps from the row).
 * The key rows are written before the job rows, as a keyed enqueue writes them, so a batch and an
 * enqueue of one key and one job key wait for each other in one order, never in a cycle.
 *
 * The implicit key. A job without a key takes the turn of the implicit key (row '', stride 1000,
 * weight 1's) in a queue that has a real key's row in the snapshot, or once an earlier job of the
 * batch in its queue drew a keyed pass (that job's row makes the queue one with keys, as it would
 * one by one); from there on it is a keyed job of key '' in every step below, though its job row
 * keeps no fairness key. An unkeyed job before that is ordered by its due time. The caller sends
 * a queue's unkeyed jobs at one priority per statement too, as it does a key's.
 *
 * Does not: run for a batch without keys on queues without keys (enqueueManySql's unkeyed form
 * has none of this, and refuses a batch that has a queue with keys).
 */
import type { Schema } from '../../sql/Schema.ts'
import { fairnessStride } from '../JobStore.ts'

/**
 * The CTEs after `input` (enqueueManySql's, with `fairness_key` and `fair_stride` columns and
 * `$2` now) that draw the passes: `fair_pass` answers (position, pass) for each keyed job that is
 * inserted, and `fair_rows` writes the keys' last passes.
 */
export function fairBatchCtes(schema: Schema): string {
  const jobs = `${schema.quoted}.jobs`
  const passes = `${schema.quoted}.fairness_passes`
  return `fair_sent AS (
  SELECT input.position, input.queue, input.priority, input.fairness_key, input.fair_stride, GREATEST(input.run_at_ms, $2::bigint) AS due_ms
  FROM input
  WHERE input.job_key IS NULL OR NOT EXISTS (SELECT 1 FROM ${jobs} AS holder WHERE holder.queue = input.queue AND holder.job_key = input.job_key)
), fair_input AS (
  SELECT job.position, job.queue, job.priority,
    CASE WHEN job.fairness_key IS NOT NULL THEN job.fairness_key
      WHEN bool_or(job.fairness_key IS NOT NULL) OVER earlier OR EXISTS (SELECT 1 FROM ${passes} AS known WHERE known.queue = job.queue AND known.fairness_key <> '') THEN '' END AS fairness_key,
    COALESCE(job.fair_stride, ${fairnessStride(1)}) AS fair_stride, job.due_ms
  FROM fair_sent AS job
  WINDOW earlier AS (PARTITION BY job.queue ORDER BY job.position ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
), fair_head AS (
  SELECT slot.queue, slot.priority, (SELECT GREATEST(fair_pass, due_ms) FROM ${jobs}
    WHERE queue = slot.queue AND priority = slot.priority AND due_ms IS NOT NULL AND state = 'pending'
    ORDER BY priority DESC, GREATEST(fair_pass, due_ms), ready_seq LIMIT 1) AS v
  FROM (SELECT DISTINCT queue, priority FROM fair_input WHERE fairness_key IS NOT NULL) AS slot
), fair_known AS (
  SELECT known.queue, known.fairness_key, known.last_pass FROM ${passes} AS known
  WHERE (known.queue, known.fairness_key) IN (SELECT queue, fairness_key FROM fair_input WHERE fairness_key IS NOT NULL)
  ORDER BY known.queue, known.fairness_key FOR UPDATE
), fair_first AS (
  SELECT DISTINCT ON (job.queue, job.priority) job.queue, job.priority, job.position,
    CASE WHEN job.fairness_key IS NULL THEN job.due_ms ELSE GREATEST(head.v, job.due_ms, known.last_pass + job.fair_stride) END AS order_key
  FROM fair_input AS job
  LEFT JOIN fair_head AS head ON head.queue = job.queue AND head.priority = job.priority
  LEFT JOIN fair_known AS known ON known.queue = job.queue AND known.fairness_key = job.fairness_key
  ORDER BY job.queue, job.priority, job.position
), fair_virtual AS (
  SELECT job.position, job.queue, job.fairness_key, job.fair_stride,
    COALESCE(LEAST(head.v, min(CASE WHEN job.fairness_key IS NULL THEN job.due_ms END) OVER earlier, CASE WHEN job.position > first.position THEN first.order_key END), job.due_ms) AS v
  FROM fair_input AS job
  JOIN fair_first AS first ON first.queue = job.queue AND first.priority = job.priority
  LEFT JOIN fair_head AS head ON head.queue = job.queue AND head.priority = job.priority
  WINDOW earlier AS (PARTITION BY job.queue, job.priority ORDER BY job.position ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
), fair_strides AS (
  SELECT position, queue, fairness_key, v, (sum(fair_stride) OVER by_key)::bigint AS strides
  FROM fair_virtual WHERE fairness_key IS NOT NULL
  WINDOW by_key AS (PARTITION BY queue, fairness_key ORDER BY position ROWS UNBOUNDED PRECEDING)
), fair_pass AS (
  SELECT job.position, job.queue, job.fairness_key, job.strides, job.strides + GREATEST(known.last_pass, max(job.v - job.strides) OVER by_key) AS pass
  FROM fair_strides AS job
  LEFT JOIN fair_known AS known ON known.queue = job.queue AND known.fairness_key = job.fairness_key
  WINDOW by_key AS (PARTITION BY job.queue, job.fairness_key ORDER BY job.position ROWS UNBOUNDED PRECEDING)
), fair_rows AS (
  INSERT INTO ${passes} AS known (queue, fairness_key, last_pass)
  SELECT DISTINCT ON (queue, fairness_key) queue, fairness_key, pass FROM fair_pass ORDER BY queue, fairness_key, position DESC
  ON CONFLICT (queue, fairness_key) DO UPDATE SET last_pass = GREATEST(EXCLUDED.last_pass,
    known.last_pass + (SELECT max(strides) FROM fair_pass WHERE fair_pass.queue = known.queue AND fair_pass.fairness_key = known.fairness_key))
  RETURNING queue
)`
}
