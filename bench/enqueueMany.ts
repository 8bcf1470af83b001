/**
 * enqueueMany bench — `npx tsx bench/enqueueMany.ts [--against REV] [--rounds N] [--jobs N] [--batch N]`.
 *
 * What `queue.enqueueMany` costs through the whole engine, beside the same call of an earlier
 * build (Baseline.ts: `--against REV`, default HEAD~1) measured in the same run, so a change to
 * the engine's enqueue path shows as a ratio even on a busy machine. Each turn is the peers
 * bench's enqueue-batch step (peers.ts) for one build: a fresh engine opened as a producer on a
 * pool of its own, a fresh queue, `jobs` jobs (default 10,000) enqueued in batches of `batch`
 * (default 64) by one caller awaiting each batch, timed from the first call to the last answer;
 * then the queue's rows are deleted and the engine closed. Each build has its own schema on one
 * throwaway database. The builds take turns in ABBA order, `rounds` turns each (default 12).
 *
 * Printed: each build's median jobs/s and this process's CPU per job over its turns (Node's
 * side only: the server's is not measured here), and the median, lowest and highest of the
 * per-round ratios (this build's jobs/s over the baseline's in the same round).
 *
 * PostgreSQL: DATABASE_URL if set (a fresh database on it), else a throwaway cluster
 * (BenchDatabase.ts). Both builds load from their compiled dist/ (built.ts, Baseline.ts).
 */
import pg from 'pg'
import type * as Index from '../src/index.ts'
import { type Baseline, prepareBaseline } from './Baseline.ts'
import { openBenchDatabase } from './BenchDatabase.ts'
import { loadBuilt } from './built.ts'
import { wholeNumberFlag } from './Flags.ts'

const rounds = wholeNumberFlag('rounds', 12)
const jobs = wholeNumberFlag('jobs', 10_000)
const batch = wholeNumberFlag('batch', 64)
const againstAt = process.argv.indexOf('--against')
const against = againstAt >= 0 ? (process.argv[againstAt + 1] ?? 'HEAD~1') : 'HEAD~1'
// The peers bench's pool bound per library (peers.ts `poolMax`).
const poolMax = 18

interface Side {
  readonly name: string
  readonly open: typeof Index.open
  readonly schema: string
  readonly rates: number[]
  readonly cpuPerJobUs: number[]
}

// One turn: a fresh producer engine enqueues `jobs` jobs into a fresh queue, one batch at a time.
async function turn(side: Side, url: string, round: number): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: poolMax })
  pool.on('error', () => {})
  const mb = await side.open({ store: { pool }, role: 'producer', schema: side.schema })
  const queueName = `enqueue-many-${round}`
  try {
    const queue = mb.queue(queueName)
    const cpuBefore = process.cpuUsage()
    const began = performance.now()
    for (let at = 0; at < jobs; at += batch) {
      await queue.enqueueMany(Array.from({ length: Math.min(batch, jobs - at) }, (_, i) => ({ payload: { n: at + i } })))
    }
    const elapsedMs = performance.now() - began
    const cpu = process.cpuUsage(cpuBefore)
    const rate = (jobs * 1000) / elapsedMs
    side.rates.push(rate)
    side.cpuPerJobUs.push((cpu.user + cpu.system) / jobs)
    return rate
  } finally {
    await mb.close()
    await pool.query(`DELETE FROM ${side.schema}.jobs WHERE queue = $1`, [queueName])
    await pool.end()
  }
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

const database = await openBenchDatabase('enqueue_many')
let baseline: Baseline | null = null
try {
  baseline = prepareBaseline(against)
  const now: Side = { name: 'this build', open: (await loadBuilt<typeof Index>('src/index.ts')).open, schema: 'bench_enqueue_current', rates: [], cpuPerJobUs: [] }
  const base: Side = { name: 'baseline', open: (await baseline.load<typeof Index>('src/index.ts')).open, schema: 'bench_enqueue_baseline', rates: [], cpuPerJobUs: [] }
  const ratios: number[] = []
  // ABBA: each build goes first as often as second, so a warming or cooling machine favours neither.
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? [now, base] : [base, now]
    const rates = new Map<Side, number>()
    for (const side of order) rates.set(side, await turn(side, database.url, round))
    ratios.push((rates.get(now) as number) / (rates.get(base) as number))
  }
  const row = (side: Side) =>
    console.log(`${side.name.padEnd(12)} ${Math.round(median(side.rates)).toLocaleString('en-US').padStart(9)} jobs/s  ${median(side.cpuPerJobUs).toFixed(2).padStart(6)} µs Node CPU/job`)
  console.log(`enqueueMany, batches of ${batch}, ${jobs} jobs a turn, one caller, producer engine (median of ${rounds} turns)`)
  row(now)
  row(base)
  console.log(`ratio (per round, this build ÷ baseline): median ${median(ratios).toFixed(3)}×, lowest ${Math.min(...ratios).toFixed(3)}×, highest ${Math.max(...ratios).toFixed(3)}×`)
  console.log(`baseline: ${baseline.commit}; ABBA`)
} finally {
  baseline?.dispose()
  await database.drop()
}
