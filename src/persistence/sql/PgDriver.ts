/**
 * PgDriver — the `Driver` over a `pg` Pool, for the postgres store.
 *
 * Owns: checking clients out of the pool, BEGIN/COMMIT/ROLLBACK on one client, turning every
 * client failure into a `DriverError` that says whether the statement was sent, and the time
 * bounds of a pool it creates: connecting (and waiting for a pooled client) within
 * `connectTimeoutMs`, statements cancelled by the server after `statementTimeoutMs`, and the
 * client giving up on a silent server a grace later. The timers are pg's own options
 * (`connectionTimeoutMillis`, `statement_timeout`, `query_timeout`), so a server that accepts
 * TCP and never answers fails the call as a `DriverError`, which the store reports as
 * `Unavailable`, instead of hanging it.
 *
 * Invariants: a client whose connection may be broken is destroyed, never returned to the pool
 * (pg re-uses released clients); a caller-provided Pool is never ended by `close` and keeps its
 * own settings, timeouts included; an owned Pool gets an `error` listener, because pg emits
 * idle-client errors there and an unhandled one would crash the process.
 *
 * Statements with parameters run as named prepared statements (named by a hash of their text):
 * a connection parses and plans each once, and learns the shape of its result once
 * (PgPreparedQuery.ts). Behind PgBouncer in transaction mode, which does not
 * keep a session's prepared statements, use session mode or a Pool of your own to a direct
 * connection.
 *
 * `statement_timeout` travels as a startup parameter. PgBouncer refuses startup parameters it
 * does not know: behind it, list `statement_timeout` in its `ignore_startup_parameters`, or pass
 * a Pool of your own.
 *
 * Does not: retry or interpret errors — the store maps outcomes to its catalogue.
 */
import { createHash } from 'node:crypto'
import pg from 'pg'
import { InvalidInput } from '../../domain/errors.ts'
import { pgConnectTimeoutMs, pgStatementGraceMs, pgStatementTimeoutMs, preparedStatementsMax, timerDelayMsMax } from '../../kernel/Limits.ts'
import { checkChannel, type Driver, DriverError, type Listener, type Queryable, type QueryResult, toDriverError } from './Driver.ts'
import { isPreparable, runPrepared } from './PgPreparedQuery.ts'

/** Time bounds of a pool the driver creates; each a whole number of ms in 1…`timerDelayMsMax`. */
export interface PgTimeoutOptions {
  /**
   * Longest wait for a connection: opening one (TCP, TLS, startup, authentication) or, when the
   * pool is full, waiting for a free one. Default `pgConnectTimeoutMs` (10 s).
   */
  readonly connectTimeoutMs?: number
  /**
   * Longest a statement runs before the server cancels it (`statement_timeout`); the client gives
   * up on a server that stays silent for this plus a grace (`pgStatementGraceMs`, at most this
   * again). Default `pgStatementTimeoutMs` (30 s).
   */
  readonly statementTimeoutMs?: number
}

/**
 * Where the pool comes from: a connection string (the driver owns the pool, with the time bounds
 * of `PgTimeoutOptions`) or the caller's Pool, used with the settings it has.
 */
export type PgDriverOptions = ({ readonly connectionString: string } & PgTimeoutOptions) | { readonly pool: pg.Pool }

function checkTimeout(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > timerDelayMsMax) {
    throw new InvalidInput({ field, reason: `must be a whole number of ms in 1…${timerDelayMsMax}` })
  }
  return value
}

/** The pg Pool settings for `options`: the connection string and the time bounds. */
function poolConfig(options: { readonly connectionString: string } & PgTimeoutOptions): pg.PoolConfig {
  const connectTimeoutMs = checkTimeout('connectTimeoutMs', options.connectTimeoutMs, pgConnectTimeoutMs)
  const statementTimeoutMs = checkTimeout('statementTimeoutMs', options.statementTimeoutMs, pgStatementTimeoutMs)
  return {
    connectionString: options.connectionString,
    connectionTimeoutMillis: connectTimeoutMs,
    statement_timeout: statementTimeoutMs,
    query_timeout: Math.min(timerDelayMsMax, statementTimeoutMs + Math.min(statementTimeoutMs, pgStatementGraceMs)),
  }
}

// An array element PostgreSQL's array input reads as itself without quotes: no separator, quote,
// brace, backslash or space, and not the word NULL. Ids, claim tokens and queue names of the
// job store's batch statements are all of this kind.
const plainElement = /^[A-Za-z0-9._~:-]+$/
const isPlainElement = (value: unknown): boolean => typeof value === 'string' && plainElement.test(value) && (value.length !== 4 || value.toLowerCase() !== 'null')

/**
 * `params` with each array of plain strings written as its array literal (`{a,b,c}`), which the
 * server reads exactly as pg's own encoding of the array: pg quotes and escapes every element
 * with two regular-expression replacements, a cost a batch statement pays per job (its ids and
 * claim tokens). Any other array, and every other value, goes to pg as given. Answers `params`
 * itself when it holds no array.
 */
export function withArrayLiterals(params: ReadonlyArray<unknown>): unknown[] {
  let out: unknown[] | undefined
  for (let index = 0; index < params.length; index++) {
    const value = params[index]
    if (!Array.isArray(value) || !value.every(isPlainElement)) continue
    out ??= params.slice()
    out[index] = `{${value.join(',')}}`
  }
  return out ?? (params as unknown[])
}

/**
 * Creates a driver over a `pg` Pool. Throws `InvalidInput` (naming `connectTimeoutMs` or
 * `statementTimeoutMs`) for a timeout that is not a whole number of ms in 1…`timerDelayMsMax`.
 */
// Statements with parameters run as named prepared statements: each connection parses and plans
// one the first time and then only binds and executes it, instead of parsing every call. The name
// is a hash of the text, so drivers sharing a caller's Pool agree on it; at most
// `preparedStatementsMax` texts are named, so a connection never holds an unbounded set.
const preparedNames = new Map<string, string>()

function preparedNameOf(text: string): string | null {
  const known = preparedNames.get(text)
  if (known !== undefined) return known
  if (preparedNames.size >= preparedStatementsMax) return null
  const name = `matchbox_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`
  preparedNames.set(text, name)
  return name
}

export function makePgDriver(options: PgDriverOptions): Driver {
  const ownsPool = !('pool' in options)
  const pool = 'pool' in options ? options.pool : new pg.Pool(poolConfig(options))
  // A LISTEN connection is made with the pool's own settings (host, credentials, timeouts).
  const clientConfig = pool.options as pg.ClientConfig
  const listeners = new Set<Listener>()
  // Idle-client errors are reported again, usefully, by the next statement that checks a client out.
  if (ownsPool) pool.on('error', () => {})
  let closed = false

  // While checked out, a client whose backend dies between statements emits `error`; without a
  // listener that would be an uncaught exception. The next statement reports the failure.
  const ignore = (): void => {}

  // The listener goes on inside pg's callback, not after an await: the pool hands a client over
  // while parsing the server's bytes, and a FATAL error in the same read (a backend terminated
  // as it became ready) is emitted before any promise continuation could attach it.
  const checkout = (): Promise<pg.PoolClient> => {
    if (closed) return Promise.reject(new DriverError({ cause: new Error('driver is closed'), sent: false }))
    return new Promise((resolve, reject) => {
      pool.connect((error, client) => {
        if (error || client === undefined) return reject(toDriverError(error, false))
        client.on('error', ignore)
        resolve(client)
      })
    })
  }

  const run = async <Row>(client: pg.PoolClient, text: string, given: ReadonlyArray<unknown>): Promise<QueryResult<Row>> => {
    try {
      const name = given.length > 0 ? preparedNameOf(text) : null
      const params = withArrayLiterals(given)
      if (name !== null && isPreparable(client, params)) return await runPrepared<Row>(client, name, text, params)
      const result = name === null ? await client.query(text, params) : await client.query({ name, text, values: params })
      return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 }
    } catch (error) {
      throw toDriverError(error, true)
    }
  }

  const withClient = async <T>(fn: (client: pg.PoolClient, markBroken: () => void) => Promise<T>): Promise<T> => {
    const client = await checkout()
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
        // A connection in an unknown state (lost, or timed out on a silent server) is not rolled
        // back but destroyed (withClient does): the server rolls back a transaction whose
        // connection is gone, and a ROLLBACK sent to a silent server would wait out another timeout.
        if (error instanceof DriverError && !error.rejectedByServer) throw error
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
      for (const listener of Array.from(listeners)) await listener.close() // a snapshot: each close removes itself
      if (ownsPool) await pool.end()
    },
    listen: (channels, onNotification, onLost) => listenOn(clientConfig, channels, onNotification, onLost, listeners),
  }
}

// A LISTEN connection lives outside the pool: it is held for the engine's lifetime, and pooled
// clients are shared by statements.
async function listenOn(
  config: pg.ClientConfig,
  channels: ReadonlyArray<string>,
  onNotification: (channel: string, payload: string) => void,
  onLost: (error: DriverError) => void,
  registry: Set<Listener>,
): Promise<Listener> {
  const names = channels.map(checkChannel)
  const client = new pg.Client(config)
  let ended = false
  const lose = (cause: unknown): void => {
    if (ended) return
    ended = true
    registry.delete(listener)
    void client.end().catch(() => {})
    onLost(toDriverError(cause, true))
  }
  const listener: Listener = {
    async close() {
      if (ended) return
      ended = true
      registry.delete(listener)
      await client.end().catch(() => {})
    },
  }
  client.on('error', lose)
  client.on('end', () => lose(new Error('the LISTEN connection ended')))
  client.on('notification', (message) => {
    if (!ended) onNotification(message.channel, message.payload ?? '')
  })
  try {
    await client.connect()
    for (const name of names) await client.query(`LISTEN "${name}"`)
  } catch (error) {
    ended = true
    await client.end().catch(() => {})
    throw toDriverError(error, false)
  }
  registry.add(listener)
  return listener
}
