/**
 * Binds the JobStore conformance suite to the postgres job store (`pg` Pool) on a fresh
 * database of the test server. Without a server `freshDatabase` throws: the suite fails, never skips.
 */
import { describeJobStoreConformance } from '../src/persistence/jobs/JobStoreConformance.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { openPostgresStore } from '../src/persistence/queues/sql/openSqlStore.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { freshDatabase } from './harness/database.ts'

describeJobStoreConformance('postgres', async () => {
  const connectionString = await freshDatabase('job_conformance')
  const jobStore = await openSqlJobStore(makePgDriver({ connectionString }))
  // A second job store on a pool of its own, as another engine's: concurrency limits hold across pools.
  const peer = await openSqlJobStore(makePgDriver({ connectionString }))
  // The Matching store on its own pool, as another engine's would be: the fence holds across connections.
  const store = await openPostgresStore({ connectionString })
  return { jobStore, peer, store, close: () => store.close() }
})
