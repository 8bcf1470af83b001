/**
 * PgliteDriver — the `Driver` over PGlite, for the embedded store: real PostgreSQL SQL in
 * process, in memory or in a data directory.
 *
 * Owns: serializing every statement and transaction on PGlite's single connection, so a
 * transaction's statements are never interleaved with another caller's; and, for a data
 * directory it opens, the directory's lock (DataDirLock.ts), held from before PGlite starts
 * until after it closed, so a second opener — another process, or another driver in this one —
 * is refused with `DataDirInUse` instead of corrupting the database.
 *
 * Invariants: uses of one driver run strictly one after another, in call order; a caller-given
 * PGlite instance is never closed by `close` (PGlite's own locks order us against its other
 * users) and is not locked (its owner opened it); bigint columns come back as numbers or
 * bigints — the store converts them.
 *
 * Does not: load PGlite before a driver is made (the module is imported then, so importing
 * Matchbox to use PostgreSQL costs nothing for it), or share PGlite across processes (PGlite is
 * single-process by design).
 */
import type { PGlite, Transaction } from '@electric-sql/pglite'
import { type DataDirLock, lockDataDir } from './DataDirLock.ts'
import { type Driver, DriverError, type Queryable, type QueryResult, toDriverError } from './Driver.ts'

/** Where the PGlite instance comes from: a new one (in memory, or in `dataDir`) or the caller's. */
export type PgliteDriverOptions = { readonly dataDir?: string } | { readonly pglite: PGlite }

// The directory PGlite would store `dataDir` in on this machine, or null when it keeps the
// database elsewhere: in memory (no dataDir, '' or `memory://`) or in a browser store (`idb://` …).
function directoryOf(dataDir: string | undefined): string | null {
  if (dataDir === undefined || dataDir === '') return null
  if (dataDir.startsWith('file://')) return dataDir.slice('file://'.length)
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(dataDir) ? null : dataDir
}

/**
 * Creates a driver over PGlite; starting a new instance takes a few seconds. A `dataDir` is
 * locked first: `DataDirInUse` when another opener holds it, `InvalidInput` (field `dataDir`)
 * when it is not a usable directory (a regular file, a missing parent); a missing directory
 * is created.
 */
export async function makePgliteDriver(options: PgliteDriverOptions = {}): Promise<Driver> {
  const ownsInstance = !('pglite' in options)
  const directory = 'pglite' in options ? null : directoryOf(options.dataDir)
  const lock: DataDirLock | null = directory === null ? null : lockDataDir(directory)
  let db: PGlite
  try {
    // Loaded here, not at import: an engine on PostgreSQL or memory never loads PGlite's WASM build.
    db = 'pglite' in options ? options.pglite : await (await import('@electric-sql/pglite')).PGlite.create(options.dataDir)
  } catch (error) {
    lock?.release()
    throw error
  }
  let closed = false
  // Tail of the queue of uses: each use starts when the previous one settled.
  let tail: Promise<unknown> = Promise.resolve()

  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const use = tail.then(() => {
      if (closed || db.closed) throw new DriverError({ cause: new Error('PGlite is closed'), sent: false })
      return fn()
    })
    tail = use.catch(() => {})
    return use
  }

  const on = (target: PGlite | Transaction): Queryable => ({
    query: async <Row>(text: string, params: ReadonlyArray<unknown> = []): Promise<QueryResult<Row>> => {
      try {
        const result = await target.query<Row>(text, params as unknown[])
        return { rows: result.rows, rowCount: result.rowCount ?? result.affectedRows ?? result.rows.length }
      } catch (error) {
        throw toDriverError(error, true)
      }
    },
    exec: async (script: string): Promise<void> => {
      try {
        await target.exec(script)
      } catch (error) {
        throw toDriverError(error, true)
      }
    },
  })
  const direct = on(db)

  return {
    kind: 'embedded',
    query: <Row>(text: string, params?: ReadonlyArray<unknown>) => exclusive(() => direct.query<Row>(text, params)),
    exec: (script: string) => exclusive(() => direct.exec(script)),
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      exclusive(async () => {
        try {
          return await db.transaction((tx) => fn(on(tx)))
        } catch (error) {
          // Errors of `fn` pass through untouched (they may be the store's own); PGlite's become DriverErrors.
          if (error instanceof DriverError || !(error instanceof Error) || !('severity' in error)) throw error
          throw toDriverError(error, true)
        }
      }),
    close: async () => {
      if (closed) return
      await exclusive(async () => {
        closed = true
        try {
          if (ownsInstance) await db.close()
        } finally {
          lock?.release()
        }
      })
    },
  }
}
