/**
 * Drain bench — `npx tsx bench/drain.ts [--against REV] [--rounds N] [--jobs N] [--concurrency N] [--batch N]`.
 *
 * What draining a backlog costs through the whole engine, beside the same drain of an earlier
 * build (Baseline.ts: `--against REV`, default HEAD~1) measured in the same run, so a change to
 * the worker's claim and ack path shows as a ratio even on a busy machine. Each turn is the peers
 * bench's drain step (peers.ts) for one build: a fresh engine on a pool of its own, a fresh queue
 * filled with `jobs` no-op jobs (default 10,000; enqueued untimed), then
 * `work({ concurrency, batch })` (default concurrency 1, no batch) drains it, timed from starting
 * the workers to the last handler start; then the worker is stopped, the queue's rows deleted and
 * the engine closed. Each build has its own schema on one throwaway database. The builds take
 * turns in ABBA order, `rounds` turns each (default 12), after one unrecorded warm-up turn each
 * (a tenth of the jobs) so that neither build's first measured drain pays for compiling its code.
 *
 * Printed: each build's median jobs/s and CPU per job over its drains, Node's (this process)
 * and the server's (the PostgreSQL cluster's processes, read from /proc, when the bench started
 * the cluster; Linux only), the median, lowest and highest of the per-round ratios (this build's jobs/s over
 * the baseline's in the same round), and the most CPU other processes used during a drain
 * (CpuWatch.ts: a figure above half a core means the machine was busy and the ratio is
 * indicative only; the ratios of the rounds that stayed quiet are then summed up apart). Each
 * round's two rates, ratio and other processes' CPU are printed as it ends.
 *
 * PostgreSQL: DATABASE_URL if set (a fresh database on it), else a throwaway cluster
 * (BenchDatabase.ts). Both builds load from their compiled dist/ (built.ts, Baseline.ts).
 */
import pg from 'pg'
import type * as Index from '../src/index.ts'
import { type Baseline, prepareBaseline } from './Baseline.ts'
import { openBenchDatabase } from './BenchDatabase.ts'
import { loadBuilt } from './built.ts'
import { makeCpuWatch, postmasterPidOf } from './CpuWatch.ts'
import { wholeNumberFlag } from './Flags.ts'
import { median } from './peerTable.ts'
import { busyCoresMax, poolMax } from './TimedDrain.ts'

const rounds = wholeNumberFlag('rounds', 12)
const jobs = wholeNumberFlag('jobs', 10_000)
const concurrency = wholeNumberFlag('concurrency', 1)
// 0: no local queue (`work` without `batch`).
const batch = wholeNumberFlag('batch', 0)
const againstAt = process.argv.indexOf('--against')
const against = againstAt >= 0 ? (process.argv[againstAt + 1] ?? 'HEAD~1') : 'HEAD~1'
const workOptions: Index.WorkOptions = batch === 0 ? { concurrency } : { concurrency, batch }
// /proc's CPU counters tick at USER_HZ, 100 a second on Linux.
const microsecondsPerTick = 10_000
// Whether the cluster's processes are watched (a cluster this bench started): else no server figure.
let serverWatched = false
// Jobs per enqueueMany when filling the backlog.
const fillChunk = 1_000

interface Side {
  readonly name: string
  readonly open: typeof Index.open
  readonly schema: string
  readonly rates: number[]
  readonly cpuPerJobUs: number[]
  readonly serverCpuPerJobUs: number[]
  readonly othersCores: number[]
}

// One turn: a fresh engine fills a fresh queue, then drains it with `work(workOptions)`.
async function turn(side: Side, url: string, round: number, cpu: ReturnType<typeof makeCpuWatch>, jobs: number, record = true): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: poolMax })
  pool.on('error', () => {})
  const mb = await side.open({ store: { pool }, schema: side.schema })
  const queueName = round < 0 ? 'drain-warm-up' : `drain-${round}`
  try {
    const queue = mb.queue(queueName)
    for (let at = 0; at < jobs; at += fillChunk) await queue.enqueueMany(Array.from({ length: Math.min(fillChunk, jobs - at) }, (_, n) => ({ payload: { n: at + n } })))
    let handled = 0
    let finish = (): void => {}
    const finished = new Promise<void>((resolve) => (finish = resolve))
    const machineBefore = cpu.sample()
    const cpuBefore = process.cpuUsage()
    const began = performance.now()
    const stop = queue.work(async () => {
      if (++handled === jobs) finish()
    }, workOptions)
    await finished
    const elapsedMs = performance.now() - began
    const used = process.cpuUsage(cpuBefore)
    const machineAfter = cpu.sample()
    const others = cpu.share(machineBefore, machineAfter).othersCores
    // The server's CPU: our process tree's and the postmaster's, less this process's own.
    const serverUs = serverWatched ? (machineAfter.ours - machineBefore.ours) * microsecondsPerTick - (used.user + used.system) : Number.NaN
    await stop()
    const rate = (jobs * 1000) / elapsedMs
    if (record) {
      side.rates.push(rate)
      side.cpuPerJobUs.push((used.user + used.system) / jobs)
      side.serverCpuPerJobUs.push(serverUs / jobs)
      side.othersCores.push(others)
    }
    return rate
  } finally {
    await mb.close()
    await pool.query(`DELETE FROM ${side.schema}.jobs WHERE queue = $1`, [queueName])
    await pool.end()
  }
}

const database = await openBenchDatabase('drain')
let baseline: Baseline | null = null
try {
  baseline = prepareBaseline(against)
  const postmaster = postmasterPidOf(database.url)
  serverWatched = postmaster !== null
  const cpu = makeCpuWatch(postmaster === null ? [] : [postmaster])
  const now: Side = { name: 'this build', open: (await loadBuilt<typeof Index>('src/index.ts')).open, schema: 'bench_drain_current', rates: [], cpuPerJobUs: [], serverCpuPerJobUs: [], othersCores: [] }
  const base: Side = { name: 'baseline', open: (await baseline.load<typeof Index>('src/index.ts')).open, schema: 'bench_drain_baseline', rates: [], cpuPerJobUs: [], serverCpuPerJobUs: [], othersCores: [] }
  for (const side of [now, base]) await turn(side, database.url, -1, cpu, Math.max(1, Math.floor(jobs / 10)), false)
  const ratios: number[] = []
  // The ratios of rounds during which other processes stayed under busyCoresMax.
  const quietRatios: number[] = []
  // ABBA: each build goes first as often as second, so a warming or cooling machine favours neither.
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? [now, base] : [base, now]
    const rates = new Map<Side, number>()
    for (const side of order) rates.set(side, await turn(side, database.url, round, cpu, jobs))
    const ratio = (rates.get(now) as number) / (rates.get(base) as number)
    ratios.push(ratio)
    const others = Math.max(now.othersCores.at(-1) as number, base.othersCores.at(-1) as number)
    if (others <= busyCoresMax) quietRatios.push(ratio)
    console.log(`  · round ${round + 1}: ${Math.round(rates.get(now) as number)} vs ${Math.round(rates.get(base) as number)} jobs/s, ratio ${ratio.toFixed(3)}×, others ${others.toFixed(2)} cores${others > busyCoresMax ? ' (busy)' : ''}`)
  }
  const row = (side: Side) =>
    console.log(`${side.name.padEnd(12)} ${Math.round(median(side.rates)).toLocaleString('en-US').padStart(9)} jobs/s  ${median(side.cpuPerJobUs).toFixed(1).padStart(6)} µs Node CPU/job  ${median(side.serverCpuPerJobUs).toFixed(1).padStart(6)} µs server CPU/job`)
  console.log(`drain of ${jobs} no-op jobs, work(${JSON.stringify(workOptions)}), pool of ${poolMax} (median of ${rounds} turns)`)
  row(now)
  row(base)
  console.log(`ratio (per round, this build ÷ baseline): median ${median(ratios).toFixed(3)}×, lowest ${Math.min(...ratios).toFixed(3)}×, highest ${Math.max(...ratios).toFixed(3)}×`)
  const busiest = Math.max(...now.othersCores, ...base.othersCores)
  console.log(`other processes: at most ${busiest.toFixed(2)} cores during a drain${busiest > busyCoresMax ? ' (busy: indicative only)' : ''}`)
  if (busiest > busyCoresMax && quietRatios.length > 0) {
    console.log(`quiet rounds (others ≤ ${busyCoresMax} cores in both drains): ${quietRatios.length}, ratio median ${median(quietRatios).toFixed(3)}×, lowest ${Math.min(...quietRatios).toFixed(3)}×, highest ${Math.max(...quietRatios).toFixed(3)}×`)
  }
  console.log(`baseline: ${baseline.commit}; ABBA`)
} finally {
  baseline?.dispose()
  await database.drop()
}
