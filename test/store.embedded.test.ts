/**
 * Binds the Store conformance suite to the embedded store: the SQL store on PGlite, in memory
 * (no data directory). PGlite is slow to open, so the suite opens one store for the whole file
 * and isolates its tests by namespace.
 */
import { openEmbeddedStore } from '../src/persistence/queues/sql/openSqlStore.ts'
import { describeStoreConformance } from '../src/persistence/queues/StoreConformance.ts'

describeStoreConformance('embedded (PGlite)', () => openEmbeddedStore(), { propertyRuns: 25 })
