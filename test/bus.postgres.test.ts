/**
 * The PostgreSQL bus (LISTEN/NOTIFY) on a real server: messages reach only their host, in the
 * order they were sent, even when a turn's sends share one statement; a due signal reaches every
 * subscriber with its due time, and the job store's inserts raise it with the rows' due time
 * when they share one, its releases once per queue; a payload over the limit is refused before anything is sent; a send fails with a
 * catalogue error once the pool is gone. Real I/O is waited on by conditions, bounded by turns.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isMatchboxError } from '../src/domain/errors.ts'
import type { JsonValue } from '../src/domain/Json.ts'
import { ManualClock } from '../src/kernel/Clock.ts'
import { busMessageBytesMax } from '../src/persistence/bus/Bus.ts'
import { makeSqlBus } from '../src/persistence/bus/SqlBus.ts'
import { makeJobFixture } from '../src/persistence/jobs/conformance/JobFixture.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { freshDatabase } from './harness/database.ts'

let pool: pg.Pool
const stops: Array<() => Promise<void>> = []

// An idle turn takes microseconds: the bound is set for a loaded machine; a stall still fails.
async function eventually(condition: () => boolean, what: string, turnsMax = 5_000_000): Promise<void> {
  for (let turn = 0; turn < turnsMax; turn++) {
    if (condition()) return
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  throw new Error(`condition never held: ${what}`)
}

function busOn(driverPool: pg.Pool) {
  return makeSqlBus({ driver: makePgDriver({ pool: driverPool }), schema: 'matchbox', clock: new ManualClock(0) })
}

async function listener(bus: ReturnType<typeof busOn>, hostId: string) {
  const heard = { due: [] as string[], messages: [] as JsonValue[] }
  stops.push(await bus.subscribe(hostId, { onDue: (queue, dueMs) => heard.due.push(`${queue} @ ${dueMs}`), onMessage: (message) => heard.messages.push(message) }))
  return heard
}

// A job store on the shared pool and a bus subscribed as `hostId` that hears its due signals.
async function jobStoreHeard(hostId: string, seed: number) {
  const bus = busOn(pool)
  const heard = await listener(bus, hostId)
  const store = await openSqlJobStore(makePgDriver({ pool }))
  return { bus, heard, store, fixture: makeJobFixture('postgres', () => store, seed) }
}

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await freshDatabase('bus'), max: 4 })
})

afterAll(async () => {
  for (const stop of stops) await stop()
  await pool.end()
})

describe('SqlBus', () => {
  it('delivers a turn of sends to their hosts only, each in order, in fewer statements than messages', async () => {
    const bus = busOn(pool)
    const a = await listener(bus, 'host-a')
    const b = await listener(bus, 'host-b')
    const before = await pool.query<{ xact_commit: string }>('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()')
    const sends: Array<Promise<void>> = []
    for (let n = 0; n < 50; n++) sends.push(bus.send(n % 2 === 0 ? 'host-a' : 'host-b', { n }))
    await Promise.all(sends)
    await eventually(() => a.messages.length === 25 && b.messages.length === 25, 'every message heard')
    expect(a.messages).toEqual(Array.from({ length: 25 }, (_, i) => ({ n: 2 * i })))
    expect(b.messages).toEqual(Array.from({ length: 25 }, (_, i) => ({ n: 2 * i + 1 })))
    // pg_stat counters are flushed lazily; a fresh snapshot shows the transactions committed.
    await pool.query('SELECT pg_stat_clear_snapshot()')
    const after = await pool.query<{ xact_commit: string }>('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()')
    const statements = Number(after.rows[0]?.xact_commit) - Number(before.rows[0]?.xact_commit)
    // 50 messages went out in a handful of statements (the pool's own reads count too).
    expect(statements).toBeLessThan(25)
    await bus.close()
  })

  it('raises a due signal to every subscriber', async () => {
    const bus = busOn(pool)
    const a = await listener(bus, 'host-c')
    const b = await listener(bus, 'host-d')
    await Promise.all([bus.signalDue('emails', 1_700_000_000_123), bus.signalDue('reports', null)])
    const both = (heard: { due: string[] }): boolean => heard.due.includes('emails @ 1700000000123') && heard.due.includes('reports @ null')
    await eventually(() => both(a) && both(b), 'both hear both signals')
    await bus.close()
  })

  it("hears the job store's inserts with their due time: one job's, a batch's when its rows share one, else none", async () => {
    const { bus, heard, store, fixture } = await jobStoreHeard('host-f', 1)
    const nowMs = 1_000_000
    await store.enqueue({ job: fixture.job('later', { id: 'one-later', runAtMs: nowMs + 5_000 }), nowMs })
    await store.enqueueMany({ jobs: [fixture.job('now', { id: 'now-1' }), fixture.job('now', { id: 'now-2' })], nowMs })
    await store.enqueueMany({ jobs: [fixture.job('mixed', { id: 'mixed-1' }), fixture.job('mixed', { id: 'mixed-2', runAtMs: nowMs + 60_000 })], nowMs })
    const expected = [`later @ ${nowMs + 5_000}`, `now @ ${nowMs}`, 'mixed @ null']
    await eventually(() => expected.every((signal) => heard.due.includes(signal)), 'the three signals heard')
    expect(heard.due).toEqual(expected)
    await store.close()
    await bus.close()
  })

  it("hears the job store's releases: once per queue given rows back, due now; a release of nothing is silent", async () => {
    const { bus, heard, store, fixture } = await jobStoreHeard('host-r', 2)
    const nowMs = 2_000_000
    const claimed = async (queue: string, id: string) => {
      await store.enqueue({ job: fixture.job(queue, { id, runAtMs: nowMs }), nowMs, claimToken: `${id}-token` })
      return { id, claimToken: `${id}-token` }
    }
    const claims = [await claimed('released-a', 'rel-a1'), await claimed('released-a', 'rel-a2'), await claimed('released-b', 'rel-b1')]
    expect(await store.release({ claims: [{ id: 'rel-b1', claimToken: 'stale' }], nowMs: nowMs + 1_000 })).toEqual([])
    expect(await store.release({ claims, nowMs: nowMs + 2_000 })).toEqual(['rel-a1', 'rel-a2', 'rel-b1'])
    const expected = [`released-a @ ${nowMs + 2_000}`, `released-b @ ${nowMs + 2_000}`]
    await eventually(() => expected.every((signal) => heard.due.includes(signal)), 'both queues heard')
    // A round trip after the signals: anything else raised before them has arrived too.
    await bus.send('host-r', { done: true })
    await eventually(() => heard.messages.length === 1, 'the marker heard')
    expect([...heard.due].sort()).toEqual(expected)
    await store.close()
    await bus.close()
  })

  it('refuses a message over the limit before sending anything, and the others of its turn still go', async () => {
    const bus = busOn(pool)
    const e = await listener(bus, 'host-e')
    const tooLong = bus.send('host-e', { text: 'x'.repeat(busMessageBytesMax) })
    const fine = bus.send('host-e', { ok: true })
    await expect(tooLong).rejects.toMatchObject({ _tag: 'InvalidInput' })
    await fine
    await eventually(() => e.messages.length === 1, 'the fitting message heard')
    expect(e.messages).toEqual([{ ok: true }])
    await bus.close()
  })

  it('fails a send with a catalogue error when the database is unreachable', async () => {
    const dead = new pg.Pool({ connectionString: 'postgresql://nobody@127.0.0.1:1/none', connectionTimeoutMillis: 2_000 })
    const bus = busOn(dead)
    const error = await bus.send('host-f', { n: 1 }).then(
      () => null,
      (caught: unknown) => caught,
    )
    expect(isMatchboxError(error)).toBe(true)
    await dead.end()
  })
})
