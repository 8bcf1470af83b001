/**
 * PgliteDriver: uses of one driver never interleave (PGlite has one connection), a failed
 * transaction rolls back, and an embedded store in a data directory keeps its data across
 * close and reopen. One PGlite data directory for the file (PGlite takes seconds to start).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { makeTask } from '../../domain/Task.ts'
import { openEmbeddedStore, openSqlStore } from '../queues/sql/openSqlStore.ts'
import { makePgliteDriver } from './PgliteDriver.ts'

const dataDir = mkdtempSync(join(tmpdir(), 'matchbox-pglite-'))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

it('serializes transactions, rolls back failures, and persists a data directory across reopen', async () => {
  const driver = await makePgliteDriver({ dataDir })
  await driver.exec('CREATE TABLE counter (n integer NOT NULL); INSERT INTO counter VALUES (0);')
  // Read-modify-write with an await in between: lost updates would show if transactions interleaved.
  await Promise.all(
    Array.from({ length: 20 }, () =>
      driver.transaction(async (tx) => {
        const { rows } = await tx.query<{ n: number }>('SELECT n FROM counter')
        await Promise.resolve()
        await tx.query('UPDATE counter SET n = $1', [(rows[0]?.n ?? 0) + 1])
      }),
    ),
  )
  await expect(
    driver.transaction(async (tx) => {
      await tx.query('UPDATE counter SET n = 1000')
      throw new Error('changed my mind')
    }),
  ).rejects.toThrow('changed my mind')
  expect((await driver.query<{ n: number }>('SELECT n FROM counter')).rows).toEqual([{ n: 20 }])

  const store = await openSqlStore(driver)
  const key = { namespace: 'disk', family: 'emails', type: 'activity', partition: 1, version: null } as const
  const { rangeId } = await store.acquire({ key, nowMs: 1 })
  await store.append({ key, rangeId, tasks: [makeTask({ jobId: 'kept', createdAtMs: 1 })], nowMs: 2 })
  await store.close()
  await expect(driver.query('SELECT 1')).rejects.toThrow(/closed/)

  const reopened = await openEmbeddedStore({ dataDir })
  expect((await reopened.acquire({ key, nowMs: 3 })).rangeId).toBe(2)
  expect((await reopened.read({ key, subqueue: 0, afterTaskId: 0, limit: 10 })).map((stored) => stored.task.jobId)).toEqual(['kept'])
  await reopened.close()
})
