/**
 * Simulator bench — `npx tsx bench/sim.ts` (all stores) or `npx tsx bench/sim.ts --store memory`.
 *
 * Runs whole seeds (1, 2, 3, … with the default swarm options) on each store for a fixed time
 * budget and reports simulated machine events/s (one event = one step of a physical queue
 * machine), store and History calls run/s, world decisions (steps)/s and simulated time per
 * wall second, with each store's events/s as a ratio to memory measured in the same run.
 * A seed always runs to completion, so a budget may be overshot by one seed.
 *
 * PostgreSQL: DATABASE_URL if set (a database the bench may fill: each seed gets its own
 * schema), else a throwaway cluster from test/harness/PostgresCluster.ts. The whole bench is
 * bounded to about a minute. Numbers compare stores on one machine; they are not claims. The
 * simulator runs from the compiled package, as `matchbox sim` does (bench/built.ts).
 *
 * Beside each store's events/s it prints the same figure for the previous commit's build
 * (`--against REV`, default HEAD~1; `--no-baseline` skips it), checked out and built in a
 * temporary worktree (bench/Baseline.ts) and run in the same process, the two builds taking
 * turns in slices of the budget (ABBA order) on the same seeds, so the ratio compares them under the same
 * load: a change that slows the simulator shows, whatever the machine's absolute speed. The
 * comparison is not yet unbiased: on the 2-core development machine a run against the same
 * code (`--against HEAD`) read 0.939× and 0.958×, so read a ratio beside that figure.
 */
import pg from 'pg'
import type * as Simulation from '../sim/matching/Simulation.ts'
import type { SimStoreKind } from '../sim/matching/Simulation.ts'
import { type RunningCluster, startCluster } from '../test/harness/PostgresCluster.ts'
import { type Baseline, prepareBaseline } from './Baseline.ts'
import { benchSourceText, loadBuilt } from './built.ts'

type RunSeed = (typeof Simulation)['runSeed']
const { runSeed } = await loadBuilt<typeof Simulation>('sim/matching/Simulation.ts')

// Per-store budgets: PGlite is the slowest per call and opens a fresh in-process database per
// seed (~2 s), so it gets the most time to finish a few seeds.
const budgetMs: Record<SimStoreKind, number> = { memory: 15_000, embedded: 25_000, postgres: 15_000 }

interface Row {
  readonly store: SimStoreKind
  readonly seeds: number
  readonly events: number
  readonly ioRuns: number
  readonly steps: number
  readonly simulatedMs: number
  readonly wallMs: number
}

// A build's running totals on one store; each slice goes on from the seed the last one reached.
class Tally {
  seeds = 0
  events = 0
  ioRuns = 0
  steps = 0
  simulatedMs = 0
  wallMs = 0

  constructor(
    readonly store: SimStoreKind,
    readonly run: RunSeed,
  ) {}

  // Runs whole seeds for about `budget` ms.
  async slice(budget: number, databaseUrl: string | undefined): Promise<void> {
    const started = performance.now()
    while (performance.now() - started < budget) {
      const { result } = await this.run({ seed: ++this.seeds, store: this.store, ...(databaseUrl === undefined ? {} : { databaseUrl }) })
      this.events += result.events
      this.ioRuns += result.ioRuns
      this.steps += result.steps + result.livenessSteps
      this.simulatedMs += result.simulatedMs
    }
    this.wallMs += performance.now() - started
  }

  row(): Row {
    return { store: this.store, seeds: this.seeds, events: this.events, ioRuns: this.ioRuns, steps: this.steps, simulatedMs: this.simulatedMs, wallMs: this.wallMs }
  }
}

// Slices each build gets of a store's budget, taking turns.
const slicesPerBuild = 4

// This build on `store`, and the baseline's beside it when there is one (each gets the whole budget).
async function measure(store: SimStoreKind, databaseUrl: string | undefined, baselineRun: RunSeed | null): Promise<{ current: Row; baseline: Row | null }> {
  const current = new Tally(store, runSeed)
  const baseline = baselineRun === null ? null : new Tally(store, baselineRun)
  const slices = baseline === null ? 1 : slicesPerBuild
  // ABBA order: whichever build runs second in a slice runs first in the next, so neither gets
  // the warmer (or the colder) half of every slice.
  for (let slice = 0; slice < slices; slice++) {
    const order = slice % 2 === 0 ? [current, baseline] : [baseline, current]
    for (const build of order) await build?.slice(budgetMs[store] / slices, databaseUrl)
  }
  return { current: current.row(), baseline: baseline?.row() ?? null }
}

async function postgresUrl(): Promise<{ url: string; cluster?: RunningCluster }> {
  const fromEnv = process.env.DATABASE_URL
  if (fromEnv !== undefined && fromEnv !== '') return { url: fromEnv }
  const cluster = startCluster()
  const admin = new pg.Client({ connectionString: cluster.url })
  await admin.connect()
  await admin.query('CREATE DATABASE matchbox_sim_bench')
  await admin.end()
  const url = new URL(cluster.url)
  url.pathname = '/matchbox_sim_bench'
  return { url: url.toString(), cluster }
}

// `--store NAME` (repeatable) measures only those stores; PostgreSQL starts only when asked for.
const storeKinds = ['memory', 'embedded', 'postgres'] as const
const chosen = process.argv.flatMap((arg, index) => (process.argv[index - 1] === '--store' ? [arg] : []))
const stores = chosen.length === 0 ? storeKinds : storeKinds.filter((store) => chosen.includes(store))

const perSecond = (count: number, ms: number): string => Math.round((count / ms) * 1_000).toLocaleString('en-US')

// `--against REV` names the baseline commit (default HEAD~1); `--no-baseline` measures this build alone.
const againstAt = process.argv.indexOf('--against')
const against = process.argv.includes('--no-baseline') ? null : againstAt >= 0 ? (process.argv[againstAt + 1] ?? 'HEAD~1') : 'HEAD~1'

const { url, cluster } = stores.includes('postgres') ? await postgresUrl() : { url: undefined, cluster: undefined }
let baseline: Baseline | null = null
try {
  baseline = against === null ? null : prepareBaseline(against)
  const baselineRun = baseline === null ? null : (await baseline.load<typeof Simulation>('sim/matching/Simulation.ts')).runSeed
  const rows: Array<{ current: Row; baseline: Row | null }> = []
  for (const store of stores) {
    const measured = await measure(store, store === 'postgres' ? url : undefined, baselineRun)
    rows.push(measured)
    console.error(`${store}: ${measured.current.seeds} seeds in ${Math.round(measured.current.wallMs)} ms${measured.baseline === null ? '' : `; baseline ${measured.baseline.seeds} seeds in ${Math.round(measured.baseline.wallMs)} ms`}`)
  }
  const memory = rows[0]?.current
  const memoryRate = memory === undefined ? 1 : memory.events / memory.wallMs
  console.log(`store      seeds   events   events/s   io/s      steps/s   sim s/wall s   vs memory${baseline === null ? '' : '   baseline events/s   vs baseline'}`)
  for (const { current: row, baseline: base } of rows) {
    const ratio = row.events / row.wallMs / memoryRate
    const beside = base === null ? [] : [perSecond(base.events, base.wallMs).padStart(20), `${(row.events / row.wallMs / (base.events / base.wallMs)).toFixed(3)}×`.padStart(13)]
    console.log(
      [
        row.store.padEnd(10),
        String(row.seeds).padStart(5),
        String(row.events).padStart(8),
        perSecond(row.events, row.wallMs).padStart(10),
        perSecond(row.ioRuns, row.wallMs).padStart(8),
        perSecond(row.steps, row.wallMs).padStart(9),
        Math.round(row.simulatedMs / row.wallMs).toLocaleString('en-US').padStart(14),
        `${ratio.toFixed(3)}×`.padStart(11),
        ...beside,
      ].join(' '),
    )
  }
  console.log('target on memory: ≥ 30,000 events/s on one core')
  console.log(`measured: ${benchSourceText}${baseline === null ? '' : `; baseline: ${baseline.commit}, built in a temporary worktree, taking turns with this build in ${slicesPerBuild} slices of each budget (ABBA)`}`)
} finally {
  baseline?.dispose()
  cluster?.stop()
}
