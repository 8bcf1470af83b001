/**
 * Binds the Store conformance suite to the postgres store (`pg` Pool) on a fresh database of
 * the test server. Without a server `freshDatabase` throws, so the suite fails — it never skips.
 */
import { openPostgresStore } from '../src/persistence/queues/sql/openSqlStore.ts'
import { describeStoreConformance } from '../src/persistence/queues/StoreConformance.ts'
import { freshDatabase } from './harness/database.ts'

describeStoreConformance(
  'postgres',
  async () => {
    const connectionString = await freshDatabase('store_conformance')
    return openPostgresStore({ connectionString })
  },
  { propertyRuns: 25 },
)
