/**
 * Migrations — the numbered SQL files in `migrations/`, applied when a store opens.
 *
 * Owns: loading `NNN_name.sql` files, substituting the quoted schema for `{{schema}}`, and
 * applying the pending ones in version order inside ONE transaction under a transaction-scoped
 * advisory lock, recording each in `<schema>.migrations(version, name, applied_at)`.
 *
 * Invariants: versions are 1, 2, 3… with no gaps; a version is applied at most once (the lock
 * serializes concurrent opens, and the second opener reads the first one's record after the
 * lock is granted, since each READ COMMITTED statement takes a fresh snapshot); a database that
 * records a version this code does not know is refused rather than run by older code.
 *
 * Does not: migrate down. A failed migration rolls the whole transaction back.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { assert } from '../../kernel/assert.ts'
import type { Driver } from './Driver.ts'
import type { Schema } from './Schema.ts'
import { toSafeInteger } from '../queues/sql/SqlValues.ts'

/** One migration file. */
export interface Migration {
  readonly version: number
  readonly name: string
  /** The SQL with `{{schema}}` still in it. */
  readonly template: string
}

const directory = new URL('./migrations/', import.meta.url)
const filePattern = /^(\d{3})_([a-z0-9_]+)\.sql$/

/** Every migration file, in version order; asserts the versions are 1…n without gaps. */
export function loadMigrations(): ReadonlyArray<Migration> {
  const migrations = readdirSync(directory)
    .flatMap((file) => {
      const match = filePattern.exec(file)
      if (match === null) return []
      return [{ version: Number(match[1]), name: match[2] as string, template: readFileSync(new URL(file, directory), 'utf8') }]
    })
    .sort((a, b) => a.version - b.version)
  migrations.forEach((migration, index) => assert(migration.version === index + 1, `migration ${migration.name} should be version ${index + 1}`))
  return migrations
}

/** A migration's SQL for one schema. */
function renderMigration(migration: Migration, schema: Schema): string {
  return migration.template.replaceAll('{{schema}}', schema.quoted)
}

/** What `migrate` did. */
export interface MigrationReport {
  /** Versions applied by this call, in order (empty when the schema was already current). */
  readonly applied: ReadonlyArray<number>
  /** The schema version after the call. */
  readonly version: number
}

/**
 * Applies pending migrations up to `upTo` (default: all). `upTo` exists so tests can build
 * every earlier schema version, fill it with data, and upgrade from there.
 */
export async function migrate(driver: Driver, schema: Schema, options: { readonly upTo?: number } = {}): Promise<MigrationReport> {
  const all = loadMigrations()
  const target = options.upTo ?? all.length
  assert(Number.isSafeInteger(target) && target >= 0 && target <= all.length, `no migration ${target}`)
  return driver.transaction(async (tx) => {
    // Two keys: a constant for "Matchbox migrations" and one per schema, so stores in different
    // schemas of one database migrate independently.
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('matchbox.migrate'), hashtext($1))", [schema.name])
    await tx.exec(`CREATE SCHEMA IF NOT EXISTS ${schema.quoted};
CREATE TABLE IF NOT EXISTS ${schema.quoted}.migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);`)
    const recorded = await tx.query<{ version: unknown }>(`SELECT version FROM ${schema.quoted}.migrations ORDER BY version`)
    const versions = recorded.rows.map((row) => toSafeInteger(row.version, 'migrations.version'))
    const current = versions.length === 0 ? 0 : (versions[versions.length - 1] as number)
    if (current > all.length) {
      throw new Error(`schema ${schema.name} is at version ${current}, newer than this Matchbox knows (${all.length}); upgrade Matchbox`)
    }
    versions.forEach((version, index) => assert(version === index + 1, `schema ${schema.name} records migrations ${versions.join(', ')}: not 1…n`))
    const applied: number[] = []
    for (const migration of all) {
      if (migration.version <= current || migration.version > target) continue
      await tx.exec(renderMigration(migration, schema))
      await tx.query(`INSERT INTO ${schema.quoted}.migrations (version, name) VALUES ($1, $2)`, [migration.version, migration.name])
      applied.push(migration.version)
    }
    return { applied, version: Math.max(current, applied[applied.length - 1] ?? 0) }
  })
}

/**
 * The schema's recorded version without creating or changing anything: null when the schema or
 * its migrations table does not exist (Matchbox never ran there). For read-only tools.
 */
export async function schemaVersion(driver: Driver, schema: Schema): Promise<number | null> {
  const table = await driver.query<{ present: unknown }>('SELECT to_regclass($1) IS NOT NULL AS present', [`${schema.quoted}.migrations`])
  if (table.rows[0]?.present !== true) return null
  const latest = await driver.query<{ version: unknown }>(`SELECT coalesce(max(version), 0) AS version FROM ${schema.quoted}.migrations`)
  return toSafeInteger(latest.rows[0]?.version, 'migrations.version')
}
