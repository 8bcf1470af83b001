/**
 * The hand-over at enqueue across processes (HandOvers.ts), on one PostgreSQL database: a worker
 * engine's claim parked in its queue's line registers as a waiter; a producer engine's enqueue
 * inserts the job claimed with that waiter's token and raises the `handed` message in the same
 * statement, and the worker's handler starts with no due-time pass and no claim statement of its
 * own — the clock never moves.
 *
 * Real I/O (LISTEN/NOTIFY, statements) is waited on by conditions, bounded by event-loop turns;
 * time only moves when the test advances it.
 */
import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { ManualClock, type Matchbox, open } from '../src/index.ts'
import { freshDatabase } from './harness/database.ts'

const start = 1_700_000_000_000
let pool: pg.Pool
let clock: ManualClock
let url: string
const engines: Matchbox[] = []

// Yields to the event loop until `condition` holds, bounded by turns, not time.
async function eventually(condition: () => boolean | Promise<boolean>, what: string, turnsMax = 2_000_000): Promise<void> {
  for (let turn = 0; turn < turnsMax; turn++) {
    if (await condition()) return
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  throw new Error(`condition never held: ${what}`)
}

async function waiters(queue: string): Promise<ReadonlyArray<string>> {
  const result = await pool.query<{ claim_token: string }>('SELECT claim_token FROM matchbox.job_waiters WHERE queue = $1 ORDER BY seq', [queue])
  return result.rows.map((row) => row.claim_token)
}

beforeAll(async () => {
  url = await freshDatabase('jobs_hand_over')
  pool = new pg.Pool({ connectionString: url })
  clock = new ManualClock(start)
})
afterAll(async () => {
  for (const mb of engines) await mb.close()
  await pool.end()
})

it("a producer's enqueue is claimed for the worker engine's parked claim in its own statement, and reaches the handler with the clock standing still", async () => {
  const worker = await open({ store: { databaseUrl: url }, clock, seed: 3, hostId: 'worker' })
  const producer = await open({ store: { databaseUrl: url }, clock, seed: 4, hostId: 'producer', role: 'producer' })
  engines.push(worker, producer)
  const queue = 'hand-over'
  const started: Array<{ readonly id: string; readonly payload: unknown }> = []
  const tokens: string[] = []
  const stop = worker.queue(queue).work(async (job) => {
    started.push({ id: job.id, payload: job.payload })
    const row = await pool.query<{ claim_token: string }>('SELECT claim_token FROM matchbox.jobs WHERE id = $1', [job.id])
    tokens.push(row.rows[0]?.claim_token ?? 'none')
  })
  await eventually(async () => (await waiters(queue)).length === 1, "the worker's claim is registered as a waiter")
  const [token] = await waiters(queue)

  const id = await producer.queue(queue).enqueue({ n: 1 })
  await eventually(() => started.length === 1, 'the handler started')
  expect(started).toEqual([{ id, payload: { n: 1 } }])
  // Claimed by the producer's statement with the waiter's token, the waiter taken.
  await eventually(() => tokens.length === 1, "the handler read its job's claim")
  expect(tokens).toEqual([token])
  expect(await waiters(queue)).not.toContain(token)

  // Again, for the next parked claim: a stream of enqueues, each handed over, none waits for time.
  for (let n = 2; n <= 5; n++) {
    await eventually(async () => (await waiters(queue)).length === 1, `the claim after job ${n - 1} is registered`)
    await producer.queue(queue).enqueue({ n })
    await eventually(() => started.length === n, `job ${n} started`)
  }
  expect(started.map((job) => job.payload)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }])
  await stop()
  // Stopped, the worker took its waiter back: nothing is handed to a claim that no longer waits.
  await eventually(async () => (await waiters(queue)).length === 0, 'the waiter is taken back at stop')
  const pending = await producer.queue(queue).enqueue({ n: 6 })
  expect((await producer.queue(queue).getJob(pending))?.state).toBe('pending')
})
