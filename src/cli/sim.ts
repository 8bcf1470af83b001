/**
 * `matchbox sim` — runs the deterministic simulator (DESIGN.md §8) over a batch of seeds and
 * prints, VOPR-style, each seed and every option it drew, then a summary: seeds, events,
 * speed, simulated vs wall time, faults by kind, each checker's verdict, and the determinism
 * self-check on the first seed. A failing seed leaves `sim-failure-<seed>.json` and the
 * commands that replay it; any failure exits 1. `matchbox sim replay FILE` re-runs one case.
 * `--jobs` runs the end-to-end mode instead (sim/jobs/JobsSimulation.ts): hosts run the real job
 * engine. `--parallel N` runs the seeds of either mode on N worker threads; results print in
 * seed order, as a serial run's do.
 *
 * Defaults are sized for `npm start` (embedded store, a random first seed, a batch that takes
 * well under a minute on two cores) and printed, so a run can be repeated exactly.
 *
 * Does not: run seeds (sim/core/SeedBatch.ts for sim/matching/Simulation.ts and sim/jobs/JobsSimulation.ts), word the output
 * (SimSummary.ts, SimJobsSummary.ts, SimProgress.ts) or read the wall clock.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { type Command, InvalidArgumentError, Option } from 'commander'
import { type FailureCase, type FirstSeed, hostIdsOf, type JobsBatchPlan, parseFailureCase, runJobsBatch, runOneSeed, runSimBatch, seedRunOf, type SimBatchReport, type SimStoreKind, swarmOptions, type SwarmOverrides, RangeTimelineRecorder } from '../../sim/index.ts'
import { seedFromEntropy } from '../kernel/Random.ts'
import { jobsProgress, jobsTimelinePage, jobsTraceText, renderJobsSummary } from './SimJobsSummary.ts'
import { makeSimProgress, silentProgress } from './SimProgress.ts'
import { renderFailure, renderSummary, seedHeader, seedLine, timelinePage, traceText } from './SimSummary.ts'
import type { Terminal } from './Terminal.ts'
import { UsageError } from './UsageError.ts'

/**
 * Seeds run when `--seeds` is not given and no `--seed` pins one. Sized so a default run (what
 * `npm start` does) ends within half a minute on two cores: a memory seed takes about half a
 * second, an embedded (PGlite) or PostgreSQL seed 2–6 s plus PGlite's start, and the first seed
 * runs once more for the determinism check.
 */
export const simSeedsDefault: Readonly<Record<SimStoreKind, number>> = { memory: 50, embedded: 2, postgres: 5 }

/** The store `npm start` runs on. */
export const simStoreDefault: SimStoreKind = 'embedded'

// Limits of the flags: a host count the hash ring and the trace stay readable with, and step
// counts a person would wait for.
const seedsMax = 100_000
const hostsMax = 16
const stepsMax = 1_000_000
const seedMax = 2 ** 32 - 1
// Worker threads: past a few per core they only contend; 64 covers any machine this runs on.
const parallelMax = 64

/** Options of `matchbox sim`, as commander parses them. */
export interface SimOptions {
  readonly seeds?: number
  readonly seed?: number
  readonly store?: SimStoreKind
  readonly databaseUrl?: string
  readonly hosts?: number
  readonly steps?: number
  readonly trace?: string
  readonly timeline?: string
  readonly failureDir: string
  readonly json?: boolean
  /** The end-to-end mode: hosts run the real job engine (sim/jobs/JobsSimulation.ts). */
  readonly jobs?: boolean
  /** Worker threads to run seeds on (default 1: this thread). */
  readonly parallel?: number
}

/** The simulator found a violation or a nondeterministic trace; exit code 1. */
export class SimulationFailed extends Error {
  override readonly name = 'SimulationFailed'
}

function integerIn(from: number, to: number): (value: string) => number {
  return (value) => {
    const parsed = Number(value)
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(parsed) || parsed < from || parsed > to) throw new InvalidArgumentError(`must be an integer in ${from}…${to}`)
    return parsed
  }
}

// A path option (--trace, --timeline, --failure-dir): any text but an empty one.
function pathOption(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('needs a path')
  return value
}

// Writes a file the user asked for; a path that cannot be written is theirs to fix.
function writeArtifact(option: string, path: string, text: string): void {
  try {
    writeFileSync(path, text)
  } catch (error) {
    throw new UsageError({ reason: `${option}: cannot write ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}` })
  }
}

function databaseUrlFor(store: SimStoreKind, given: string | undefined): string | undefined {
  if (store !== 'postgres') {
    if (given !== undefined) throw new UsageError({ reason: '--database-url is only for --store postgres' })
    return undefined
  }
  const url = given ?? process.env.DATABASE_URL
  if (url === undefined || url === '') throw new UsageError({ reason: 'the postgres store needs a database: pass --database-url <postgres://…> or set DATABASE_URL' })
  return url
}

function overridesOf(options: SimOptions): SwarmOverrides {
  return { ...(options.hosts === undefined ? {} : { hosts: options.hosts }), ...(options.steps === undefined ? {} : { steps: options.steps }) }
}

// Writes --trace and --timeline for the first seed, and says where.
function writeArtifacts(terminal: Terminal, options: Pick<SimOptions, 'trace' | 'timeline' | 'json'>, first: FirstSeed | undefined): Record<string, string> {
  const written: Record<string, string> = {}
  if (first === undefined) return written
  if (options.trace !== undefined) {
    writeArtifact('--trace', options.trace, traceText(first.run, first.seeded))
    written.trace = options.trace
    if (options.json !== true) terminal.line(`trace of seed ${first.run.seed} (${first.seeded.result.trace.length} lines) written to ${options.trace}`)
  }
  if (options.timeline !== undefined && first.timeline !== undefined) {
    writeArtifact('--timeline', options.timeline, timelinePage(first.run, first.seeded, first.timeline))
    written.timeline = options.timeline
    if (options.json !== true) terminal.line(`timeline of seed ${first.run.seed} written to ${options.timeline}`)
  }
  return written
}

function failureMessage(report: SimBatchReport): string | undefined {
  const parts: string[] = []
  if (report.failed > 0) parts.push(`${report.failed} of ${report.seeds.length} seeds failed (${report.replay.map((replay) => replay.file).join(', ')})`)
  if (report.determinism?.divergence != null) parts.push(`seed ${report.determinism.seed} is not deterministic`)
  return parts.length === 0 ? undefined : parts.join('; ')
}

/** Runs `matchbox sim` with parsed options. */
export async function runSimCommand(terminal: Terminal, options: SimOptions): Promise<void> {
  const store = options.store ?? simStoreDefault
  const databaseUrl = databaseUrlFor(store, options.databaseUrl)
  const seedCount = options.seeds ?? (options.seed === undefined ? simSeedsDefault[store] : 1)
  const firstSeed = options.seed ?? (seedFromEntropy() >>> 0) % 2 ** 31
  const overrides = overridesOf(options)
  const parallel = options.parallel ?? 1
  if (options.jobs === true) return runJobsMode(terminal, options, { firstSeed, seedCount, store, overrides, parallel, timeline: options.timeline !== undefined, ...(databaseUrl === undefined ? {} : { databaseUrl }) })
  if (options.json !== true) {
    const { colors: c } = terminal
    const chosen = options.seed === undefined ? `random first seed ${firstSeed}` : `first seed ${firstSeed}`
    terminal.line(c.bold(`Matchbox simulator — ${seedCount} ${seedCount === 1 ? 'seed' : 'seeds'} on the ${store} store, ${chosen}`))
    const defaults = [options.store === undefined ? `--store ${store}` : '', options.seeds === undefined ? `--seeds ${seedCount}` : ''].filter((part) => part !== '')
    if (defaults.length > 0) terminal.line(c.dim(`defaults chosen: ${defaults.join(' ')}`))
    terminal.line(c.dim(`run these seeds again: npx matchbox sim --store ${store} --seed ${firstSeed} --seeds ${seedCount}${options.hosts === undefined ? '' : ` --hosts ${options.hosts}`}${options.steps === undefined ? '' : ` --steps ${options.steps}`}`))
    if (parallel > 1) terminal.line(c.dim(`on ${parallel} worker threads; results print in seed order`))
    terminal.line()
  }
  const progress = options.json === true ? { ...silentProgress, stop: () => {} } : makeSimProgress(terminal, seedCount)
  const plan = { firstSeed, seedCount, store, overrides, parallel, timeline: options.timeline !== undefined, failureDir: options.failureDir, ...(databaseUrl === undefined ? {} : { databaseUrl }) }
  let batch: Awaited<ReturnType<typeof runSimBatch>>
  try {
    batch = await runSimBatch(plan, progress)
  } finally {
    progress.stop()
  }
  const written = writeArtifacts(terminal, options, batch.first)
  if (options.json === true) terminal.json({ ...batch.report, files: written })
  else renderSummary(terminal, batch.report)
  const failure = failureMessage(batch.report)
  if (failure !== undefined) throw new SimulationFailed(failure)
  if (options.json !== true) {
    const { colors: c } = terminal
    terminal.line()
    terminal.line(c.bold('Next:'))
    terminal.line(`  npx matchbox sim --store memory --seeds 200     ${c.dim('many more worlds, fast')}`)
    terminal.line(`  npx matchbox sim --jobs --seeds 20              ${c.dim('the job engine end to end, with several engines')}`)
    terminal.line(`  npx matchbox sim --seed ${batch.report.seeds[0]?.seed ?? firstSeed} --timeline run.html   ${c.dim('a picture of one world')}`)
    terminal.line(`  npx matchbox lifecycle                          ${c.dim('one queue, step by step')}`)
  }
}

// `--jobs`: its own batch, summary, trace and timeline.
async function runJobsMode(terminal: Terminal, options: SimOptions, plan: JobsBatchPlan): Promise<void> {
  const json = options.json === true
  if (!json) {
    terminal.line(terminal.colors.bold(`Matchbox simulator, end-to-end (jobs) mode — ${plan.seedCount} ${plan.seedCount === 1 ? 'seed' : 'seeds'} from ${plan.firstSeed} on the ${plan.store} store`))
    if ((plan.parallel ?? 1) > 1) terminal.line(terminal.colors.dim(`on ${plan.parallel} worker threads; results print in seed order`))
  }
  const { report, timeline, trace } = await runJobsBatch(plan, jobsProgress(terminal, plan.seedCount, json))
  const written: Record<string, string> = {}
  const first = report.seeds[0]
  if (options.trace !== undefined && trace !== undefined && first !== undefined) {
    writeArtifact('--trace', options.trace, jobsTraceText(plan.store, first, trace))
    written.trace = options.trace
    if (!json) terminal.line(`trace of seed ${first.seed} (${trace.length} lines) written to ${options.trace}`)
  }
  if (options.timeline !== undefined && timeline !== undefined && first !== undefined) {
    writeArtifact('--timeline', options.timeline, jobsTimelinePage(plan.store, first, timeline))
    written.timeline = options.timeline
    if (!json) terminal.line(`timeline of seed ${first.seed} written to ${options.timeline}`)
  }
  if (json) terminal.json({ ...report, files: written })
  else renderJobsSummary(terminal, report)
  const parts = [report.failed > 0 ? `${report.failed} of ${report.seeds.length} seeds failed` : '', report.determinism?.divergence != null ? `seed ${report.determinism.seed} is not deterministic` : ''].filter((part) => part !== '')
  if (parts.length > 0) throw new SimulationFailed(parts.join('; '))
}

function readCase(file: string): FailureCase {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new UsageError({ reason: `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}` })
  }
  try {
    return parseFailureCase(text, file)
  } catch (error) {
    throw new UsageError({ reason: (error as Error).message })
  }
}

/** Runs `matchbox sim replay FILE`: the case once more; exit 1 if it still fails. */
export async function runSimReplay(terminal: Terminal, file: string, options: SimOptions): Promise<void> {
  const failure = readCase(file)
  const run = seedRunOf(failure, databaseUrlFor(failure.store, options.databaseUrl))
  const timeline = options.timeline === undefined ? undefined : new RangeTimelineRecorder(hostIdsOf(run))
  if (options.json !== true) {
    terminal.line(terminal.colors.bold(`Replaying ${file}: seed ${failure.seed} on the ${failure.store} store${failure.script === undefined ? '' : ` with a ${failure.script.length}-decision script`}`))
    terminal.line(`  recorded: ${failure.violations.length} ${failure.violations.length === 1 ? 'violation' : 'violations'}${failure.traceHash === '' ? '' : `, trace hash ${failure.traceHash}`}`)
    for (const violation of failure.violations) terminal.line(`    ${violation}`)
    terminal.line(seedHeader(failure.seed, 0, 1, swarmOptions(run.seed, run.overrides)).join('\n'))
  }
  // No failure file: the case being replayed is the record, and must not be overwritten.
  const { outcome, seeded } = await runOneSeed(run, { keepTrace: options.trace !== undefined, ...(timeline === undefined ? {} : { timeline }) })
  const sameTrace = failure.traceHash === '' ? null : failure.traceHash === outcome.traceHash
  if (options.json !== true) {
    terminal.line(seedLine(outcome))
    if (!outcome.ok) renderFailure(terminal, outcome)
  }
  const written = writeArtifacts(terminal, options, { run, seeded, timeline: timeline?.data() })
  if (options.json === true) {
    terminal.json({ file, case: failure, outcome, sameTrace, files: written })
  } else {
    if (sameTrace !== null) terminal.line(sameTrace ? '  trace: identical to the recorded run' : `  trace: differs from the recorded run (the code changed since); now ${outcome.traceHash}`)
    terminal.line(outcome.ok ? terminal.colors.green('the case passes now') : terminal.colors.red('the case still fails'))
  }
  if (!outcome.ok) throw new SimulationFailed(`seed ${failure.seed} still fails: ${outcome.violations[0] ?? ''}`)
}

/** Registers `matchbox sim` and `matchbox sim replay`. */
export function registerSim(program: Command, terminal: Terminal): void {
  const sim = program
    .command('sim')
    .description('run the deterministic simulator: real hosts over one store under faults, judged by checkers outside the system')
    .option('--seeds <n>', `how many seeds to run (default ${simSeedsDefault.embedded} on embedded, ${simSeedsDefault.memory} on memory, ${simSeedsDefault.postgres} on postgres; 1 with --seed)`, integerIn(1, seedsMax))
    .option('--seed <s>', 'the first seed (default: a random one, printed)', integerIn(0, seedMax))
    .addOption(new Option('--store <store>', `where the hosts keep their queues (default ${simStoreDefault})`).choices(['memory', 'embedded', 'postgres']))
    .option('--database-url <url>', 'PostgreSQL connection string for --store postgres (default: DATABASE_URL); each seed gets its own schema')
    .option('--hosts <n>', `pin the number of hosts (default: drawn from each seed, 2…5)`, integerIn(1, hostsMax))
    .option('--steps <n>', 'pin the number of safety-phase steps (default 2000)', integerIn(1, stepsMax))
    .option('--trace <file>', "write the first seed's full trace to a text file", pathOption)
    .option('--timeline <file.html>', "draw the first seed's run as a self-contained HTML page (with --jobs: its jobs' lives)", pathOption)
    .option('--failure-dir <dir>', 'where failing seeds leave sim-failure-<seed>.json', pathOption, '.')
    .option('--json', 'print the report as JSON')
    .option('--jobs', 'end-to-end mode: every host runs the real job engine; job checkers judge (claims, deadlines, attempt budgets, none stranded)')
    .option('--parallel <n>', 'run the seeds on n worker threads (default 1); results print in seed order, the same as a serial run', integerIn(1, parallelMax))
    .action(async (options: SimOptions) => runSimCommand(terminal, options))
  sim
    .command('replay <failure.json>')
    .description('re-run one failing case (sim-failure-<seed>.json); exits 1 while it still fails. Takes --database-url, --trace, --timeline, --json of `sim`')
    .action(async (file: string, _options: unknown, command: Command) => {
      const options = command.optsWithGlobals<SimOptions>()
      const pinned = (['seeds', 'seed', 'store', 'hosts', 'steps', 'parallel'] as const).filter((name) => options[name] !== undefined)
      if (pinned.length > 0) throw new UsageError({ reason: `replay takes the seed, store and overrides from ${file}; drop --${pinned.join(', --')}` })
      await runSimReplay(terminal, file, options)
    })
}
