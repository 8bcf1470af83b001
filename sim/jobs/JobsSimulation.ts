/**
 * JobsSimulation — the end-to-end (Jobs) workload on the simulator's one harness
 * (core/SeedRun.ts, core/SeedBatch.ts), whose hosts run the real job engine (JobsWorld.ts).
 * It opens the shared database a world needs — memory (one MemoryStore and one MemoryJobStore
 * shared by every host), embedded (one PGlite shared), or PostgreSQL (one `pg` Pool per host,
 * through `openPostgresStore` and the SQL JobStore on a driver over the same pool, every run in
 * its own schema) — and says what a `--jobs` batch reports beyond the harness's totals: each
 * job checker's verdict (with the first seed it failed on) and where every enqueued job ended.
 * The group's membership table and bus live in the world itself, in memory on every store
 * kind, so a seed's trace is the same on memory and on PostgreSQL — except on the seeds that draw
 * row-lock windows (JobsSwarm.ts `rowLockChance`), which only the memory store takes
 * (SimRowLocks.ts: its `heldHeads` option, through the slot opened here).
 *
 * Does not: print or parse flags (the CLI does), or write failure files: a failing seed is
 * replayed with `--jobs --seed S` on the same store.
 */
import pg from 'pg'
import { makeMemoryJobStore } from '../../src/persistence/jobs/MemoryJobStore.ts'
import type { JobStore } from '../../src/persistence/jobs/JobStore.ts'
import { makeSqlJobStore } from '../../src/persistence/jobs/sql/SqlJobStore.ts'
import { makeMemoryStore } from '../../src/persistence/queues/MemoryStore.ts'
import { openPostgresStore, openSqlStore } from '../../src/persistence/queues/sql/openSqlStore.ts'
import { makePgDriver } from '../../src/persistence/sql/PgDriver.ts'
import { makePgliteDriver } from '../../src/persistence/sql/PgliteDriver.ts'
import { makeSchema } from '../../src/persistence/sql/Schema.ts'
import type { Store } from '../../src/persistence/queues/Store.ts'
import { checkTwice } from '../core/Determinism.ts'
import { type BatchObserver, type BatchPlan, type BatchReportBase, type BatchSeedRunner, type DeterminismCheck, planSeedRun, runBatchSeed, runSeedBatch, type SeedOutcomeBase, timed } from '../core/SeedBatch.ts'
import { joinNamesMax } from './MembershipMoves.ts'
import { databaseUrlOf, hostIdsFor, type OpenedStores, runSchema, runWorld, type SeedRunBase, worldBasicsOf } from '../core/SeedRun.ts'
import { type JobCheckerName, jobCheckerNames, type JobsReport } from './JobCheckers.ts'
import { makeRowLockSlot, type RowLockSlot } from './SimRowLocks.ts'
import { describeJobsOptions, type JobsFaultName, jobsFaultNames, type JobsSwarmOptions, type JobsSwarmOverrides, jobsSwarmOptions } from './JobsSwarm.ts'
import type { JobsMutant } from './JobMutations.ts'
import { type JobsTimelineData, JobsTimelineRecorder } from './JobTimeline.ts'
import { type JobsRunResult, JobsWorld, type JobsWorldConfig } from './JobsWorld.ts'

/** How to run one end-to-end seed. */
export interface JobsSeedRun extends SeedRunBase<JobsSwarmOverrides> {
  /** Wraps the shared job store (the job mutation menu); on PostgreSQL each host's. */
  readonly wrapJobStore?: (store: JobStore) => JobStore
  /** One deliberate bug of the job mutation menu (JobMutations.ts `makeJobsMutant`): its store wrapper (instead of `wrapJobStore`), bus tap and membership wrapper. */
  readonly mutant?: JobsMutant
  /** Observes every committed JobStore call (timelines). */
  readonly onJobs?: JobsWorldConfig['onJobs']
  /** Observes faults, membership views and the heal (timelines). */
  readonly onEvent?: JobsWorldConfig['onEvent']
}

/** A seed's options and result. */
export interface JobsSeedResult {
  readonly options: JobsSwarmOptions
  readonly result: JobsRunResult
}

interface JobsStores extends OpenedStores {
  readonly storeFor: (hostId: string) => Store
  readonly jobStoreFor: (hostId: string) => JobStore
  /** Where the memory store reads the world's row-lock windows (SimRowLocks.ts); absent on the SQL stores. */
  readonly rowLockSlot?: RowLockSlot
}

/**
 * The names a world's membership moves may give the worker processes that join it
 * (MembershipMoves.ts: `joinNamesMax` unused names from one past the count of hosts so far, for
 * each join): on PostgreSQL each host has a connection of its own, opened with the world. Before
 * the last of `moves` joins, up to `moves - 1` hosts have joined, each adding one to where the
 * names start and taking one name among them, so the last name is at most
 * `hosts + 2 * (moves - 1) + joinNamesMax`.
 */
export function joinerIdsFor(hosts: number, moves: number): ReadonlyArray<string> {
  return moves === 0 ? [] : Array.from({ length: 2 * (moves - 1) + joinNamesMax }, (_, i) => `host-${hosts + 1 + i}`)
}

async function openStores(run: JobsSeedRun, hostIds: ReadonlyArray<string>): Promise<JobsStores> {
  const wrap = run.mutant?.wrapJobStore ?? run.wrapJobStore ?? ((store: JobStore) => store)
  if (run.store === 'memory') {
    const store = makeMemoryStore()
    const rowLockSlot = makeRowLockSlot()
    const jobStore = wrap(makeMemoryJobStore({ queueRanges: store, heldHeads: () => rowLockSlot.heads }))
    return { storeFor: () => store, jobStoreFor: () => jobStore, rowLockSlot, close: () => store.close() }
  }
  if (run.store === 'embedded') {
    const driver = await makePgliteDriver()
    const store = await openSqlStore(driver)
    const jobStore = wrap(makeSqlJobStore(driver, makeSchema()))
    return { storeFor: () => store, jobStoreFor: () => jobStore, close: () => store.close() }
  }
  const connectionString = databaseUrlOf(run)
  const schema = runSchema('simjobs', run.seed)
  const hosts = new Map<string, { pool: pg.Pool; store: Store; jobStore: JobStore }>()
  for (const hostId of hostIds) {
    const pool = new pg.Pool({ connectionString, max: 2 })
    // A dropped idle connection surfaces on the next query as Unavailable; here it must not crash.
    pool.on('error', () => {})
    const store = await openPostgresStore({ pool, schema })
    hosts.set(hostId, { pool, store, jobStore: wrap(makeSqlJobStore(makePgDriver({ pool }), makeSchema(schema))) })
  }
  const of = (hostId: string) => hosts.get(hostId) as { pool: pg.Pool; store: Store; jobStore: JobStore }
  return {
    storeFor: (hostId) => of(hostId).store,
    jobStoreFor: (hostId) => of(hostId).jobStore,
    close: async () => {
      for (const host of hosts.values()) {
        await host.store.close()
        await host.pool.end()
      }
    },
  }
}

/** Runs one end-to-end seed to completion. */
export function runJobsSeed(run: JobsSeedRun): Promise<JobsSeedResult> {
  const options = jobsSwarmOptions(run.seed, run.overrides)
  return runWorld(
    options,
    (hostIds) => openStores(run, [...hostIds, ...joinerIdsFor(hostIds.length, options.membershipMoves)]),
    (stores) =>
      new JobsWorld({
        options,
        store: run.store,
        storeFor: stores.storeFor,
        jobStoreFor: stores.jobStoreFor,
        ...(stores.rowLockSlot === undefined ? {} : { rowLockSlot: stores.rowLockSlot }),
        ...worldBasicsOf(run),
        ...(run.mutant?.busTap === undefined ? {} : { busTap: run.mutant.busTap }),
        ...(run.mutant?.wrapMembership === undefined ? {} : { wrapMembership: run.mutant.wrapMembership }),
        ...(run.mutant === undefined ? {} : { mutant: run.mutant }),
        ...(run.onJobs === undefined ? {} : { onJobs: run.onJobs }),
        ...(run.onEvent === undefined ? {} : { onEvent: run.onEvent }),
      }).run(),
  )
}

/** Runs an end-to-end seed twice; the first line where the traces part, or null. */
export function checkJobsDeterminism(run: JobsSeedRun, earlier?: JobsSeedResult): Promise<{ hash: string; divergence: string | null }> {
  return checkTwice(run, earlier, runJobsSeed)
}

/** What one `--jobs` batch runs. */
export type JobsBatchPlan = BatchPlan<JobsSwarmOverrides>

/** How one end-to-end seed ended. */
export interface JobsSeedOutcome extends SeedOutcomeBase {
  /** Violations of the checkers on the known-failing list (KnownEngineFailures.ts): printed, not failing the seed. */
  readonly knownFailing: ReadonlyArray<string>
  /** The command that replays it. */
  readonly replay: string
}

/** The determinism self-check's outcome (core/SeedBatch.ts). */
export type JobsDeterminismCheck = DeterminismCheck

/** What a `--jobs` batch reports (also its `--json` output). */
export interface JobsBatchReport extends BatchReportBase<JobsSeedOutcome, JobsFaultName> {
  readonly mode: 'jobs'
  readonly checkers: ReadonlyArray<{ readonly name: string; readonly verdict: string }>
  readonly jobs: Omit<JobsReport, 'stranded'> & { readonly stranded: number }
}

/** Everything one seed of a plan hands back to its batch, as plain data (it may cross threads). */
export interface JobsPlanSeedReport {
  readonly outcome: JobsSeedOutcome
  readonly faults: Readonly<Record<JobsFaultName, number>>
  readonly checkers: Readonly<Record<JobCheckerName, number>>
  readonly jobs: JobsReport
  /** The first seed's determinism check, timeline and whole trace. */
  readonly first?: { readonly determinism: JobsDeterminismCheck; readonly timeline: JobsTimelineData | undefined; readonly trace: ReadonlyArray<string> }
}

/** Hears about a batch as it runs (progress output), in seed order. */
export type JobsBatchObserver = BatchObserver<JobsSeedOutcome>

/** The run of one seed of a plan. */
export function jobsSeedRunOf(plan: JobsBatchPlan, seed: number): JobsSeedRun {
  return planSeedRun(plan, seed)
}

/** The command that replays one seed of a plan. */
export function jobsReplayCommand(plan: Pick<JobsBatchPlan, 'store' | 'overrides'>, seed: number): string {
  const { hosts, steps } = plan.overrides
  return `npx matchbox sim --jobs --store ${plan.store} --seed ${seed}${hosts === undefined ? '' : ` --hosts ${hosts}`}${steps === undefined ? '' : ` --steps ${steps}`}`
}

/** The host ids a seed's world will have, for timeline lanes. */
export function jobsHostIdsOf(run: JobsSeedRun): string[] {
  return hostIdsFor(jobsSwarmOptions(run.seed, run.overrides).hosts)
}

const seedRunner: BatchSeedRunner<JobsBatchPlan, JobsSeedRun, JobsSeedResult, JobsTimelineRecorder, Omit<JobsPlanSeedReport, 'first'>, { readonly trace: ReadonlyArray<string> }> = {
  runOf: jobsSeedRunOf,
  recorderFor: (run) => new JobsTimelineRecorder(jobsHostIdsOf(run)),
  runOne: async (run, { keepTrace, recorder, plan }) => {
    const listeners = recorder === undefined ? {} : { onJobs: recorder.onJobs, onEvent: recorder.onEvent }
    const { value: seeded, wallMs } = await timed(() => runJobsSeed({ ...run, keepTrace, ...listeners }))
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
      wallMs,
      traceHash: result.traceHash,
      replay: jobsReplayCommand(plan, run.seed),
    }
    return { report: { outcome, faults: result.faults, checkers: result.checkers, jobs: result.jobs }, seeded }
  },
  runSeed: runJobsSeed,
  // Of the run itself, its trace (`--trace`), beside its timeline and determinism check.
  keepFirst: (seeded) => ({ trace: seeded.result.trace }),
}

/** Runs seed `index` of `plan` (the first one also for the determinism check and its timeline); the unit a worker runs. */
export function runJobsPlanSeed(input: { readonly plan: JobsBatchPlan; readonly index: number }): Promise<JobsPlanSeedReport> {
  return runBatchSeed(seedRunner, input)
}

// Where the jobs of every seed ended, summed; stranded jobs counted, not listed.
function makeJobsTotals(): { add: (report: JobsReport) => void; totals: JobsBatchReport['jobs'] } {
  const jobs = { enqueued: 0, recovered: 0, acked: 0, ackedUnheard: 0, cancelled: 0, cancelledUnheard: 0, dead: { failed: 0, exhausted: 0, expired: 0 }, reclaimed: 0, landedLate: 0, stranded: 0 }
  const add = (r: JobsReport): void => {
    for (const key of ['enqueued', 'recovered', 'acked', 'ackedUnheard', 'cancelled', 'cancelledUnheard', 'reclaimed', 'landedLate'] as const) jobs[key] += r[key]
    for (const key of ['failed', 'exhausted', 'expired'] as const) jobs.dead[key] += r.dead[key]
    jobs.stranded += r.stranded.length
  }
  return { add, totals: jobs }
}

/** Runs every seed of `plan`, on `plan.parallel` worker threads or in this one; returns the report and the first seed's timeline and trace. */
export async function runJobsBatch(plan: JobsBatchPlan, observer: JobsBatchObserver): Promise<{ report: JobsBatchReport; timeline: JobsTimelineData | undefined; trace: ReadonlyArray<string> | undefined }> {
  const violations = Object.fromEntries(jobCheckerNames.map((name) => [name, 0])) as Record<JobCheckerName, number>
  const firstFailing: Partial<Record<JobCheckerName, number>> = {}
  const jobs = makeJobsTotals()
  const add = (seedReport: JobsPlanSeedReport): void => {
    for (const name of jobCheckerNames) {
      violations[name] += seedReport.checkers[name]
      if (seedReport.checkers[name] > 0) firstFailing[name] ??= seedReport.outcome.seed
    }
    jobs.add(seedReport.jobs)
  }
  const unit = { module: import.meta.url, name: 'runJobsPlanSeed', run: runJobsPlanSeed }
  const totals = await runSeedBatch(plan, unit, jobsFaultNames, observer, add)
  const report: JobsBatchReport = {
    mode: 'jobs',
    store: plan.store,
    seeds: totals.seeds,
    passed: totals.passed,
    failed: totals.failed,
    events: totals.events,
    wallMs: totals.wallMs,
    simulatedMs: totals.simulatedMs,
    faults: totals.faults,
    checkers: jobCheckerNames.map((name) => ({ name, verdict: violations[name] === 0 ? 'pass' : `FAIL (${violations[name]}, first on seed ${firstFailing[name]})` })),
    jobs: jobs.totals,
    determinism: totals.determinism,
  }
  return { report, timeline: totals.first?.timeline, trace: totals.first?.trace }
}
