/**
 * The jobs model-based test (test/jobsModel.ts) on the embedded store (PGlite), through the
 * public `open()` with a ManualClock, exactly as a user's deterministic test opens it. Each run
 * opens a PGlite of its own (about a second each on the development machine), so this binding
 * takes fewer runs than memory. `SIM_SEED` replays a printed seed.
 */
import { open } from '../src/index.ts'
import { describeJobsModel } from './jobsModel.ts'
import { runsFor } from './harness/depth.ts'

describeJobsModel('embedded (PGlite)', (clock, seed) => open({ store: 'embedded', clock, seed, hostId: 'model' }), { runs: runsFor(10, 60), maxCommands: 60 })
