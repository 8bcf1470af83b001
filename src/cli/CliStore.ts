/**
 * CliStore — opens the store a command was pointed at (the Matching store for `inspect`, the
 * job store for `jobs`): PostgreSQL when given a database URL, else the embedded store (PGlite)
 * in a data directory.
 *
 * Invariants: exactly one location; a data directory must already hold a PGlite database —
 * an operator's typo must not silently create an empty one (PGlite would). Likewise the schema:
 * a read (`'read'`: inspect, jobs counts | list | show) creates and migrates nothing, and a
 * database or schema without Matchbox is refused naming the schema and the database it looked
 * in (`InvalidInput`, exit 2); a write (`'write'`: retry, cancel) also refuses a schema that is
 * not there, and migrates one that is, as every engine's open does (DESIGN.md §4).
 *
 * Does not: keep the store open (the caller closes it) or read connection settings from the
 * environment; what is opened is what the command line says.
 */
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { JobStore } from '../persistence/jobs/JobStore.ts'
import { makeSqlJobStore } from '../persistence/jobs/sql/SqlJobStore.ts'
import { makeSqlStore } from '../persistence/queues/sql/SqlStore.ts'
import type { Driver } from '../persistence/sql/Driver.ts'
import { makePgDriver } from '../persistence/sql/PgDriver.ts'
import { makePgliteDriver } from '../persistence/sql/PgliteDriver.ts'
import type { Schema } from '../persistence/sql/Schema.ts'
import { openExisting } from '../persistence/sql/SqlSession.ts'
import type { Store } from '../persistence/queues/Store.ts'
import { UsageError } from './UsageError.ts'

/** Where a command's store is. */
export interface StoreLocation {
  readonly databaseUrl?: string
  readonly dataDir?: string
  readonly schema?: string
}

/** What to say when no store was named. */
export const storeLocationHint = 'pass --database-url <postgres://…> for PostgreSQL or --data-dir <dir> for the embedded store (PGlite)'

/** Where the location points: a database URL, or an existing PGlite data directory; `UsageError` otherwise. */
export function resolveLocation(location: StoreLocation): { readonly databaseUrl: string } | { readonly dataDir: string } {
  const { databaseUrl, dataDir } = location
  if (databaseUrl !== undefined && dataDir !== undefined) throw new UsageError({ reason: `give one store, not two: ${storeLocationHint}` })
  if (databaseUrl !== undefined) return { databaseUrl }
  if (dataDir === undefined) throw new UsageError({ reason: `no store given: ${storeLocationHint}` })
  const directory = resolve(dataDir)
  if (!existsSync(directory)) throw new UsageError({ reason: `no data directory at ${directory}; an existing one is required` })
  // Every PostgreSQL data directory, PGlite's included, has PG_VERSION at its root.
  if (!existsSync(join(directory, 'PG_VERSION'))) throw new UsageError({ reason: `${directory} is not an embedded (PGlite) data directory` })
  return { dataDir: directory }
}

/** Whether a command only reads (nothing is created or migrated) or also writes. */
export type CliAccess = 'read' | 'write'

// The database a location names, for a person: never the URL itself, which may hold a password.
function describeWhere(where: { readonly databaseUrl: string } | { readonly dataDir: string }): string {
  if ('dataDir' in where) return `data directory ${where.dataDir}`
  try {
    const url = new URL(where.databaseUrl)
    return `database "${decodeURIComponent(url.pathname.replace(/^\//, '')) || '(default)'}" at ${url.hostname || 'localhost'}${url.port === '' ? '' : `:${url.port}`}`
  } catch {
    return 'the database of --database-url'
  }
}

// Opens the location's driver and builds `make` over its existing schema (migrated first by a
// write, when older than this code).
async function openAt<T>(location: StoreLocation, access: CliAccess, make: (driver: Driver, schema: Schema) => T): Promise<T> {
  const where = resolveLocation(location)
  const driver = 'databaseUrl' in where ? makePgDriver({ connectionString: where.databaseUrl }) : await makePgliteDriver({ dataDir: where.dataDir })
  return openExisting(driver, location.schema, describeWhere(where), access === 'write', (schema) => make(driver, schema))
}

/** Opens the Matching store at `location`; `UsageError` when the location is missing, doubled or not a store. */
export async function openCliStore(location: StoreLocation, access: CliAccess): Promise<Store> {
  return openAt(location, access, makeSqlStore)
}

/** Opens the job store at `location`, with the same rules as `openCliStore`. */
export async function openCliJobStore(location: StoreLocation, access: CliAccess): Promise<JobStore> {
  return openAt(location, access, makeSqlJobStore)
}
