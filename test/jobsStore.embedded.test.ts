/**
 * Binds the JobStore conformance suite to the embedded job store: the SQL job store on PGlite,
 * in memory. PGlite is slow to open, so the suite opens one store and isolates tests by queue.
 */
import { describeJobStoreConformance } from '../src/persistence/jobs/JobStoreConformance.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { makePgliteDriver } from '../src/persistence/sql/PgliteDriver.ts'

describeJobStoreConformance('embedded (PGlite)', async () => openSqlJobStore(await makePgliteDriver()))
