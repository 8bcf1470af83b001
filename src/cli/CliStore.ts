/**
 * CliStore — opens the store a command was pointed at (the Matching store for `inspect`, the
 * job store for `jobs`): PostgreSQL when given a database URL, else the embedded store (PGlite)
 * in a data directory.
 *
 * Invariants: exactly one location; a data directory must already hold a PGlite database —
 * an operator's typo must not silently create an empty one (PGlite would). Opening applies
 * pending migrations, as every store open does (DESIGN.md §4).
 *
 * Does not: keep the store open (the caller closes it) or read connection settings from the
 * environment; what is opened is what the command line says.
 */
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { JobStore } from '../persistence/jobs/JobStore.ts'
import { openSqlJobStore } from '../persistence/jobs/sql/SqlJobStore.ts'
import { openEmbeddedStore, openPostgresStore } from '../persistence/queues/sql/openSqlStore.ts'
import { makePgDriver } from '../persistence/sql/PgDriver.ts'
import { makePgliteDriver } from '../persistence/sql/PgliteDriver.ts'
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

// Where the location points: a database URL, or an existing PGlite data directory.
function resolveLocation(location: StoreLocation): { readonly databaseUrl: string } | { readonly dataDir: string } {
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

/** Opens the store at `location`; `UsageError` when the location is missing, doubled or not a store. */
export async function openCliStore(location: StoreLocation): Promise<Store> {
  const withSchema = location.schema === undefined ? {} : { schema: location.schema }
  const where = resolveLocation(location)
  if ('databaseUrl' in where) return openPostgresStore({ connectionString: where.databaseUrl, ...withSchema })
  return openEmbeddedStore({ dataDir: where.dataDir, ...withSchema })
}

/** Opens the job store at `location`, with the same rules as `openCliStore`. */
export async function openCliJobStore(location: StoreLocation): Promise<JobStore> {
  const withSchema = location.schema === undefined ? {} : { schema: location.schema }
  const where = resolveLocation(location)
  const driver = 'databaseUrl' in where ? makePgDriver({ connectionString: where.databaseUrl }) : await makePgliteDriver({ dataDir: where.dataDir })
  return openSqlJobStore(driver, withSchema)
}
