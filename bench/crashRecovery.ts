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
import pg from 'pg'
import { seedFromEntropy } from '../src/kernel/Random.ts'
import { runCrashCycles } from '../test/harness/crashCycle.ts'
import { type RunningCluster, startCluster } from '../test/harness/PostgresCluster.ts'

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`)
  if (index < 0) return fallback
  const value = Number(process.argv[index + 1])
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${name} needs a whole number`)
  return value
}

const cycles = option('cycles', 200)
const seed = option('seed', (seedFromEntropy() >>> 0) % 2 ** 31)
const addsMax = option('adds-max', 60)
console.log(`crash recovery soak: --cycles ${cycles} --seed ${seed} --adds-max ${addsMax}`)

let cluster: RunningCluster | undefined
const fromEnv = process.env.DATABASE_URL
const adminUrl = fromEnv !== undefined && fromEnv !== '' ? fromEnv : (cluster = startCluster()).url
const database = `mb_crash_soak_${process.pid}`
const admin = new pg.Client({ connectionString: adminUrl })
await admin.connect()
await admin.query(`CREATE DATABASE ${database} TEMPLATE template0`)
const url = new URL(adminUrl)
url.pathname = `/${database}`

const startedMs = performance.now()
let exitCode = 0
try {
  const report = await runCrashCycles({ url: url.toString(), cycles, seed, addsMax, log: (line) => console.log(line) })
  const seconds = (performance.now() - startedMs) / 1000
  console.log(
    `${report.cycles} cycles in ${seconds.toFixed(1)} s: ${report.reported} adds reported, started by children ${report.startedByChildren}, ` +
      `by takeover hosts ${report.startedByTakeover}; ${report.violations.length} violations`,
  )
  for (const violation of report.violations) console.log(`VIOLATION ${violation}`)
  if (report.violations.length > 0) exitCode = 1
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {})
  await admin.end()
  cluster?.stop()
}
process.exit(exitCode)
