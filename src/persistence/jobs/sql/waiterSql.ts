/**
 * waiterSql — the statements of the hand-over at enqueue across engines (jobs/HandOver.ts) over
 * `job_waiters` (migration 014): registering a waiting claim, taking it back, and the CTE and
 * answer with which an enqueue takes a waiter, inserts its job claimed with the waiter's token,
 * and raises the `handed` message on the waiter's host channel in the same statement.
 *
 * Does not: decide which jobs may be handed over (HandOver.ts's `isHandOverCandidate`, checked
 * before the statement is chosen), or hear the message (the bus).
 */
import type { Schema } from '../../sql/Schema.ts'
import { notPaused } from './pauseSql.ts'
import { queueHasBuckets } from './rateSql.ts'

/**
 * `$1` claim tokens, `$2` queue, `$3` host id, `$4` its host channel, `$5` until (ms), `$6` now,
 * `$7` the fence's encoded physical queue key, `$8` its range id.
 * Forgets the queue's waiters whose time has passed, then registers one per token, in order
 * (again, if the token is known: its time and place are renewed).
 */
export function addWaitersSql(schema: Schema): string {
  return `
WITH gone AS (
  DELETE FROM ${schema.quoted}.job_waiters WHERE queue = $2::text AND until_ms <= $6::bigint AND claim_token <> ALL($1::text[])
)
INSERT INTO ${schema.quoted}.job_waiters AS waiter (claim_token, queue, host_id, channel, until_ms, queue_key, range_id)
SELECT token, $2::text, $3::text, $4::text, $5::bigint, $7::text, $8::bigint FROM unnest($1::text[]) WITH ORDINALITY AS given(token, position) ORDER BY position
ON CONFLICT (claim_token) DO UPDATE SET queue = EXCLUDED.queue, host_id = EXCLUDED.host_id, channel = EXCLUDED.channel, until_ms = EXCLUDED.until_ms,
  queue_key = EXCLUDED.queue_key, range_id = EXCLUDED.range_id,
  seq = nextval(pg_get_serial_sequence('${schema.quoted}.job_waiters', 'seq'))`
}

/** `$1` claim tokens. Deletes their waiters; answers the tokens that were still there. */
export function removeWaitersSql(schema: Schema): string {
  return `DELETE FROM ${schema.quoted}.job_waiters WHERE claim_token = ANY($1::text[]) RETURNING claim_token`
}

/**
 * An enqueue's `waiter` and `claim_token` CTEs (enqueueSql's parameters: `$2` queue, `$9` now):
 * the queue's first waiter still waiting under its partition's current range (`candidate`, its
 * physical queue's row locked FOR SHARE as claimFenceSql.ts's fence is: an acquire of the
 * partition waits for this statement, or this statement passes the waiter over) is deleted and
 * its token is the insert's — when the queue is neither paused nor rated and no row of it is
 * claimable now (pending and due, with Matching, or a lapsed claim), so that an older job is never
 * passed by. Waiters another transaction holds are skipped, so two producers take two waiters; a
 * waiter whose engine lost the partition is passed over.
 */
export function waiterTokenCtes(schema: Schema): string {
  const jobs = `${schema.quoted}.jobs`
  const claimableNow = `attempts < max_attempts AND (expires_at_ms IS NULL OR expires_at_ms > $9::bigint)`
  // The probes read the first waiter's queue, so they run only when a waiter was found (an
  // enqueue with nobody waiting pays one index probe of job_waiters). The pending probe reads the
  // queue's head in claim order (and `due_ms + 0` keeps the every-queue due index out), as the
  // head claims do (jobSql.ts's claimHeadCtes): a generic plan otherwise scanned the whole table.
  return `first_waiter AS MATERIALIZED (
  SELECT waiter.claim_token, waiter.queue FROM ${schema.quoted}.job_waiters AS waiter
  JOIN ${schema.quoted}.task_queues AS task_queue ON task_queue.queue_key = waiter.queue_key AND task_queue.range_id = waiter.range_id
  WHERE waiter.queue = $2::text AND waiter.until_ms > $9::bigint
  ORDER BY waiter.seq
  LIMIT 1
  FOR UPDATE OF waiter SKIP LOCKED
  FOR SHARE OF task_queue
), candidate AS MATERIALIZED (
  SELECT claim_token FROM first_waiter AS waiter
  WHERE ${notPaused(schema, 'waiter.queue')} AND NOT ${queueHasBuckets(schema, 'waiter.queue')}
    AND NOT EXISTS (SELECT 1 FROM (SELECT id FROM ${jobs} WHERE queue = waiter.queue AND state = 'pending' AND due_ms IS NOT NULL AND due_ms + 0 <= $9::bigint AND run_at_ms <= $9::bigint AND ${claimableNow}
      ORDER BY priority DESC, GREATEST(fair_pass, due_ms), ready_seq LIMIT 1) AS pending_head)
    AND NOT EXISTS (SELECT 1 FROM ${jobs} WHERE queue = waiter.queue AND due_ms IS NULL AND ${claimableNow}
      AND ((state = 'pending' AND run_at_ms <= $9::bigint) OR (state = 'processing' AND deadline_ms <= $9::bigint)))
    AND NOT EXISTS (SELECT 1 FROM ${jobs} WHERE queue = waiter.queue AND state = 'processing' AND due_ms <= $9::bigint AND deadline_ms <= $9::bigint AND ${claimableNow})
), waiter AS (
  DELETE FROM ${schema.quoted}.job_waiters WHERE claim_token = (SELECT claim_token FROM candidate)
  RETURNING claim_token, host_id, channel, queue_key, range_id
), claim_token AS (SELECT (SELECT claim_token FROM waiter) AS token)`
}

/**
 * The `handed` message of an enqueue that took a waiter, raised on the waiter's channel: the
 * bus envelope (`to`, `message`) around `$14`, the message's stem (HandOver.ts), completed with
 * the waiter's claim token and the payload `$3` the statement inserted.
 */
export const handedNotify = `LEFT JOIN LATERAL (SELECT pg_notify(waiter.channel, json_build_object('to', waiter.host_id, 'message', $14::jsonb || jsonb_build_object('claimToken', waiter.claim_token, 'payload', $3::jsonb))::text) FROM waiter WHERE inserted.claim_token IS NOT NULL) AS handed ON true`
