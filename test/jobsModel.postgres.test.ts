/**
 * The jobs model-based test (test/jobsModel.ts) on the postgres SQL stores: one `pg` Pool on a
 * fresh database of the test server, and a fresh schema per run (migrated from scratch), wired
 * exactly as `open()` wires it. Fewer runs than memory, to stay within a minute on two cores.
 * Without a server `freshDatabase` throws: the file fails, never skips. `SIM_SEED` replays.
 */
import { afterAll, beforeAll } from 'vitest'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import { Random } from '../src/kernel/Random.ts'
import { makeSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import type { Driver } from '../src/persistence/sql/Driver.ts'
import { migrate } from '../src/persistence/sql/Migrations.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { makeSchema } from '../src/persistence/sql/Schema.ts'
import { makeSqlStore } from '../src/persistence/queues/sql/SqlStore.ts'
import { freshDatabase } from './harness/database.ts'
import { describeJobsModel } from './jobsModel.ts'
import { runsFor } from './harness/depth.ts'

let driver: Driver
beforeAll(async () => {
  driver = makePgDriver({ connectionString: await freshDatabase('jobs_model') })
})
afterAll(async () => {
  await driver.close()
})

describeJobsModel(
  'postgres',
  async (clock, seed, run) => {
    const schema = makeSchema(`model_${run}`)
    await migrate(driver, schema)
    return makeMatchbox({ hostId: 'model', store: makeSqlStore(driver, schema), jobStore: makeSqlJobStore(driver, schema), clock, random: Random.make(seed), closeStores: async () => {} })
  },
  { runs: runsFor(25, 150), maxCommands: 60 },
)
