/**
 * Primary failover — `npx tsx bench/failover.ts [--seed S] [--runs N] [--asynchronous]`.
 *
 * Runs the scenario of test/failover.deep.postgres.test.ts (test/harness/failoverRun.ts) and
 * prints its figures: a primary with a synchronous streaming standby on this machine, engines
 * behind TCP proxies; the primary SIGKILLed and the standby promoted; then the new primary
 * isolated while one engine stays on it, and its own standby promoted. Per failover: time to
 * promote, time until a job enqueued after it was handled, and the checks made on the promoted
 * server before any engine reached it; for the engine left on the isolated old primary: writes
 * tried and acknowledged there. Over the run: acknowledged enqueues lost, acked jobs that ran
 * again, duplicates (a claim that lapsed while its engine was cut off runs again).
 *
 * `--asynchronous` leaves the second primary without `synchronous_standby_names`: the isolated
 * engine's writes are then acknowledged by a server whose history the promotion discards, and the
 * run counts what that loses. Exits 1 when a synchronous run loses anything.
 *
 * Needs the PostgreSQL server binaries (PG_BIN or /usr/lib/postgresql/N/bin); it starts its own
 * servers whatever DATABASE_URL says, since it must kill and promote them.
 */
import { type FailoverFigures, runFailover } from '../test/harness/failoverRun.ts'
import { seedFlag, wholeNumberFlag } from './Flags.ts'

const seed = seedFlag()
const runs = wholeNumberFlag('runs', 1)
const asynchronous = process.argv.includes('--asynchronous')
console.log(`failover: --seed ${seed} --runs ${runs}${asynchronous ? ' --asynchronous' : ''}`)

const ms = (value: number): string => `${Math.round(value)} ms`

function print(run: number, figures: FailoverFigures): void {
  console.log(`run ${run} (seed ${figures.seed}, second failover ${figures.asynchronous ? 'asynchronous' : 'synchronous'}):`)
  for (const step of figures.failovers) {
    console.log(
      `  ${step.name}: promoted in ${ms(step.promoteMs)}, a new job handled ${ms(step.resumeMs)} after the repoint; ` +
        `on the promoted server: ${step.missingEnqueues.length} of ${step.checkedEnqueues} acknowledged enqueues missing, ` +
        `${step.undoneAcks.length} of ${step.checkedAcks} acks undone, ${step.missingDeaths.length} of ${step.checkedDeaths} deaths missing; resumed: ${step.resumedHosts.join(', ')}`,
    )
  }
  const x = figures.isolated
  console.log(`  engine x on the isolated old primary: ${x.writesAttempted} enqueues tried, ${x.writesAcknowledged} writes acknowledged (enqueues, claims, acks), ${x.writeErrors} failed; resumed ${ms(x.resumeMs)} after the heal`)
  console.log(
    `  over the run: ${figures.enqueuesAcknowledged} enqueues acknowledged (${figures.enqueueErrors} refused while unreachable), ${figures.handled} handled, ` +
      `${figures.acksAcknowledged} acks and ${figures.deathsAcknowledged} deaths acknowledged; lost enqueues ${figures.lostEnqueues.length}, acked jobs run again ${figures.lostAcks.length}, ` +
      `duplicates ${figures.duplicates}, left pending/processing ${figures.leftLive}`,
  )
}

let losses = 0
for (let run = 0; run < runs; run++) {
  const figures = await runFailover({ seed: seed + run, asynchronous, log: (line) => console.log(`  … ${line}`) })
  print(run, figures)
  const lost = figures.lostEnqueues.length + figures.lostAcks.length + figures.isolated.writesAcknowledged + figures.failovers.reduce((sum, step) => sum + step.missingEnqueues.length + step.undoneAcks.length + step.missingDeaths.length, 0)
  losses += lost
}
if (losses > 0 && !asynchronous) process.exitCode = 1
