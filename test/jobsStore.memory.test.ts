/** Binds the JobStore conformance suite to the memory job store. */
import { describeJobStoreConformance } from '../src/persistence/jobs/JobStoreConformance.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'

describeJobStoreConformance('memory', async () => makeMemoryJobStore())
