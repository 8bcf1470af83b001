/**
 * The job store's per-job statements keep their plans on PostgreSQL.
 *
 * A prepared statement is planned for its values on its first five executions; after that the
 * server keeps one generic plan if it looks as cheap as those, and otherwise plans every
 * execution afresh. On a drain at concurrency 1 such planning costs more server time than the
 * statements' own runs (an ack's, three times its delete). So the statements a job costs —
 * claiming the head of the due rows, acking (alone, or with the next claim), the due-time
 * driver's next-due read for one queue, enqueueing — must run on a generic plan once warmed up.
 *
 * The store runs on a pool of one connection, whose prepared statements `pg_prepared_statements`
 * lists with the count of generic and custom plans each ran on.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { JobStore, NewJob } from '../src/persistence/jobs/JobStore.ts'
import { makeJobFixture } from '../src/persistence/jobs/conformance/JobFixture.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { freshDatabase } from './harness/database.ts'

let url: string
let pool: pg.Pool
let store: JobStore

const fixture = makeJobFixture('postgres', () => store, 1)
const queue = 'plans'
const job = (id: string): NewJob => fixture.job(queue, { id })
// Executions of each statement: the first five are always planned for their values.
const runs = 12

beforeAll(async () => {
  url = await freshDatabase('job_plans')
  pool = new pg.Pool({ connectionString: url, max: 1 })
  store = await openSqlJobStore(makePgDriver({ pool }))
  // A backlog with fresh statistics, as after the store's own refresh.
  for (let page = 0; page < 2; page++) {
    await store.enqueueMany({ jobs: Array.from({ length: 1_000 }, (_, index) => job(`backlog-${page}-${String(index).padStart(4, '0')}`)), nowMs: 1_000 })
  }
  // And one job due later: the driver's next due time after now.
  await store.enqueueMany({ jobs: [fixture.job(queue, { id: 'later', runAtMs: 60_000 })], nowMs: 1_000 })
  await pool.query('ANALYZE matchbox.jobs')
})

afterAll(async () => {
  await store?.close()
  await pool?.end()
})

// The plans the statement whose text starts with `head` ran on.
async function plansOf(head: RegExp): Promise<{ generic: number; custom: number }> {
  const { rows } = await pool.query<{ statement: string; generic_plans: string; custom_plans: string }>('SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements')
  const matching = rows.filter((row) => head.test(row.statement.replace(/\s+/g, ' ').trim()))
  expect(matching.map((row) => row.statement.slice(0, 60)), String(head)).toHaveLength(1)
  const [row] = matching
  return { generic: Number(row?.generic_plans), custom: Number(row?.custom_plans) }
}

describe('per-job statements keep their plans on PostgreSQL', () => {
  it('claiming the head, acking one job (alone or with the next claim), the driver’s next-due read for one queue and enqueueing run on a generic plan once warmed up', async () => {
    for (let run = 0; run < runs; run++) {
      const nowMs = 2_000 + run
      const [claimed] = await store.claimDue({ queue, nowMs, claimTokens: [`token-${run}`] })
      expect(claimed?.claimToken).toBe(`token-${run}`)
      expect(await store.ackMany({ claims: [{ id: claimed?.id as string, claimToken: `token-${run}` }], nowMs })).toEqual([claimed?.id])
      expect(await store.nextDueMs({ nowMs, queues: [queue] })).toBe(60_000)
      await store.enqueue({ job: job(`late-${run}`), nowMs })
    }
    // A lone work loop acks its job in the statement that claims its next one.
    let [held] = await store.claimDue({ queue, nowMs: 3_000, claimTokens: ['riding-0'] })
    for (let run = 1; run <= runs; run++) {
      const answer = await store.ackAndClaimDue({ acks: [{ id: held?.id as string, claimToken: held?.claimToken as string }], queue, nowMs: 3_000 + run, claimTokens: [`riding-${run}`] })
      expect(answer.acked).toEqual([held?.id])
      ;[held] = answer.claimed
    }
    const statements = {
      ackAndClaimDue: /^WITH acked AS .*head_pending AS/,
      // The keyless form probes once whether the queue has slot rows or rate buckets.
      claimDue: /^WITH keyed_probe AS .*head_pending AS/,
      // The ack frees its job's concurrency slot in the same statement (concurrencySql.ts).
      ack: /^WITH acked AS \(DELETE FROM "matchbox"\.jobs WHERE id = \$1::text/,
      nextDue: /^SELECT min\(due_ms\) AS next_due_ms/,
      enqueue: /^WITH claim_token AS .*inserted AS \( INSERT INTO "matchbox"\.jobs/,
    }
    for (const [name, head] of Object.entries(statements)) {
      const plans = await plansOf(head)
      expect(plans.generic + plans.custom, name).toBe(name === 'claimDue' ? runs + 1 : runs)
      expect(plans.custom, `${name} was planned afresh ${plans.custom} times`).toBeLessThanOrEqual(5)
    }
  })

  it('the riding claim’s generic plan reads no whole table in a queue with thousands of claims in flight, its statistics fresh', async () => {
    // Its probe for lapsed claims asks whether any of the queue's processing rows is due by now.
    // Priced for no particular now, that range was a third of them: with thousands in flight the
    // generic plan expected one soon in a sequential scan, and read every row of the table.
    const busyPool = new pg.Pool({ connectionString: url, max: 1 })
    const busy = await openSqlJobStore(makePgDriver({ pool: busyPool }))
    try {
      const busyQueue = 'plans-busy'
      for (let page = 0; page < 10; page++) {
        await busy.enqueueMany({ jobs: Array.from({ length: 1_000 }, (_, index) => fixture.job(busyQueue, { id: `busy-${page}-${String(index).padStart(4, '0')}` })), nowMs: 1_000 })
      }
      for (let batch = 0; batch < 24; batch++) {
        expect(await busy.claimDue({ queue: busyQueue, nowMs: 1_500, claimTokens: Array.from({ length: 250 }, (_, index) => `flight-${batch}-${index}`) })).toHaveLength(250)
      }
      await busyPool.query('ANALYZE matchbox.jobs')
      let [held] = await busy.claimDue({ queue: busyQueue, nowMs: 2_000, claimTokens: ['busy-riding-0'] })
      for (let run = 1; run <= runs; run++) {
        const answer = await busy.ackAndClaimDue({ acks: [{ id: held?.id as string, claimToken: held?.claimToken as string }], queue: busyQueue, nowMs: 2_000 + run, claimTokens: [`busy-riding-${run}`] })
        expect(answer.acked).toEqual([held?.id])
        ;[held] = answer.claimed
      }
      const { rows } = await busyPool.query<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements')
      const riding = rows.find((row) => /^WITH acked AS .*head_pending AS/.test(row.statement.replace(/\s+/g, ' ').trim()))
      if (riding === undefined) return expect.fail('the riding statement is prepared')
      // EXPLAIN of the prepared statement shows the plan it keeps.
      const plan = await busyPool.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE ${riding.name}('${busyQueue}', '{explained}', 2100, 'none', 'none')`)
      const scans = plan.rows.map((row) => row['QUERY PLAN']).filter((line) => line.includes('Seq Scan on jobs'))
      expect(scans).toEqual([])
    } finally {
      await busy.close()
      await busyPool.end()
    }
  })
})
