/**
 * Simulator properties on the embedded store (PGlite, the real SQL store in process): the
 * same property as on memory, fewer and shorter worlds because each statement is real SQL.
 * The worlds share one PGlite instance, each in a schema of its own (an instance takes seconds
 * to start). Replay a failure with the command its message prints.
 */
import { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { checkSchedules } from '../core/ScheduleProperty.ts'
import { matchingWorld } from './Simulation.ts'
import { runsFor } from '../../test/harness/depth.ts'

const runs = runsFor(6, 40)
// Half the default safety phase: PGlite runs ~10× slower than memory, and the worlds must fit in
// a few minutes on two shared cores. Liveness still runs to completion.
const steps = 1_000
let pglite: PGlite

beforeAll(async () => {
  pglite = await PGlite.create()
})
afterAll(async () => {
  await pglite.close()
})

it(`holds for ${runs} generated schedules on PGlite`, async () => {
  let events = 0
  const report = await checkSchedules({ store: 'embedded', file: 'sim/matching/properties.embedded.test.ts', numRuns: runs, scriptLengthMax: 200, runWorld: matchingWorld({ store: 'embedded', pglite, overrides: { steps } }), onRun: (_, count) => (events += count) })
  console.log(`embedded: ${report.runs} worlds of ${steps} steps, ${events} machine events`)
  expect(report.failure).toBeNull()
  expect(report.runs).toBeGreaterThanOrEqual(process.env.SIM_PATH ? 1 : runs)
}, 600_000)
