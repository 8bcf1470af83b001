/**
 * Batch — runs the seeds of one Matching batch (`matchbox sim`) and gathers its report: per seed the
 * options it drew and how it ended; over all seeds events, time, faults by kind, each checker's
 * verdict and the delivery categories; the determinism self-check on the first seed (run once
 * more and compared with the first run, line by line); the failure files it wrote.
 *
 * Wall time is measured through the kernel's `RealClock`; it never enters a run or its trace.
 * The first seed keeps its whole trace (for the determinism check, `--trace` and
 * `--timeline`); later seeds keep only the tail a failure file needs.
 *
 * With `parallel` above 1 the seeds run on that many worker threads (core/ParallelSeeds.ts);
 * each seed's report is plain data and reaches the observer in seed order, so the output and
 * the report are the same as a serial run's, wall times aside.
 *
 * Does not: print or parse flags (the CLI's sim.ts, SimSummary.ts and SimProgress.ts do).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { RealClock } from '../../src/kernel/Clock.ts'
import { runPlanSeeds } from '../core/ParallelSeeds.ts'
import type { DeliveryReport } from '../core/Checkers.ts'
import { failureCaseOf, failureFileName, replayCommands } from './FailureCase.ts'
import { checkDeterminism, runSeed, type SeedResult, type SeedRun, type SimStoreKind } from './Simulation.ts'
import { describeOptions, type FaultName, faultNames, type SwarmOptions, type SwarmOverrides, swarmOptions } from './Swarm.ts'
import { type TimelineData, TimelineRecorder } from './TimelineRecorder.ts'
import { checkerNames, type CheckerName, type DeliveryTotals, Verdicts } from './Verdicts.ts'

/** What to run. */
export interface SimBatchPlan {
  readonly firstSeed: number
  readonly seedCount: number
  readonly store: SimStoreKind
  readonly databaseUrl?: string
  readonly overrides: SwarmOverrides
  /** Record the first seed for a timeline. */
  readonly timeline: boolean
  /** Where failure files go. */
  readonly failureDir: string
  /** Worker threads to run seeds on; 1 (the default) runs them in this thread. */
  readonly parallel?: number
}

/** How one seed ended. */
export interface SeedOutcome {
  readonly seed: number
  readonly options: ReadonlyArray<string>
  readonly ok: boolean
  readonly violations: ReadonlyArray<string>
  readonly events: number
  readonly ioRuns: number
  readonly steps: number
  readonly livenessSteps: number
  readonly simulatedMs: number
  readonly wallMs: number
  readonly traceHash: string
  /** The failure file written for it, if it failed. */
  readonly failureFile?: string
}

/** The determinism self-check's outcome. */
export interface DeterminismCheck {
  readonly seed: number
  readonly hash: string
  /** Null when both runs gave the same trace. */
  readonly divergence: string | null
}

/** What a batch reports. */
export interface SimBatchReport {
  readonly store: SimStoreKind
  readonly overrides: SwarmOverrides
  readonly seeds: ReadonlyArray<SeedOutcome>
  readonly passed: number
  readonly failed: number
  readonly events: number
  readonly ioRuns: number
  readonly wallMs: number
  readonly simulatedMs: number
  /** Events per second of the seeds' own runs (the determinism re-run is not counted). */
  readonly eventsPerSecond: number
  readonly faults: Readonly<Record<FaultName, number>>
  readonly checkers: ReadonlyArray<{ readonly name: CheckerName; readonly verdict: string; readonly violations: number }>
  readonly deliveries: DeliveryTotals
  readonly determinism: DeterminismCheck | null
  readonly replay: ReadonlyArray<{ readonly seed: number; readonly file: string; readonly commands: ReadonlyArray<string> }>
}

/** What the first seed leaves for `--trace` and `--timeline`. */
export interface FirstSeed {
  readonly run: SeedRun
  readonly seeded: SeedResult
  readonly timeline: TimelineData | undefined
}

/** Everything one seed of a plan hands back to its batch, as plain data (it may cross threads). */
export interface PlanSeedReport {
  readonly outcome: SeedOutcome
  readonly faults: Readonly<Record<FaultName, number>>
  readonly deliveries: DeliveryReport
  /** The first seed's whole run, timeline and determinism check. */
  readonly first?: { readonly seeded: SeedResult; readonly timeline: TimelineData | undefined; readonly determinism: DeterminismCheck }
}

/** Hears about a batch as it runs (progress output). */
export interface SimBatchObserver {
  seedStarting(seed: number, index: number, options: SwarmOptions): void
  seedFinished(outcome: SeedOutcome, index: number): void
  /** The first seed ran once more, to compare traces. */
  determinismChecked(check: DeterminismCheck): void
}

/** The run of one seed of a plan. */
export function seedRunOfPlan(plan: SimBatchPlan, seed: number): SeedRun {
  return { seed, store: plan.store, overrides: plan.overrides, ...(plan.databaseUrl === undefined ? {} : { databaseUrl: plan.databaseUrl }) }
}

/** Runs one seed, writes its failure file (if it failed and `failureDir` is given), and says how it ended. */
export async function runOneSeed(run: SeedRun, options: { keepTrace: boolean; timeline?: TimelineRecorder; failureDir?: string }): Promise<{ outcome: SeedOutcome; seeded: SeedResult }> {
  const clock = new RealClock()
  const started = clock.now()
  const seeded = await runSeed({
    ...run,
    keepTrace: options.keepTrace,
    ...(options.timeline === undefined ? {} : { onBoundary: options.timeline.onBoundary, onEvent: options.timeline.onEvent }),
  })
  const { result } = seeded
  let failureFile: string | undefined
  if (!result.ok && options.failureDir !== undefined) {
    mkdirSync(options.failureDir, { recursive: true })
    failureFile = join(options.failureDir, failureFileName(run.seed))
    writeFileSync(failureFile, `${JSON.stringify(failureCaseOf(run, seeded), null, 2)}\n`)
  }
  const outcome: SeedOutcome = {
    seed: run.seed,
    options: describeOptions(seeded.options),
    ok: result.ok,
    violations: result.violations,
    events: result.events,
    ioRuns: result.ioRuns,
    steps: result.steps,
    livenessSteps: result.livenessSteps,
    simulatedMs: result.simulatedMs,
    wallMs: clock.now() - started,
    traceHash: result.traceHash,
    ...(failureFile === undefined ? {} : { failureFile }),
  }
  return { outcome, seeded }
}

/** The host ids a seed's world will have, for timeline lanes. */
export function hostIdsOf(run: SeedRun): string[] {
  const { hosts } = swarmOptions(run.seed, run.overrides)
  return Array.from({ length: hosts }, (_, i) => `host-${i + 1}`)
}

/** Runs seed `index` of `plan` (the first one also for the determinism check and its timeline); the unit a worker runs. */
export async function runPlanSeed(input: { readonly plan: SimBatchPlan; readonly index: number }): Promise<PlanSeedReport> {
  const { plan, index } = input
  const run = seedRunOfPlan(plan, plan.firstSeed + index)
  const recorder = index === 0 && plan.timeline ? new TimelineRecorder(hostIdsOf(run)) : undefined
  const { outcome, seeded } = await runOneSeed(run, { keepTrace: index === 0, ...(recorder === undefined ? {} : { timeline: recorder }), failureDir: plan.failureDir })
  const report = { outcome, faults: seeded.result.faults, deliveries: seeded.result.deliveries }
  if (index !== 0) return report
  const determinism = { seed: run.seed, ...(await checkDeterminism(run, seeded)) }
  return { ...report, first: { seeded, timeline: recorder?.data(), determinism } }
}

/** Runs every seed of `plan`, on `plan.parallel` worker threads or in this one; the observer hears them in seed order. */
export async function runSimBatch(plan: SimBatchPlan, observer: SimBatchObserver): Promise<{ report: SimBatchReport; first: FirstSeed | undefined }> {
  const clock = new RealClock()
  const started = clock.now()
  const outcomes: SeedOutcome[] = []
  const faults = Object.fromEntries(faultNames.map((name) => [name, 0])) as Record<FaultName, number>
  const verdicts = new Verdicts()
  let determinism: DeterminismCheck | null = null
  let first: FirstSeed | undefined
  // A seed's header shows once it started and the seed before it was handed on: its options,
  // then its verdict, never another seed's lines between them.
  const starting = (index: number): void => observer.seedStarting(plan.firstSeed + index, index, swarmOptions(plan.firstSeed + index, plan.overrides))
  const unit = { module: import.meta.url, name: 'runPlanSeed', run: runPlanSeed }
  await runPlanSeeds(plan, unit, (seedReport: PlanSeedReport, index) => {
    const { outcome } = seedReport
    outcomes.push(outcome)
    for (const name of faultNames) faults[name] += seedReport.faults[name]
    verdicts.add(outcome.seed, outcome.violations, seedReport.deliveries)
    observer.seedFinished(outcome, index)
    if (seedReport.first !== undefined) {
      first = { run: seedRunOfPlan(plan, outcome.seed), seeded: seedReport.first.seeded, timeline: seedReport.first.timeline }
      determinism = seedReport.first.determinism
      observer.determinismChecked(determinism)
    }
  }, starting)
  const wallMs = clock.now() - started
  const events = outcomes.reduce((sum, outcome) => sum + outcome.events, 0)
  const failedOutcomes = outcomes.filter((outcome) => !outcome.ok)
  // Speed counts the seeds' own runs, not the determinism check's extra run.
  const seedWallMs = outcomes.reduce((sum, outcome) => sum + outcome.wallMs, 0)
  const report: SimBatchReport = {
    store: plan.store,
    overrides: plan.overrides,
    seeds: outcomes,
    passed: outcomes.length - failedOutcomes.length,
    failed: failedOutcomes.length,
    events,
    ioRuns: outcomes.reduce((sum, outcome) => sum + outcome.ioRuns, 0),
    wallMs,
    simulatedMs: outcomes.reduce((sum, outcome) => sum + outcome.simulatedMs, 0),
    eventsPerSecond: seedWallMs === 0 ? 0 : Math.round((events / seedWallMs) * 1000),
    faults,
    checkers: checkerNames.map((name) => ({ name, verdict: verdicts.verdict(name), violations: verdicts.violations[name] })),
    deliveries: verdicts.deliveries,
    determinism,
    replay: failedOutcomes.flatMap((outcome) => (outcome.failureFile === undefined ? [] : [{ seed: outcome.seed, file: outcome.failureFile, commands: replayCommands(outcome.failureFile) }])),
  }
  return { report, first }
}
