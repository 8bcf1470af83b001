/**
 * Simulation — the Matching workload on the simulator's one harness (core/SeedRun.ts,
 * core/SeedBatch.ts): the stores a Matching world needs (memory, embedded PGlite, or PostgreSQL
 * with one pool per host), the world over them, and what a Matching batch reports beyond the
 * harness's totals: per seed the options it drew, its store and History calls and the failure
 * file it wrote; over all seeds each checker's verdict, the delivery categories, speed and the
 * commands that replay each failing seed.
 *
 * The first seed keeps its whole run (for the determinism check, `--trace` and `--timeline`);
 * later seeds keep only the trace tail a failure file needs.
 *
 * Does not: print or parse flags (the CLI's sim.ts, SimSummary.ts and SimProgress.ts do).
 */
import type { HostWaitingPolls } from '../../src/actors/MatchingHostWaiting.ts'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { PGlite } from '@electric-sql/pglite'
import type { Store } from '../../src/persistence/queues/Store.ts'
import { makeMemoryStore } from '../../src/persistence/queues/MemoryStore.ts'
import { openEmbeddedStore, openPostgresStore } from '../../src/persistence/queues/sql/openSqlStore.ts'
import type { BoundaryRecord } from '../core/Boundary.ts'
import type { DeliveryReport } from '../core/Checkers.ts'
import { checkTwice, type SimStoreKind } from '../core/Determinism.ts'
import { type BatchObserver, type BatchPlan, type BatchReportBase, type BatchSeedRunner, type DeterminismCheck, planSeedRun, runBatchSeed, runSeedBatch, type SeedOutcomeBase, timed } from '../core/SeedBatch.ts'
import { databaseUrlOf, hostIdsFor, runSchema, runWorld, type SeedRunBase, worldBasicsOf } from '../core/SeedRun.ts'
import { failureCaseOf, failureFileName, replayCommands } from './FailureCase.ts'
import { describeOptions, type FaultName, faultNames, type SwarmOptions, type SwarmOverrides, swarmOptions } from './Swarm.ts'
import { RangeTimelineRecorder, type TimelineData } from './RangeTimeline.ts'
import { checkerNames, type CheckerName, type DeliveryTotals, Verdicts } from './Verdicts.ts'
import { type RunResult, World, type WorldEvent } from './World.ts'

/** Which store the world runs on (core/Determinism.ts). */
export type { SimStoreKind }
/** The determinism self-check's outcome (core/SeedBatch.ts). */
export type { DeterminismCheck }

/** How to run one seed. */
export interface SeedRun extends SeedRunBase<SwarmOverrides> {
  /**
   * For `embedded`: a PGlite instance to run on (left open), each run in a schema of its own.
   * Without it a run starts an instance of its own, which takes seconds.
   */
  readonly pglite?: PGlite
  /** Wraps the shared store (the store-side mutations). */
  readonly wrapStore?: (store: Store) => Store
  /** Wraps each host process's gated store (the host-side mutations). */
  readonly wrapHostStore?: (hostId: string, store: Store) => Store
  /** Makes each host's book of waiting polls (a host-side mutation). */
  readonly waitingPolls?: () => HostWaitingPolls
  readonly onBoundary?: (record: BoundaryRecord, nowMs: number) => void
  /** Observes faults, History answers and the heal (timelines). */
  readonly onEvent?: (event: WorldEvent, nowMs: number) => void
}

/** A seed's options and result. */
export interface SeedResult {
  readonly options: SwarmOptions
  readonly result: RunResult
}

/** Opens the stores of one run; `close` releases them. */
async function openStores(run: SeedRun, hostIds: ReadonlyArray<string>): Promise<{ storeFor: (hostId: string) => Store; close: () => Promise<void> }> {
  const wrap = run.wrapStore ?? ((store: Store) => store)
  if (run.store === 'memory') {
    const shared = wrap(makeMemoryStore())
    return { storeFor: () => shared, close: () => shared.close() }
  }
  if (run.store === 'embedded') {
    const shared = wrap(await openEmbeddedStore(run.pglite === undefined ? {} : { pglite: run.pglite, schema: runSchema('sim', run.seed) }))
    return { storeFor: () => shared, close: () => shared.close() }
  }
  const connectionString = databaseUrlOf(run)
  // One pool per host, as separate processes would have, all in the run's own schema.
  const schema = runSchema('sim', run.seed)
  const stores = new Map<string, Store>()
  for (const hostId of hostIds) stores.set(hostId, wrap(await openPostgresStore({ connectionString, schema })))
  return {
    storeFor: (hostId) => stores.get(hostId) as Store,
    close: async () => {
      for (const store of stores.values()) await store.close()
    },
  }
}

/** Runs one seed to completion. */
export function runSeed(run: SeedRun): Promise<SeedResult> {
  const options = swarmOptions(run.seed, run.overrides)
  return runWorld(
    options,
    (hostIds) => openStores(run, hostIds),
    (stores) =>
      new World({
        options,
        storeFor: stores.storeFor,
        ...worldBasicsOf(run),
        ...(run.onBoundary === undefined ? {} : { onBoundary: run.onBoundary }),
        ...(run.wrapHostStore === undefined ? {} : { wrapHostStore: run.wrapHostStore }),
        ...(run.waitingPolls === undefined ? {} : { waitingPolls: run.waitingPolls }),
        ...(run.onEvent === undefined ? {} : { onEvent: run.onEvent }),
      }).run(),
  )
}

/**
 * Runs a seed twice and reports the first trace line where the runs diverge, or null. `earlier`,
 * a result of the same run already made with `keepTrace`, stands in for the first run.
 */
export function checkDeterminism(run: SeedRun, earlier?: SeedResult): Promise<{ hash: string; divergence: string | null }> {
  return checkTwice(run, earlier, runSeed)
}

/** A schedule property's world (core/ScheduleProperty.ts): the schedule's seed and decisions, run on `run`'s store. */
export function matchingWorld(run: Omit<SeedRun, 'seed' | 'script'>): (schedule: { readonly seed: number; readonly script: ReadonlyArray<number> }) => Promise<RunResult> {
  return async (schedule) => (await runSeed({ ...run, seed: schedule.seed, script: schedule.script })).result
}

/** What a Matching batch runs. */
export interface SimBatchPlan extends BatchPlan<SwarmOverrides> {
  /** Where failure files go. */
  readonly failureDir: string
}

/** How one seed ended. */
export interface SeedOutcome extends SeedOutcomeBase {
  /** Store and History calls it ran. */
  readonly ioRuns: number
  /** The failure file written for it, if it failed. */
  readonly failureFile?: string
}

/** What a batch reports. */
export interface SimBatchReport extends BatchReportBase<SeedOutcome, FaultName> {
  readonly overrides: SwarmOverrides
  readonly ioRuns: number
  /** Events per second of the seeds' own runs (the determinism re-run is not counted). */
  readonly eventsPerSecond: number
  readonly checkers: ReadonlyArray<{ readonly name: CheckerName; readonly verdict: string; readonly violations: number }>
  readonly deliveries: DeliveryTotals
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
export interface SimBatchObserver extends BatchObserver<SeedOutcome> {
  seedStarting(seed: number, index: number, options: SwarmOptions): void
}

/** The run of one seed of a plan. */
export function seedRunOfPlan(plan: SimBatchPlan, seed: number): SeedRun {
  return planSeedRun(plan, seed)
}

/** Runs one seed, writes its failure file (if it failed and `failureDir` is given), and says how it ended. */
export async function runOneSeed(run: SeedRun, options: { keepTrace: boolean; timeline?: RangeTimelineRecorder; failureDir?: string }): Promise<{ outcome: SeedOutcome; seeded: SeedResult }> {
  const listeners = options.timeline === undefined ? {} : { onBoundary: options.timeline.onBoundary, onEvent: options.timeline.onEvent }
  const { value: seeded, wallMs } = await timed(async () => {
    const ran = await runSeed({ ...run, keepTrace: options.keepTrace, ...listeners })
    if (!ran.result.ok && options.failureDir !== undefined) writeFailureCase(options.failureDir, run, ran)
    return ran
  })
  const { result } = seeded
  const failureFile = !result.ok && options.failureDir !== undefined ? join(options.failureDir, failureFileName(run.seed)) : undefined
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
    wallMs,
    traceHash: result.traceHash,
    ...(failureFile === undefined ? {} : { failureFile }),
  }
  return { outcome, seeded }
}

function writeFailureCase(failureDir: string, run: SeedRun, seeded: SeedResult): void {
  mkdirSync(failureDir, { recursive: true })
  writeFileSync(join(failureDir, failureFileName(run.seed)), `${JSON.stringify(failureCaseOf(run, seeded), null, 2)}\n`)
}

/** The host ids a seed's world will have, for timeline lanes. */
export function hostIdsOf(run: SeedRun): string[] {
  return hostIdsFor(swarmOptions(run.seed, run.overrides).hosts)
}

const seedRunner: BatchSeedRunner<SimBatchPlan, SeedRun, SeedResult, RangeTimelineRecorder, Omit<PlanSeedReport, 'first'>, { readonly seeded: SeedResult }> = {
  runOf: seedRunOfPlan,
  recorderFor: (run) => new RangeTimelineRecorder(hostIdsOf(run)),
  runOne: async (run, { keepTrace, recorder, plan }) => {
    const { outcome, seeded } = await runOneSeed(run, { keepTrace, ...(recorder === undefined ? {} : { timeline: recorder }), failureDir: plan.failureDir })
    return { report: { outcome, faults: seeded.result.faults, deliveries: seeded.result.deliveries }, seeded }
  },
  runSeed,
  // The first seed's whole run goes back for `--trace` and `--timeline`.
  keepFirst: (seeded) => ({ seeded }),
}

/** Runs seed `index` of `plan` (the first one also for the determinism check and its timeline); the unit a worker runs. */
export function runPlanSeed(input: { readonly plan: SimBatchPlan; readonly index: number }): Promise<PlanSeedReport> {
  return runBatchSeed(seedRunner, input)
}

/** Runs every seed of `plan`, on `plan.parallel` worker threads or in this one; the observer hears them in seed order. */
export async function runSimBatch(plan: SimBatchPlan, observer: SimBatchObserver): Promise<{ report: SimBatchReport; first: FirstSeed | undefined }> {
  const verdicts = new Verdicts()
  // A seed's header shows once it started and the seed before it was handed on: its options,
  // then its verdict, never another seed's lines between them.
  const starting = (index: number): void => observer.seedStarting(plan.firstSeed + index, index, swarmOptions(plan.firstSeed + index, plan.overrides))
  const unit = { module: import.meta.url, name: 'runPlanSeed', run: runPlanSeed }
  const add = (seedReport: PlanSeedReport): void => verdicts.add(seedReport.outcome.seed, seedReport.outcome.violations, seedReport.deliveries)
  const totals = await runSeedBatch(plan, unit, faultNames, observer, add, starting)
  const failedOutcomes = totals.seeds.filter((outcome) => !outcome.ok)
  const report: SimBatchReport = {
    store: plan.store,
    overrides: plan.overrides,
    seeds: totals.seeds,
    passed: totals.passed,
    failed: totals.failed,
    events: totals.events,
    ioRuns: totals.seeds.reduce((sum, outcome) => sum + outcome.ioRuns, 0),
    wallMs: totals.wallMs,
    simulatedMs: totals.simulatedMs,
    eventsPerSecond: totals.seedWallMs === 0 ? 0 : Math.round((totals.events / totals.seedWallMs) * 1000),
    faults: totals.faults,
    checkers: checkerNames.map((name) => ({ name, verdict: verdicts.verdict(name), violations: verdicts.violations[name] })),
    deliveries: verdicts.deliveries,
    determinism: totals.determinism,
    replay: failedOutcomes.flatMap((outcome) => (outcome.failureFile === undefined ? [] : [{ seed: outcome.seed, file: outcome.failureFile, commands: replayCommands(outcome.failureFile) }])),
  }
  const first = totals.first === undefined ? undefined : { run: seedRunOfPlan(plan, plan.firstSeed), seeded: totals.first.seeded, timeline: totals.first.timeline }
  return { report, first }
}
