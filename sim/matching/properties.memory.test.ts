/**
 * Simulator properties on the memory store: fast-check generates schedules (a world seed and
 * explicit decisions) and every run must satisfy every checker. The memory store is the fast
 * mode, so it carries the bulk of the runs. Replay a failure with the command its message prints.
 */
import { expect, it } from 'vitest'
import { runsFor } from '../../test/harness/depth.ts'
import { checkSchedules } from '../core/ScheduleProperty.ts'
import { matchingWorld } from './Simulation.ts'

// Worlds of the full default length (2,000 safety steps plus liveness): about 0.3 s each on one
// core, 0.5–1 s on a busy one. The Matching checkers also judge every jobs world (80 on memory and
// 8 on PostgreSQL in npm test, the real engine over Matching), so npm test runs 40 here; the
// deep run 500.
const runs = runsFor(40, 500)

it(`holds for ${runs} generated schedules on memory`, async () => {
  let events = 0
  const report = await checkSchedules({ store: 'memory', file: 'sim/matching/properties.memory.test.ts', numRuns: runs, scriptLengthMax: 400, runWorld: matchingWorld({ store: 'memory' }), onRun: (_, count) => (events += count) })
  console.log(`memory: ${report.runs} worlds, ${events} machine events`)
  expect(report.failure).toBeNull()
  expect(report.runs).toBeGreaterThanOrEqual(process.env.SIM_PATH ? 1 : runs)
})
