/**
 * The jobs model-based test (test/jobsModel.ts) on the embedded SQL stores (PGlite). Opening
 * PGlite takes seconds, so the file opens one instance and gives every run a fresh schema of its
 * own (migrated from scratch), wired exactly as `open()` wires it. Fewer runs than memory, to
 * stay within a minute on two cores. `SIM_SEED` replays a printed seed.
 */
import { afterAll, beforeAll } from 'vitest'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import { makeSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import type { Driver } from '../src/persistence/sql/Driver.ts'
import { migrate } from '../src/persistence/sql/Migrations.ts'
import { makePgliteDriver } from '../src/persistence/sql/PgliteDriver.ts'
import { makeSchema } from '../src/persistence/sql/Schema.ts'
import { makeSqlStore } from '../src/persistence/queues/sql/SqlStore.ts'
import { Random } from '../src/kernel/Random.ts'
import { describeJobsModel } from './jobsModel.ts'
import { runsFor } from './harness/depth.ts'

let driver: Driver
beforeAll(async () => {
  driver = await makePgliteDriver()
})
afterAll(async () => {
  await driver.close()
})

describeJobsModel(
  'embedded (PGlite)',
  async (clock, seed, run) => {
    const schema = makeSchema(`model_${run}`)
    await migrate(driver, schema)
    return makeMatchbox({ hostId: 'model', store: makeSqlStore(driver, schema), jobStore: makeSqlJobStore(driver, schema), clock, random: Random.make(seed), closeStores: async () => {} })
  },
  { runs: runsFor(20, 100), maxCommands: 60 },
)
