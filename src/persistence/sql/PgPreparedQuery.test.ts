/**
 * PgPreparedQuery on a real server: rows and row counts as pg's own `Query` gives them (types
 * parsed by the client's parsers, its `types` overrides included), the result described once per
 * statement and client (executions queued behind the first included), a statement parsed again learning its shape again, a server error
 * rejecting with the server's error and leaving the client usable, and the values and clients it
 * leaves to pg (`isPreparable`).
 */
import pg from 'pg'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { freshDatabase } from '../../../test/harness/database.ts'
import { isPreparable, runPrepared } from './PgPreparedQuery.ts'

// The protocol messages a client's connection receives, by name, counted from now on.
function countMessages(client: pg.PoolClient, name: string): () => number {
  let count = 0
  ;(client as unknown as { connection: { on(event: string, listener: () => void): void } }).connection.on(name, () => count++)
  return () => count
}

describe('PgPreparedQuery', () => {
  let connectionString: string
  const pools: pg.Pool[] = []
  const clients: pg.PoolClient[] = []
  beforeAll(async () => {
    connectionString = await freshDatabase('pg_prepared')
  })
  afterEach(async () => {
    for (const client of clients.splice(0)) client.release()
    for (const pool of pools.splice(0)) await pool.end()
  })

  async function clientOf(config: pg.PoolConfig = {}): Promise<pg.PoolClient> {
    const pool = new pg.Pool({ connectionString, max: 1, ...config })
    pools.push(pool)
    const client = await pool.connect()
    clients.push(client)
    return client
  }

  it('answers the rows and row count pg answers, describing the result only on its first execution', async () => {
    const client = await clientOf()
    await client.query('CREATE TABLE kinds (id text PRIMARY KEY, n bigint, small int, flag boolean, doc jsonb, tags text[], note text)')
    await client.query(`INSERT INTO kinds VALUES ('a', 9007199254740991, 7, true, '{"x":[1,"two"]}', '{p,q}', NULL), ('b', -3, NULL, false, 'null', '{}', 'ü')`)
    const text = 'SELECT id, n, small, flag, doc, tags, note FROM kinds WHERE id = ANY($1::text[]) AND $2::int > 0 ORDER BY id'
    const values = ['{a,b}', 1]
    const expected = await client.query(text, values)
    const descriptions = countMessages(client, 'rowDescription')
    const first = await runPrepared(client, 'kinds_select', text, values)
    const second = await runPrepared(client, 'kinds_select', text, values)
    expect(first).toEqual({ rows: expected.rows, rowCount: 2 })
    expect(second).toEqual(first)
    expect(descriptions()).toBe(1)
    const update = await runPrepared(client, 'kinds_update', 'UPDATE kinds SET flag = $1::boolean WHERE id <> $2::text', [false, 'none'])
    expect(update).toEqual({ rows: [], rowCount: 2 })
  })

  it('describes once for executions queued on a client before the first has answered', async () => {
    const client = await clientOf()
    const descriptions = countMessages(client, 'rowDescription')
    const answers = await Promise.all([1, 2, 3].map((n) => runPrepared(client, 'queued', 'SELECT $1::int AS n', [n])))
    expect(answers.map((answer) => answer.rows)).toEqual([[{ n: 1 }], [{ n: 2 }], [{ n: 3 }]])
    expect(descriptions()).toBe(1)
  })

  it("parses values with the client's type parsers, its overrides included", async () => {
    const types = { getTypeParser: (oid: number, format?: string) => (oid === 20 ? (text: string) => BigInt(text) : pg.types.getTypeParser(oid, format as 'text')) }
    const client = await clientOf({ types: types as pg.CustomTypesConfig })
    const { rows } = await runPrepared<{ n: bigint; t: string }>(client, 'overridden', 'SELECT $1::bigint AS n, $2::text AS t', [12, 'x'])
    expect(rows).toEqual([{ n: 12n, t: 'x' }])
  })

  it('learns the shape again when the statement is parsed again on the client', async () => {
    const client = await clientOf()
    await client.query('CREATE TABLE shifting (id text)')
    await client.query(`INSERT INTO shifting VALUES ('a')`)
    const text = 'SELECT * FROM shifting WHERE id = $1::text'
    expect((await runPrepared(client, 'shifting_select', text, ['a'])).rows).toEqual([{ id: 'a' }])
    // The server drops the plan; pg's record of it goes too, so the next run parses it anew.
    await client.query('DEALLOCATE shifting_select')
    const connection = (client as unknown as { connection: { parsedStatements: Record<string, string> } }).connection
    delete connection.parsedStatements.shifting_select
    await client.query('ALTER TABLE shifting ADD COLUMN n int DEFAULT 5')
    expect((await runPrepared(client, 'shifting_select', text, ['a'])).rows).toEqual([{ id: 'a', n: 5 }])
  })

  it("rejects with the server's error, and the client runs the next statement", async () => {
    const client = await clientOf()
    const error = await runPrepared(client, 'divide', 'SELECT 1 / $1::int AS q', [0]).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(pg.DatabaseError)
    expect(error).toMatchObject({ code: '22012' })
    expect((await runPrepared(client, 'divide', 'SELECT 1 / $1::int AS q', [1])).rows).toEqual([{ q: 1 }])
    const bad = await runPrepared(client, 'bad', 'SELEC $1::int', [1]).catch((caught: unknown) => caught)
    expect(bad).toMatchObject({ code: '42601' })
    expect((await runPrepared(client, 'good', 'SELECT $1::int AS one', [1])).rows).toEqual([{ one: 1 }])
  })

  it('leaves to pg the values it does not map itself, and clients that pipeline or read binary results', async () => {
    const client = await clientOf()
    expect(isPreparable(client, ['a', 1, 2.5, true, null, undefined])).toBe(true)
    expect(isPreparable(client, [['a']])).toBe(false)
    expect(isPreparable(client, [{ a: 1 }])).toBe(false)
    expect(isPreparable(client, [new Date(0)])).toBe(false)
    expect(isPreparable(client, [Buffer.from('a')])).toBe(false)
    expect(isPreparable(client, [10n])).toBe(false)
    expect(isPreparable(await clientOf({ binary: true } as pg.PoolConfig), ['a'])).toBe(false)
  })
})
