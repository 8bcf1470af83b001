/**
 * The end-to-end simulator on PostgreSQL: each simulated host has its own `pg` Pool (its Matching
 * Store through `openPostgresStore`, its JobStore on a driver over the same pool), every world in
 * its own schema of one fresh database, one store call in flight at a time; the group's
 * membership table and bus are the world's own, in memory, so traces match the memory store's. Replay a failure with
 * the command its message prints (the vitest global setup provides the server).
 */
import { beforeAll, expect, it } from 'vitest'
import { freshDatabase } from '../../test/harness/database.ts'
import { checkJobsDeterminism, runJobsSeed } from './JobsSimulation.ts'
import { checkSchedules } from '../core/ScheduleProperty.ts'
import { runsFor } from '../../test/harness/depth.ts'

// 1.5–5 s a world of 1,000 steps and its final phase (each store call a round trip to the
// server; membership heartbeats and bus messages stay in memory): 15–40 s for npm test's 8, by
// the load. The same engine runs 80 schedules a run on memory (jobsWorld.memory.test.ts) and
// the SQL job store's rules are the conformance suite's on PostgreSQL (jobsStore.postgres.test.ts);
// these worlds add the SQL stores under the same faults, and the deep run takes 40.
const runs = runsFor(8, 40)
const steps = 1_000
let databaseUrl = ''

beforeAll(async () => {
  databaseUrl = await freshDatabase('sim_jobs')
})

it(`the job invariants hold for ${runs} generated schedules on PostgreSQL`, async () => {
  let events = 0
  const report = await checkSchedules({
    store: 'postgres',
    file: 'sim/jobs/jobsWorld.postgres.test.ts',
    numRuns: runs,
    scriptLengthMax: 200,
    runWorld: async (schedule) => (await runJobsSeed({ seed: schedule.seed, store: 'postgres', databaseUrl, script: schedule.script, overrides: { steps } })).result,
    onRun: (_, count) => (events += count),
  })
  console.log(`jobs on postgres: ${report.runs} worlds, ${events} events`)
  expect(report.failure).toBeNull()
  expect(report.runs).toBeGreaterThanOrEqual(process.env.SIM_PATH ? 1 : runs)
}, 600_000)

it('one seed twice gives one trace on PostgreSQL, the same as on memory', async () => {
  const seed = 1
  console.log(`seed ${seed}`)
  const postgres = await checkJobsDeterminism({ seed, store: 'postgres', databaseUrl, overrides: { steps } })
  expect(postgres.divergence).toBeNull()
  const memory = await checkJobsDeterminism({ seed, store: 'memory', overrides: { steps } })
  expect(postgres.hash).toBe(memory.hash)
}, 300_000)
