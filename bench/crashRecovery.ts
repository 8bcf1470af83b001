/**
 * Crash recovery soak — `npx tsx bench/crashRecovery.ts [--cycles 200] [--seed S] [--adds-max 60]`.
 *
 * Runs the crash recovery cycle of test/crashRecovery.postgres.test.ts (harness/crashCycle.ts)
 * many more times: a child Matching host SIGKILLed after a seeded random number of reported
 * adds, a takeover host in this process, and the same checks (range rises, ack levels never
 * move back or past the last id, every reported add delivered at least once). Prints the seed
 * first, one line per cycle, then a summary; exits 1 on any violation.
 *
 * PostgreSQL: a new database on DATABASE_URL's server (needs CREATE DATABASE), else a
 * throwaway cluster from test/harness/PostgresCluster.ts. Each cycle costs about 2 s (mostly
 * starting the child's Node and tsx).
 */
import { runCrashCycles } from '../test/harness/crashCycle.ts'
import { openBenchDatabase } from './BenchDatabase.ts'
import { seedFlag, wholeNumberFlag } from './Flags.ts'

const cycles = wholeNumberFlag('cycles', 200)
const seed = seedFlag()
const addsMax = wholeNumberFlag('adds-max', 60)
console.log(`crash recovery soak: --cycles ${cycles} --seed ${seed} --adds-max ${addsMax}`)

const database = await openBenchDatabase('crash_soak')

const startedMs = performance.now()
let exitCode = 0
try {
  const report = await runCrashCycles({ url: database.url, cycles, seed, addsMax, log: (line) => console.log(line) })
  const seconds = (performance.now() - startedMs) / 1000
  console.log(
    `${report.cycles} cycles in ${seconds.toFixed(1)} s: ${report.reported} adds reported, started by children ${report.startedByChildren}, ` +
      `by takeover hosts ${report.startedByTakeover}; ${report.violations.length} violations`,
  )
  for (const violation of report.violations) console.log(`VIOLATION ${violation}`)
  if (report.violations.length > 0) exitCode = 1
} finally {
  await database.drop()
}
process.exit(exitCode)
