/**
 * userDataSql — the statements on `task_queue_user_data`: read, insert-if-absent, and
 * compare-and-set on the version.
 *
 * Invariants: a write succeeds only from the expected version, decided by the database in the
 * same statement (ON CONFLICT DO NOTHING, or UPDATE … WHERE version = expected), so two
 * writers from one version cannot both win. Range fences do not apply here (upstream Matching: they
 * protect backlog ownership, not user data).
 *
 * Does not: explain a lost race — the store reads the current version only when a write
 * matched nothing.
 */
import type { Schema } from '../../sql/Schema.ts'

/** `$1` namespace, `$2` family. */
export function getUserDataSql(schema: Schema): string {
  return `SELECT version, data FROM ${schema.quoted}.task_queue_user_data WHERE namespace = $1::text AND family = $2::text`
}

/** `$1` namespace, `$2` family, `$3` data (JSON text), `$4` now. Inserts version 1 unless a row exists. */
export function insertUserDataSql(schema: Schema): string {
  return `
INSERT INTO ${schema.quoted}.task_queue_user_data (namespace, family, version, data, updated_at_ms)
VALUES ($1::text, $2::text, 1, $3::text::jsonb, $4::bigint)
ON CONFLICT (namespace, family) DO NOTHING
RETURNING version, data`
}

/** `$1` namespace, `$2` family, `$3` expected version, `$4` data (JSON text), `$5` now. */
export function updateUserDataSql(schema: Schema): string {
  return `
UPDATE ${schema.quoted}.task_queue_user_data
SET version = version + 1, data = $4::text::jsonb, updated_at_ms = $5::bigint
WHERE namespace = $1::text AND family = $2::text AND version = $3::bigint
RETURNING version, data`
}
