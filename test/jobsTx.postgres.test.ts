/**
 * Transactional enqueue (and enqueueMany) on PostgreSQL, with the engine on the caller's
 * own Pool (left open by close). The delivery task is added later by the due-time driver, which
 * finds the committed row at the next claim or at its safety scan.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock, type Matchbox, open } from '../src/index.ts'
import { until } from './harness/settle.ts'
import { freshDatabase } from './harness/database.ts'
import { dueChannelOf, dueSignalOf } from '../src/persistence/bus/Channels.ts'

const start = 1_700_000_000_000
let pool: pg.Pool
let mb: Matchbox
let clock: ManualClock

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await freshDatabase('jobs_tx') })
  await pool.query('CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL)')
  clock = new ManualClock(start)
  mb = await open({ store: { pool }, clock, seed: 11, hostId: 'tx' })
})
afterAll(async () => {
  await mb.close()
  // The caller's pool is still usable after close.
  await pool.query('SELECT 1')
  await pool.end()
})

async function inTransaction<T>(fn: (client: pg.PoolClient) => Promise<T>, commit: boolean): Promise<T> {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    const result = await fn(client)
    await client.query(commit ? 'COMMIT' : 'ROLLBACK')
    return result
  } finally {
    client.release()
  }
}

describe('transactional enqueue (postgres)', () => {
  it('the job and the business row commit together, and the job is claimable after commit', async () => {
    const q = mb.queue('orders')
    const client = await pool.connect()
    await client.query('BEGIN')
    await client.query("INSERT INTO orders (item) VALUES ('lamp')")
    const id = await q.enqueue({ order: 'lamp' }, { tx: client })
    expect(await q.getJob(id)).toBeNull()
    expect(await q.claim()).toBeNull()
    await client.query('COMMIT')
    client.release()
    expect(await q.getJob(id)).toMatchObject({ state: 'pending', payload: { order: 'lamp' } })
    const job = await q.claim()
    expect(job?.id).toBe(id)
    expect(await job?.ack()).toBe(true)
  })

  it('a rolled-back transaction leaves neither the business row nor the job', async () => {
    const q = mb.queue('orders')
    const id = await inTransaction(async (client) => {
      await client.query("INSERT INTO orders (item) VALUES ('ghost')")
      return q.enqueue({ order: 'ghost' }, { tx: client })
    }, false)
    expect(await q.getJob(id)).toBeNull()
    expect(await q.claim()).toBeNull()
    expect((await pool.query("SELECT count(*)::int AS n FROM orders WHERE item = 'ghost'")).rows[0]?.n).toBe(0)
  })

  it('a waiting worker gets a job committed after its enqueue at the driver’s next scan', async () => {
    const q = mb.queue('scanned')
    const seen: unknown[] = []
    const stop = q.work(async (job) => {
      seen.push(job.payload)
    })
    await inTransaction((client) => q.enqueue('committed later', { tx: client }), true)
    clock.advance(1_000)
    await until(() => seen.length === 1, 'the worker ran the committed job', 100_000)
    expect(seen).toEqual(['committed later'])
    await stop()
  })

  it('bad input on the transaction writes nothing and leaves the transaction usable', async () => {
    const q = mb.queue('orders')
    await inTransaction(async (client) => {
      await expect(q.enqueue({ when: new Date(0) }, { tx: client })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'payload.when' })
      await client.query("INSERT INTO orders (item) VALUES ('still fine')")
    }, true)
    expect((await pool.query("SELECT count(*)::int AS n FROM orders WHERE item = 'still fine'")).rows[0]?.n).toBe(1)
  })

  it('enqueueMany on the transaction: all jobs or none, and the due signal raised at commit', async () => {
    const q = mb.queue('bulk-orders')
    const listener = await pool.connect()
    const signals: string[] = []
    listener.on('notification', (message) => {
      if (dueSignalOf(message.payload ?? '')[0] === 'bulk-orders') signals.push(message.channel)
    })
    await listener.query(`LISTEN "${dueChannelOf('matchbox')}"`)
    try {
      const ghosts = await inTransaction((client) => q.enqueueMany([{ payload: 'a' }, { payload: 'b' }], { tx: client }), false)
      for (const id of ghosts) expect(await q.getJob(id)).toBeNull()
      const jobs = Array.from({ length: 50 }, (_, n) => ({ payload: { n }, ...(n === 7 ? { key: 'seven' } : {}) }))
      const ids = await inTransaction(async (client) => {
        const inside = await q.enqueueMany(jobs, { tx: client })
        expect(await q.getJob(inside[0] as string)).toBeNull()
        return inside
      }, true)
      expect(ids).toHaveLength(50)
      for (const [n, id] of ids.entries()) expect(await q.getJob(id)).toMatchObject({ state: 'pending', payload: { n } })
      // A round trip on the listener delivers what was notified before it. (PostgreSQL folds
      // equal notifications of one transaction, so this sees that the signal is raised at all.)
      await listener.query('SELECT 1')
      expect(signals).toHaveLength(1)
      expect(await inTransaction((client) => q.enqueueMany([{ payload: 'again', key: 'seven' }], { tx: client }), true)).toEqual([ids[7]])
      expect(await q.counts()).toMatchObject({ pending: 50 })
    } finally {
      await listener.query('UNLISTEN *')
      listener.release()
    }
  })
})
