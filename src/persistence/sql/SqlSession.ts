/**
 * SqlSession — what every SQL-backed store (queues, membership, jobs) does the same way: run a
 * statement and turn a driver failure into the store error catalogue (a write whose outcome is
 * unknown is `Unavailable { maybeCommitted: true }`), turn a validation failure into
 * `InvalidInput`, close the driver, and open a store only after migrating its schema.
 *
 * Does not: hold SQL. Each store keeps its statements in its own files.
 */
import { type Driver, DriverError } from './Driver.ts'
import { loadMigrations, migrate, schemaVersion } from './Migrations.ts'
import { makeSchema, type Schema } from './Schema.ts'
import { InvalidInput, isMatchboxError, Unavailable } from '../../domain/errors.ts'
import { AssertionFailed } from '../../kernel/assert.ts'

// SQLSTATE classes that mean the statement itself is wrong or the data broke an invariant the
// store keeps: 22 data exception, 23 integrity violation, 42 syntax or undefined object
// (except 42501, a missing privilege: an operator's problem, not ours).
function isDefect(error: DriverError): boolean {
  const state = error.sqlState
  return state !== null && (state.startsWith('22') || state.startsWith('23') || (state.startsWith('42') && state !== '42501'))
}

/** Maps anything thrown during `operation` into the store's error catalogue. */
export function toStoreError(operation: string, isWrite: boolean, error: unknown): unknown {
  if (isMatchboxError(error) || error instanceof AssertionFailed) return error
  if (error instanceof DriverError) {
    if (isDefect(error)) return new AssertionFailed(`${operation}: the database refused a statement (${error.message})`)
    return new Unavailable({ operation, detail: error.message, maybeCommitted: isWrite && error.sent && !error.rejectedByServer })
  }
  // Not a driver failure we understand: be conservative about whether a write happened.
  return new Unavailable({ operation, detail: error instanceof Error ? error.message : String(error), maybeCommitted: isWrite })
}

/** Statement helpers bound to one driver. */
export interface SqlSession {
  /** Runs a statement; failures become store errors. `isWrite` decides whether it may have committed. */
  run<Row>(operation: string, isWrite: boolean, text: string, params: ReadonlyArray<unknown>): Promise<Row[]>
  /** A statement that may change rows. */
  write<Row>(operation: string, text: string, params: ReadonlyArray<unknown>): Promise<Row[]>
  /** A statement that changes nothing (including failure-path reads after a write matched nothing). */
  read<Row>(operation: string, text: string, params: ReadonlyArray<unknown>): Promise<Row[]>
  /** Runs input validation; a failure becomes the store error for `operation` (InvalidInput). */
  validated<T>(operation: string, check: () => T): T
  /** Closes the driver; a failure becomes a store error. */
  close(): Promise<void>
}

/** Statement helpers over `driver`. */
export function makeSqlSession(driver: Driver): SqlSession {
  const run = async <Row>(operation: string, isWrite: boolean, text: string, params: ReadonlyArray<unknown>): Promise<Row[]> => {
    try {
      return (await driver.query<Row>(text, params)).rows
    } catch (error) {
      throw toStoreError(operation, isWrite, error)
    }
  }
  return {
    run,
    write: (operation, text, params) => run(operation, true, text, params),
    read: (operation, text, params) => run(operation, false, text, params),
    validated(operation, check) {
      try {
        return check()
      } catch (error) {
        throw toStoreError(operation, false, error)
      }
    },
    async close() {
      try {
        await driver.close()
      } catch (error) {
        throw toStoreError('close', false, error)
      }
    },
  }
}

/**
 * Migrates `driver`'s database in `schemaName` (default `matchbox`) and builds a store over it;
 * on failure closes the driver. An unreachable database is `Unavailable`; a bad schema name or
 * a database newer than this code is a configuration problem that retrying will not fix, so it
 * is thrown as it is.
 */
export async function openMigrated<T>(driver: Driver, schemaName: string | undefined, make: (schema: Schema) => T): Promise<T> {
  try {
    const schema = makeSchema(schemaName)
    await migrate(driver, schema)
    return make(schema)
  } catch (error) {
    await driver.close().catch(() => {})
    throw error instanceof DriverError ? toStoreError('open', true, error) : error
  }
}

/**
 * Builds a store over `schemaName` (default `matchbox`) only where Matchbox already ran: for
 * operators' tools, which must not leave a schema behind in a database where it never did.
 * `InvalidInput` with field `schema` when `where` (the database, as the caller names it to a
 * person) has no Matchbox schema of that name, or one newer than this code; one older than this
 * code is migrated with `migrateOlder` (a tool that writes), else refused too (a read creates
 * and changes nothing). On failure closes the driver.
 */
export async function openExisting<T>(driver: Driver, schemaName: string | undefined, where: string, migrateOlder: boolean, make: (schema: Schema) => T): Promise<T> {
  try {
    const schema = makeSchema(schemaName)
    const version = await schemaVersion(driver, schema)
    const current = loadMigrations().length
    if (version === null) throw new InvalidInput({ field: 'schema', reason: `no Matchbox schema "${schema.name}" in ${where} (Matchbox never ran there, or the schema is misspelt)` })
    if (version < current && migrateOlder) await migrate(driver, schema)
    else if (version < current) throw new InvalidInput({ field: 'schema', reason: `Matchbox schema "${schema.name}" in ${where} is at version ${version}, older than this Matchbox reads (${current}); open an engine on it once to migrate it` })
    if (version > current) throw new InvalidInput({ field: 'schema', reason: `Matchbox schema "${schema.name}" in ${where} is at version ${version}, newer than this Matchbox knows (${current}); upgrade Matchbox` })
    return make(schema)
  } catch (error) {
    await driver.close().catch(() => {})
    throw error instanceof DriverError ? toStoreError('open', false, error) : error
  }
}
