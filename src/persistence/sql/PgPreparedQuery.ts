/**
 * PgPreparedQuery — one execution of a named prepared statement on a `pg` client, written as pg's
 * `Submittable` (the interface pg-cursor and pg-query-stream use), for the driver's statements
 * with parameters (PgDriver.ts).
 *
 * What it saves over pg's own `Query`, per execution: pg copies the query's config object,
 * builds a result whose row template and type parsers it makes anew from the row description,
 * and asks the server to describe the result every time. Here a client remembers, per prepared
 * statement, the shape of its result — column names and type parsers, taken from the first
 * execution's row description — so later executions send Bind, Execute and Sync without
 * Describe, and each row is built straight from the remembered shape. A statement's result shape
 * cannot change while the connection keeps it prepared (PostgreSQL refuses the execution: "cached
 * plan must not change result type"), so the shape is kept per client, beside the statements pg
 * records as prepared on it: at most one per statement name, and the driver names at most
 * `preparedStatementsMax` texts (PgDriver.ts), so a client keeps at most that many shapes.
 *
 * Rows come back as pg's would: an object per row keyed by column name, each value through the
 * client's type parser for its column (its `types` overrides included); `rowCount` from the
 * command tag, as pg reads it.
 *
 * Does not: run on a client in pipeline mode or with binary results, or with parameters other
 * than text, numbers, booleans and nulls (`isPreparable`: the caller runs those through pg's
 * `Query`); retry; or interpret errors (the server's error, or a connection failure, is what pg
 * would hand its own query).
 */
import type pg from 'pg'
import type { QueryResult } from './Driver.ts'

type Row = Record<string, unknown>

// The parts of pg's protocol connection a submittable drives (pg/lib/connection.js), and the
// statements pg records as parsed on it (its own `Query` reads and writes the same records).
interface ProtocolConnection {
  readonly stream: { cork?(): void; uncork?(): void }
  readonly parsedStatements: Record<string, string | undefined>
  readonly submittedNamedStatements: Record<string, string | undefined>
  parse(query: { readonly text: string; readonly name: string }): void
  bind(config: { readonly portal: string; readonly statement: string; readonly values: ReadonlyArray<unknown>; readonly valueMapper: (value: unknown) => string | null }): void
  describe(message: { readonly type: 'P'; readonly name: string }): void
  execute(config: { readonly portal: string }): void
  sync(): void
  sendCopyFail(message: string): void
}

// A client's fields this file reads: whether it pipelines or asks for binary results.
interface ClientMode {
  readonly pipeline?: boolean
  readonly binary?: boolean
}

// What a row description message carries per column.
interface FieldDescription {
  readonly name: string
  readonly dataTypeID: number
  readonly format?: string
}

// A prepared statement's result, as a client learnt it from its first row description.
interface RowShape {
  readonly names: ReadonlyArray<string>
  readonly parsers: ReadonlyArray<(text: string) => unknown>
}

// Per client, the result shape of each statement it has prepared and described.
const shapesByClient = new WeakMap<pg.PoolClient, Map<string, RowShape>>()

// pg's own mapping of these parameter values (utils.prepareValue): text as is, the rest as text.
const toText = (value: unknown): string | null => (value === null || value === undefined ? null : typeof value === 'string' ? value : String(value))

/**
 * True when `runPrepared` can run a statement with `values` on `client`: it neither pipelines nor
 * asks for binary results, and every value is text, a number, a boolean or null.
 */
export function isPreparable(client: pg.PoolClient, values: ReadonlyArray<unknown>): boolean {
  const mode = client as unknown as ClientMode
  if (mode.pipeline === true || mode.binary === true) return false
  for (const value of values) {
    if (value !== null && value !== undefined && typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return false
  }
  return true
}

/** Runs the prepared statement `name` (its `text`, prepared on first use on this client) with `values`. */
export function runPrepared<R = Row>(client: pg.PoolClient, name: string, text: string, values: ReadonlyArray<unknown>): Promise<QueryResult<R>> {
  let shapes = shapesByClient.get(client)
  if (shapes === undefined) shapesByClient.set(client, (shapes = new Map()))
  return new Promise((resolve, reject) => {
    const query = new PreparedExecution(client, shapes, name, text, values, (error, result) => (error === null ? resolve(result as QueryResult<R>) : reject(error)))
    client.query(query)
  })
}

type Callback = (error: unknown, result?: QueryResult<Row>) => void

// One execution, as pg's client drives a submittable: `submit` writes the messages, then the
// client hands it each message of the answer until ReadyForQuery, and `callback` (which the
// client may wrap with its read timeout) hears the outcome once.
class PreparedExecution {
  readonly name: string
  readonly text: string
  callback: Callback
  readonly #client: pg.PoolClient
  readonly #shapes: Map<string, RowShape>
  readonly #values: ReadonlyArray<unknown>
  #shape: RowShape | undefined
  readonly #rows: Row[] = []
  #rowCount = 0
  #failure: unknown = null

  constructor(client: pg.PoolClient, shapes: Map<string, RowShape>, name: string, text: string, values: ReadonlyArray<unknown>, callback: Callback) {
    this.#client = client
    this.#shapes = shapes
    this.name = name
    this.text = text
    this.#values = values
    this.callback = callback
  }

  submit(connection: ProtocolConnection): Error | null {
    const { name, text } = this
    const parsed = connection.parsedStatements[name] ?? connection.submittedNamedStatements[name]
    if (parsed !== undefined && parsed !== text) return new Error(`Prepared statements must be unique - '${name}' was used for a different statement`)
    // Corked, the messages leave in one write.
    connection.stream.cork?.()
    try {
      if (parsed === undefined) {
        // A statement parsed anew may answer another shape than one remembered from before.
        this.#shapes.delete(name)
        connection.parse({ text, name })
        connection.submittedNamedStatements[name] = text
      }
      // Read now, not when the query was made: an execution queued behind the statement's first may find it learnt.
      this.#shape = this.#shapes.get(name)
      connection.bind({ portal: '', statement: name, values: this.#values, valueMapper: toText })
      if (this.#shape === undefined) connection.describe({ type: 'P', name: '' })
      connection.execute({ portal: '' })
      connection.sync()
    } finally {
      connection.stream.uncork?.()
    }
    return null
  }

  handleRowDescription(message: { readonly fields: ReadonlyArray<FieldDescription> }): void {
    const shape: RowShape = {
      names: message.fields.map((field) => field.name),
      parsers: message.fields.map((field) => this.#client.getTypeParser(field.dataTypeID, (field.format ?? 'text') as 'text') as (text: string) => unknown),
    }
    this.#shape = shape
    this.#shapes.set(this.name, shape)
  }

  handleDataRow(message: { readonly fields: ReadonlyArray<string | null> }): void {
    if (this.#failure !== null) return
    const shape = this.#shape
    if (shape === undefined) {
      this.#failure = new Error(`statement ${this.name}: a row arrived before its description`)
      return
    }
    const { names, parsers } = shape
    const { fields } = message
    const row: Row = {}
    try {
      for (let index = 0; index < fields.length; index++) {
        const raw = fields[index]
        row[names[index] as string] = raw === null || raw === undefined ? null : (parsers[index] as (text: string) => unknown)(raw)
      }
    } catch (error) {
      // Reported once the server is ready again, as pg's own query does.
      this.#failure = error
      return
    }
    this.#rows.push(row)
  }

  handleCommandComplete(message: { readonly text: string }): void {
    // The tag's last number, where it has one ("SELECT 3", "INSERT 0 1", "DELETE 2").
    const tag = message.text
    const space = tag.lastIndexOf(' ')
    const count = space < 0 ? Number.NaN : Number(tag.slice(space + 1))
    this.#rowCount = Number.isInteger(count) ? count : 0
  }

  handleEmptyQuery(): void {}

  handlePortalSuspended(): void {
    // Only an execution limited to some rows is suspended, and this one asks for them all.
    this.#failure ??= new Error(`statement ${this.name}: the portal was suspended`)
  }

  handleCopyInResponse(connection: ProtocolConnection): void {
    connection.sendCopyFail('No source stream defined')
  }

  handleCopyData(): void {}

  handleError(error: unknown): void {
    this.callback(this.#failure ?? error)
  }

  handleReadyForQuery(): void {
    if (this.#failure !== null) this.callback(this.#failure)
    else this.callback(null, { rows: this.#rows, rowCount: this.#rowCount })
  }
}
