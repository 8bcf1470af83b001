/**
 * The `job.signal` cases (test/jobsSignal.ts) on the memory and embedded stores; the PostgreSQL
 * binding is test/jobsSignal.postgres.test.ts.
 */
import { describe } from 'vitest'
import { open } from '../src/index.ts'
import { describeJobSignal } from './jobsSignal.ts'

describe.each(['memory', 'embedded'] as const)('job.signal on the %s store', (store) => {
  describeJobSignal((clock, seed, onEvent) => open({ store, clock, seed, onEvent }))
})
