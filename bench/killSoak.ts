/**
 * A thousand kills — `npx tsx bench/killSoak.ts [--kills 1000] [--seed S]`.
 *
 * Runs the soak of test/multiEngine.kill.postgres.test.ts (test/harness/killSoak.ts) with many
 * more kills: three worker engine processes and a producer engine process on PostgreSQL, a random
 * worker SIGKILLed at a random moment of the enqueue stream and respawned, `--kills` times, then a
 * final drain. Prints the seed first, a progress line every 50 kills, then: enqueues acknowledged,
 * jobs handled at least once, lost (must be 0), left pending or processing (0), dead (0),
 * duplicates, redelivery waits (from a run of a job to its next run) and enqueue → first run as
 * p50 / p95 / max, and the CPU other processes used meanwhile (the machine is shared).
 * Exits 1 when anything was lost, left, dead, or an engine ended by itself.
 *
 * The engines run the compiled package on plain Node (built at the start), so a restart costs
 * about 0.3 s of start-up. Kills come 0.25–1 s of stream apart: a thousand take ~15–20 minutes.
 * PostgreSQL: a new database on DATABASE_URL's server, else a throwaway cluster.
 */
import { buildCompiledChild } from '../test/harness/engineProcess.ts'
import { type KillSoakFigures, runKillSoak, type Spread } from '../test/harness/killSoak.ts'
import { openBenchDatabase } from './BenchDatabase.ts'
import { makeCpuWatch, postmasterPidOf } from './CpuWatch.ts'
import { seedFlag, wholeNumberFlag } from './Flags.ts'

const kills = wholeNumberFlag('kills', 1_000)
const seed = seedFlag()
console.log(`kill soak: --kills ${kills} --seed ${seed}`)
buildCompiledChild()

const database = await openBenchDatabase('kill_soak')
const postmaster = postmasterPidOf(database.adminUrl)
const watch = makeCpuWatch(postmaster === null ? [] : [postmaster])
const spread = (value: Spread): string => `p50 ${Math.round(value.p50Ms)} ms, p95 ${Math.round(value.p95Ms)} ms, max ${Math.round(value.maxMs)} ms (${value.count})`

function print(figures: KillSoakFigures, othersCores: number): void {
  console.log(`${figures.kills} kills in ${(figures.totalMs / 60_000).toFixed(1)} min (final drain ${(figures.drainMs / 1000).toFixed(1)} s), other processes used ${othersCores.toFixed(2)} of 2 cores meanwhile`)
  console.log(`  enqueues acknowledged     ${figures.reported} (${figures.enqueueFailures} refused)`)
  console.log(`  handled at least once     ${figures.handled} (by ${figures.byHosts} host ids)`)
  console.log(`  lost                      ${figures.lost}`)
  console.log(`  left pending/processing   ${figures.leftLive}`)
  console.log(`  dead                      ${figures.dead}`)
  console.log(`  duplicates                ${figures.duplicates}`)
  console.log(`  redelivery waits          ${spread(figures.redeliveryWaits)}`)
  console.log(`  enqueue → first run       ${spread(figures.firstRun)}`)
  console.log(`  worker errors             ${figures.workerErrors.length}${figures.workerErrors.length > 0 ? ` (first: ${figures.workerErrors[0]})` : ''}`)
  for (const end of figures.unexpectedEnds) console.log(`  UNEXPECTED END ${end}`)
}

let exitCode = 0
try {
  const before = watch.sample()
  const figures = await runKillSoak({
    url: database.url,
    kills,
    seed,
    compiled: true,
    log: (line) => {
      const cycle = /^cycle (\d+):/.exec(line)
      if (cycle === null || Number(cycle[1]) % 50 === 49) console.log(line)
    },
  })
  print(figures, watch.share(before, watch.sample()).othersCores)
  if (figures.lost + figures.leftLive + figures.dead + figures.unexpectedEnds.length > 0) exitCode = 1
} finally {
  await database.drop()
}
process.exit(exitCode)
