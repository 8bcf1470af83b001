/**
 * PgliteDriver — the `Driver` over PGlite, for the embedded store: real PostgreSQL SQL in
 * process, in memory or in a data directory.
 *
 * Owns: serializing every statement and transaction on PGlite's single connection, so a
 * transaction's statements are never interleaved with another caller's.
 *
 * Invariants: uses of one driver run strictly one after another, in call order; a caller-given
 * PGlite instance is never closed by `close` (PGlite's own locks order us against its other
 * users); bigint columns come back as numbers or bigints — the store converts them.
 *
 * Does not: share PGlite across processes (PGlite is single-process by design).
 */
import { PGlite, type Transaction } from '@electric-sql/pglite'
import { type Driver, DriverError, type Queryable, type QueryResult, toDriverError } from './Driver.ts'

/** Where the PGlite instance comes from: a new one (in memory, or in `dataDir`) or the caller's. */
export type PgliteDriverOptions = { readonly dataDir?: string } | { readonly pglite: PGlite }

/** Creates a driver over PGlite; starting a new instance takes a few seconds. */
export async function makePgliteDriver(options: PgliteDriverOptions = {}): Promise<Driver> {
  const ownsInstance = !('pglite' in options)
  const db = 'pglite' in options ? options.pglite : await PGlite.create(options.dataDir)
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
        if (ownsInstance) await db.close()
      })
    },
  }
}
