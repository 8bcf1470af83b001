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
 */
import pg from 'pg'
import type * as Simulation from '../sim/matching/Simulation.ts'
import type { SimStoreKind } from '../sim/matching/Simulation.ts'
import { type RunningCluster, startCluster } from '../test/harness/PostgresCluster.ts'
import { benchSourceText, loadBuilt } from './built.ts'

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

async function measure(store: SimStoreKind, databaseUrl: string | undefined): Promise<Row> {
  let seeds = 0
  let events = 0
  let ioRuns = 0
  let steps = 0
  let simulatedMs = 0
  const started = performance.now()
  while (performance.now() - started < budgetMs[store]) {
    const { result } = await runSeed({ seed: ++seeds, store, ...(databaseUrl === undefined ? {} : { databaseUrl }) })
    events += result.events
    ioRuns += result.ioRuns
    steps += result.steps + result.livenessSteps
    simulatedMs += result.simulatedMs
  }
  return { store, seeds, events, ioRuns, steps, simulatedMs, wallMs: performance.now() - started }
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

const { url, cluster } = stores.includes('postgres') ? await postgresUrl() : { url: undefined, cluster: undefined }
try {
  const rows: Row[] = []
  for (const store of stores) {
    rows.push(await measure(store, store === 'postgres' ? url : undefined))
    const row = rows.at(-1) as Row
    console.error(`${store}: ${row.seeds} seeds in ${Math.round(row.wallMs)} ms`)
  }
  const memoryRate = rows[0] === undefined ? 1 : rows[0].events / rows[0].wallMs
  console.log('store      seeds   events   events/s   io/s      steps/s   sim s/wall s   vs memory')
  for (const row of rows) {
    const ratio = row.events / row.wallMs / memoryRate
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
      ].join(' '),
    )
  }
  console.log('target on memory: ≥ 30,000 events/s on one core')
  console.log(`measured: ${benchSourceText}`)
} finally {
  cluster?.stop()
}
