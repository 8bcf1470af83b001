/**
 * PgDriver's time bounds: a server that accepts TCP and never answers, a server that answers the
 * startup and then goes silent, and a statement the real server cancels — each fails as a typed
 * `Unavailable` ended by its bound (small timeouts passed in; the error names the bound, and a
 * hang fails by the test's timeout) instead of hanging; a backend
 * terminated as it becomes ready fails the statement instead of crashing the process. A caller's Pool
 * keeps its own settings; a malformed timeout is `InvalidInput` naming the option. Arrays of plain
 * strings travel as array literals and arrive as the same arrays.
 */
import { createServer, type Server, type Socket } from 'node:net'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { freshDatabase } from '../../../test/harness/database.ts'
import { InvalidInput, Unavailable } from '../../domain/errors.ts'
import { makePgDriver, withArrayLiterals } from './PgDriver.ts'
import { openSqlStore } from '../queues/sql/openSqlStore.ts'
import { makeSqlSession } from './SqlSession.ts'

// A pg protocol answer to any startup message: AuthenticationOk, then ReadyForQuery (idle).
const startupAnswer = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0, 0x5a, 0, 0, 0, 5, 0x49])

interface FakeServer {
  readonly url: string
  close(): Promise<void>
}

/** A TCP server on a free port; `answerStartup` decides whether it ever says anything. */
async function fakeServer(answerStartup: boolean): Promise<FakeServer> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
    if (answerStartup) socket.once('data', () => socket.write(startupAnswer))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no TCP address')
  return {
    url: `postgres://matchbox@127.0.0.1:${address.port}/silent`,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

// Runs `attempt` and returns what it threw. Which bound ended it is read from the error's message
// (the driver's own, or pg's), not from a clock: a test asserts no wall-clock time, and a hang
// fails by the test's timeout.
async function failure(attempt: () => Promise<unknown>): Promise<{ error: unknown; message: string }> {
  try {
    await attempt()
  } catch (error) {
    return { error, message: error instanceof Error ? error.message : String(error) }
  }
  return expect.fail('expected a failure')
}

describe('PgDriver against a server that accepts TCP and never answers', () => {
  let server: FakeServer
  beforeAll(async () => {
    server = await fakeServer(false)
  })
  afterAll(() => server.close())

  it('fails a statement and an open as Unavailable within the connect timeout', { timeout: 10_000 }, async () => {
    const driver = makePgDriver({ connectionString: server.url, connectTimeoutMs: 200 })
    try {
      const statement = await failure(() => makeSqlSession(driver).write('probe', 'SELECT 1', []))
      expect(statement.error).toBeInstanceOf(Unavailable)
      // Nothing was sent: a write that never reached a server cannot have committed.
      expect(statement.error).toMatchObject({ operation: 'probe', maybeCommitted: false, retryable: true })
      expect(statement.message).toMatch(/connection timeout/)
    } finally {
      await driver.close()
    }
    const open = await failure(() => openSqlStore(makePgDriver({ connectionString: server.url, connectTimeoutMs: 200 })))
    expect(open.error).toBeInstanceOf(Unavailable)
    expect(open.error).toMatchObject({ operation: 'open', maybeCommitted: false })
    expect(open.message).toMatch(/connection timeout/)
  })
})

describe('PgDriver against a server that goes silent after the startup', () => {
  let server: FakeServer
  beforeAll(async () => {
    server = await fakeServer(true)
  })
  afterAll(() => server.close())

  it('gives up on a statement after the statement timeout and its grace; a write may have committed', { timeout: 10_000 }, async () => {
    // Grace = min(statement timeout, pgStatementGraceMs): the client waits 2 × 100 ms here.
    const driver = makePgDriver({ connectionString: server.url, connectTimeoutMs: 5_000, statementTimeoutMs: 100 })
    const session = makeSqlSession(driver)
    try {
      const read = await failure(() => session.read('peek', 'SELECT 1', []))
      expect(read.error).toBeInstanceOf(Unavailable)
      expect(read.error).toMatchObject({ operation: 'peek', maybeCommitted: false })
      expect(read.message).toMatch(/read timeout/)

      const write = await failure(() => session.write('poke', 'UPDATE t SET n = 1', []))
      // The statement reached the server, which said nothing: it may have run.
      expect(write.error).toMatchObject({ _tag: 'Unavailable', operation: 'poke', maybeCommitted: true })
      expect(write.message).toMatch(/read timeout/)

      // A statement with parameters (a prepared statement, PgPreparedQuery.ts) gives up alike.
      const prepared = await failure(() => session.write('prod', 'UPDATE t SET n = $1::int', [1]))
      expect(prepared.error).toMatchObject({ _tag: 'Unavailable', operation: 'prod', maybeCommitted: true })
      expect(prepared.message).toMatch(/read timeout/)

      const transaction = await failure(() => driver.transaction((tx) => tx.query('SELECT 1')))
      expect(transaction.error).toMatchObject({ name: 'DriverError', sent: true, rejectedByServer: false })
      expect(transaction.message).toMatch(/read timeout/)
    } finally {
      await driver.close()
    }
  })
})

// ErrorResponse FATAL 57P01, as a backend terminated by pg_terminate_backend sends it.
function fatalTermination(): Buffer {
  const fields = Buffer.concat([
    Buffer.from('SFATAL\u0000', 'utf8'),
    Buffer.from('C57P01\u0000', 'utf8'),
    Buffer.from('Mterminating connection due to administrator command\u0000', 'utf8'),
    Buffer.from([0]),
  ])
  const header = Buffer.alloc(5)
  header.write('E', 0)
  header.writeInt32BE(fields.length + 4, 1)
  return Buffer.concat([header, fields])
}

describe('PgDriver when a backend is terminated as it becomes ready', () => {
  it('fails the statement as Unavailable instead of an uncaught error event', { timeout: 10_000 }, async () => {
    // Startup answered and the termination in one TCP write: pg hands the client over and
    // emits the error while parsing the same bytes.
    const sockets = new Set<Socket>()
    const server: Server = createServer((socket) => {
      sockets.add(socket)
      socket.on('error', () => {})
      socket.once('data', () => socket.end(Buffer.concat([startupAnswer, fatalTermination()])))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const address = server.address()
    if (address === null || typeof address === 'string') throw new Error('no TCP address')
    const driver = makePgDriver({ connectionString: `postgres://matchbox@127.0.0.1:${address.port}/terminated`, connectTimeoutMs: 2_000, statementTimeoutMs: 1_000 })
    try {
      const statement = await failure(() => makeSqlSession(driver).write('probe', 'SELECT 1', []))
      expect(statement.error).toBeInstanceOf(Unavailable)
      // Likewise a statement with parameters, which runs as a prepared statement of its own (PgPreparedQuery.ts).
      const prepared = await failure(() => makeSqlSession(driver).write('probe', 'SELECT $1::int', [1]))
      expect(prepared.error).toBeInstanceOf(Unavailable)
    } finally {
      await driver.close()
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})

describe('PgDriver on a real server', () => {
  let connectionString: string
  const drivers: Array<{ close(): Promise<void> }> = []
  beforeAll(async () => {
    connectionString = await freshDatabase('pg_driver')
  })
  afterEach(async () => {
    for (const driver of drivers.splice(0)) await driver.close()
  })

  it('runs statements with parameters as named prepared statements, parsed once per connection, and scripts as plain text', async () => {
    const pool = new pg.Pool({ connectionString, max: 1 })
    const driver = makePgDriver({ pool })
    drivers.push({ close: async () => {
      await driver.close()
      await pool.end()
    } })
    expect((await driver.query<{ n: number }>('SELECT $1::int AS n', [1])).rows).toEqual([{ n: 1 }])
    expect((await driver.query<{ n: number }>('SELECT $1::int AS n', [2])).rows).toEqual([{ n: 2 }])
    await driver.exec('SELECT 1; SELECT 2')
    const prepared = await driver.query<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements')
    expect(prepared.rows).toEqual([{ name: expect.stringMatching(/^matchbox_[0-9a-f]{24}$/), statement: 'SELECT $1::int AS n' }])
  })

  it('sends arrays of plain strings as array literals that the server reads as the arrays themselves', async () => {
    const pool = new pg.Pool({ connectionString, max: 1 })
    const driver = makePgDriver({ pool })
    drivers.push({ close: async () => {
      await driver.close()
      await pool.end()
    } })
    const plain = ['0mfn5x2a1Zq-4~b', 'tok.1f', 'a:b_c', 'nulls', 'NUL']
    const quoted = ['a,b', 'say "hi"', 'back\\slash', ' padded ', '{brace}', 'NULL', 'null', '', 'ü']
    // The literal replaces only an array whose every element reads as itself unquoted.
    expect(withArrayLiterals([plain, 7, null])).toEqual([`{${plain.join(',')}}`, 7, null])
    expect(withArrayLiterals([quoted])[0]).toBe(quoted)
    expect(withArrayLiterals([[]])).toEqual(['{}'])
    const params: unknown[] = ['x']
    expect(withArrayLiterals(params)).toBe(params)
    for (const value of [plain, quoted, [...plain, ...quoted], []]) {
      const { rows } = await driver.query<{ value: string[]; n: number }>('SELECT $1::text[] AS value, cardinality($1::text[]) AS n', [value])
      expect(rows).toEqual([{ value, n: value.length }])
    }
  })

  it('sets statement_timeout: the server cancels a long statement and the driver stays usable', { timeout: 10_000 }, async () => {
    const driver = makePgDriver({ connectionString, statementTimeoutMs: 200 })
    drivers.push(driver)
    expect((await driver.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows).toEqual([{ statement_timeout: '200ms' }])
    const slow = await failure(() => makeSqlSession(driver).write('slow', 'SELECT pg_sleep(5)', []))
    // The server reported the cancellation (57014): nothing it did can commit.
    expect(slow.error).toMatchObject({ _tag: 'Unavailable', operation: 'slow', maybeCommitted: false })
    expect(slow.message).toMatch(/statement timeout \(57014\)/)
    expect((await driver.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
  })

  it('uses the default bounds when none are given, and leaves a caller Pool its own settings', async () => {
    const owned = makePgDriver({ connectionString })
    drivers.push(owned)
    expect((await owned.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows).toEqual([{ statement_timeout: '30s' }])
    const pool = new pg.Pool({ connectionString, statement_timeout: 1_234 })
    try {
      const borrowed = makePgDriver({ pool })
      expect((await borrowed.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows).toEqual([{ statement_timeout: '1234ms' }])
      await borrowed.close()
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
    } finally {
      await pool.end()
    }
  })

  it('refuses a malformed timeout as InvalidInput naming the option', () => {
    for (const [options, field] of [
      [{ connectTimeoutMs: 0 }, 'connectTimeoutMs'],
      [{ connectTimeoutMs: 1.5 }, 'connectTimeoutMs'],
      [{ statementTimeoutMs: -1 }, 'statementTimeoutMs'],
      [{ statementTimeoutMs: 2 ** 31 }, 'statementTimeoutMs'],
      [{ statementTimeoutMs: '30' }, 'statementTimeoutMs'],
    ] as const) {
      expect(() => makePgDriver({ connectionString, ...(options as object) })).toThrow(InvalidInput)
      expect(() => makePgDriver({ connectionString, ...(options as object) })).toThrow(expect.objectContaining({ field }))
    }
  })
})
