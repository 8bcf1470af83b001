/**
 * Driver — the narrow seam under the SQL store: SQL text and parameters in, rows out.
 *
 * The SQL store (SqlStore.ts) is written once against this interface, so the embedded store
 * (PGlite) and the postgres store (`pg` Pool) run the very same statements. A driver owns its
 * connections and nothing else: it knows no tables, no fencing and no error catalogue.
 *
 * Invariants: `transaction` runs its callback on ONE connection between BEGIN and COMMIT and
 * rolls back when the callback throws; `close` releases only what the driver opened.
 *
 * Errors: every failure is thrown as a `DriverError`, which records whether the statement
 * reached the server and whether the server itself reported the failure — what the store needs
 * to decide whether a failed write may have committed.
 */

/** Which database a driver speaks to: in-process PGlite or a PostgreSQL server. */
export type DriverKind = 'embedded' | 'postgres'

/** Rows of one statement. `rowCount` is what the command tag reports (rows affected or returned). */
export interface QueryResult<Row> {
  readonly rows: Row[]
  readonly rowCount: number
}

/** Something that runs one parameterized statement: a driver, or a transaction in progress. */
export interface Queryable {
  /** Runs one statement with `$1…$n` parameters (extended protocol: never multi-statement). */
  query<Row>(text: string, params?: ReadonlyArray<unknown>): Promise<QueryResult<Row>>
  /** Runs a parameterless script that may hold several statements (migrations only). */
  exec(script: string): Promise<void>
}

/** A connection source for the SQL store. */
export interface Driver extends Queryable {
  readonly kind: DriverKind
  /** Runs `fn` inside BEGIN … COMMIT on one connection; ROLLBACK when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>
  /** Releases connections the driver opened; a caller-provided pool or instance stays open. */
  close(): Promise<void>
  /**
   * Opens a dedicated connection that LISTENs on `channels` (PostgreSQL only; absent on drivers
   * that cannot hear other processes). `onNotification` hears every notification; `onLost` is
   * called once if the connection breaks, after which the listener is dead (listen again).
   */
  listen?(channels: ReadonlyArray<string>, onNotification: (channel: string, payload: string) => void, onLost: (error: DriverError) => void): Promise<Listener>
}

/** A live LISTEN connection. */
export interface Listener {
  /** Ends the connection (idempotent); `onLost` is not called for it. */
  close(): Promise<void>
}

/** Channel names we LISTEN on are our own hashed identifiers; anything else is refused before it reaches SQL text. */
export function checkChannel(channel: string): string {
  if (!/^[a-z0-9_]{1,63}$/.test(channel)) throw new DriverError({ cause: new Error(`not a channel name: ${JSON.stringify(channel)}`), sent: false })
  return channel
}

/**
 * A driver failure with what is known about its outcome.
 *
 * `sent` is false when the statement never left the client (no connection could be had).
 * `sqlState` is the PostgreSQL error code when the server reported the error; a reported error
 * means the statement (and, outside an explicit transaction, its implicit transaction) failed.
 */
export class DriverError extends Error {
  override readonly name = 'DriverError'
  readonly sqlState: string | null
  readonly sent: boolean
  override readonly cause: unknown

  constructor(params: { readonly cause: unknown; readonly sent: boolean }) {
    super(describe(params.cause))
    this.cause = params.cause
    this.sent = params.sent
    this.sqlState = sqlStateOf(params.cause)
  }

  /**
   * True when the server said the statement failed and its transaction is gone, so nothing it
   * wrote can be committed, and the connection is still usable. Not so for connection errors
   * (SQLSTATE 08…) nor for a backend being terminated (57P01–57P03, e.g. pg_terminate_backend):
   * those close the connection, and we do not bet that a commit could not slip in before them.
   */
  get rejectedByServer(): boolean {
    return this.sqlState !== null && !this.sqlState.startsWith('08') && !/^57P0[1-3]$/.test(this.sqlState)
  }
}

/** Wraps anything thrown by a database client into a `DriverError` (idempotent). */
export function toDriverError(cause: unknown, sent: boolean): DriverError {
  return cause instanceof DriverError ? cause : new DriverError({ cause, sent })
}

// Server-reported errors (pg's and PGlite's DatabaseError) carry a severity and a SQLSTATE;
// Node socket errors carry codes like EPIPE in the same `code` field, and have no severity.
function sqlStateOf(cause: unknown): string | null {
  const error = cause as { code?: unknown; severity?: unknown } | null
  const code = error?.code
  return typeof code === 'string' && typeof error?.severity === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : null
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code
    return typeof code === 'string' ? `${cause.message} (${code})` : cause.message
  }
  return String(cause)
}
