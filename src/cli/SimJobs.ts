/**
 * SimJobs — `matchbox sim --jobs`: the simulator's end-to-end mode, whose hosts run the real job
 * engine (sim/jobs/JobsWorld.ts). Runs a batch of seeds and prints, per seed, the options it drew and
 * how it ended; then a summary: seeds, events, simulated vs wall time, faults by kind, each job
 * checker's verdict, where every enqueued job ended, and the determinism self-check on the first
 * seed. A failing seed prints the command that replays it; any failure exits 1 (the caller
 * throws). Wall time comes from the kernel's `RealClock`.
 *
 * Does not: write failure files, traces or timelines (the Matching mode's files do not describe
 * this world); replay is `--jobs --seed S` on the same store.
 */
import { jobCheckerNames, type JobsReport } from '../../sim/jobs/JobCheckers.ts'
import { checkJobsDeterminism, type JobsSeedRun, runJobsSeed } from '../../sim/jobs/JobsSimulation.ts'
import { describeJobsOptions, type JobsFaultName, jobsFaultNames, type JobsSwarmOverrides } from '../../sim/jobs/JobsSwarm.ts'
import type { SimStoreKind } from '../../sim/matching/Simulation.ts'
import { RealClock } from '../kernel/Clock.ts'
import { formatDuration } from './SimSummary.ts'
import type { Terminal } from './Terminal.ts'

/** What one `--jobs` batch runs. */
export interface JobsBatchPlan {
  readonly firstSeed: number
  readonly seedCount: number
  readonly store: SimStoreKind
  readonly databaseUrl?: string
  readonly overrides: JobsSwarmOverrides
  readonly json: boolean
}

/** What a `--jobs` batch reports (also its `--json` output). */
export interface JobsBatchReport {
  readonly mode: 'jobs'
  readonly store: SimStoreKind
  readonly seeds: ReadonlyArray<{ readonly seed: number; readonly ok: boolean; readonly violations: ReadonlyArray<string>; readonly events: number; readonly wallMs: number; readonly traceHash: string }>
  readonly passed: number
  readonly failed: number
  readonly events: number
  readonly wallMs: number
  readonly simulatedMs: number
  readonly faults: Readonly<Record<JobsFaultName, number>>
  readonly checkers: ReadonlyArray<{ readonly name: string; readonly verdict: string }>
  readonly jobs: Omit<JobsReport, 'stranded'> & { readonly stranded: number }
  readonly determinism: { readonly seed: number; readonly hash: string; readonly divergence: string | null } | null
}

const count = (value: number): string => value.toLocaleString('en-US')

/** Runs the batch, printing as it goes unless `json`; returns the report. */
export async function runJobsBatch(terminal: Terminal, plan: JobsBatchPlan): Promise<JobsBatchReport> {
  const clock = new RealClock()
  const started = clock.now()
  const faults = Object.fromEntries(jobsFaultNames.map((name) => [name, 0])) as Record<JobsFaultName, number>
  const violations = Object.fromEntries(jobCheckerNames.map((name) => [name, 0])) as Record<string, number>
  const firstFailing: Record<string, number> = {}
  const jobs = { enqueued: 0, recovered: 0, acked: 0, ackedUnheard: 0, cancelled: 0, cancelledUnheard: 0, dead: { failed: 0, exhausted: 0, expired: 0 }, reclaimed: 0, landedLate: 0, stranded: 0 }
  const seeds: Array<JobsBatchReport['seeds'][number]> = []
  let simulatedMs = 0
  let determinism: JobsBatchReport['determinism'] = null
  for (let index = 0; index < plan.seedCount; index++) {
    const seed = plan.firstSeed + index
    const run: JobsSeedRun = { seed, store: plan.store, overrides: plan.overrides, ...(plan.databaseUrl === undefined ? {} : { databaseUrl: plan.databaseUrl }) }
    const seedStarted = clock.now()
    const seeded = await runJobsSeed({ ...run, keepTrace: index === 0 })
    const { result } = seeded
    const wallMs = clock.now() - seedStarted
    seeds.push({ seed, ok: result.ok, violations: result.violations, events: result.events, wallMs, traceHash: result.traceHash })
    simulatedMs += result.simulatedMs
    for (const name of jobsFaultNames) faults[name] += result.faults[name]
    for (const name of jobCheckerNames) {
      violations[name] = (violations[name] ?? 0) + result.checkers[name]
      if (result.checkers[name] > 0) firstFailing[name] ??= seed
    }
    const r = result.jobs
    for (const key of ['enqueued', 'recovered', 'acked', 'ackedUnheard', 'cancelled', 'cancelledUnheard', 'reclaimed', 'landedLate'] as const) jobs[key] += r[key]
    for (const key of ['failed', 'exhausted', 'expired'] as const) jobs.dead[key] += r.dead[key]
    jobs.stranded += r.stranded.length
    if (!plan.json) {
      terminal.line([`seed ${seed} (${index + 1}/${plan.seedCount})`, ...describeJobsOptions(seeded.options).map((line) => `  ${line}`)].join('\n'))
      terminal.line(`  → ${result.ok ? 'passed' : terminal.colors.red(`FAILED (${result.violations.length})`)} · ${count(result.events)} events · ${count(result.steps)}+${count(result.livenessSteps)} steps · simulated ${formatDuration(result.simulatedMs)} · wall ${formatDuration(wallMs)}`)
      for (const violation of result.violations) terminal.line(`  ${terminal.colors.red('✗')} ${violation}`)
      if (!result.ok) terminal.line(`  replay: npx matchbox sim --jobs --store ${plan.store} --seed ${seed}${plan.overrides.hosts === undefined ? '' : ` --hosts ${plan.overrides.hosts}`}${plan.overrides.steps === undefined ? '' : ` --steps ${plan.overrides.steps}`}`)
    }
    if (index === 0) {
      if (!plan.json) terminal.line(`  determinism: running seed ${seed} once more to compare traces`)
      determinism = { seed, ...(await checkJobsDeterminism(run, seeded)) }
    }
  }
  const failed = seeds.filter((seed) => !seed.ok).length
  return {
    mode: 'jobs',
    store: plan.store,
    seeds,
    passed: seeds.length - failed,
    failed,
    events: seeds.reduce((sum, seed) => sum + seed.events, 0),
    wallMs: clock.now() - started,
    simulatedMs,
    faults,
    checkers: jobCheckerNames.map((name) => ({ name, verdict: violations[name] === 0 ? 'pass' : `FAIL (${violations[name]}, first on seed ${firstFailing[name]})` })),
    jobs,
    determinism,
  }
}

/** Prints a `--jobs` batch's summary. */
export function renderJobsSummary(terminal: Terminal, report: JobsBatchReport): void {
  const { colors: c } = terminal
  const j = report.jobs
  terminal.line()
  terminal.line(c.bold(`Summary — end-to-end (jobs) mode, ${report.seeds.length} seeds from ${report.seeds[0]?.seed ?? '-'} on the ${report.store} store`))
  terminal.line(`  seeds        ${report.seeds.length} run · ${report.passed} passed · ${report.failed === 0 ? c.green('0 failed') : c.red(`${report.failed} failed`)}`)
  terminal.line(`  events       ${count(report.events)} client and store calls`)
  terminal.line(`  time         simulated ${formatDuration(report.simulatedMs)} · wall ${formatDuration(report.wallMs)}`)
  terminal.line(`  faults       ${Object.entries(report.faults).map(([name, n]) => `${name} ${count(n)}`).join(' · ')}`)
  terminal.line('  checkers')
  for (const checker of report.checkers) terminal.line(`    ${checker.name.padEnd(16)} ${checker.verdict === 'pass' ? c.green('pass') : c.red(checker.verdict)}`)
  terminal.line(`  jobs         ${count(j.enqueued)} enqueued (+${count(j.recovered)} from ambiguous enqueues) · acked ${count(j.acked)} (+${count(j.ackedUnheard)} unheard) · cancelled ${count(j.cancelled)} (+${count(j.cancelledUnheard)} unheard)`)
  terminal.line(`               dead: failed ${count(j.dead.failed)} · max attempts ${count(j.dead.exhausted)} · expired ${count(j.dead.expired)} · stranded ${count(j.stranded)} · reclaimed ${count(j.reclaimed)} (allowed) · landed late ${count(j.landedLate)}`)
  const check = report.determinism
  if (check !== null) terminal.line(`  determinism  seed ${check.seed} run twice: ${check.divergence === null ? c.green('same trace twice') : c.red(`DIVERGED at ${check.divergence}`)}, trace hash ${check.hash}`)
}
