/**
 * The progress, history and `job.signal` cases (test/jobsControls.ts) on PostgreSQL: one engine per case on a fresh
 * schema of one fresh database, through the public `open()` with a ManualClock. Real I/O is
 * waited on by event-loop turns, so the bound is larger than on memory. Without a server
 * `freshDatabase` throws: the file fails, never skips.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe } from 'vitest'
import { open } from '../src/index.ts'
import { freshDatabase } from './harness/database.ts'
import { describeJobControls } from './jobsControls.ts'

let pool: pg.Pool
let run = 0
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await freshDatabase('jobs_controls') })
})
afterAll(async () => {
  await pool.end()
})

describe('progress, attempt history and job.signal on the postgres store', () => {
  describeJobControls((clock, seed, onEvent) => open({ store: { pool }, schema: `signal_${++run}`, clock, seed, onEvent, hostId: `signal-${run}` }), 2_000_000)
})
