/**
 * The jobs model-based test (test/jobsModel.ts) on the memory stores, through the public
 * `open({ store: 'memory' })`: 200 runs of up to 60 commands. `SIM_SEED` replays a printed seed.
 */
import { open } from '../src/index.ts'
import { describeJobsModel } from './jobsModel.ts'
import { runsFor } from './harness/depth.ts'

describeJobsModel('memory', (clock, seed) => open({ store: 'memory', clock, seed, hostId: 'model' }), { runs: runsFor(100, 500), maxCommands: 60 })
