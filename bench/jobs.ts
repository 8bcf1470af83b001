/**
 * Jobs bench — `npx tsx bench/jobs.ts [--batch [--jobs N]]`.
 *
 * For each store (memory, embedded PGlite, postgres), through the public API on the real clock:
 * - throughput: jobs/s for the whole cycle enqueue → claim → ack — a producer enqueues while
 *   `work` (concurrency 16, handler does nothing) claims and acks, for a fixed time, then drains;
 *   counted over acked jobs;
 * - latency: enqueue → handler start, p50 and p99, with one job in flight at a time (the next is
 *   enqueued when the handler of the previous one starts), so it measures the delivery path
 *   (due-time driver → Matching → History claim → poll), not queueing.
 *
 * With `--batch`, instead: the batch APIs against their one-at-a-time forms, per store, on a
 * backlog of N jobs (default 2,000): enqueue jobs/s with 16 `enqueue` calls in flight vs
 * `enqueueMany` of 64; drain jobs/s of `work({ concurrency: 16 })` vs `work({ concurrency: 16,
 * batch: 64 })` with empty handlers, and of `concurrency: 1` vs `concurrency: 1, batch: 16` with
 * 2 ms handlers (on N / 4 jobs). Two rounds; each line shows both.
 *
 * PostgreSQL: DATABASE_URL if set (a schema `matchbox_bench_jobs`, dropped first), else a
 * throwaway cluster from test/harness/PostgresCluster.ts. Every phase is bounded by time, so the
 * whole bench stays within a minute. Numbers compare stores on one machine; they are not claims.
 */
import pg from 'pg'
import { type JobQueue, type Matchbox, open, type StoreOption } from '../src/index.ts'
import { type RunningCluster, startCluster } from '../test/harness/PostgresCluster.ts'

const throughputMs = 5_000
const latencyMs = 3_000
const latencySamplesMax = 500
const drainMs = 10_000

const percentile = (sorted: ReadonlyArray<number>, p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN

async function throughput(mb: Matchbox): Promise<{ jobsPerS: number; acked: number }> {
  const queue = mb.queue('bench-throughput')
  let acked = 0
  const stop = queue.work(
    async () => {
      acked++
    },
    { concurrency: 16 },
  )
  const started = performance.now()
  let enqueued = 0
  // Keep a bounded backlog ahead of the workers, so the cycle is measured rather than the inserts.
  while (performance.now() - started < throughputMs) {
    if (enqueued - acked < 200) {
      await Promise.all(Array.from({ length: 20 }, () => queue.enqueue({ n: enqueued++ })))
    } else {
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
  const drainStart = performance.now()
  while (acked < enqueued && performance.now() - drainStart < drainMs) await new Promise((resolve) => setTimeout(resolve, 5))
  const elapsedS = (performance.now() - started) / 1000
  await stop()
  return { jobsPerS: acked / elapsedS, acked }
}

async function latency(mb: Matchbox): Promise<{ p50: number; p99: number; samples: number }> {
  const queue: JobQueue = mb.queue('bench-latency')
  const enqueuedAt = new Map<number, number>()
  const samples: number[] = []
  let next: (() => void) | null = null
  const stop = queue.work(
    async (job) => {
      const n = (job.payload as { n: number }).n
      samples.push(performance.now() - (enqueuedAt.get(n) ?? Number.NaN))
      next?.()
    },
    { concurrency: 4 },
  )
  const started = performance.now()
  for (let n = 0; n < latencySamplesMax && performance.now() - started < latencyMs; n++) {
    const started = new Promise<void>((resolve) => {
      next = resolve
    })
    enqueuedAt.set(n, performance.now())
    await queue.enqueue({ n })
    await Promise.race([started, new Promise((resolve) => setTimeout(resolve, 2_000))])
  }
  await stop()
  const sorted = [...samples].sort((a, b) => a - b)
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), samples: sorted.length }
}

const batchSize = 64
const batchJobsArgument = process.argv.indexOf('--jobs')
const batchJobs = batchJobsArgument < 0 ? 2_000 : Number(process.argv[batchJobsArgument + 1])
if (!Number.isSafeInteger(batchJobs) || batchJobs < 1) throw new Error('--jobs takes a positive integer')

// Enqueues `batchJobs` jobs into `queue`, one by one (16 in flight) or in enqueueMany batches; jobs/s.
async function enqueueRate(queue: JobQueue, many: boolean): Promise<number> {
  const started = performance.now()
  const width = many ? batchSize : 16
  for (let first = 0; first < batchJobs; first += width) {
    const numbers = Array.from({ length: Math.min(width, batchJobs - first) }, (_, index) => first + index)
    if (many) await queue.enqueueMany(numbers.map((n) => ({ payload: { n } })))
    else await Promise.all(numbers.map((n) => queue.enqueue({ n })))
  }
  return batchJobs / ((performance.now() - started) / 1000)
}

// Drains `jobs` jobs of the queue's backlog with `work`, each handler taking `handlerMs`; jobs/s
// from start to the last handler.
async function drainRate(queue: JobQueue, jobs: number, options: { readonly concurrency: number; readonly batch?: number }, handlerMs: number): Promise<number> {
  let handled = 0
  const started = performance.now()
  const stop = queue.work(async () => {
    if (handlerMs > 0) await new Promise((resolve) => setTimeout(resolve, handlerMs))
    handled++
  }, options)
  while (handled < jobs && performance.now() - started < 60_000) await new Promise((resolve) => setTimeout(resolve, 2))
  const elapsedS = (performance.now() - started) / 1000
  await stop()
  return handled / elapsedS
}

// The drains compared: [label, options, handler ms, share of the backlog].
const drains = [
  ['work({ concurrency: 16 })', { concurrency: 16 }, 0, 1],
  [`work({ concurrency: 16, batch: ${batchSize} })`, { concurrency: 16, batch: batchSize }, 0, 1],
  ['work({ concurrency: 1 }), 2 ms handlers', { concurrency: 1 }, 2, 4],
  ['work({ concurrency: 1, batch: 16 }), 2 ms handlers', { concurrency: 1, batch: 16 }, 2, 4],
] as const

async function benchBatches(label: string, store: StoreOption, schema?: string): Promise<void> {
  const mb = await open({ store, ...(schema === undefined ? {} : { schema }) })
  const rates = new Map<string, number[]>()
  const record = (what: string, rate: number): void => {
    rates.set(what, [...(rates.get(what) ?? []), rate])
  }
  try {
    for (let round = 0; round < 2; round++) {
      for (const many of [false, true]) record(many ? `enqueueMany(${batchSize})` : 'enqueue, 16 in flight', await enqueueRate(mb.queue(`bench-enqueue-${round}-${many}`), many))
      for (const [what, options, handlerMs, share] of drains) {
        const queue = mb.queue(`bench-drain-${round}-${what.replaceAll(/[^a-z0-9]/gi, '')}`)
        const jobs = Math.ceil(batchJobs / share)
        for (let first = 0; first < jobs; first += batchSize) await queue.enqueueMany(Array.from({ length: Math.min(batchSize, jobs - first) }, (_, n) => ({ payload: { n: first + n } })))
        record(what, await drainRate(queue, jobs, options, handlerMs))
      }
    }
  } finally {
    await mb.close()
  }
  for (const [what, values] of rates) console.log(`${label.padEnd(10)} ${what.padEnd(52)} ${values.map((value) => value.toFixed(0).padStart(6)).join(' ·')} jobs/s`)
}

async function bench(label: string, store: StoreOption, schema?: string): Promise<void> {
  if (process.argv.includes('--batch')) return benchBatches(label, store, schema)
  const mb = await open({ store, ...(schema === undefined ? {} : { schema }) })
  try {
    const { jobsPerS, acked } = await throughput(mb)
    const { p50, p99, samples } = await latency(mb)
    console.log(
      `${label.padEnd(10)} ${jobsPerS.toFixed(0).padStart(7)} jobs/s (enqueue→claim→ack, ${acked} jobs)   enqueue→handler start p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms (${samples} samples)`,
    )
  } finally {
    await mb.close()
  }
}

let cluster: RunningCluster | undefined
try {
  console.log(
    process.argv.includes('--batch')
      ? `jobs bench --batch: node ${process.version}, ${batchJobs} jobs per enqueue and drain, two rounds per store`
      : `jobs bench: node ${process.version}, ${throughputMs / 1000} s throughput + ≤ ${latencyMs / 1000} s latency per store`,
  )
  await bench('memory', 'memory')
  await bench('embedded', 'embedded')
  let databaseUrl = process.env.DATABASE_URL
  const schema = 'matchbox_bench_jobs'
  if (databaseUrl === undefined || databaseUrl === '') {
    cluster = startCluster()
    databaseUrl = cluster.url
  } else {
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await client.end()
  }
  await bench('postgres', { databaseUrl }, schema)
} finally {
  cluster?.stop()
}
