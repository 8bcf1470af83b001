/**
 * SeedBatch — the batch of seeds every workload runs (`matchbox sim`, `matchbox sim --jobs`):
 * seed after seed in this thread, or on worker threads (ParallelSeeds.ts) with each seed's
 * report handed on in seed order, so output and totals are a serial run's, wall times aside.
 * The first seed keeps its whole trace, is recorded for a timeline when the plan asks, and
 * runs once more for the determinism self-check (Determinism.ts). Over all seeds it keeps the
 * totals every report starts from: outcomes in seed order, passed and failed, events,
 * simulated and wall time, and faults by kind.
 *
 * A workload (sim/matching/Simulation.ts, sim/jobs/JobsSimulation.ts) supplies what differs:
 * how one seed of a plan runs and what its outcome and report carry, and how its checkers'
 * verdicts add up across seeds. Wall time comes from the kernel's `RealClock`; it never enters
 * a run or its trace.
 *
 * Does not: print, parse flags or write files.
 */
import { RealClock } from '../../src/kernel/Clock.ts'
import { checkTwice, type SimStoreKind, type TracedRun } from './Determinism.ts'
import { type PlanSeedUnit, runPlanSeeds, type SeedPlan } from './ParallelSeeds.ts'

/** What every workload's batch plan names. */
export interface BatchPlan<Overrides> extends SeedPlan {
  readonly firstSeed: number
  readonly store: SimStoreKind
  readonly databaseUrl?: string
  readonly overrides: Overrides
  /** Record the first seed for a timeline. */
  readonly timeline?: boolean
}

/** The determinism self-check's outcome. */
export interface DeterminismCheck {
  readonly seed: number
  readonly hash: string
  /** Null when both runs gave the same trace. */
  readonly divergence: string | null
}

/** How one seed ended, in the fields every workload reports (each adds its own). */
export interface SeedOutcomeBase {
  readonly seed: number
  /** The options it drew, as lines. */
  readonly options: ReadonlyArray<string>
  readonly ok: boolean
  readonly violations: ReadonlyArray<string>
  readonly events: number
  readonly steps: number
  readonly livenessSteps: number
  readonly simulatedMs: number
  readonly wallMs: number
  readonly traceHash: string
}

/** What every workload's batch report says (each adds its checkers and its own sums). */
export interface BatchReportBase<Outcome extends SeedOutcomeBase, FaultName extends string> {
  readonly store: SimStoreKind
  readonly seeds: ReadonlyArray<Outcome>
  readonly passed: number
  readonly failed: number
  readonly events: number
  readonly wallMs: number
  readonly simulatedMs: number
  readonly faults: Readonly<Record<FaultName, number>>
  readonly determinism: DeterminismCheck | null
}

/** What a seed's report carries for the batch, as plain data (it may cross threads); the first seed's also `first`. */
export interface BatchSeedReport<Outcome extends SeedOutcomeBase, FaultName extends string> {
  readonly outcome: Outcome
  readonly faults: Readonly<Record<FaultName, number>>
  readonly first?: { readonly determinism: DeterminismCheck }
}

/** Hears about a batch as it runs (progress output), in seed order. */
export interface BatchObserver<Outcome> {
  seedFinished(outcome: Outcome, index: number): void
  /** The first seed ran once more, to compare traces. */
  determinismChecked(check: DeterminismCheck): void
}

/** What every workload's batch report starts from. */
export interface BatchTotals<Outcome extends SeedOutcomeBase, FaultName extends string, First extends { readonly determinism: DeterminismCheck }> extends Omit<BatchReportBase<Outcome, FaultName>, 'store'> {
  /** Wall time of the seeds' own runs (the determinism re-run is not in it), for speed. */
  readonly seedWallMs: number
  /** The first seed's report part `first` (its run, timeline and determinism check). */
  readonly first: First | undefined
}

/** How one seed of a plan runs, for `runBatchSeed`. */
export interface BatchSeedRunner<Plan extends BatchPlan<unknown>, Run extends { readonly seed: number }, Seeded extends { readonly result: TracedRun }, Recorder extends { data(): unknown }, Report, Kept> {
  /** The run of seed `seed` of `plan`. */
  readonly runOf: (plan: Plan, seed: number) => Run
  /** A recorder of the first seed's timeline. */
  readonly recorderFor: (run: Run) => Recorder
  /** Runs the seed (with the recorder's listeners, when one is given) and says what it reports. */
  readonly runOne: (run: Run, options: { readonly keepTrace: boolean; readonly recorder: Recorder | undefined; readonly plan: Plan }) => Promise<{ readonly report: Report; readonly seeded: Seeded }>
  /** Runs the seed plainly: the determinism check's second run. */
  readonly runSeed: (run: Run & { readonly keepTrace: boolean }) => Promise<Seeded>
  /** What the first seed's report keeps of its run, beside its timeline and determinism check. */
  readonly keepFirst: (seeded: Seeded) => Kept
}

/** A seed's report as `runBatchSeed` returns it: the first seed's with `first`. */
export type WithFirst<Report, Kept, Timeline> = Report & { readonly first?: Kept & { readonly timeline: Timeline | undefined; readonly determinism: DeterminismCheck } }

/** The run of one seed of a plan. */
export function planSeedRun<Overrides>(plan: BatchPlan<Overrides>, seed: number): { readonly seed: number; readonly store: SimStoreKind; readonly overrides: Overrides; readonly databaseUrl?: string } {
  return { seed, store: plan.store, overrides: plan.overrides, ...(plan.databaseUrl === undefined ? {} : { databaseUrl: plan.databaseUrl }) }
}

/** Runs `run` once and says how long it took on the wall. */
export async function timed<T>(run: () => Promise<T>): Promise<{ readonly value: T; readonly wallMs: number }> {
  const clock = new RealClock()
  const started = clock.now()
  const value = await run()
  return { value, wallMs: clock.now() - started }
}

/**
 * Runs seed `index` of `plan`: the unit a worker runs. The first seed keeps its trace, is
 * recorded when the plan asks for a timeline and is checked for determinism; its report's
 * `first` holds the check, the timeline and what the runner keeps of its run.
 */
export async function runBatchSeed<Plan extends BatchPlan<unknown>, Run extends { readonly seed: number }, Seeded extends { readonly result: TracedRun }, Recorder extends { data(): unknown }, Report, Kept>(
  runner: BatchSeedRunner<Plan, Run, Seeded, Recorder, Report, Kept>,
  input: { readonly plan: Plan; readonly index: number },
): Promise<WithFirst<Report, Kept, ReturnType<Recorder['data']>>> {
  const { plan, index } = input
  const run = runner.runOf(plan, plan.firstSeed + index)
  const recorder = index === 0 && plan.timeline === true ? runner.recorderFor(run) : undefined
  const { report, seeded } = await runner.runOne(run, { keepTrace: index === 0, recorder, plan })
  if (index !== 0) return report as WithFirst<Report, Kept, ReturnType<Recorder['data']>>
  const determinism = { seed: run.seed, ...(await checkTwice(run, seeded, runner.runSeed)) }
  return { ...report, first: { ...runner.keepFirst(seeded), timeline: recorder?.data() as ReturnType<Recorder['data']> | undefined, determinism } }
}

/**
 * Runs every seed of `plan` through `unit`, on `plan.parallel` worker threads or in this one.
 * Each report reaches `add` (the workload's own sums: checkers, deliveries, jobs) and then the
 * observer, in seed order; `onStarted` hears each seed as it starts (ParallelSeeds.ts).
 */
export async function runSeedBatch<Plan extends BatchPlan<unknown>, FaultName extends string, Report extends BatchSeedReport<SeedOutcomeBase, FaultName>>(
  plan: Plan,
  unit: PlanSeedUnit<Plan, Report>,
  faultNames: ReadonlyArray<FaultName>,
  observer: BatchObserver<Report['outcome']>,
  add: (report: Report) => void,
  onStarted?: (index: number) => void,
): Promise<BatchTotals<Report['outcome'], FaultName, NonNullable<Report['first']>>> {
  type Outcome = Report['outcome']
  const clock = new RealClock()
  const started = clock.now()
  const seeds: Outcome[] = []
  const faults = Object.fromEntries(faultNames.map((name) => [name, 0])) as Record<FaultName, number>
  // A holder, not a `let`: the callback below sets it, which flow analysis does not follow.
  const kept: { first?: NonNullable<Report['first']> } = {}
  await runPlanSeeds(
    plan,
    unit,
    (report: Report, index) => {
      seeds.push(report.outcome)
      for (const name of faultNames) faults[name] += report.faults[name]
      add(report)
      observer.seedFinished(report.outcome, index)
      if (report.first !== undefined) {
        kept.first = report.first
        observer.determinismChecked(report.first.determinism)
      }
    },
    onStarted,
  )
  const wallMs = clock.now() - started
  const failed = seeds.filter((seed) => !seed.ok).length
  const sum = (of: (outcome: Outcome) => number): number => seeds.reduce((total, outcome) => total + of(outcome), 0)
  return {
    seeds,
    passed: seeds.length - failed,
    failed,
    events: sum((outcome) => outcome.events),
    wallMs,
    simulatedMs: sum((outcome) => outcome.simulatedMs),
    seedWallMs: sum((outcome) => outcome.wallMs),
    faults,
    determinism: kept.first?.determinism ?? null,
    first: kept.first,
  }
}
