/**
 * The progress, history and `job.signal` cases (test/jobsControls.ts) on the memory and embedded stores; the PostgreSQL
 * binding is test/jobsControls.postgres.test.ts.
 */
import { describe } from 'vitest'
import { open } from '../src/index.ts'
import { describeJobControls } from './jobsControls.ts'

describe.each(['memory', 'embedded'] as const)('progress, attempt history and job.signal on the %s store', (store) => {
  describeJobControls((clock, seed, onEvent) => open({ store, clock, seed, onEvent }))
})
