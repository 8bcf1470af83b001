/**
 * A deep sweep of random Matching worlds on memory (`npm run test:deep` only: the file name's
 * `.deep.` keeps it out of `npm test`). One printed master seed draws N worlds (300, or
 * SIM_SWEEP_WORLDS), each a world seed and a script of explicit decisions as the memory property
 * (properties.memory.test.ts) draws them, at the default length; every world runs to the end and
 * every failure is printed with its world's seed and script and the command that replays that
 * world alone. Unlike the property, a sweep does not stop at the first failure or shrink it.
 *
 * Replay: the whole sweep with SIM_SWEEP_SEED=<master seed> (and the same SIM_SWEEP_WORLDS); one
 * world with SIM_SWEEP_WORLD=<seed> SIM_SWEEP_SCRIPT=<decisions, comma-separated>.
 */
import { expect, it } from 'vitest'
import { runSeed } from './Simulation.ts'
import { describeSweepFailure, runScheduleSweep, sweepMasterSeed, sweepNamedWorld, sweepReplay, sweepSchedules } from '../core/ScheduleSweep.ts'
import { deep } from '../../test/harness/depth.ts'

const file = 'sim/matching/matchingSweep.deep.memory.test.ts'
// The memory property's longest script, so the sweep's worlds are the property's.
const scriptLengthMax = 400
const worlds = Number(process.env.SIM_SWEEP_WORLDS ?? 300)


it.runIf(deep)(`random Matching worlds on memory (${worlds}, or the one SIM_SWEEP_WORLD names) pass every checker`, async () => {
  const named = sweepNamedWorld()
  const masterSeed = sweepMasterSeed()
  console.log(named === null ? `sweep master seed ${masterSeed}: ${worlds} worlds (replay with SIM_SWEEP_SEED=${masterSeed})` : `world ${named.seed} script [${named.script.join(',')}]`)
  let passed = 0
  const failures = await runScheduleSweep({
    schedules: named === null ? sweepSchedules(masterSeed, worlds, scriptLengthMax) : [named],
    runWorld: async (schedule) => (await runSeed({ seed: schedule.seed, store: 'memory', script: schedule.script })).result,
    replay: sweepReplay(file),
    onWorld: (_, __, verdict) => void (verdict.ok && passed++),
  })
  for (const failure of failures) console.log(describeSweepFailure(failure))
  console.log(`sweep: ${passed} passed, ${failures.length} failed`)
  expect(failures.map((failure) => `seed ${failure.schedule.seed}: ${failure.violations[0]}`)).toEqual([])
}, 7_200_000)
