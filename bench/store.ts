/**
 * Store bench — `npx tsx bench/store.ts`.
 *
 * For each store (memory, embedded PGlite, postgres) measures, from one sequential caller:
 * appends/s with batches of 1 and of 100 tasks, and checkpoints/s (each advancing the ack level
 * by one and deleting one row). For the two SQL stores it also prices the fence: the fenced
 * append statement (range-checked UPDATE of the queue row + INSERT … SELECT, one round trip)
 * against a plain unfenced INSERT of the same rows, alternated in rounds on one connection.
 *
 * PostgreSQL: DATABASE_URL if set (tables go to schema `matchbox_bench`, dropped first), else a
 * throwaway cluster from test/harness/PostgresCluster.ts. Every measurement runs for a fixed
 * time, so the whole bench is bounded (≈ 40 s on 2 cores). Numbers are for comparison between
 * stores on one machine, not absolute claims.
 */
import pg from 'pg'
import type { QueueKey } from '../src/domain/QueueKey.ts'
import { encodeQueueKey } from '../src/domain/QueueKey.ts'
import { makeTask, type Task } from '../src/domain/Task.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import type { Driver } from '../src/persistence/sql/Driver.ts'
import { openSqlStore } from '../src/persistence/queues/sql/openSqlStore.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { makePgliteDriver } from '../src/persistence/sql/PgliteDriver.ts'
import { makeSchema, type Schema } from '../src/persistence/sql/Schema.ts'
import { appendSql, unfencedInsertSql } from '../src/persistence/queues/sql/taskSql.ts'
import type { Store } from '../src/persistence/queues/Store.ts'
import { type RunningCluster, startCluster } from '../test/harness/PostgresCluster.ts'

const measureMs = 1_500
const ratioRounds = 4
const ratioRoundMs = 250

const batches = new Map<number, Task[]>(
  [1, 100].map((size) => [size, Array.from({ length: size }, (_, index) => makeTask({ jobId: `bench-${index}`, createdAtMs: 1, kind: 'job' }))]),
)
let keyCounter = 0
const freshKey = (): QueueKey => ({ namespace: 'bench', family: `f${++keyCounter}`, type: 'workflow', partition: 0, version: null })

/** Runs `step` repeatedly for `ms`; returns operations per second. */
async function rate(ms: number, step: () => Promise<unknown>): Promise<number> {
  const start = performance.now()
  let count = 0
  while (performance.now() - start < ms) {
    await step()
    count++
  }
  return (count * 1000) / (performance.now() - start)
}

async function appendRate(store: Store, size: number): Promise<number> {
  const key = freshKey()
  const { rangeId } = await store.acquire({ key, nowMs: 1 })
  const tasks = batches.get(size) as Task[]
  return rate(measureMs, () => store.append({ key, rangeId, tasks, nowMs: 1 }))
}

async function checkpointRate(store: Store): Promise<number> {
  const key = freshKey()
  const { rangeId } = await store.acquire({ key, nowMs: 1 })
  const tasks = batches.get(100) as Task[]
  let lastTaskId = 0
  let ackLevel = 0
  return rate(measureMs, async () => {
    // Refill outside the hot path only when the backlog runs dry (rarely: 1 in 100 steps).
    if (ackLevel === lastTaskId) lastTaskId = (await store.append({ key, rangeId, tasks, nowMs: 1 })).lastTaskId
    await store.checkpoint({ key, rangeId, ackLevels: [{ subqueue: 0, ackLevel: ++ackLevel }], nowMs: 1 })
  })
}

/**
 * Fenced append statement time ÷ plain INSERT time for the same rows, alternated in rounds on
 * one connection. Both go straight to the driver with the same pre-serialized JSON, so the
 * ratio prices the fence (the range-checked UPDATE of the queue row) and nothing else.
 */
async function fenceRatio(store: Store, driver: Driver, schema: Schema, size: number): Promise<{ fenced: number; plain: number; ratio: number }> {
  const fencedKey = freshKey()
  const plainKey = freshKey()
  const { rangeId } = await store.acquire({ key: fencedKey, nowMs: 1 })
  await store.acquire({ key: plainKey, nowMs: 1 })
  const json = JSON.stringify(batches.get(size))
  const append = appendSql(schema)
  const insert = unfencedInsertSql(schema)
  let nextId = 0
  let fenced = 0
  let plain = 0
  for (let round = 0; round < ratioRounds; round++) {
    fenced += await rate(ratioRoundMs, () => driver.query(append, [encodeQueueKey(fencedKey), rangeId, size, json]))
    plain += await rate(ratioRoundMs, async () => {
      await driver.query(insert, [encodeQueueKey(plainKey), nextId, json])
      nextId += size
    })
  }
  return { fenced: fenced / ratioRounds, plain: plain / ratioRounds, ratio: plain / fenced }
}

interface Row {
  store: string
  append1: number
  append100: number
  checkpoint: number
  ratio1?: string
  ratio100?: string
}

async function benchStore(name: string, store: Store, sql?: { driver: Driver; schema: Schema }): Promise<Row> {
  const row: Row = { store: name, append1: await appendRate(store, 1), append100: await appendRate(store, 100), checkpoint: await checkpointRate(store) }
  if (sql !== undefined) {
    const one = await fenceRatio(store, sql.driver, sql.schema, 1)
    const hundred = await fenceRatio(store, sql.driver, sql.schema, 100)
    row.ratio1 = `${one.ratio.toFixed(2)}× (${Math.round(one.fenced)} vs ${Math.round(one.plain)}/s)`
    row.ratio100 = `${hundred.ratio.toFixed(2)}× (${Math.round(hundred.fenced)} vs ${Math.round(hundred.plain)}/s)`
  }
  return row
}

const rows: Row[] = []
const notes: string[] = []
const started = performance.now()

const memory = makeMemoryStore()
rows.push(await benchStore('memory', memory))
await memory.close()

const schema = makeSchema('matchbox_bench')
const embeddedDriver = await makePgliteDriver()
const embedded = await openSqlStore(embeddedDriver, { schema: schema.name })
rows.push(await benchStore('embedded (PGlite, in memory)', embedded, { driver: embeddedDriver, schema }))
await embedded.close()

let cluster: RunningCluster | undefined
const fromEnv = process.env.DATABASE_URL
const url = fromEnv !== undefined && fromEnv !== '' ? fromEnv : (cluster = startCluster()).url
notes.push(cluster === undefined ? 'postgres: DATABASE_URL' : 'postgres: throwaway PostgreSQL cluster (fsync=off, synchronous_commit=off, Unix socket)')
try {
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query(`DROP SCHEMA IF EXISTS ${schema.quoted} CASCADE`)
  await admin.end()
  // One connection, so the fenced append and the plain INSERT share it.
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  const postgresDriver = makePgDriver({ pool })
  const postgres = await openSqlStore(postgresDriver, { schema: schema.name })
  rows.push(await benchStore('postgres (pg Pool, 1 connection)', postgres, { driver: postgresDriver, schema }))
  await postgres.close()
  await pool.end()
} finally {
  cluster?.stop()
}

const format = (value: number) => Math.round(value).toLocaleString('en-US')
const header = ['store', 'appends/s (1 task)', 'appends/s (100 tasks)', 'tasks/s (100-task appends)', 'checkpoints/s', 'fenced÷plain, 1 task', 'fenced÷plain, 100 tasks']
const table = rows.map((row) => [
  row.store,
  format(row.append1),
  format(row.append100),
  format(row.append100 * 100),
  format(row.checkpoint),
  row.ratio1 ?? '—',
  row.ratio100 ?? '—',
])
const widths = header.map((title, column) => Math.max(title.length, ...table.map((line) => (line[column] as string).length)))
const line = (cells: string[]) => `| ${cells.map((cell, column) => cell.padEnd(widths[column] as number)).join(' | ')} |`
console.log(line(header))
console.log(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`)
for (const cells of table) console.log(line(cells))
console.log('')
console.log('appends/s and checkpoints/s: Store calls (validation, JSON, SQL, decoding) from one sequential caller.')
console.log('fenced÷plain: time of the fenced append statement over a plain INSERT … SELECT of the same rows, both sent')
console.log('straight to the driver on the same connection, alternated in rounds; in brackets, statements per second.')
for (const note of notes) console.log(note)
console.log(`total ${((performance.now() - started) / 1000).toFixed(1)} s`)
