/**
 * JobsBatch — runs the seeds of one end-to-end batch (`matchbox sim --jobs`), whose hosts run
 * the real job engine (JobsWorld.ts), and gathers its report: per seed the options it drew and
 * how it ended; over all seeds events, simulated vs wall time, faults by kind, each job
 * checker's verdict, where every enqueued job ended, and the determinism self-check on the
 * first seed (run once more, traces compared). The first seed can also be recorded for a
 * timeline (JobsTimelineRecorder.ts). Wall time comes from the kernel's `RealClock`.
 *
 * With `parallel` above 1 the seeds run on worker threads (core/ParallelSeeds.ts) and reach the
 * observer in seed order, so the report is the serial one's, wall times aside.
 *
 * Does not: print or parse flags (the CLI does), or write failure files: a failing seed is
 * replayed with `--jobs --seed S` on the same store.
 */
import { RealClock } from '../../src/kernel/Clock.ts'
import { runPlanSeeds } from '../core/ParallelSeeds.ts'
import type { SimStoreKind } from '../core/Determinism.ts'
import { type JobCheckerName, jobCheckerNames, type JobsReport } from './JobCheckers.ts'
import { checkJobsDeterminism, type JobsSeedRun, runJobsSeed } from './JobsSimulation.ts'
import { describeJobsOptions, type JobsFaultName, jobsFaultNames, type JobsSwarmOverrides, jobsSwarmOptions } from './JobsSwarm.ts'
import { type JobsTimelineData, JobsTimelineRecorder } from './JobsTimelineRecorder.ts'

/** What one `--jobs` batch runs. */
export interface JobsBatchPlan {
  readonly firstSeed: number
  readonly seedCount: number
  readonly store: SimStoreKind
  readonly databaseUrl?: string
  readonly overrides: JobsSwarmOverrides
  /** Record the first seed for a timeline. */
  readonly timeline?: boolean
  /** Worker threads to run seeds on; 1 (the default) runs them in this thread. */
  readonly parallel?: number
}

/** How one end-to-end seed ended. */
export interface JobsSeedOutcome {
  readonly seed: number
  /** The options it drew, as lines (JobsSwarm.ts `describeJobsOptions`). */
  readonly options: ReadonlyArray<string>
  readonly ok: boolean
  readonly violations: ReadonlyArray<string>
  /** Violations of the checkers on the known-failing list (KnownEngineFailures.ts): printed, not failing the seed. */
  readonly knownFailing: ReadonlyArray<string>
  readonly events: number
  readonly steps: number
  readonly livenessSteps: number
  readonly simulatedMs: number
  readonly wallMs: number
  readonly traceHash: string
  /** The command that replays it. */
  readonly replay: string
}

/** The determinism self-check's outcome. */
export interface JobsDeterminismCheck {
  readonly seed: number
  readonly hash: string
  /** Null when both runs gave the same trace. */
  readonly divergence: string | null
}

/** What a `--jobs` batch reports (also its `--json` output). */
export interface JobsBatchReport {
  readonly mode: 'jobs'
  readonly store: SimStoreKind
  readonly seeds: ReadonlyArray<JobsSeedOutcome>
  readonly passed: number
  readonly failed: number
  readonly events: number
  readonly wallMs: number
  readonly simulatedMs: number
  readonly faults: Readonly<Record<JobsFaultName, number>>
  readonly checkers: ReadonlyArray<{ readonly name: string; readonly verdict: string }>
  readonly jobs: Omit<JobsReport, 'stranded'> & { readonly stranded: number }
  readonly determinism: JobsDeterminismCheck | null
}

/** Everything one seed of a plan hands back to its batch, as plain data (it may cross threads). */
export interface JobsPlanSeedReport {
  readonly outcome: JobsSeedOutcome
  readonly faults: Readonly<Record<JobsFaultName, number>>
  readonly checkers: Readonly<Record<JobCheckerName, number>>
  readonly jobs: JobsReport
  /** The first seed's determinism check and timeline. */
  readonly first?: { readonly determinism: JobsDeterminismCheck; readonly timeline: JobsTimelineData | undefined }
}

/** Hears about a batch as it runs (progress output), in seed order. */
export interface JobsBatchObserver {
  seedFinished(outcome: JobsSeedOutcome, index: number): void
  determinismChecked(check: JobsDeterminismCheck): void
}

/** The run of one seed of a plan. */
export function jobsSeedRunOf(plan: JobsBatchPlan, seed: number): JobsSeedRun {
  return { seed, store: plan.store, overrides: plan.overrides, ...(plan.databaseUrl === undefined ? {} : { databaseUrl: plan.databaseUrl }) }
}

/** The command that replays one seed of a plan. */
export function jobsReplayCommand(plan: Pick<JobsBatchPlan, 'store' | 'overrides'>, seed: number): string {
  const { hosts, steps } = plan.overrides
  return `npx matchbox sim --jobs --store ${plan.store} --seed ${seed}${hosts === undefined ? '' : ` --hosts ${hosts}`}${steps === undefined ? '' : ` --steps ${steps}`}`
}

/** The host ids a seed's world will have, for timeline lanes. */
export function jobsHostIdsOf(run: JobsSeedRun): string[] {
  const { hosts } = jobsSwarmOptions(run.seed, run.overrides)
  return Array.from({ length: hosts }, (_, i) => `host-${i + 1}`)
}

/** Runs seed `index` of `plan` (the first one also for the determinism check and its timeline); the unit a worker runs. */
export async function runJobsPlanSeed(input: { readonly plan: JobsBatchPlan; readonly index: number }): Promise<JobsPlanSeedReport> {
  const { plan, index } = input
  const run = jobsSeedRunOf(plan, plan.firstSeed + index)
  const recorder = index === 0 && plan.timeline === true ? new JobsTimelineRecorder(jobsHostIdsOf(run)) : undefined
  const clock = new RealClock()
  const started = clock.now()
  const seeded = await runJobsSeed({ ...run, keepTrace: index === 0, ...(recorder === undefined ? {} : { onJobs: recorder.onJobs, onEvent: recorder.onEvent }) })
  const { result } = seeded
  const outcome: JobsSeedOutcome = {
    seed: run.seed,
    options: describeJobsOptions(seeded.options),
    ok: result.ok,
    violations: result.violations,
    knownFailing: result.knownFailing,
    events: result.events,
    steps: result.steps,
    livenessSteps: result.livenessSteps,
    simulatedMs: result.simulatedMs,
    wallMs: clock.now() - started,
    traceHash: result.traceHash,
    replay: jobsReplayCommand(plan, run.seed),
  }
  const report = { outcome, faults: result.faults, checkers: result.checkers, jobs: result.jobs }
  if (index !== 0) return report
  const determinism = { seed: run.seed, ...(await checkJobsDeterminism(run, seeded)) }
  return { ...report, first: { determinism, timeline: recorder?.data() } }
}

/** Runs every seed of `plan`, on `plan.parallel` worker threads or in this one; returns the report and the first seed's timeline. */
export async function runJobsBatch(plan: JobsBatchPlan, observer: JobsBatchObserver): Promise<{ report: JobsBatchReport; timeline: JobsTimelineData | undefined }> {
  const clock = new RealClock()
  const started = clock.now()
  const faults = Object.fromEntries(jobsFaultNames.map((name) => [name, 0])) as Record<JobsFaultName, number>
  const violations = Object.fromEntries(jobCheckerNames.map((name) => [name, 0])) as Record<JobCheckerName, number>
  const firstFailing: Partial<Record<JobCheckerName, number>> = {}
  const jobs = { enqueued: 0, recovered: 0, acked: 0, ackedUnheard: 0, cancelled: 0, cancelledUnheard: 0, dead: { failed: 0, exhausted: 0, expired: 0 }, reclaimed: 0, landedLate: 0, stranded: 0 }
  const seeds: JobsSeedOutcome[] = []
  let determinism: JobsDeterminismCheck | null = null
  let timeline: JobsTimelineData | undefined
  const unit = { module: import.meta.url, name: 'runJobsPlanSeed', run: runJobsPlanSeed }
  await runPlanSeeds(plan, unit, (seedReport: JobsPlanSeedReport, index) => {
    const { outcome } = seedReport
    seeds.push(outcome)
    for (const name of jobsFaultNames) faults[name] += seedReport.faults[name]
    for (const name of jobCheckerNames) {
      violations[name] += seedReport.checkers[name]
      if (seedReport.checkers[name] > 0) firstFailing[name] ??= outcome.seed
    }
    const r = seedReport.jobs
    for (const key of ['enqueued', 'recovered', 'acked', 'ackedUnheard', 'cancelled', 'cancelledUnheard', 'reclaimed', 'landedLate'] as const) jobs[key] += r[key]
    for (const key of ['failed', 'exhausted', 'expired'] as const) jobs.dead[key] += r.dead[key]
    jobs.stranded += r.stranded.length
    observer.seedFinished(outcome, index)
    if (seedReport.first !== undefined) {
      determinism = seedReport.first.determinism
      timeline = seedReport.first.timeline
      observer.determinismChecked(determinism)
    }
  })
  const failed = seeds.filter((seed) => !seed.ok).length
  const report: JobsBatchReport = {
    mode: 'jobs',
    store: plan.store,
    seeds,
    passed: seeds.length - failed,
    failed,
    events: seeds.reduce((sum, seed) => sum + seed.events, 0),
    wallMs: clock.now() - started,
    simulatedMs: seeds.reduce((sum, seed) => sum + seed.simulatedMs, 0),
    faults,
    checkers: jobCheckerNames.map((name) => ({ name, verdict: violations[name] === 0 ? 'pass' : `FAIL (${violations[name]}, first on seed ${firstFailing[name]})` })),
    jobs,
    determinism,
  }
  return { report, timeline }
}
