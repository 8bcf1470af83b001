/**
 * Validate, then act — on PostgreSQL: a transactional enqueue's `tx` must be a client inside an
 * open transaction (a finished one is `InvalidInput` naming it, an aborted one too, a closed
 * client never "may have committed"), an `enqueueMany` over the byte total writes not even the
 * queue's routing row, and the CLI's read commands create no schema where Matchbox never ran
 * (exit 2, naming the schema and database they looked in). Each case counts the rows after.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock, type Matchbox, open } from '../src/index.ts'
import { enqueueBatchBytesMax } from '../src/kernel/Limits.ts'
import { freshDatabase } from './harness/database.ts'
import { cli } from './harness/runCli.ts'

let url: string
let pool: pg.Pool
let mb: Matchbox

const count = async (table: string, where = 'true', params: unknown[] = []): Promise<number> =>
  (await pool.query(`SELECT count(*)::int AS n FROM matchbox.${table} WHERE ${where}`, params)).rows[0].n as number

beforeAll(async () => {
  url = await freshDatabase('validate_first')
  pool = new pg.Pool({ connectionString: url })
  mb = await open({ store: { pool }, clock: new ManualClock(1_700_000_000_000), seed: 5, hostId: 'validate' })
})
afterAll(async () => {
  await mb.close()
  await pool.end()
})

describe('enqueue with { tx } checks the transaction first', () => {
  it('a committed, a rolled-back or a never-begun transaction is InvalidInput naming tx; nothing is written', async () => {
    const q = mb.queue('tx-finished')
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      await client.query('COMMIT')
      await expect(q.enqueue('after commit', { tx: client })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.tx' })
      await client.query('BEGIN')
      await client.query('ROLLBACK')
      await expect(q.enqueueMany([{ payload: 'after rollback' }], { tx: client })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.tx' })
      await expect(q.enqueue('never begun', { tx: client })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.tx' })
    } finally {
      client.release()
    }
    expect(await count('jobs', 'queue = $1', ['tx-finished'])).toBe(0)
    expect(await count('task_queue_user_data', 'family = $1', ['tx-finished'])).toBe(0)
  })

  it('an aborted transaction is InvalidInput naming tx, not Unavailable', async () => {
    const q = mb.queue('tx-aborted')
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      await expect(client.query('SELECT 1/0')).rejects.toThrow()
      const error = await q.enqueue('in an aborted transaction', { tx: client }).catch((caught: unknown) => caught)
      // pg rejects the failed statement when the server's error arrives, and learns the aborted
      // status from the ReadyForQuery after it, which a loaded machine may deliver a turn later:
      // then the engine's up-front check still sees an open transaction and the store's statement
      // is the one refused. Either way it is InvalidInput naming tx, with nothing written.
      expect(error).toMatchObject({ _tag: 'InvalidInput', field: expect.stringMatching(/(^|\.)tx$/), retryable: false })
    } finally {
      // Rolled back whatever happened above, so the pool never hands out an aborted transaction.
      await client.query('ROLLBACK').catch(() => {})
      client.release()
    }
    expect(await count('jobs', 'queue = $1', ['tx-aborted'])).toBe(0)
  })

  it('a closed client is refused without "may have committed"; a Pool is not a transaction', async () => {
    const q = mb.queue('tx-closed')
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query('BEGIN')
    await client.end()
    const error = await q.enqueue('on a closed client', { tx: client }).catch((caught: unknown) => caught)
    // pg keeps the last status of a client it closed: the store's statement finds it closed.
    expect(error).toMatchObject({ _tag: 'InvalidInput', field: expect.stringMatching(/(^|\.)tx$/) })
    expect((error as { maybeCommitted?: boolean }).maybeCommitted ?? false).toBe(false)
    await expect(q.enqueue('on the pool', { tx: pool as never })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.tx' })
    expect(await count('jobs', 'queue = $1', ['tx-closed'])).toBe(0)
  })

  it('a transaction aborted after the check is named tx too, and never "may have committed"', async () => {
    const q = mb.queue('tx-late')
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      // The failing statement is queued first, so the enqueue's check still sees an open
      // transaction and its insert reaches the server inside the aborted one.
      const failing = client.query('SELECT 1/0').catch(() => {})
      const error = await q.enqueue('late', { tx: client }).catch((caught: unknown) => caught)
      await failing
      expect(error).toMatchObject({ _tag: 'InvalidInput', field: 'tx' })
      await client.query('ROLLBACK')
    } finally {
      client.release()
    }
    expect(await count('jobs', 'queue = $1', ['tx-late'])).toBe(0)
  })
})

describe('enqueueMany over the byte total', () => {
  it('is refused before the new queue’s routing row is written', async () => {
    const payload = 'x'.repeat(1 << 19)
    const jobs = Array.from({ length: Math.ceil(enqueueBatchBytesMax / payload.length) + 1 }, () => ({ payload }))
    await expect(mb.queue('too-big').enqueueMany(jobs)).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'jobs' })
    expect(await count('task_queue_user_data', 'family = $1', ['too-big'])).toBe(0)
    expect(await count('jobs', 'queue = $1', ['too-big'])).toBe(0)
  })
})

describe('the CLI’s read commands never create a schema', () => {
  const schemas = async (database: string): Promise<string[]> => {
    const client = new pg.Client({ connectionString: database })
    await client.connect()
    try {
      return (await client.query("SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT LIKE 'pg_%' AND schema_name <> 'information_schema' ORDER BY 1")).rows.map((row) => row.schema_name as string)
    } finally {
      await client.end()
    }
  }

  it.each([
    [['jobs', 'counts']],
    [['jobs', 'list', 'emails']],
    [['jobs', 'show', 'emails', 'some-id']],
    [['jobs', 'retry', 'emails', 'some-id']],
    [['jobs', 'cancel', 'emails', 'some-id']],
    [['inspect']],
  ])('%j on a database where Matchbox never ran: exit 2, no schema made', async (command) => {
    const empty = await freshDatabase('cli_empty')
    const before = await schemas(empty)
    const ran = await cli([...command, '--database-url', empty])
    expect(ran.code).toBe(2)
    expect(ran.stderr).toMatch(/InvalidInput: invalid schema: no Matchbox schema "matchbox" in database "mb_cli_empty_\w+" at /)
    expect(ran.stderr).not.toContain(empty)
    expect(await schemas(empty)).toEqual(before)
  })

  it('a misspelt --schema beside a real one is refused, not answered "no jobs"', async () => {
    await mb.queue('typo').enqueue('here')
    const ran = await cli(['jobs', 'counts', '--database-url', url, '--schema', 'matchbx'])
    expect(ran.code).toBe(2)
    expect(ran.stderr).toMatch(/no Matchbox schema "matchbx"/)
    expect(await schemas(url)).not.toContain('matchbx')
    const right = await cli(['jobs', 'counts', '--database-url', url, '--json'])
    expect(right.code).toBe(0)
    expect(JSON.parse(right.stdout)).toContainEqual({ queue: 'typo', pending: 1, processing: 0, dead: 0 })
  })
})
