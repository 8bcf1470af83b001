/** Binds the JobStore conformance suite to the memory job store, composed with the memory Matching store whose ranges fence its claims. */
import { describeJobStoreConformance } from '../src/persistence/jobs/JobStoreConformance.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'

describeJobStoreConformance('memory', async () => {
  const store = makeMemoryStore()
  return { jobStore: makeMemoryJobStore({ queueRanges: store }), store }
})
