/**
 * Schema dump: migrates a fresh PostgreSQL database and compares a catalogue dump of the
 * `matchbox` schema — tables, columns (type, nullability, default, collation), constraints,
 * indexes and recorded migrations, in a stable order — with the committed `test/schema.sql`.
 * A migration that changes the schema therefore shows up in review as a diff of that file.
 *
 * `UPDATE_SCHEMA_DUMP=1 npx vitest run test/schema.test.ts` rewrites the file.
 *
 * Runs on the PostgreSQL test server only: catalogue text differs between major versions
 * (PGlite is PostgreSQL 18, the test server 15), and the server is what production runs.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { Driver } from '../src/persistence/sql/Driver.ts'
import { migrate } from '../src/persistence/sql/Migrations.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { makeSchema, schemaDefault } from '../src/persistence/sql/Schema.ts'
import { freshDatabase } from './harness/database.ts'

const dumpPath = new URL('./schema.sql', import.meta.url)

const columnsSql = `
SELECT c.relname AS table_name, a.attname AS column_name, format_type(a.atttypid, a.atttypmod) AS type,
       a.attnotnull AS not_null, pg_get_expr(d.adbin, d.adrelid) AS default_value,
       CASE WHEN a.attcollation <> t.typcollation THEN co.collname END AS collation
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
LEFT JOIN pg_collation co ON co.oid = a.attcollation
WHERE n.nspname = $1 AND c.relkind = 'r'
ORDER BY c.relname, a.attnum`

// NOT NULL is shown with the column; contype 'n' rows exist only from PostgreSQL 18 on.
const constraintsSql = `
SELECT c.relname AS table_name, con.conname AS name, pg_get_constraintdef(con.oid) AS definition
FROM pg_constraint con
JOIN pg_class c ON c.oid = con.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND con.contype <> 'n'
ORDER BY c.relname, con.conname`

const indexesSql = `
SELECT tablename AS table_name, indexname AS name, indexdef AS definition
FROM pg_indexes WHERE schemaname = $1 ORDER BY tablename, indexname`

/** The dump of one migrated schema, as text. */
async function dumpSchema(driver: Driver, schema: string): Promise<string> {
  const lines = [
    '-- Catalogue dump of the migrated `matchbox` schema (test/schema.test.ts).',
    '-- Regenerate: UPDATE_SCHEMA_DUMP=1 npx vitest run test/schema.test.ts',
    '',
  ]
  const migrations = await driver.query<{ version: number; name: string }>(`SELECT version, name FROM "${schema}".migrations ORDER BY version`)
  lines.push('-- migrations', ...migrations.rows.map((row) => `migration ${row.version} ${row.name}`), '')
  const columns = await driver.query<{ table_name: string; column_name: string; type: string; not_null: boolean; default_value: string | null; collation: string | null }>(
    columnsSql,
    [schema],
  )
  let table = ''
  for (const column of columns.rows) {
    if (column.table_name !== table) {
      if (table !== '') lines.push('')
      table = column.table_name
      lines.push(`table ${table}`)
    }
    const parts = [`  column ${column.column_name} ${column.type}`]
    if (column.collation !== null) parts.push(`collate "${column.collation}"`)
    if (column.not_null) parts.push('not null')
    if (column.default_value !== null) parts.push(`default ${column.default_value}`)
    lines.push(parts.join(' '))
  }
  const constraints = await driver.query<{ table_name: string; name: string; definition: string }>(constraintsSql, [schema])
  lines.push('', '-- constraints', ...constraints.rows.map((row) => `constraint ${row.table_name}.${row.name} ${row.definition}`))
  const indexes = await driver.query<{ table_name: string; name: string; definition: string }>(indexesSql, [schema])
  lines.push('', '-- indexes', ...indexes.rows.map((row) => `index ${row.table_name}.${row.name} ${row.definition}`))
  return `${lines.join('\n')}\n`
}

let driver: Driver
beforeAll(async () => {
  driver = makePgDriver({ connectionString: await freshDatabase('schema_dump') })
})
afterAll(async () => {
  await driver.close()
})

it('the migrated schema matches test/schema.sql', async () => {
  await migrate(driver, makeSchema(schemaDefault))
  const dump = await dumpSchema(driver, schemaDefault)
  if (process.env.UPDATE_SCHEMA_DUMP === '1') writeFileSync(dumpPath, dump)
  expect(dump).toBe(readFileSync(dumpPath, 'utf8'))
})
