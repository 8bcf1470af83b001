/**
 * pauseSql — the paused queues (`queue_pauses`, migration 007) as SQL text: the predicate every
 * claim statement and due-time read of jobSql.ts carries, and the statements that pause, resume
 * and list.
 *
 * Invariants: the predicate is part of the statement that claims (never a read before it), so a
 * claim under READ COMMITTED sees every pause committed before the statement began; the quoted
 * schema is the only interpolation.
 */
import type { Schema } from '../../sql/Schema.ts'

/** True while the queue named by the SQL expression `queue` is not paused. */
export const notPaused = (schema: Schema, queue: string): string => `NOT EXISTS (SELECT 1 FROM ${schema.quoted}.queue_pauses AS pause WHERE pause.queue = ${queue})`

/** `$1` queue, `$2` now. Pauses the queue; answers a row when it was not paused. */
export function pauseQueueSql(schema: Schema): string {
  return `INSERT INTO ${schema.quoted}.queue_pauses (queue, paused_at_ms) VALUES ($1::text, $2::bigint) ON CONFLICT (queue) DO NOTHING RETURNING queue`
}

/**
 * `$1` queue, `$2` now, `$3` the due channel. Ends the pause; the queue's rows whose task went to
 * Matching (a claim refused by the pause may have dropped it) are due again: pending ones now,
 * claimed ones (their lapse went to Matching) at the later of now and their deadline; and the due
 * signal is raised (at commit). Answers `resumed` (0 or 1).
 */
export function resumeQueueSql(schema: Schema): string {
  return `
WITH resumed AS (
  DELETE FROM ${schema.quoted}.queue_pauses WHERE queue = $1::text RETURNING queue
), rearmed AS (
  UPDATE ${schema.quoted}.jobs SET due_ms = CASE WHEN state = 'processing' THEN GREATEST($2::bigint, deadline_ms) ELSE $2::bigint END, revision = revision + 1
  WHERE queue = $1::text AND state IN ('pending', 'processing') AND due_ms IS NULL AND EXISTS (SELECT 1 FROM resumed)
  RETURNING id
)
SELECT (SELECT count(*) FROM resumed) AS resumed, (SELECT count(*) FROM rearmed) AS rearmed
FROM (SELECT 1) AS one
LEFT JOIN LATERAL (SELECT pg_notify($3::text, $1::text) WHERE EXISTS (SELECT 1 FROM resumed)) AS signal ON true`
}

/** `$1` queue. The queue's pause row, if any. */
export function queuePauseSql(schema: Schema): string {
  return `SELECT paused_at_ms FROM ${schema.quoted}.queue_pauses WHERE queue = $1::text`
}

/** `$1` limit. The paused queues by name. */
export function pausedQueuesSql(schema: Schema): string {
  return `SELECT queue, paused_at_ms FROM ${schema.quoted}.queue_pauses ORDER BY queue LIMIT $1::integer`
}
