/**
 * Binds the JobStore conformance suite to the embedded job store: the SQL job store on PGlite,
 * in memory. PGlite is slow to open, so the suite opens one store and isolates tests by queue.
 */
import { describeJobStoreConformance } from '../src/persistence/jobs/JobStoreConformance.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { makeSqlStore } from '../src/persistence/queues/sql/SqlStore.ts'
import { makePgliteDriver } from '../src/persistence/sql/PgliteDriver.ts'
import { makeSchema } from '../src/persistence/sql/Schema.ts'

describeJobStoreConformance('embedded (PGlite)', async () => {
  const driver = await makePgliteDriver()
  const jobStore = await openSqlJobStore(driver)
  // The Matching store on the same database: its acquires move the ranges claims are fenced by.
  return { jobStore, store: makeSqlStore(driver, makeSchema()) }
})
