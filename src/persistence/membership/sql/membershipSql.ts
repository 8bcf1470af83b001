/**
 * membershipSql — the statements on `membership_hosts` (migration 002): heartbeat upsert,
 * leave, and the live-host read.
 *
 * Invariants: each operation is one statement; the heartbeat is an upsert, so two concurrent
 * first heartbeats of one host cannot both insert; every value is a parameter and the quoted
 * schema is the only interpolation; time is the caller's `nowMs`, never the database's now().
 *
 * Does not: prune expired rows (liveHosts skips them) or decide ownership.
 */
import type { Schema } from '../../sql/Schema.ts'

/** `$1` host id, `$2` now, `$3` expires at. Upserts the host's row; returns it. */
export function heartbeatSql(schema: Schema): string {
  return `
INSERT INTO ${schema.quoted}.membership_hosts AS host (host_id, last_seen_ms, expires_at_ms)
VALUES ($1::text, $2::bigint, $3::bigint)
ON CONFLICT (host_id) DO UPDATE
  SET last_seen_ms = EXCLUDED.last_seen_ms, expires_at_ms = EXCLUDED.expires_at_ms
RETURNING host.host_id, host.last_seen_ms, host.expires_at_ms`
}

/** `$1` host id. Deletes the host's row; returns it when there was one. */
export function leaveSql(schema: Schema): string {
  return `DELETE FROM ${schema.quoted}.membership_hosts WHERE host_id = $1::text RETURNING host_id`
}

/** `$1` now. Rows expiring after now, by host id in "C" order (the column's collation: UTF-8 byte order). */
export function liveHostsSql(schema: Schema): string {
  return `
SELECT host_id, last_seen_ms, expires_at_ms FROM ${schema.quoted}.membership_hosts
WHERE expires_at_ms > $1::bigint
ORDER BY host_id`
}
