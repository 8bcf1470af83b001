/**
 * PgDriver — the `Driver` over a `pg` Pool, for the postgres store.
 *
 * Owns: checking clients out of the pool, BEGIN/COMMIT/ROLLBACK on one client, and turning
 * every client failure into a `DriverError` that says whether the statement was sent.
 *
 * Invariants: a client whose connection may be broken is destroyed, never returned to the pool
 * (pg re-uses released clients); a caller-provided Pool is never ended by `close`; an owned
 * Pool gets an `error` listener, because pg emits idle-client errors there and an unhandled one
 * would crash the process.
 *
 * Does not: retry, time out or interpret errors — the store maps outcomes to its catalogue.
 */
import pg from 'pg'
import { type Driver, DriverError, type Queryable, type QueryResult, toDriverError } from './Driver.ts'

/** Where the pool comes from: a connection string (the driver owns the pool) or the caller's Pool. */
export type PgDriverOptions = { readonly connectionString: string } | { readonly pool: pg.Pool }

/** Creates a driver over a `pg` Pool. */
export function makePgDriver(options: PgDriverOptions): Driver {
  const ownsPool = !('pool' in options)
  const pool = 'pool' in options ? options.pool : new pg.Pool({ connectionString: options.connectionString })
  // Idle-client errors are reported again, usefully, by the next statement that checks a client out.
  if (ownsPool) pool.on('error', () => {})
  let closed = false

  const checkout = async (): Promise<pg.PoolClient> => {
    if (closed) throw new DriverError({ cause: new Error('driver is closed'), sent: false })
    try {
      return await pool.connect()
    } catch (error) {
      throw toDriverError(error, false)
    }
  }

  // While checked out, a client whose backend dies between statements emits `error`; without a
  // listener that would be an uncaught exception. The next statement reports the failure.
  const ignore = (): void => {}

  const run = async <Row>(client: pg.PoolClient, text: string, params: ReadonlyArray<unknown>): Promise<QueryResult<Row>> => {
    try {
      const result = await client.query(text, params as unknown[])
      return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 }
    } catch (error) {
      throw toDriverError(error, true)
    }
  }

  const withClient = async <T>(fn: (client: pg.PoolClient, markBroken: () => void) => Promise<T>): Promise<T> => {
    const client = await checkout()
    client.on('error', ignore)
    let broken = false
    try {
      return await fn(client, () => {
        broken = true
      })
    } catch (error) {
      // Only a server-reported error leaves the connection known-good.
      if (!(error instanceof DriverError && error.rejectedByServer)) broken = true
      throw error
    } finally {
      client.off('error', ignore)
      client.release(broken ? new Error('connection state unknown after a failure') : undefined)
    }
  }

  const transaction = <T>(fn: (tx: Queryable) => Promise<T>): Promise<T> =>
    withClient(async (client, markBroken) => {
      const tx: Queryable = {
        query: <Row>(text: string, params: ReadonlyArray<unknown> = []) => run<Row>(client, text, params),
        exec: async (script: string) => {
          await run(client, script, [])
        },
      }
      await run(client, 'BEGIN', [])
      let result: T
      try {
        result = await fn(tx)
      } catch (error) {
        // A failed ROLLBACK means the connection is gone: destroy it, but report the first error.
        await run(client, 'ROLLBACK', []).catch(markBroken)
        throw error
      }
      await run(client, 'COMMIT', [])
      return result
    })

  return {
    kind: 'postgres',
    query: <Row>(text: string, params: ReadonlyArray<unknown> = []) => withClient((client) => run<Row>(client, text, params)),
    exec: (script: string) =>
      withClient(async (client) => {
        await run(client, script, [])
      }),
    transaction,
    close: async () => {
      if (closed) return
      closed = true
      if (ownsPool) await pool.end()
    },
  }
}
