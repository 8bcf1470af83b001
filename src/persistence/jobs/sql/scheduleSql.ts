/**
 * scheduleSql — the statements on `job_schedules` and `job_leases` (migrations 003, 004, 013).
 *
 * Invariants: registering a schedule is one upsert that changes nothing when spec, queue,
 * payload, zone and job keys are unchanged (jsonb equality, so key order does not matter); a lease is one upsert
 * that grants it only when free, expired or already the holder's, growing the fence on every
 * change of holder; firing runs in one transaction that locks the lease row at the caller's
 * fence first, so a takeover either waits for the firing or makes it see the new fence.
 */
import type { Schema } from '../../sql/Schema.ts'

// The occurrence jobs' keys (migration 013), each null when the schedule gives none.
const keyColumns = ['priority', 'fairness_key', 'fairness_weight', 'concurrency_key', 'concurrency_limit'] as const
const scheduleColumns = `name, spec, queue, payload, anchor_ms, last_fired_ms, revision, timezone, ${keyColumns.join(', ')}`

/**
 * `$1` name, `$2` spec, `$3` queue, `$4` payload json, `$5` now, `$6` time zone or null, `$7`
 * priority, `$8` fairness key, `$9` fairness weight, `$10` concurrency key, `$11` concurrency
 * limit (each null when not given). Inserts or re-anchors; no row when unchanged.
 */
export function putScheduleSql(schema: Schema): string {
  return `
INSERT INTO ${schema.quoted}.job_schedules AS schedule (${scheduleColumns})
VALUES ($1::text, $2::text, $3::text, $4::jsonb, $5::bigint, NULL, 1, $6::text, $7::smallint, $8::text, $9::double precision, $10::text, $11::integer)
ON CONFLICT (name) DO UPDATE
  SET spec = EXCLUDED.spec, queue = EXCLUDED.queue, payload = EXCLUDED.payload, timezone = EXCLUDED.timezone, anchor_ms = EXCLUDED.anchor_ms,
      ${keyColumns.map((column) => `${column} = EXCLUDED.${column}`).join(', ')},
      last_fired_ms = NULL, revision = schedule.revision + 1
  WHERE schedule.spec <> EXCLUDED.spec OR schedule.queue <> EXCLUDED.queue OR schedule.payload <> EXCLUDED.payload
     OR schedule.timezone IS DISTINCT FROM EXCLUDED.timezone
     OR ${keyColumns.map((column) => `schedule.${column} IS DISTINCT FROM EXCLUDED.${column}`).join(' OR ')}
RETURNING ${scheduleColumns}`
}

/** `$1` name. Removes a schedule; returns its name when there was one. */
export function deleteScheduleSql(schema: Schema): string {
  return `DELETE FROM ${schema.quoted}.job_schedules WHERE name = $1::text RETURNING name`
}

/** `$1` name. One schedule. */
export function getScheduleSql(schema: Schema): string {
  return `SELECT ${scheduleColumns} FROM ${schema.quoted}.job_schedules WHERE name = $1::text`
}

/** Every schedule, by name. */
export function listSchedulesSql(schema: Schema): string {
  return `SELECT ${scheduleColumns} FROM ${schema.quoted}.job_schedules ORDER BY name`
}

/** `$1` lease name, `$2` holder, `$3` now, `$4` ttl ms. Grants or renews; no row when another holder's lease is live. */
export function acquireLeaseSql(schema: Schema): string {
  return `
INSERT INTO ${schema.quoted}.job_leases AS lease (name, holder, fence, expires_at_ms)
VALUES ($1::text, $2::text, 1, $3::bigint + $4::bigint)
ON CONFLICT (name) DO UPDATE
  SET fence = CASE WHEN lease.holder = EXCLUDED.holder AND lease.expires_at_ms > $3::bigint THEN lease.fence ELSE lease.fence + 1 END,
      holder = EXCLUDED.holder, expires_at_ms = EXCLUDED.expires_at_ms
  WHERE lease.holder = EXCLUDED.holder OR lease.expires_at_ms <= $3::bigint
RETURNING fence`
}

/** `$1` lease name, `$2` fence. Locks the lease row if it still carries the fence. */
export function lockLeaseSql(schema: Schema): string {
  return `SELECT fence FROM ${schema.quoted}.job_leases WHERE name = $1::text AND fence = $2::bigint FOR UPDATE`
}

/** `$1` name, `$2` expected revision, `$3` last fired. Compare-and-set of the last firing. */
export function markFiredSql(schema: Schema): string {
  return `
UPDATE ${schema.quoted}.job_schedules SET last_fired_ms = $3::bigint, revision = revision + 1
WHERE name = $1::text AND revision = $2::bigint
RETURNING revision`
}
