/**
 * Binds the Store conformance suite to the memory store. The memory store is cheap, so the
 * model property runs more often here than on the SQL bindings.
 */
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { describeStoreConformance } from '../src/persistence/queues/StoreConformance.ts'

describeStoreConformance('memory', async () => makeMemoryStore(), { propertyRuns: 200 })
