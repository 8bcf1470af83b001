/**
 * matchingChild — a Matching host in a process of its own, for crash recovery tests: it runs
 * on the real clock against PostgreSQL, adds tasks and dispatches them until it is killed.
 *
 * Usage: `node --import tsx test/harness/matchingChild.ts`, then one line on stdin, the JSON
 * array `[<database-url>, <job-prefix>, <seed>]` (schema `matchbox`): the child loads its modules
 * first and starts only then, so a parent can start it ahead of need (loading takes a second or
 * two on a busy machine) and have it run the moment it is wanted. History records each start in
 * `crash_test.started` (tableHistory.ts).
 *
 * Protocol (stdout, one line each): `ready` once the host runs; `added <jobId>` for every
 * addTask that resolved — written synchronously (stdout is a pipe: synchronous on Linux)
 * BEFORE the child does anything else with that task, so a line the parent reads is a promise
 * the next owner must keep. The child exits when its stdin closes (the parent went away, or
 * discarded a child it started ahead and never needed).
 *
 * Does not: stop by itself. The parent SIGKILLs it at a moment of its choosing.
 */
import { createInterface } from 'node:readline'
import pg from 'pg'
import { makeMatchingHost } from '../../src/actors/MatchingHost.ts'
import { RealClock } from '../../src/kernel/Clock.ts'
import { Random } from '../../src/kernel/Random.ts'
import { openPostgresStore } from '../../src/persistence/queues/sql/openSqlStore.ts'
import { crashFamily, crashPartitionCount, crashQueueLimits } from './crashFamily.ts'
import { makeTableHistory } from './tableHistory.ts'

async function main(): Promise<void> {
  const input = createInterface({ input: process.stdin })
  input.on('close', () => process.exit(0))
  const first = await new Promise<string>((resolve) => input.once('line', resolve))
  const [url, prefix, seed] = JSON.parse(first) as [unknown, unknown, unknown]
  if (typeof url !== 'string' || typeof prefix !== 'string' || typeof seed !== 'number') throw new Error('matchingChild: the first stdin line must be [<database-url>, <job-prefix>, <seed>]')
  const random = Random.make(seed)
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
