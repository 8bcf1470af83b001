/**
 * taskSql — the statements on the backlog: append, read, checkpoint and relocate.
 *
 * Fencing: every write is ONE statement whose first CTE updates (or locks) the queue row
 * `WHERE range_id = $expected`. Under READ COMMITTED a concurrent acquire either committed
 * before our row lock (the re-checked WHERE no longer matches: nothing is written) or waits
 * for our statement to commit (and then increments past us). Everything else in the statement
 * is joined to that CTE, so a stale range writes nothing — never read-then-write.
 *
 * Invariants: ids are allocated from `last_task_id` under the row lock, consecutively, in the
 * order given; a subqueue is registered in `ack_levels` (at 0) by the first append or
 * relocation that puts a row in it, and a saved level is never overwritten by registration; relocate locks both queue rows in queue_key order, as no other statement locks
 * two queue rows, so relocates cannot deadlock with each other or with single-queue writes.
 *
 * Does not: explain failures. When the fenced CTE matched nothing the statement returns no
 * row and the store reads why (OwnershipLost or InvalidInput) on that path only.
 */
import type { Schema } from '../../sql/Schema.ts'

/**
 * `$1` queue key, `$2` range id, `$3` task count, `$4` tasks as a JSON array (text). Allocates
 * ids and inserts the rows; returns `last_task_id` and the rows inserted, or no row when the
 * range did not match.
 */
export function appendSql(schema: Schema): string {
  return `
WITH fenced AS (
  UPDATE ${schema.quoted}.task_queues
  SET last_task_id = last_task_id + $3::bigint,
      -- Registers each subqueue of the batch at ack level 0; the right operand keeps saved levels.
      ack_levels = (
        SELECT jsonb_object_agg(item ->> 'priority', 0) FROM jsonb_array_elements($4::text::jsonb) AS item
      ) || ack_levels
  WHERE queue_key = $1::text AND range_id = $2::bigint
  RETURNING last_task_id
), inserted AS (
  INSERT INTO ${schema.quoted}.tasks (queue_key, task_id, subqueue, data)
  SELECT $1::text, fenced.last_task_id - $3::bigint + item.position, (item.task ->> 'priority')::smallint, item.task
  FROM fenced CROSS JOIN jsonb_array_elements($4::text::jsonb) WITH ORDINALITY AS item(task, position)
  RETURNING task_id
)
SELECT fenced.last_task_id, (SELECT count(*) FROM inserted) AS inserted_rows FROM fenced`
}

/** A plain insert of the same rows without the fence, for the bench's cost-of-fencing ratio only. */
export function unfencedInsertSql(schema: Schema): string {
  return `
INSERT INTO ${schema.quoted}.tasks (queue_key, task_id, subqueue, data)
SELECT $1::text, $2::bigint + item.position, (item.task ->> 'priority')::smallint, item.task
FROM jsonb_array_elements($3::text::jsonb) WITH ORDINALITY AS item(task, position)`
}

/** `$1` queue key, `$2` subqueue, `$3` after task id, `$4` limit. */
export function readSql(schema: Schema): string {
  return `
SELECT task_id, data FROM ${schema.quoted}.tasks
WHERE queue_key = $1::text AND subqueue = $2::smallint AND task_id > $3::bigint
ORDER BY task_id
LIMIT $4::integer`
}

/**
 * `$1` queue key, `$2` range id, `$3` ack levels as a JSON array of {subqueue, ackLevel}
 * (text), `$4` now. Raises each listed ack level (GREATEST: never lowers), deletes that
 * subqueue's rows at or below the raised level, and returns the metadata and deleted count —
 * or no row when the range did not match or a level exceeds `last_task_id`.
 */
export function checkpointSql(schema: Schema): string {
  return `
WITH requested AS (
  SELECT (entry ->> 'subqueue')::smallint AS subqueue, (entry ->> 'ackLevel')::bigint AS ack_level
  FROM jsonb_array_elements($3::text::jsonb) AS entry
), fenced AS (
  UPDATE ${schema.quoted}.task_queues AS queue
  SET ack_levels = queue.ack_levels || (
        SELECT jsonb_object_agg(
          r.subqueue::text,
          GREATEST(r.ack_level, COALESCE((queue.ack_levels ->> r.subqueue::text)::bigint, 0)))
        FROM requested AS r),
      updated_at_ms = $4::bigint
  WHERE queue.queue_key = $1::text AND queue.range_id = $2::bigint
    AND NOT EXISTS (SELECT 1 FROM requested AS r WHERE r.ack_level > queue.last_task_id)
  RETURNING queue.range_id, queue.last_task_id, queue.ack_levels, queue.updated_at_ms
), deleted AS (
  DELETE FROM ${schema.quoted}.tasks AS task
  USING fenced, requested AS r
  WHERE task.queue_key = $1::text
    AND task.subqueue = r.subqueue
    AND task.task_id <= (fenced.ack_levels ->> r.subqueue::text)::bigint
  RETURNING 1
)
SELECT fenced.range_id, fenced.last_task_id, fenced.ack_levels, fenced.updated_at_ms,
       (SELECT count(*) FROM deleted) AS deleted_rows
FROM fenced`
}

/**
 * `$1` from key, `$2` from range, `$3` to key, `$4` to range, `$5` task ids as a JSON array
 * (text). Locks both queue rows (queue_key order), and only when both ranges match moves the
 * listed rows stored at `from` to `to` with fresh ids in source-id order. Returns one row with
 * `fenced = false`, or `fenced = true` and one row per moved task (null ids when none moved).
 */
export function relocateSql(schema: Schema): string {
  return `
WITH locked AS MATERIALIZED (
  SELECT queue_key, range_id
  FROM ${schema.quoted}.task_queues
  WHERE queue_key IN ($1::text, $3::text)
  ORDER BY queue_key
  FOR UPDATE
), fenced AS MATERIALIZED (
  SELECT count(*) = 2 AS ok
  FROM locked
  WHERE (queue_key = $1::text AND range_id = $2::bigint) OR (queue_key = $3::text AND range_id = $4::bigint)
), moved AS (
  DELETE FROM ${schema.quoted}.tasks AS task
  WHERE task.queue_key = $1::text
    AND task.task_id IN (SELECT value::bigint FROM jsonb_array_elements_text($5::text::jsonb))
    AND (SELECT ok FROM fenced)
  RETURNING task.task_id, task.subqueue, task.data
), numbered AS MATERIALIZED (
  SELECT task_id, subqueue, data, row_number() OVER (ORDER BY task_id) AS position, count(*) OVER () AS total
  FROM moved
), destination AS (
  UPDATE ${schema.quoted}.task_queues AS queue
  SET last_task_id = queue.last_task_id + COALESCE((SELECT max(total) FROM numbered), 0),
      -- Registers subqueues new to the destination at ack level 0, as an append would.
      ack_levels = COALESCE((SELECT jsonb_object_agg(subqueue::text, 0) FROM numbered), '{}'::jsonb) || queue.ack_levels
  WHERE queue.queue_key = $3::text AND (SELECT ok FROM fenced)
  RETURNING queue.last_task_id - COALESCE((SELECT max(total) FROM numbered), 0) AS base
), inserted AS (
  INSERT INTO ${schema.quoted}.tasks (queue_key, task_id, subqueue, data)
  SELECT $3::text, destination.base + numbered.position, numbered.subqueue, numbered.data
  FROM numbered CROSS JOIN destination
  RETURNING task_id
)
SELECT fenced.ok AS fenced, numbered.task_id AS from_task_id, destination.base + numbered.position AS to_task_id,
       (SELECT count(*) FROM inserted) AS inserted_rows
FROM fenced
LEFT JOIN (numbered CROSS JOIN destination) ON true
ORDER BY numbered.position`
}
