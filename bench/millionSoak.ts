/**
 * Million-job soak — `npx tsx bench/millionSoak.ts [--jobs 1000000] [--rate 10000] [--mode stream|backlog] [--durable]`.
 *
 * Does a queue decay as a million jobs pass through it? One engine on a fresh PostgreSQL database
 * (bench/BenchDatabase.ts: DATABASE_URL's server, else a throwaway cluster with fsync off, or on
 * with `--durable`), one queue, 16 no-op workers (`work({ concurrency: 16 })`).
 *
 * - `stream` (default): a producer enqueues up to `--rate` jobs a second in batches of 100
 *   (`enqueueMany`) while the workers drain, until `--jobs` have been enqueued; the producer
 *   waits while more than 50,000 are pending, so the table's live size stays bounded and what
 *   grows, if anything, is dead tuples and index bloat. The default rate is above what 16
 *   workers drain here, so the workers stay saturated and the figure is their capacity.
 * - `backlog`: `--jobs` jobs are enqueued first (batches of 500), then drained.
 *
 * For every tenth of the jobs it prints the workers' throughput over that tenth, the jobs
 * table's and its indexes' sizes, its dead tuples and how often autovacuum ran on it, the engine's
 * RSS and heap after a GC, and the share of the machine's CPU other processes used then
 * (bench/CpuWatch.ts: a tenth measured while others used more than a quarter of a core is
 * flagged busy). At the end: the last tenth's throughput over the first's (≥ 0.90 is no decay).
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import pg from 'pg'
import { open } from '../src/index.ts'
import { openBenchDatabase } from './BenchDatabase.ts'
import { makeCpuWatch, postmasterPidOf } from './CpuWatch.ts'
import { wholeNumberFlag } from './Flags.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const total = wholeNumberFlag('jobs', 1_000_000)
const rate = wholeNumberFlag('rate', 10_000)
const modeAt = process.argv.indexOf('--mode')
const mode = modeAt >= 0 ? process.argv[modeAt + 1] : 'stream'
if (mode !== 'stream' && mode !== 'backlog') throw new Error('--mode takes stream or backlog')
const pendingMax = 50_000
const tenth = Math.ceil(total / 10)
const mb = (bytes: number): string => `${(bytes / 1_048_576).toFixed(1)} MB`

interface TableStats {
  readonly table: number
  readonly indexes: number
  readonly dead: number
  readonly autovacuums: number
}

async function tableStats(client: pg.Client, schema: string): Promise<TableStats> {
  const { rows } = await client.query<{ table: string; indexes: string; dead: string | null; autovacuums: string | null }>(
    `SELECT pg_table_size(c.oid) AS table, pg_indexes_size(c.oid) AS indexes, s.n_dead_tup AS dead, s.autovacuum_count AS autovacuums
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
     WHERE n.nspname = $1 AND c.relname = 'jobs'`,
    [schema],
  )
  const row = rows[0]
  return { table: Number(row?.table), indexes: Number(row?.indexes), dead: Number(row?.dead ?? 0), autovacuums: Number(row?.autovacuums ?? 0) }
}

const durable = process.argv.includes('--durable')
const database = await openBenchDatabase('soak', { durable })
const schema = 'soak'
const stats = new pg.Client({ connectionString: database.url })
await stats.connect()
const cpu = makeCpuWatch([postmasterPidOf(database.url)].filter((pid): pid is number => pid !== null))
try {
  const engine = await open({ store: { databaseUrl: database.url }, schema })
  const queue = engine.queue<{ n: number }>('soak')
  console.log(`million-job soak: node ${process.version}, PostgreSQL, ${total.toLocaleString('en-US')} jobs, ${durable ? 'durable profile (fsync on), ' : ''}mode ${mode}${mode === 'stream' ? `, ${rate}/s offered` : ''}, 16 workers`)

  let enqueued = 0
  const enqueueBatch = async (size: number): Promise<void> => {
    const count = Math.min(size, total - enqueued)
    const first = enqueued
    enqueued += count
    await queue.enqueueMany(Array.from({ length: count }, (_, i) => ({ payload: { n: first + i } })))
  }
  if (mode === 'backlog') while (enqueued < total) await enqueueBatch(500)

  let started = 0
  const tenths: number[] = []
  let tenthBegan = Date.now()
  let cpuBegan = cpu.sample()
  let report: Promise<void> = Promise.resolve()
  let finish: () => void = () => {}
  const done = new Promise<void>((resolve) => {
    finish = resolve
  })
  // One line per tenth, read after the tenth's figure was taken (the reads do not slow the tenth).
  const reportTenth = (index: number, jobsPerS: number, busy: boolean): void => {
    report = report.then(async () => {
      gc()
      const memory = process.memoryUsage()
      const table = await tableStats(stats, schema)
      console.log(
        `  tenth ${String(index).padStart(2)}: ${Math.round(jobsPerS).toLocaleString('en-US').padStart(6)} jobs/s${busy ? ' (busy)' : ''} · jobs table ${mb(table.table)}, indexes ${mb(table.indexes)}, ` +
          `${table.dead.toLocaleString('en-US')} dead tuples, autovacuum ×${table.autovacuums} · RSS ${mb(memory.rss)}, heap ${mb(memory.heapUsed)}`,
      )
    })
  }
  const stop = queue.work(
    async () => {
      started++
      if (started % tenth === 0 || started === total) {
        const now = Date.now()
        const jobsPerS = ((started - tenths.length * tenth) / Math.max(now - tenthBegan, 1)) * 1000
        const share = cpu.share(cpuBegan, cpu.sample())
        tenths.push(jobsPerS)
        reportTenth(tenths.length, jobsPerS, share.othersCores > 0.25)
        tenthBegan = now
        cpuBegan = cpu.sample()
      }
      if (started >= total) finish()
    },
    { concurrency: 16 },
  )
  if (mode === 'stream') {
    const began = Date.now()
    while (enqueued < total) {
      const due = Math.floor(((Date.now() - began) / 1000) * rate)
      // Enqueued but not started: what waits, counted here rather than by a query per batch.
      if (enqueued < due && enqueued - started < pendingMax) await enqueueBatch(100)
      else await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }
  await done
  await stop()
  await report
  const first = tenths[0] ?? Number.NaN
  const last = tenths.at(-1) ?? Number.NaN
  console.log(`last tenth ÷ first: ${(last / first).toFixed(2)} (${Math.round(last)} against ${Math.round(first)} jobs/s; 0.90 or more is no decay)`)
  await engine.close()
} finally {
  await stats.end()
  await database.drop()
}
