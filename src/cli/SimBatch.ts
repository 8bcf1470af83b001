/**
 * SimBatch — runs the seeds of one `matchbox sim` call and gathers its report: per seed the
 * options it drew and how it ended; over all seeds events, time, faults by kind, each checker's
 * verdict and the delivery categories; the determinism self-check on the first seed (run once
 * more and compared with the first run, line by line); the failure files it wrote.
 *
 * Wall time is measured through the kernel's `RealClock`; it never enters a run or its trace.
 * The first seed keeps its whole trace (for the determinism check, `--trace` and
 * `--timeline`); later seeds keep only the tail a failure file needs.
 *
 * Does not: print (SimSummary.ts, SimProgress.ts) or parse flags (sim.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { failureCaseOf, failureFileName, replayCommands } from '../../sim/matching/FailureCase.ts'
import { checkDeterminism, runSeed, type SeedResult, type SeedRun, type SimStoreKind } from '../../sim/matching/Simulation.ts'
import { describeOptions, type FaultName, faultNames, type SwarmOptions, type SwarmOverrides, swarmOptions } from '../../sim/matching/Swarm.ts'
import { TimelineRecorder } from '../../sim/matching/TimelineRecorder.ts'
import { checkerNames, type CheckerName, type DeliveryTotals, Verdicts } from '../../sim/matching/Verdicts.ts'
import { RealClock } from '../kernel/Clock.ts'

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
  readonly timeline: TimelineRecorder | undefined
}

/** Hears about a batch as it runs (progress output). */
export interface SimBatchObserver {
  seedStarting(seed: number, index: number, options: SwarmOptions): void
  seedFinished(outcome: SeedOutcome, index: number): void
  determinismChecking(seed: number): void
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

/** Runs every seed of `plan` in order. */
export async function runSimBatch(plan: SimBatchPlan, observer: SimBatchObserver): Promise<{ report: SimBatchReport; first: FirstSeed | undefined }> {
  const clock = new RealClock()
  const started = clock.now()
  const outcomes: SeedOutcome[] = []
  const faults = Object.fromEntries(faultNames.map((name) => [name, 0])) as Record<FaultName, number>
  const verdicts = new Verdicts()
  let determinism: DeterminismCheck | null = null
  let first: FirstSeed | undefined
  for (let index = 0; index < plan.seedCount; index++) {
    const run = seedRunOfPlan(plan, plan.firstSeed + index)
    observer.seedStarting(run.seed, index, swarmOptions(run.seed, run.overrides))
    const timeline = index === 0 && plan.timeline ? new TimelineRecorder(hostIdsOf(run)) : undefined
    const { outcome, seeded } = await runOneSeed(run, { keepTrace: index === 0, ...(timeline === undefined ? {} : { timeline }), failureDir: plan.failureDir })
    outcomes.push(outcome)
    for (const name of faultNames) faults[name] += seeded.result.faults[name]
    verdicts.add(run.seed, seeded.result.violations, seeded.result.deliveries)
    observer.seedFinished(outcome, index)
    if (index === 0) {
      first = { run, seeded, timeline }
      observer.determinismChecking(run.seed)
      const check = await checkDeterminism(run, seeded)
      determinism = { seed: run.seed, ...check }
    }
  }
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
