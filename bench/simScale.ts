/**
 * Simulator at scale — `npx tsx bench/simScale.ts` (default: 10, 25, 50 and 100 engines over
 * 10,000 queue partitions), or `--engines 100 --partitions 10000 --rate 100 --steady 10000
 * --seed 1`.
 *
 * Runs the world at scale (sim/scale/ScaleWorld.ts: the real job engine per engine, on the
 * memory store, every call through the simulator's gate, faults on, checkers on) once per engine
 * count, each in a child process of its own so its memory figures are its own, and prints per
 * size: membership convergence after one engine dies and after one joins (virtual ms),
 * partitions moved by each change beside the 1/N rendezvous hashing expects, forwarded polls
 * and hand-overs per committed job, virtual seconds per real second, peak heap and RSS, and the
 * checkers' verdict. Each size's real time per virtual second is also printed as a ratio to the
 * first (smallest) size, measured in the same run: how the cost grows with the group.
 *
 * The world runs from src/ through tsx (the compiled package does not carry sim/scale). Figures
 * taken while other work shares the machine say so beside them; they compare sizes within one
 * run, they are not claims about any deployment.
 */
import { spawnSync } from 'node:child_process'
import { availableParallelism, loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { describeScaleOptions, scaleOptions } from '../sim/scale/ScaleOptions.ts'
import { type ScaleReport, ScaleWorld } from '../sim/scale/ScaleWorld.ts'
import { seedFlag, wholeNumberFlag } from './Flags.ts'

/** What one size's child process reports. */
interface SizeResult {
  readonly engines: number
  /** Null when the size ran out of its real-time budget; then `reached` says how far it got and `partial` what it measured. */
  readonly report: Omit<ScaleReport, 'trace'> | null
  readonly partial?: ReturnType<ScaleWorld['snapshot']>
  readonly reached: { readonly phase: string; readonly simulatedMs: number }
  readonly wallMs: number
  readonly heapPeakMb: number
  readonly rssPeakMb: number
}

const mb = (bytes: number) => Math.round(bytes / 1e6)

async function runOne(engines: number, partitions: number, rate: number | undefined, steadyMs: number, seed: number): Promise<SizeResult> {
  const options = scaleOptions({ seed, engines, partitions, steadyMs, ...(rate === undefined ? {} : { enqueuePerS: rate }) })
  let heapPeak = 0
  let rssPeak = 0
  const sample = () => {
    const usage = process.memoryUsage()
    heapPeak = Math.max(heapPeak, usage.heapUsed)
    rssPeak = Math.max(rssPeak, usage.rss)
  }
  const startedMs = performance.now()
  let reached = { phase: 'start', simulatedMs: 0 }
  let printedAtMs = startedMs
  // Past its budget a size stops where it is and reports how far it got (the loop yields to
  // timers between rounds, so this fires).
  const budget = setTimeout(() => {
    sample()
    process.stdout.write(`${JSON.stringify({ engines, report: null, partial: world.snapshot(), reached, wallMs: performance.now() - startedMs, heapPeakMb: mb(heapPeak), rssPeakMb: mb(rssPeak) } satisfies SizeResult)}\n`)
    process.exit(0)
  }, budgetS * 1_000)
  const world = new ScaleWorld(options, (phase, simulatedMs) => {
    sample()
    reached = { phase, simulatedMs }
    if (performance.now() - printedAtMs < 30_000) return
    printedAtMs = performance.now()
    process.stderr.write(`  ${engines} engines: ${phase} at ${(simulatedMs / 1_000).toFixed(1)} s virtual, ${Math.round((printedAtMs - startedMs) / 1_000)} s real, rss ${mb(process.memoryUsage().rss)} MB\n`)
  })
  const report = await world.run()
  clearTimeout(budget)
  sample()
  const { trace: _trace, ...rest } = report
  return { engines, report: rest, reached, wallMs: performance.now() - startedMs, heapPeakMb: mb(heapPeak), rssPeakMb: mb(rssPeak) }
}

function listFlag(name: string, fallback: number[]): number[] {
  const index = process.argv.indexOf(`--${name}`)
  if (index < 0) return fallback
  const values = String(process.argv[index + 1]).split(',').map(Number)
  if (values.some((value) => !Number.isSafeInteger(value) || value < 1)) throw new Error(`--${name} needs whole numbers ≥ 1, comma-separated`)
  return values
}

const seed = seedFlag()
const partitions = wholeNumberFlag('partitions', 10_000)
const steadyMs = wholeNumberFlag('steady', 10_000)
const rateGiven = process.argv.includes('--rate') ? wholeNumberFlag('rate', 0) : undefined
// Real seconds a size may take before it is stopped and reported as far as it got.
const budgetS = wholeNumberFlag('budget', 900)

if (process.argv.includes('--one')) {
  const engines = wholeNumberFlag('one', 10)
  const result = await runOne(engines, partitions, rateGiven, steadyMs, seed)
  process.stdout.write(`${JSON.stringify(result)}\n`)
  process.exit(0)
}

const sizes = listFlag('engines', [10, 25, 50, 100])
console.log(`simulator at scale · seed ${seed} · ${partitions} partitions · steady ${steadyMs} ms per phase · enqueue ${rateGiven === undefined ? 'one job per engine per second' : `${rateGiven}/s`}`)
console.log(describeScaleOptions(scaleOptions({ seed, engines: sizes[0] as number, partitions, steadyMs, ...(rateGiven === undefined ? {} : { enqueuePerS: rateGiven }) })).slice(1).join('\n'))
const load = loadavg()[0] as number
console.log(`machine: ${availableParallelism()} cores, load average ${load.toFixed(1)} at the start${load > availableParallelism() / 2 ? ' — a busy machine: real-time figures are taken under load' : ''}`)

const results: SizeResult[] = []
for (const engines of sizes) {
  const script = fileURLToPath(import.meta.url)
  const args = [...process.execArgv, script, '--one', String(engines), '--seed', String(seed), '--partitions', String(partitions), '--steady', String(steadyMs), '--budget', String(budgetS), ...(rateGiven === undefined ? [] : ['--rate', String(rateGiven)])]
  const child = spawnSync(process.execPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 })
  const line = child.stdout.trim().split('\n').pop() ?? ''
  if (child.status !== 0 || !line.startsWith('{')) {
    console.log(`${engines} engines: the run did not finish (exit ${child.status ?? child.signal}); larger sizes are skipped`)
    break
  }
  const result = JSON.parse(line) as SizeResult
  results.push(result)

}

const percent = (fraction: number) => `${(fraction * 100).toFixed(2)}%`
const first = results[0]
const realPerVirtual = (result: SizeResult) => result.wallMs / Math.max(1, result.report?.simulatedMs ?? result.reached.simulatedMs)
console.log('\nengines  jobs   death: converged moved (1/N)       join: converged moved (1/N)        fwd polls/job  hand-overs/job  virtual s/real s  cost ×first  heap MB  rss MB  checkers')
for (const result of results) {
  const report = result.report ?? result.partial
  if (report === undefined) continue
  const change = (kind: 'death' | 'join') => {
    const found = report.changes.find((candidate) => candidate.kind === kind)
    const rebalance = found?.rebalance
    if (found === undefined || rebalance === null || rebalance === undefined) return 'not reached'.padEnd(31)
    return `${found.convergedMs === null ? 'never' : `${found.convergedMs} ms`} ${percent(rebalance.movedFraction)} (${percent(rebalance.expectedFraction)})${rebalance.strayMoves > 0 ? ` ${rebalance.strayMoves} stray` : ''}`.padEnd(31)
  }
  const jobs = Math.max(1, report.committedJobs)
  const verdict = result.report === null ? `stopped at its ${budgetS} s budget in "${result.reached.phase}" at ${(result.reached.simulatedMs / 1_000).toFixed(1)} s virtual` : result.report.ok ? `pass${result.report.knownFailing.length > 0 ? ` (known: ${result.report.strandedWithMatching} stranded with Matching, ${result.report.strandedBehind} behind them)` : ''}` : `FAIL ${result.report.violations.length}: ${result.report.violations[0]}`
  console.log(
    `${String(result.engines).padStart(7)}  ${String(report.committedJobs).padStart(5)}  ${change('death')}  ${change('join')}  ${(report.forwardedPolls / jobs).toFixed(1).padStart(13)}  ${(report.handOvers / jobs).toFixed(2).padStart(14)}  ${((result.report?.simulatedMs ?? result.reached.simulatedMs) / result.wallMs).toFixed(2).padStart(16)}  ${(first === undefined ? 1 : realPerVirtual(result) / realPerVirtual(first)).toFixed(1).padStart(11)}  ${String(result.heapPeakMb).padStart(7)}  ${String(result.rssPeakMb).padStart(6)}  ${verdict}`,
  )
}
console.log(`\nper size: ${results.flatMap((result) => result.report === null ? [] : [`${result.engines} engines ${Math.round(result.wallMs / 1_000)} s real for ${Math.round(result.report.simulatedMs / 1_000)} s virtual, ${result.report.ioRuns} calls run, faults ${Object.entries(result.report.faults).map(([name, count]) => `${name} ${count}`).join(' ')}`]).join('; ')}`)
