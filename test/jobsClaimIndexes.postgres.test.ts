/**
 * A claim writes the fewest index entries the jobs table allows (migration 009): the primary key
 * and the small index of processing rows, nothing in the pending rows' indexes, which a claimed
 * row leaves. An ack (a delete) writes none. Counted with `pageinspect`: the row versions every
 * leaf page of an index points at (a deduplicated entry points at several), while a transaction
 * opened before the claims holds its snapshot: every version it sees stays needed, so no entry
 * for one can be removed (by a scan marking it dead or a page's bottom-up deletion), and each
 * entry a statement wrote shows as one more.
 *
 * A claim cannot be a HOT update (it changes the state and due time the indexes are partial on
 * or keyed by): the count of entries per claim is what the layout lowers, from four to two.
 *
 * Also: the claim head's generic plan, for one row and for a batch, reads the pending head and
 * the processing index, and finds the rows it claims by primary key: never the table, nor the
 * every-queue due index (which would read every due row of every queue for each claim); so does
 * the lean riding claim's, its probe of the rows with Matching and of the lapsed claims reading
 * their indexes. And the
 * acks' and a heartbeat's generic plans find the rows they name by primary key, never through
 * the processing index (which holds every claim in flight, and acked claims' dead entries until
 * a vacuum).
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { JobStore, NewJob } from '../src/persistence/jobs/JobStore.ts'
import { makeJobFixture } from '../src/persistence/jobs/conformance/JobFixture.ts'
import { ackAndClaimDueSql, ackBatchSql, ackSql, claimDueSql, heartbeatSql } from '../src/persistence/jobs/sql/jobSql.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { makeSchema } from '../src/persistence/sql/Schema.ts'
import { freshDatabase } from './harness/database.ts'

let pool: pg.Pool
let store: JobStore

const fixture = makeJobFixture('postgres', () => store, 1)
const queue = 'claim-indexes'
const jobs = 300
const claimBatch = 50
const job = (n: number): NewJob => fixture.job(queue, { id: `ix-${String(n).padStart(4, '0')}` })

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await freshDatabase('claim_indexes'), max: 3 })
  await pool.query('CREATE EXTENSION IF NOT EXISTS pageinspect')
  store = await openSqlJobStore(makePgDriver({ pool }))
})

afterAll(async () => {
  await store?.close()
  await pool?.end()
})

// Every index of matchbox.jobs and the row versions its leaf pages point at: each item of a leaf
// page but its high key (the first item of a page with a right sibling), a posting list as its
// row versions.
async function entriesByIndex(): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ index: string; entries: string }>(
    `SELECT c.relname AS index, (
       SELECT coalesce(sum(coalesce(cardinality(item.tids), 1)), 0)
       FROM generate_series(1, (pg_relation_size(c.oid) / current_setting('block_size')::integer)::integer - 1) AS page(blkno)
       CROSS JOIN LATERAL bt_page_stats(c.oid::regclass::text, page.blkno) AS stats
       CROSS JOIN LATERAL bt_page_items(c.oid::regclass::text, page.blkno) AS item
       WHERE stats.type = 'l' AND NOT (stats.btpo_next <> 0 AND item.itemoffset = 1)
     ) AS entries
     FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'matchbox.jobs'::regclass ORDER BY c.relname`,
  )
  return Object.fromEntries(rows.map((row) => [row.index, Number(row.entries)]))
}

const growth = (before: Record<string, number>, after: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.keys(after).map((index) => [index, (after[index] ?? 0) - (before[index] ?? 0)]))

describe('the jobs indexes on a claim (PostgreSQL)', () => {
  it('a claim writes one entry in the primary key and one in the processing index, none elsewhere; an ack writes none', async () => {
    await store.enqueueMany({ jobs: Array.from({ length: jobs }, (_, n) => job(n)), nowMs: 1_000 })
    const holder = await pool.connect()
    try {
      await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ')
      await holder.query('SELECT count(*) FROM matchbox.jobs')
      await claimAndAck(await entriesByIndex())
    } finally {
      await holder.query('ROLLBACK').catch(() => {})
      holder.release()
    }
  })

  async function claimAndAck(beforeClaims: Record<string, number>): Promise<void> {
    const claimed = []
    for (let round = 0; claimed.length < jobs; round++) {
      claimed.push(...(await store.claimDue({ queue, nowMs: 2_000, claimTokens: Array.from({ length: claimBatch }, (_, n) => `t-${round}-${n}`) })))
    }
    expect(claimed).toHaveLength(jobs)
    const afterClaims = await entriesByIndex()
    expect(growth(beforeClaims, afterClaims)).toEqual({
      jobs_by_queue: 0,
      jobs_expiring: 0,
      jobs_live_key: 0,
      jobs_pending_by_id: 0,
      jobs_pending_due: 0,
      jobs_pending_head: 0,
      jobs_pkey: jobs,
      jobs_processing: jobs,
    })
    expect(await store.ackMany({ claims: claimed.map((row) => ({ id: row.id, claimToken: row.claimToken as string })), nowMs: 2_001 })).toHaveLength(jobs)
    expect(growth(afterClaims, await entriesByIndex())).toEqual(Object.fromEntries(Object.keys(afterClaims).map((index) => [index, 0])))
  }

  it('the claim head, of one row and of 64, reads the pending head and the processing index', async () => {
    // A backlog large enough that reading the table would cost more than its indexes (on a table
    // of a few thousand rows the planner rightly reads it all: that is cheap there).
    for (let page = 0; page < 8; page++) await store.enqueueMany({ jobs: Array.from({ length: 1_000 }, (_, n) => job(1_000 + page * 1_000 + n)), nowMs: 1_000 })
    await pool.query('ANALYZE matchbox.jobs')
    const client = await pool.connect()
    try {
      // A generic plan, as a warmed-up prepared statement runs.
      await client.query("SET plan_cache_mode = 'force_generic_plan'")
      for (const headCount of [1, 64]) {
        await client.query(`PREPARE head_${headCount} (text, text[], bigint) AS ${claimDueSql(makeSchema('matchbox'), headCount)}`)
        const tokens = `ARRAY[${Array.from({ length: headCount }, (_, n) => `'t${n}'`).join(', ')}]`
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE head_${headCount}('claim-indexes', ${tokens}, 3000)`)
        const plan = rows.map((row) => row['QUERY PLAN']).join('\n')
        expect(plan, `${headCount}`).toMatch(/Scan using jobs_pending_head on jobs/)
        expect(plan, `${headCount}`).toMatch(/Scan (using|on) jobs_processing/)
        expect(plan, `${headCount}`).toMatch(/Scan (using|on) jobs_pkey/)
        expect(plan, `${headCount}`).not.toMatch(/Seq Scan on jobs|jobs_pending_due/)
      }
      // The lean riding claims: the pending head, and the probe of the rows with Matching and the lapsed claims by their indexes.
      for (const headCount of [1, 64]) {
        const name = `lean_${headCount}`
        await client.query(`PREPARE ${name} (text, text[], bigint, text, text) AS ${ackAndClaimDueSql(makeSchema('matchbox'), headCount, true, false, 'keyless', 'lean')}`)
        const tokens = `ARRAY[${Array.from({ length: headCount }, (_, n) => `'t${n}'`).join(', ')}]`
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE ${name}('claim-indexes', ${tokens}, 3000, 'ix-1000', 'none')`)
        const plan = rows.map((row) => row['QUERY PLAN']).join('\n')
        expect(plan, name).toMatch(/Scan using jobs_pending_head on jobs/)
        expect(plan, name).toMatch(/Scan (using|on) jobs_processing/)
        expect(plan, name).toMatch(/Scan (using|on) jobs_by_queue /)
        expect(plan, name).not.toMatch(/Seq Scan on jobs|jobs_pending_due/)
      }
    } finally {
      await client.query('RESET plan_cache_mode').catch(() => {})
      client.release()
    }
  })

  it('an ack, a batch of acks, an ack riding on a claim and a heartbeat find their rows by primary key', async () => {
    // Statistics taken over a backlog with few claims in flight (as the store's own refresh after
    // an enqueue takes them), then many claims in flight, as a busy queue has them.
    for (let page = 0; page < 4; page++) await store.enqueueMany({ jobs: Array.from({ length: 1_000 }, (_, n) => job(20_000 + page * 1_000 + n)), nowMs: 1_000 })
    await pool.query('ANALYZE matchbox.jobs')
    for (let round = 0; round < 40; round++) await store.claimDue({ queue, nowMs: 2_000, claimTokens: Array.from({ length: 64 }, (_, n) => `held-${round}-${n}`) })
    const schema = makeSchema('matchbox')
    const statements: ReadonlyArray<readonly [string, string, string, string]> = [
      ['ack', ackSql(schema), '(text, text, bigint)', "('ix-20000', 'held-0-0', 3000)"],
      ['heartbeat', heartbeatSql(schema), '(text, text, bigint, bigint)', "('ix-20000', 'held-0-0', 3000, NULL)"],
      ['ackMany', ackBatchSql(schema), '(text[], text[], bigint)', "(ARRAY['ix-20000', 'ix-20001'], ARRAY['held-0-0', 'held-0-1'], 3000)"],
      ['ackAndClaimOne', ackAndClaimDueSql(schema, 1, true), '(text, text[], bigint, text, text)', "('claim-indexes', ARRAY['t'], 3000, 'ix-20000', 'held-0-0')"],
      ['ackAndClaimMany', ackAndClaimDueSql(schema, 16, false), '(text, text[], bigint, text[], text[])', "('claim-indexes', ARRAY['t'], 3000, ARRAY['ix-20000'], ARRAY['held-0-0'])"],
      ['ackAndClaimOneLean', ackAndClaimDueSql(schema, 1, true, false, 'keyless', 'lean'), '(text, text[], bigint, text, text)', "('claim-indexes', ARRAY['t'], 3000, 'ix-20000', 'held-0-0')"],
      ['ackAndClaimManyLean', ackAndClaimDueSql(schema, 16, false, false, 'admit', 'lean'), '(text, text[], bigint, text[], text[])', "('claim-indexes', ARRAY['t'], 3000, ARRAY['ix-20000'], ARRAY['held-0-0'])"],
    ]
    const client = await pool.connect()
    try {
      await client.query("SET plan_cache_mode = 'force_generic_plan'")
      for (const [name, text, types, values] of statements) {
        await client.query(`PREPARE ${name} ${types} AS ${text}`)
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE ${name}${values}`)
        const lines = rows.map((row) => row['QUERY PLAN'])
        // The write of the named rows: the whole plan, or the acks' CTE of a combined statement.
        const start = lines.findIndex((line) => /CTE acked/.test(line))
        const end = start < 0 ? lines.length : lines.findIndex((line, index) => index > start && /^ {2}CTE /.test(line))
        const own = lines.slice(Math.max(0, start), end < 0 ? lines.length : end).join('\n')
        expect(own, name).toMatch(/Scan using jobs_pkey on jobs/)
        expect(own, name).not.toMatch(/jobs_processing|Seq Scan on jobs/)
      }
    } finally {
      await client.query('RESET plan_cache_mode').catch(() => {})
      client.release()
    }
  })
})
