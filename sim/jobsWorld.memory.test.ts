/**
 * The end-to-end simulator on memory: fast-check generates schedules (a world seed and explicit
 * decisions) and every run of the real job engine — hosts crashing, restarting, stores refusing
 * and dropping connections, the clock jumping — must satisfy every job checker and the Matching
 * checkers. The same seed twice must give the same trace. Replay a failure with the command its
 * message prints (`SIM_SEED=… SIM_PATH=… npx vitest run sim/jobsWorld.memory.test.ts`).
 */
import { expect, it } from 'vitest'
import { checkJobsDeterminism, runJobsSeed } from './JobsSimulation.ts'
import { checkSchedules } from './ScheduleProperty.ts'

// 300 worlds of 2,000 safety steps plus the final phase: ~40 s on one core.
const runs = 300
const steps = 2_000

it(`the job invariants hold for ${runs} generated schedules on memory`, async () => {
  let events = 0
  const report = await checkSchedules({
    store: 'memory',
    file: 'sim/jobsWorld.memory.test.ts',
    numRuns: runs,
    scriptLengthMax: 400,
    runWorld: async (schedule) => (await runJobsSeed({ seed: schedule.seed, store: 'memory', script: schedule.script, overrides: { steps } })).result,
    onRun: (_, count) => (events += count),
  })
  console.log(`jobs on memory: ${report.runs} worlds, ${events} events`)
  expect(report.failure).toBeNull()
  expect(report.runs).toBeGreaterThanOrEqual(process.env.SIM_PATH ? 1 : runs)
}, 300_000)

it('one seed twice gives one trace on memory', async () => {
  // Seed 1 crashes hosts, drops connections and reclaims jobs: equal hashes mean more than an empty run twice.
  const seed = 1
  console.log(`seed ${seed}`)
  const first = await runJobsSeed({ seed, store: 'memory', keepTrace: true })
  expect(first.result.jobs.reclaimed).toBeGreaterThan(0)
  const { hash, divergence } = await checkJobsDeterminism({ seed, store: 'memory' }, first)
  expect(divergence).toBeNull()
  expect(hash).toMatch(/^[0-9a-f]{64}$/)
})
