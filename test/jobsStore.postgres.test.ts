/**
 * Binds the JobStore conformance suite to the postgres job store (`pg` Pool) on a fresh
 * database of the test server. Without a server `freshDatabase` throws: the suite fails, never skips.
 */
import { describeJobStoreConformance } from '../src/persistence/jobs/JobStoreConformance.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { freshDatabase } from './harness/database.ts'

describeJobStoreConformance('postgres', async () => openSqlJobStore(makePgDriver({ connectionString: await freshDatabase('job_conformance') })))
