/**
 * The progress, history and `job.signal` cases (test/jobsControls.ts) on the memory and embedded stores; the PostgreSQL
 * binding is test/jobsControls.postgres.test.ts. The embedded cases share one PGlite instance,
 * each engine in a schema of its own (openWith): an instance takes seconds to start, more than
 * a case's work.
 */
import { PGlite } from '@electric-sql/pglite'
import { afterAll, describe } from 'vitest'
import { open } from '../src/index.ts'
import { openWith } from '../src/jobs/open.ts'
import { describeJobControls, type OpenControlsEngine } from './jobsControls.ts'

let pglite: PGlite | undefined
let engines = 0
afterAll(async () => {
  await pglite?.close()
})

const openOn: Record<'memory' | 'embedded', OpenControlsEngine> = {
  memory: (clock, seed, onEvent) => open({ store: 'memory', clock, seed, onEvent }),
  embedded: async (clock, seed, onEvent) => {
    pglite ??= await PGlite.create()
    return openWith({ store: 'embedded', schema: `controls_${++engines}`, clock, seed, onEvent }, undefined, pglite)
  },
}

describe.each(['memory', 'embedded'] as const)('progress, attempt history and job.signal on the %s store', (store) => {
  describeJobControls(openOn[store])
})
