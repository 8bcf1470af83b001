/**
 * The SQL job store refreshes PostgreSQL's planner statistics of its jobs table as it grows:
 * after 1,000 jobs enqueued through it, and again after each doubling. PGlite runs no
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
