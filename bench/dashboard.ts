/**
 * Dashboard bench — `npx tsx bench/dashboard.ts [--rows N]`: page times of the dashboard on a
 * queue of 1,000,000 jobs (default) on PostgreSQL.
 *
 * It starts a throwaway cluster (or uses DATABASE_URL, in a schema `matchbox_bench_dashboard`
 * dropped first), migrates it through `open`, inserts N pending jobs into queue `big` (plus N/10
 * dead ones) with one `generate_series` statement each, ANALYZEs, and serves the dashboard on
 * `node:http` over a producer engine (it owns no partition, so nothing delivers the backlog).
 * Then, through HTTP as a browser asks, p50/p95/max over 100 requests each of: the queues page,
 * the jobs list's first page, a deep keyset page (900,000 jobs back), a search by id and by key,
 * and the dead list's first page. Times include SQL, rendering and the local HTTP round trip.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import pg from 'pg'
import { dashboardHandler } from '../src/dashboard/DashboardHandler.ts'
import { open } from '../src/index.ts'
import { type RunningCluster, startCluster } from '../test/harness/PostgresCluster.ts'

const rowsArg = process.argv.indexOf('--rows')
const rows = rowsArg === -1 ? 1_000_000 : Number(process.argv[rowsArg + 1])
const requests = 100
const goalP95Ms = 50
const schemaName = 'matchbox_bench_dashboard'

// Ids as the engine makes them: 9 base-36 characters of the millisecond, then 15 more, so id order is age order.
const idOf = (series: string, msExpr: string) => `lpad(to_char(${msExpr}, 'FM999999999999999'), 15, '0') || '${series}' || lpad(i::text, 9, '0')`

async function seed(pool: pg.Pool, s: string): Promise<void> {
  const start = 1_700_000_000_000
  const began = performance.now()
  await pool.query(`INSERT INTO ${s}.jobs (id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, created_at_ms, run_at_ms, due_ms, job_key)
SELECT ${idOf('p', `${start} + i`)}, 'big', 'pending', jsonb_build_object('n', i, 'to', 'user' || i || '@example.com'), (i % 3)::smallint, 0, 3, 300000, 5000, ${start} + i, ${start} + i, ${start} + i, 'key-' || i
FROM generate_series(1, $1::integer) AS i`, [rows])
  await pool.query(`INSERT INTO ${s}.dead_jobs (id, queue, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, created_at_ms, run_at_ms, last_error, died_at_ms, last_handler_error)
SELECT ${idOf('d', `${start} + i`)}, 'big', jsonb_build_object('n', i), 0, 3, 3, 300000, 5000, ${start} + i, ${start} + i, 'max attempts exceeded', ${start} + i + 1000, 'connection refused'
FROM generate_series(1, $1::integer) AS i`, [Math.floor(rows / 10)])
  await pool.query(`ANALYZE ${s}.jobs`)
  await pool.query(`ANALYZE ${s}.dead_jobs`)
  console.log(`seeded ${rows.toLocaleString('en-US')} pending + ${Math.floor(rows / 10).toLocaleString('en-US')} dead jobs in ${((performance.now() - began) / 1000).toFixed(1)} s`)
}

function percentile(sorted: ReadonlyArray<number>, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}

async function measure(label: string, url: string, expectStatus: number): Promise<boolean> {
  const times: number[] = []
  for (let i = 0; i < requests + 5; i++) {
    const began = performance.now()
    const response = await fetch(url, { redirect: 'manual' })
    await response.arrayBuffer()
    if (response.status !== expectStatus) throw new Error(`${label}: ${url} answered ${response.status}`)
    if (i >= 5) times.push(performance.now() - began)
  }
  times.sort((a, b) => a - b)
  const p95 = percentile(times, 95)
  console.log(`${label.padEnd(28)} p50 ${percentile(times, 50).toFixed(1).padStart(6)} ms   p95 ${p95.toFixed(1).padStart(6)} ms   max ${(times.at(-1) ?? 0).toFixed(1).padStart(6)} ms${p95 <= goalP95Ms ? '' : '   ABOVE GOAL'}`)
  return p95 <= goalP95Ms
}

async function main(): Promise<void> {
  let cluster: RunningCluster | undefined
  const given = process.env.DATABASE_URL
  const databaseUrl = given !== undefined && given !== '' ? given : (cluster = startCluster()).url
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 })
  try {
    await pool.query(`DROP SCHEMA IF EXISTS ${schemaName} CASCADE`)
    const migrate = await open({ store: { databaseUrl }, schema: schemaName, role: 'producer' })
    await migrate.close()
    await seed(pool, schemaName)
    const mb = await open({ store: { databaseUrl }, schema: schemaName, role: 'producer' })
    const server = http.createServer(dashboardHandler(mb))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const deep = (await pool.query<{ id: string }>(`SELECT id FROM ${schemaName}.jobs WHERE queue = 'big' AND state = 'pending' ORDER BY id DESC OFFSET $1 LIMIT 1`, [Math.floor(rows * 0.9)])).rows[0]?.id
    const middle = (await pool.query<{ id: string }>(`SELECT id FROM ${schemaName}.jobs WHERE job_key = $1`, [`key-${Math.floor(rows / 2)}`])).rows[0]?.id
    if (deep === undefined || middle === undefined) throw new Error('seeding left no rows to page to')
    const results = [
      await measure('queues page', `${base}/`, 200),
      await measure('jobs list, first page', `${base}/queues/big?state=pending`, 200),
      await measure(`jobs list, ${Math.floor(rows * 0.9).toLocaleString('en-US')} back`, `${base}/queues/big?state=pending&before=${encodeURIComponent(deep)}`, 200),
      await measure('search by id', `${base}/search?q=${encodeURIComponent(middle)}`, 303),
      await measure('search by key', `${base}/search?q=key-${Math.floor(rows / 2)}&queue=big`, 303),
      await measure('dead list, first page', `${base}/queues/big?state=dead`, 200),
    ]
    console.log(results.every(Boolean) ? `every p95 within ${goalP95Ms} ms` : `some p95 above ${goalP95Ms} ms`)
    await new Promise<void>((resolve) => server.close(() => resolve()))
    await mb.close()
    await pool.query(`DROP SCHEMA IF EXISTS ${schemaName} CASCADE`)
  } finally {
    await pool.end()
    cluster?.stop()
  }
}

await main()
