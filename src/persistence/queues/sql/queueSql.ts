/**
 * queueSql — the statements on `task_queues`: acquire, inspect, list, and the current-range
 * read used only on a fenced write's failure path.
 *
 * Invariants: each operation is one statement, so it sees one snapshot and needs no explicit
 * transaction; acquire is an upsert, so the create-or-increment is atomic under the row lock
 * and two concurrent acquires get two different ranges.
 *
 * Does not: write tasks (taskSql.ts) or user data (userDataSql.ts).
 */
import type { Schema } from '../../sql/Schema.ts'

/**
 * `$1` queue key, `$2` namespace, `$3` family, `$4` task type, `$5` partition, `$6` version,
 * `$7` now. Creates the queue at range 1 or increments its range; returns the metadata.
 */
export function acquireSql(schema: Schema): string {
  return `
INSERT INTO ${schema.quoted}.task_queues AS queue
  (queue_key, namespace, family, task_type, partition, version, range_id, last_task_id, ack_levels, updated_at_ms)
VALUES ($1::text, $2::text, $3::text, $4::text, $5::bigint, $6::text, 1, 0, '{}'::jsonb, $7::bigint)
ON CONFLICT (queue_key) DO UPDATE
  SET range_id = queue.range_id + 1, updated_at_ms = EXCLUDED.updated_at_ms
RETURNING queue.range_id, queue.last_task_id, queue.ack_levels, queue.updated_at_ms`
}

/** `$1` queue key. The current range and last id, for explaining why a fenced write matched nothing. */
export function currentQueueSql(schema: Schema): string {
  return `SELECT range_id, last_task_id FROM ${schema.quoted}.task_queues WHERE queue_key = $1::text`
}

/** `$1`, `$2` queue keys. Current ranges of both queues of a relocate, for its failure path. */
export function currentRangesSql(schema: Schema): string {
  return `SELECT queue_key, range_id FROM ${schema.quoted}.task_queues WHERE queue_key IN ($1::text, $2::text)`
}

// Stored rows per subqueue as a jsonb object {"<subqueue>": count}, or null when there are none.
function rowCounts(schema: Schema): string {
  return `(
    SELECT jsonb_object_agg(counts.subqueue::text, counts.rows)
    FROM (
      SELECT task.subqueue, count(*) AS rows
      FROM ${schema.quoted}.tasks AS task
      WHERE task.queue_key = queue.queue_key
      GROUP BY task.subqueue
    ) AS counts
  ) AS row_counts`
}

/** `$1` queue key. Metadata and per-subqueue row counts, read in one snapshot. */
export function inspectSql(schema: Schema): string {
  return `
SELECT queue.range_id, queue.last_task_id, queue.ack_levels, queue.updated_at_ms, ${rowCounts(schema)}
FROM ${schema.quoted}.task_queues AS queue
WHERE queue.queue_key = $1::text`
}

/**
 * `$1` namespace or null, `$2` family or null. Every queue with counts, in canonical key order
 * (the key column is COLLATE "C", which orders ASCII keys as JavaScript does).
 */
export function listSql(schema: Schema): string {
  return `
SELECT queue.queue_key, queue.range_id, queue.last_task_id, queue.ack_levels, queue.updated_at_ms, ${rowCounts(schema)}
FROM ${schema.quoted}.task_queues AS queue
WHERE ($1::text IS NULL OR queue.namespace = $1::text) AND ($2::text IS NULL OR queue.family = $2::text)
ORDER BY queue.queue_key`
}
