/**
 * The SQL store's own focused tests, on both drivers: one PGlite instance and one fresh
 * PostgreSQL database for the file. The shared conformance suite (StoreConformance.ts) covers
 * the contract in breadth; these pin what is particular to SQL: statement outcomes, error
 * mapping (maybeCommitted), schemas, and who closes a caller's pool or instance.
 */
import { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freshDatabase } from '../../../../test/harness/database.ts'
import { InvalidInput, OwnershipLost, Unavailable, VersionConflict } from '../../../domain/errors.ts'
import type { QueueKey } from '../../../domain/QueueKey.ts'
import { makeTask, type Task } from '../../../domain/Task.ts'
import type { Store } from '../Store.ts'
import { type Driver, DriverError } from '../../sql/Driver.ts'
import { openEmbeddedStore, openPostgresStore, openSqlStore } from './openSqlStore.ts'
import { makePgDriver } from '../../sql/PgDriver.ts'
import { makePgliteDriver } from '../../sql/PgliteDriver.ts'

let namespaceCounter = 0
function keyOf(family = 'emails', version: string | null = null): QueueKey {
  return { namespace: `ns${++namespaceCounter}`, family, type: 'workflow', partition: 0, version }
}
function task(jobId: string, priority = 0): Task {
  return makeTask({ jobId, priority, createdAtMs: 1 })
}

interface Fixture {
  store: Store
  /** Opens another store over the same database (a second connection for PostgreSQL, the same instance for PGlite). */
  driver(): Promise<Driver>
}

function describeSqlStore(name: string, setup: () => Promise<Fixture>, teardown: () => Promise<void>): void {
  describe(`SqlStore on ${name}`, () => {
    let fixture: Fixture
    beforeAll(async () => {
      fixture = await setup()
    })
    afterAll(teardown)

    it('acquire creates at range 1, then increments', async () => {
      const key = keyOf()
      const first = await fixture.store.acquire({ key, nowMs: 10 })
      expect(first).toEqual({ key, rangeId: 1, lastTaskId: 0, ackLevels: {}, updatedAtMs: 10 })
      const second = await fixture.store.acquire({ key, nowMs: 20 })
      expect(second).toMatchObject({ rangeId: 2, updatedAtMs: 20 })
    })

    it('append allocates consecutive ids per queue, into the subqueue of each priority', async () => {
      const key = keyOf()
      const { rangeId } = await fixture.store.acquire({ key, nowMs: 1 })
      expect(await fixture.store.append({ key, rangeId, tasks: [task('a'), task('b', 3), task('c')], nowMs: 2 })).toEqual({ firstTaskId: 1, lastTaskId: 3 })
      expect(await fixture.store.append({ key, rangeId, tasks: [task('d', 3)], nowMs: 3 })).toEqual({ firstTaskId: 4, lastTaskId: 4 })
      const zero = await fixture.store.read({ key, subqueue: 0, afterTaskId: 0, limit: 10 })
      expect(zero.map((stored) => [stored.taskId, stored.task.jobId])).toEqual([[1, 'a'], [3, 'c']])
      const three = await fixture.store.read({ key, subqueue: 3, afterTaskId: 2, limit: 1 })
      expect(three.map((stored) => stored.taskId)).toEqual([4])
      expect(three[0]?.task).toEqual(task('d', 3))
    })

    it('a stale or unknown range is OwnershipLost and writes nothing', async () => {
      const key = keyOf()
      const old = await fixture.store.acquire({ key, nowMs: 1 })
      await fixture.store.acquire({ key, nowMs: 2 })
      await expect(fixture.store.append({ key, rangeId: old.rangeId, tasks: [task('x')], nowMs: 3 })).rejects.toEqual(
        new OwnershipLost({ queue: `${key.namespace}/emails/workflow/0`, rangeId: 1, currentRangeId: 2 }),
      )
      await expect(fixture.store.checkpoint({ key, rangeId: 1, ackLevels: [{ subqueue: 0, ackLevel: 0 }], nowMs: 3 })).rejects.toBeInstanceOf(OwnershipLost)
      const missing = keyOf()
      await expect(fixture.store.append({ key: missing, rangeId: 1, tasks: [task('x')], nowMs: 3 })).rejects.toMatchObject({ _tag: 'OwnershipLost', currentRangeId: null })
      expect((await fixture.store.inspect(key))?.metadata.lastTaskId).toBe(0)
      expect(await fixture.store.inspect(missing)).toBeNull()
    })

    it('checkpoint raises ack levels (never lowers) and deletes the acknowledged prefix', async () => {
      const key = keyOf()
      const { rangeId } = await fixture.store.acquire({ key, nowMs: 1 })
      await fixture.store.append({ key, rangeId, tasks: [task('a'), task('b', 1), task('c'), task('d')], nowMs: 2 })
      const first = await fixture.store.checkpoint({ key, rangeId, ackLevels: [{ subqueue: 0, ackLevel: 3 }], nowMs: 5 })
      expect(first).toEqual({ metadata: { key, rangeId, lastTaskId: 4, ackLevels: { 0: 3, 1: 0 }, updatedAtMs: 5 }, deletedRows: 2 })
      const lower = await fixture.store.checkpoint({ key, rangeId, ackLevels: [{ subqueue: 0, ackLevel: 1 }, { subqueue: 1, ackLevel: 2 }], nowMs: 6 })
      expect(lower.metadata.ackLevels).toEqual({ 0: 3, 1: 2 })
      expect(lower.deletedRows).toBe(1)
      expect(await fixture.store.inspect(key)).toMatchObject({ storedRows: 1, storedRowsBySubqueue: { 0: 1 } })
    })

    it('an ack level above lastTaskId is InvalidInput and writes nothing', async () => {
      const key = keyOf()
      const { rangeId } = await fixture.store.acquire({ key, nowMs: 1 })
      await fixture.store.append({ key, rangeId, tasks: [task('a')], nowMs: 2 })
      const attempt = fixture.store.checkpoint({ key, rangeId, ackLevels: [{ subqueue: 0, ackLevel: 1 }, { subqueue: 2, ackLevel: 2 }], nowMs: 3 })
      await expect(attempt).rejects.toBeInstanceOf(InvalidInput)
      await expect(attempt).rejects.toMatchObject({ field: 'ackLevels[1].ackLevel' })
      expect(await fixture.store.inspect(key)).toMatchObject({ metadata: { ackLevels: { 0: 0 }, updatedAtMs: 1 }, storedRows: 1 })
    })

    it('relocate moves listed rows with fresh ids in source order, keeping subqueues, both fenced', async () => {
      const from = keyOf('jobs', 'v1')
      const to = { ...from, version: null }
      const fromRange = (await fixture.store.acquire({ key: from, nowMs: 1 })).rangeId
      const toRange = (await fixture.store.acquire({ key: to, nowMs: 1 })).rangeId
      await fixture.store.append({ key: to, rangeId: toRange, tasks: [task('existing')], nowMs: 2 })
      await fixture.store.append({ key: from, rangeId: fromRange, tasks: [task('a'), task('b', 5), task('c')], nowMs: 2 })
      const moved = await fixture.store.relocate({ from, fromRangeId: fromRange, to, toRangeId: toRange, taskIds: [3, 2, 99], nowMs: 3 })
      expect(moved).toEqual([{ fromTaskId: 2, toTaskId: 2 }, { fromTaskId: 3, toTaskId: 3 }])
      expect((await fixture.store.read({ key: to, subqueue: 5, afterTaskId: 0, limit: 10 })).map((s) => s.task.jobId)).toEqual(['b'])
      expect((await fixture.store.read({ key: to, subqueue: 0, afterTaskId: 0, limit: 10 })).map((s) => s.task.jobId)).toEqual(['existing', 'c'])
      expect(await fixture.store.inspect(from)).toMatchObject({ storedRows: 1, metadata: { lastTaskId: 3 } })
      expect(await fixture.store.relocate({ from, fromRangeId: fromRange, to, toRangeId: toRange, taskIds: [42], nowMs: 3 })).toEqual([])
      await expect(fixture.store.relocate({ from, fromRangeId: fromRange, to, toRangeId: toRange + 1, taskIds: [1], nowMs: 3 })).rejects.toMatchObject({
        _tag: 'OwnershipLost',
        queue: `${to.namespace}/jobs/workflow/0`,
        currentRangeId: toRange,
      })
      await fixture.store.acquire({ key: from, nowMs: 4 })
      await expect(fixture.store.relocate({ from, fromRangeId: fromRange, to, toRangeId: toRange, taskIds: [1], nowMs: 3 })).rejects.toMatchObject({
        _tag: 'OwnershipLost',
        queue: `${from.namespace}/jobs/workflow/0@v1`,
      })
      expect(await fixture.store.inspect(from)).toMatchObject({ storedRows: 1 })
    })

    it('list filters and orders by canonical key', async () => {
      const namespace = `list${++namespaceCounter}`
      const keys: QueueKey[] = [
        { namespace, family: 'b', type: 'workflow', partition: 10, version: null },
        { namespace, family: 'b', type: 'workflow', partition: 2, version: null },
        { namespace, family: 'a', type: 'activity', partition: 0, version: 'ü' },
        { namespace, family: 'a', type: 'activity', partition: 0, version: null },
      ]
      for (const key of keys) await fixture.store.acquire({ key, nowMs: 1 })
      const listed = await fixture.store.list({ namespace })
      const encoded = listed.map((inspection) => `${inspection.metadata.key.family}/${inspection.metadata.key.partition}/${inspection.metadata.key.version}`)
      expect(encoded).toEqual(['a/0/null', 'a/0/ü', 'b/10/null', 'b/2/null'])
      expect((await fixture.store.list({ namespace, family: 'b' })).length).toBe(2)
    })

    it('user data: insert at 0, CAS after, typed conflict for the loser', async () => {
      const family = { namespace: `ud${++namespaceCounter}`, family: 'emails' }
      expect(await fixture.store.getUserData(family)).toBeNull()
      await expect(fixture.store.updateUserData({ ...family, expectedVersion: 1, data: {}, nowMs: 1 })).rejects.toEqual(
        new VersionConflict({ subject: `userData ${family.namespace}/emails`, expectedVersion: 1, currentVersion: 0 }),
      )
      const results = await Promise.allSettled([0, 0, 0].map((expectedVersion, index) => fixture.store.updateUserData({ ...family, expectedVersion, data: { index }, nowMs: 1 })))
      expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1)
      expect(results.filter((result) => result.status === 'rejected').map((result) => (result as PromiseRejectedResult).reason._tag)).toEqual(['VersionConflict', 'VersionConflict'])
      const second = await fixture.store.updateUserData({ ...family, expectedVersion: 1, data: { deep: [1, 'two', null, { x: true }] }, nowMs: 2 })
      expect(second).toEqual({ ...family, version: 2, data: { deep: [1, 'two', null, { x: true }] } })
      expect(await fixture.store.getUserData(family)).toEqual(second)
    })

    it('a write whose connection is lost after the statement ran is Unavailable with maybeCommitted', async () => {
      const real = await fixture.driver()
      // The statement runs and commits; then the client sees a socket failure, as when the
      // connection drops before COMMIT's reply arrives.
      const lossy: Driver = { ...real, query: async (text, params) => {
        await real.query(text, params)
        throw new DriverError({ cause: new Error('Connection terminated unexpectedly'), sent: true })
      } }
      const store = await openSqlStore(real)
      const lossyStore = await openSqlStore(lossy)
      const key = keyOf()
      const { rangeId } = await store.acquire({ key, nowMs: 1 })
      const failure = await lossyStore.append({ key, rangeId, tasks: [task('a')], nowMs: 2 }).catch((error: unknown) => error)
      expect(failure).toBeInstanceOf(Unavailable)
      expect(failure).toMatchObject({ operation: 'append', maybeCommitted: true })
      expect((await store.inspect(key))?.storedRows).toBe(1)
      const readFailure = await lossyStore.read({ key, subqueue: 0, afterTaskId: 0, limit: 1 }).catch((error: unknown) => error)
      expect(readFailure).toMatchObject({ _tag: 'Unavailable', maybeCommitted: false })
      await store.close()
    })

    it('a closed store is Unavailable and did not commit', async () => {
      const store = await openSqlStore(await fixture.driver())
      await store.close()
      await expect(store.acquire({ key: keyOf(), nowMs: 1 })).rejects.toMatchObject({ _tag: 'Unavailable', operation: 'acquire', maybeCommitted: false })
    })

    it('keeps stores in different schemas apart and refuses bad schema names', async () => {
      const other = await openSqlStore(await fixture.driver(), { schema: 'matchbox_other' })
      const key = keyOf()
      await other.acquire({ key, nowMs: 1 })
      expect(await fixture.store.inspect(key)).toBeNull()
      expect((await other.inspect(key))?.metadata.rangeId).toBe(1)
      await other.close()
      await expect(openSqlStore(await fixture.driver(), { schema: 'Bad-Name' })).rejects.toThrow(/is not a schema name/)
    })
  })
}

let pglite: PGlite
describeSqlStore(
  'PGlite',
  async () => {
    pglite = await PGlite.create()
    return {
      store: await openEmbeddedStore({ pglite }),
      driver: () => makePgliteDriver({ pglite }),
    }
  },
  async () => {
    // The caller's instance survives the store's close.
    expect(pglite.closed).toBe(false)
    await pglite.close()
  },
)

describe('SqlStore on PostgreSQL: a backend terminated mid-write', () => {
  it('is Unavailable (maybe committed), wrote nothing, and the next call gets a fresh connection', async () => {
    const connectionString = await freshDatabase('sql_store_kill')
    const victimUrl = new URL(connectionString)
    victimUrl.searchParams.set('application_name', 'victim')
    const admin = new pg.Client({ connectionString })
    await admin.connect()
    const store = await openPostgresStore({ connectionString: victimUrl.toString() })
    const key = keyOf()
    const { rangeId } = await store.acquire({ key, nowMs: 1 })
    // Hold the queue row so the append blocks inside its statement, then kill its backend.
    await admin.query('BEGIN')
    await admin.query('SELECT 1 FROM matchbox.task_queues FOR UPDATE')
    const append = store.append({ key, rangeId, tasks: [task('doomed')], nowMs: 2 }).catch((error: unknown) => error)
    for (;;) {
      const waiting = await admin.query("SELECT pid FROM pg_stat_activity WHERE application_name = 'victim' AND wait_event_type = 'Lock'")
      if (waiting.rows.length > 0) {
        await admin.query('SELECT pg_terminate_backend($1)', [waiting.rows[0].pid])
        break
      }
    }
    await admin.query('ROLLBACK')
    const failure = await append
    expect(failure).toBeInstanceOf(Unavailable)
    expect(failure).toMatchObject({ operation: 'append', maybeCommitted: true })
    expect(await store.inspect(key)).toMatchObject({ storedRows: 0, metadata: { lastTaskId: 0 } })
    expect(await store.append({ key, rangeId, tasks: [task('after')], nowMs: 3 })).toEqual({ firstTaskId: 1, lastTaskId: 1 })
    await store.close()
    await admin.end()
  })
})

let pool: pg.Pool
let ownedStore: Store
describeSqlStore(
  'PostgreSQL',
  async () => {
    const connectionString = await freshDatabase('sql_store')
    pool = new pg.Pool({ connectionString, max: 4 })
    ownedStore = await openPostgresStore({ connectionString })
    return {
      store: await openPostgresStore({ pool }),
      driver: async () => makePgDriver({ connectionString }),
    }
  },
  async () => {
    await ownedStore.close()
    // The caller's pool survives the store's close.
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
    await pool.end()
  },
)
