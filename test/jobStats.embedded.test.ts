/**
 * The SQL job store refreshes PostgreSQL's planner statistics of its jobs table as it grows:
 * after 1,000 jobs enqueued through it, and again after each doubling, unless the statistics
 * already count every job enqueued through it (another store's refresh got there). PGlite runs no
 * autovacuum, so without the refresh its statistics would call a table of any size empty and a
 * backlog would be claimed through a plan that reads the whole queue per claim.
 *
 * No sleeps: the refresh is not awaited by the enqueue, so the test reads until it has landed
 * (a bounded number of reads).
 */
import { PGlite } from '@electric-sql/pglite'
import { expect, it } from 'vitest'
import { jobStatsRefreshRowsFirst } from '../src/kernel/Limits.ts'
import { makeJobFixture } from '../src/persistence/jobs/conformance/JobFixture.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { makePgliteDriver } from '../src/persistence/sql/PgliteDriver.ts'
import { settle } from './harness/settle.ts'

it(`analyzes the jobs table once ${jobStatsRefreshRowsFirst} jobs were enqueued through the store`, async () => {
  const pglite = new PGlite()
  const store: JobStore = await openSqlJobStore(await makePgliteDriver({ pglite }))
  const fixture = makeJobFixture('stats', () => store, 1)
  const queue = fixture.queue('stats')
  // reltuples is -1 until the table is first analyzed (PostgreSQL 14 and later).
  const reltuples = async (): Promise<number> => Number((await pglite.query<{ n: number }>("SELECT reltuples AS n FROM pg_class WHERE oid = 'matchbox.jobs'::regclass")).rows[0]?.n)
  const enqueue = (count: number) => store.enqueueMany({ jobs: Array.from({ length: count }, () => fixture.job(queue)), nowMs: 1_000 })

  await enqueue(jobStatsRefreshRowsFirst - 1)
  await settle()
  expect(await reltuples()).toBe(-1)
  await enqueue(1)
  // PGlite runs one statement at a time, so a read or two after the enqueue sees the refresh.
  let seen = await reltuples()
  for (let read = 0; read < 50 && seen !== jobStatsRefreshRowsFirst; read++) {
    await settle()
    seen = await reltuples()
  }
  expect(seen).toBe(jobStatsRefreshRowsFirst)
  await store.close()
})

it('leaves statistics that already count its jobs alone, and refreshes them once its jobs outgrow them', async () => {
  const pglite = new PGlite()
  const first: JobStore = await openSqlJobStore(await makePgliteDriver({ pglite }))
  const second: JobStore = await openSqlJobStore(await makePgliteDriver({ pglite }))
  const reltuples = async (): Promise<number> => Number((await pglite.query<{ n: number }>("SELECT reltuples AS n FROM pg_class WHERE oid = 'matchbox.jobs'::regclass")).rows[0]?.n)
  const fixtures = new Map([first, second].map((store, index) => [store, makeJobFixture(`stats-${index}`, () => store, index + 1)]))
  const enqueue = (store: JobStore, count: number) => {
    const fixture = fixtures.get(store) as ReturnType<typeof makeJobFixture>
    return store.enqueueMany({ jobs: Array.from({ length: count }, () => fixture.job(fixture.queue('stats'))), nowMs: 1_000 })
  }
  // Reads until the statistics count `rows`, or a bounded number of reads have passed.
  const readsUntil = async (rows: number): Promise<number> => {
    let seen = await reltuples()
    for (let read = 0; read < 50 && seen !== rows; read++) {
      await settle()
      seen = await reltuples()
    }
    return seen
  }

  await enqueue(first, jobStatsRefreshRowsFirst)
  expect(await readsUntil(jobStatsRefreshRowsFirst)).toBe(jobStatsRefreshRowsFirst)
  // The second store's first refresh finds the statistics counting as many jobs as it enqueued: no ANALYZE.
  await enqueue(second, jobStatsRefreshRowsFirst)
  expect(await readsUntil(2 * jobStatsRefreshRowsFirst)).toBe(jobStatsRefreshRowsFirst)
  // Its next, after 2,000 more, finds them counting fewer than its 3,000: the table is analyzed.
  await enqueue(second, jobStatsRefreshRowsFirst)
  await enqueue(second, jobStatsRefreshRowsFirst)
  expect(await readsUntil(4 * jobStatsRefreshRowsFirst)).toBe(4 * jobStatsRefreshRowsFirst)
  await first.close()
  await second.close()
})
