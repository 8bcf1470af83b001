/**
 * The jobs model-based test (test/jobsModel.ts) on PostgreSQL, through the public `open()` with
 * a ManualClock, exactly as a user's deterministic test opens it: the engine joins dynamic
 * membership, so every `Advance` past the membership TTL is a pause the engine must survive (it
 * renews before it decides what it owns). One `pg` Pool on a fresh database of the test server,
 * a fresh schema per run (migrated from scratch by `open`). Fewer runs than memory, to stay
 * within a minute on two cores. Without a server `freshDatabase` throws: the file fails, never
 * skips. `SIM_SEED` replays.
 */
import pg from 'pg'
import { afterAll, beforeAll } from 'vitest'
import { open } from '../src/index.ts'
import { freshDatabase } from './harness/database.ts'
import { describeJobsModel } from './jobsModel.ts'
import { runsFor } from './harness/depth.ts'

let pool: pg.Pool
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await freshDatabase('jobs_model') })
})
afterAll(async () => {
  await pool.end()
})

describeJobsModel('postgres', (clock, seed, run) => open({ store: { pool }, schema: `model_${run}`, clock, seed, hostId: 'model' }), { runs: runsFor(25, 150), maxCommands: 60 })
