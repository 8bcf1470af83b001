/**
 * PostgreSQL fault soak — `npx tsx bench/faults.ts [--cycles 50] [--seed S] [--enqueues 100]
 * [--fault restart|terminate|both]`.
 *
 * The runs of test/faults.postgres.test.ts (harness/faultRun.ts), for many more cycles: jobs
 * flowing through one engine while the server is restarted in immediate mode (a crash) every
 * cycle, and/or while the engine's connections are killed (`pg_terminate_backend`) ten times a
 * cycle. Same checks: every successfully enqueued job handled at least once, none pending,
 * processing or dead after the drain. Prints the seed first, a line per cycle, then a summary;
 * exits 1 on any violation. (Worker processes SIGKILLed under a producer process:
 * test/multiEngine.kill.postgres.test.ts and bench/multihost.ts.)
 *
 * Always a throwaway cluster of its own (test/harness/PostgresCluster.ts): a restart must not
 * hit anyone else's server.
 */
import pg from 'pg'
import { type FaultRunReport, runUnderFaults, terminateBackends } from '../test/harness/faultRun.ts'
import { startCluster } from '../test/harness/PostgresCluster.ts'
import { seedFlag, wholeNumberFlag } from './Flags.ts'

const cycles = wholeNumberFlag('cycles', 50)
const seed = seedFlag()
const enqueuesPerCycle = wholeNumberFlag('enqueues', 100)
const faultIndex = process.argv.indexOf('--fault')
const fault = faultIndex < 0 ? 'both' : process.argv[faultIndex + 1]
if (fault !== 'restart' && fault !== 'terminate' && fault !== 'both') throw new Error('--fault must be restart, terminate or both')
console.log(`PostgreSQL fault soak: --cycles ${cycles} --seed ${seed} --enqueues ${enqueuesPerCycle} --fault ${fault}`)

const cluster = startCluster()
const admin = new pg.Pool({ connectionString: cluster.url, max: 2 })
admin.on('error', () => {})

async function database(name: string): Promise<string> {
  await admin.query(`CREATE DATABASE ${name} TEMPLATE template0`)
  // The throwaway cluster runs with synchronous_commit=off; a restart is a crash, and the
  // checks need acknowledged commits to be durable.
  await admin.query(`ALTER DATABASE ${name} SET synchronous_commit = on`)
  const url = new URL(cluster.url)
  url.pathname = `/${name}`
  return url.toString()
}

// Median and worst of the per-cycle recovery times.
function recoveryOf(report: FaultRunReport): string {
  const times = report.recoveryMs.filter((ms): ms is number => ms !== null).sort((x, y) => x - y)
  const never = report.recoveryMs.length - times.length
  if (times.length === 0) return 'no cycle'
  return `median ${times[Math.floor(times.length / 2)]} ms, max ${times.at(-1)} ms${never > 0 ? `, ${never} cycles not within 30 s` : ''}`
}

function summary(name: string, report: FaultRunReport, seconds: number): void {
  console.log(
    `${name}: ${cycles} cycles in ${seconds.toFixed(1)} s: ${report.enqueued} enqueued (${report.enqueueFailures} refused), ${report.handled} handled ` +
      `(${report.handledAgain} again), ${report.workerErrors} worker errors reported, handling again after a fault in ${recoveryOf(report)}; ${report.violations.length} violations`,
  )
  for (const violation of report.violations) console.log(`VIOLATION ${name}: ${violation}`)
}

let exitCode = 0
try {
  if (fault === 'restart' || fault === 'both') {
    const startedMs = performance.now()
    const report = await runUnderFaults({
      url: await database('soak_restart'),
      seed,
      cycles,
      enqueuesPerCycle,
      fault: () => cluster.restart('immediate'),
      log: (line) => console.log(`restart ${line}`),
    })
    summary('restart', report, (performance.now() - startedMs) / 1000)
    if (report.violations.length > 0) exitCode = 1
  }
  if (fault === 'terminate' || fault === 'both') {
    const startedMs = performance.now()
    let terminated = 0
    const report = await runUnderFaults({
      url: await database('soak_terminate'),
      seed: seed + 1,
      cycles,
      enqueuesPerCycle,
      async fault(_cycle, flow) {
        for (let round = 0; round < 10; round++) {
          terminated += await terminateBackends(admin, 'soak_terminate').catch(() => 0)
          await flow.moreEnqueued(Math.max(1, Math.floor(enqueuesPerCycle / 10)))
        }
      },
      log: (line) => console.log(`terminate ${line}`),
    })
    summary(`terminate (${terminated} backends killed)`, report, (performance.now() - startedMs) / 1000)
    if (report.violations.length > 0) exitCode = 1
  }
} finally {
  await admin.end().catch(() => {})
  cluster.stop()
}
process.exit(exitCode)
