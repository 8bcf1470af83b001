/**
 * matchingChild — a Matching host in a process of its own, for crash recovery tests: it runs
 * on the real clock against PostgreSQL, adds tasks and dispatches them until it is killed.
 *
 * Usage: `node --import tsx test/harness/matchingChild.ts <database-url> <job-prefix> <seed>`
 * (schema `matchbox`). History records each start in `crash_test.started` (tableHistory.ts).
 *
 * Protocol (stdout, one line each): `ready` once the host runs; `added <jobId>` for every
 * addTask that resolved — written synchronously (stdout is a pipe: synchronous on Linux)
 * BEFORE the child does anything else with that task, so a line the parent reads is a promise
 * the next owner must keep. The child exits when its stdin closes (the parent went away).
 *
 * Does not: stop by itself. The parent SIGKILLs it at a moment of its choosing.
 */
import pg from 'pg'
import { makeMatchingHost } from '../../src/actors/MatchingHost.ts'
import { RealClock } from '../../src/kernel/Clock.ts'
import { Random } from '../../src/kernel/Random.ts'
import { openPostgresStore } from '../../src/persistence/queues/sql/openSqlStore.ts'
import { crashFamily, crashPartitionCount, crashQueueLimits } from './crashFamily.ts'
import { makeTableHistory } from './tableHistory.ts'

async function main(): Promise<void> {
  const [url, prefix, seedText] = process.argv.slice(2)
  if (url === undefined || prefix === undefined || seedText === undefined) throw new Error('usage: matchingChild.ts <database-url> <job-prefix> <seed>')
  const random = Random.make(Number(seedText))
  const store = await openPostgresStore({ connectionString: url })
  const pool = new pg.Pool({ connectionString: url, max: 4 })
  const host = makeMatchingHost({
    hostId: 'child',
    store,
    history: makeTableHistory(pool, prefix),
    clock: new RealClock(),
    random: random.fork(),
    partitionCount: crashPartitionCount,
    limits: crashQueueLimits,
  })
  process.stdin.on('end', () => process.exit(0))
  process.stdin.resume()
  process.stdout.write('ready\n')

  const poller = async (index: number): Promise<void> => {
    for (;;) await host.poll({ ...crashFamily, identity: `child-worker-${index}`, waitMs: 200 }).catch(() => null)
  }
  let counter = 0
  const adder = async (): Promise<void> => {
    for (;;) {
      const jobId = `${prefix}-${++counter}`
      const added = await host.addTask({ ...crashFamily, task: { jobId, priority: random.int(0, 2) } }).then(
        () => true,
        () => false,
      )
      if (added) process.stdout.write(`added ${jobId}\n`)
    }
  }
  await Promise.all([poller(1), poller(2), adder(), adder(), adder()])
}

main().catch((error: unknown) => {
  process.stderr.write(`matchingChild: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
