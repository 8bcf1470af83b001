/**
 * The jobs model-based test (test/jobsModel.ts) on the embedded store (PGlite), with a
 * ManualClock, as a user's deterministic test opens it, on one PGlite instance for the file: each
 * run's engine opens the 'embedded' store on it (openWith) in a fresh schema of its own, migrated
 * from scratch, as the PostgreSQL binding does. A PGlite instance takes seconds to start on a
 * busy machine, more than a run's commands; the store, its driver and the engine are the ones
 * `open({ store: 'embedded' })` builds. Fewer runs than memory. `SIM_SEED` replays a printed seed.
 */
import { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll } from 'vitest'
import { openWith } from '../src/jobs/open.ts'
import { describeJobsModel } from './jobsModel.ts'
import { runsFor } from './harness/depth.ts'

let pglite: PGlite
beforeAll(async () => {
  pglite = await PGlite.create()
})
afterAll(async () => {
  await pglite.close()
})

describeJobsModel('embedded (PGlite)', (clock, seed, run) => openWith({ store: 'embedded', schema: `model_${run}`, clock, seed, hostId: 'model' }, undefined, pglite), { runs: runsFor(10, 60), maxCommands: 60 })
