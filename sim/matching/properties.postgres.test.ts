/**
 * Simulator properties on PostgreSQL: one pool per simulated host against one fresh database
 * (each world in its own schema), one store call in flight at a time. Replay a failure with the
 * command its message prints (the vitest global setup provides the server).
 */
import { beforeAll, expect, it } from 'vitest'
import { freshDatabase } from '../../test/harness/database.ts'
import { checkSchedules } from '../core/ScheduleProperty.ts'
import { matchingWorld } from './Simulation.ts'
import { runsFor } from '../../test/harness/depth.ts'

const runs = runsFor(8, 60)
let databaseUrl = ''

beforeAll(async () => {
  databaseUrl = await freshDatabase('sim_properties')
})

it(`holds for ${runs} generated schedules on PostgreSQL`, async () => {
  let events = 0
  const report = await checkSchedules({ store: 'postgres', file: 'sim/matching/properties.postgres.test.ts', numRuns: runs, scriptLengthMax: 200, runWorld: matchingWorld({ store: 'postgres', databaseUrl }), onRun: (_, count) => (events += count) })
  console.log(`postgres: ${report.runs} worlds, ${events} machine events`)
  expect(report.failure).toBeNull()
  expect(report.runs).toBeGreaterThanOrEqual(process.env.SIM_PATH ? 1 : runs)
}, 600_000)
