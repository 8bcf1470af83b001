/**
 * openSqlStore — opening an SQL store: pick a driver, migrate the schema, hand back a Store.
 *
 * Owns: the public factories `openPostgresStore` (a `pg` Pool) and `openEmbeddedStore`
 * (PGlite), and `openSqlStore` for a driver built elsewhere.
 *
 * Invariants: a store is returned only after every migration is applied (under an advisory
 * lock, so concurrent opens are safe); when opening fails, the driver it opened is closed, and
 * a caller's own Pool or PGlite instance is never closed.
 *
 * Does not: choose between embedded and postgres (that is the caller's, e.g. from a URL).
 */
import type { PGlite } from '@electric-sql/pglite'
import type pg from 'pg'
import type { Store } from '../Store.ts'
import type { Driver } from '../../sql/Driver.ts'
import { makePgDriver } from '../../sql/PgDriver.ts'
import { makePgliteDriver } from '../../sql/PgliteDriver.ts'
import { openMigrated } from '../../sql/SqlSession.ts'
import { makeSqlStore } from './SqlStore.ts'

/** Options of `openSqlStore`. */
export interface SqlStoreOptions {
  /** PostgreSQL schema holding the tables (default `matchbox`); /^[a-z_][a-z0-9_]{0,62}$/. */
  readonly schema?: string
}

/**
 * Migrates `driver`'s database and returns a Store over it. The store owns the driver:
 * `close()` closes it, and so does a failed open.
 */
export async function openSqlStore(driver: Driver, options: SqlStoreOptions = {}): Promise<Store> {
  return openMigrated(driver, options.schema, (schema) => makeSqlStore(driver, schema))
}

/** Opens the postgres store over a connection string (its own Pool) or the caller's Pool (left open by `close`). */
export async function openPostgresStore(options: { readonly connectionString?: string; readonly pool?: pg.Pool; readonly schema?: string }): Promise<Store> {
  const { connectionString, pool } = options
  if ((connectionString === undefined) === (pool === undefined)) throw new Error('openPostgresStore needs exactly one of connectionString or pool')
  const driver = makePgDriver(pool !== undefined ? { pool } : { connectionString: connectionString as string })
  return openSqlStore(driver, options.schema !== undefined ? { schema: options.schema } : {})
}

/** Opens the embedded store: PGlite in memory, in `dataDir`, or the caller's instance (left open by `close`). */
export async function openEmbeddedStore(options: { readonly dataDir?: string; readonly schema?: string; readonly pglite?: PGlite } = {}): Promise<Store> {
  if (options.dataDir !== undefined && options.pglite !== undefined) throw new Error('openEmbeddedStore takes a dataDir or a pglite instance, not both')
  const driver = await makePgliteDriver(options.pglite !== undefined ? { pglite: options.pglite } : options.dataDir !== undefined ? { dataDir: options.dataDir } : {})
  return openSqlStore(driver, options.schema !== undefined ? { schema: options.schema } : {})
}
