/**
 * Matching bench — `npx tsx bench/matching.ts [--backlog 100000] [--pglite-backlog N] [--store memory,embedded,postgres]`.
 *
 * For each store (memory, embedded PGlite, postgres) one Matching host on the real clock, one
 * family with the default 4 partitions, and an in-memory History that answers `started` at
 * once, measures:
 * - sync match: tasks/s through addTask → poll → started with 64 pollers already waiting and
 *   32 concurrent producers, for a fixed time; the share of adds that matched without an insert;
 * - backlog: tasks/s spooling a backlog of N tasks with no poller (200 concurrent producers),
 *   then tasks/s draining it with 64 pollers (reads in pages, checkpoints every 100 acks / 1 s);
 * - latency: add → started p50 / p99, one add at a time with 16 pollers waiting.
 * Ratios are to memory, measured in the same run. `--store` picks the stores to measure (PostgreSQL
 * starts only when measured).
 *
 * PostgreSQL: a new database on DATABASE_URL's server, else a throwaway cluster
 * (test/harness/PostgresCluster.ts: fsync=off, Unix socket). Every phase is bounded (fixed
 * time, or a cap on the drain), so the whole bench takes about two to three minutes on 2 cores.
 */
import pg from 'pg'
import type { History } from '../src/actors/History.ts'
import { makeMatchingHost, type MatchingHost } from '../src/actors/MatchingHost.ts'
import { RealClock } from '../src/kernel/Clock.ts'
import { Random } from '../src/kernel/Random.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { openEmbeddedStore, openPostgresStore } from '../src/persistence/queues/sql/openSqlStore.ts'
import type { Store } from '../src/persistence/queues/Store.ts'
import { type RunningCluster, startCluster } from '../test/harness/PostgresCluster.ts'

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`)
  return index < 0 ? fallback : Number(process.argv[index + 1])
}

const backlogSize = option('backlog', 100_000)
// PGlite runs every statement on one in-process connection; lower this if its phases run long.
const pgliteBacklogSize = option('pglite-backlog', 100_000)
const syncMeasureMs = 3_000
const latencySamples = 1_000
const drainCapMs = 60_000
const family = { namespace: 'bench', family: 'matching', type: 'activity' } as const
const storeIndex = process.argv.indexOf('--store')
const storesMeasured = new Set((storeIndex < 0 ? 'memory,embedded,postgres' : (process.argv[storeIndex + 1] ?? '')).split(','))

/** A History that starts everything at once and tells the bench when. */
function makeBenchHistory(onStarted: (jobId: string) => void): History {
  return {
    async recordTaskStarted(task) {
      onStarted(task.jobId)
      return { kind: 'started', response: null }
    },
  }
}

interface Rig {
  readonly host: MatchingHost
  started: number
  readonly startedAt: Map<string, number>
  stopPollers: () => Promise<void>
  startPollers(count: number): void
}

function makeRig(store: Store, label: string): Rig {
  const rig: Rig = {
    started: 0,
    startedAt: new Map(),
    host: makeMatchingHost({
      hostId: `bench-${label}`,
      store,
      history: makeBenchHistory((jobId) => {
        rig.started++
        rig.startedAt.set(jobId, performance.now())
      }),
      clock: new RealClock(),
      random: Random.make(1),
    }),
    stopPollers: async () => {},
    startPollers(count) {
      let running = true
      const loops = Array.from({ length: count }, async (_, index) => {
        while (running) await rig.host.poll({ ...family, identity: `poller-${index}`, waitMs: 200 }).catch(() => null)
      })
      rig.stopPollers = async () => {
        running = false
        await Promise.all(loops)
      }
    },
  }
  return rig
}

// Runs `producers` loops calling `add(n)` for n = 1, 2, … until `done(n)`; returns adds made.
async function produce(producers: number, done: (made: number) => boolean, add: (n: number) => Promise<unknown>): Promise<number> {
  let made = 0
  await Promise.all(
    Array.from({ length: producers }, async () => {
      while (!done(made)) await add(++made)
    }),
  )
  return made
}

async function until(condition: () => boolean, capMs: number): Promise<boolean> {
  const start = performance.now()
  // Polls the condition each event-loop turn; the bench has nothing better to do meanwhile.
  while (!condition()) {
    if (performance.now() - start > capMs) return false
    await new Promise((resolve) => setImmediate(resolve))
  }
  return true
}

interface Result {
  syncPerS: number
  matchedShare: number
  spoolPerS: number
  drainPerS: number
  backlog: number
  drained: number
  p50Ms: number
  p99Ms: number
}

async function measure(label: string, store: Store, backlog: number): Promise<Result> {
  // Sync match: pollers first, then producers for a fixed time.
  const sync = makeRig(store, `${label}-sync`)
  sync.startPollers(64)
  await new Promise((resolve) => setImmediate(resolve))
  let matched = 0
  const syncStart = performance.now()
  let accepted = 0
  const added = await produce(32, () => performance.now() - syncStart > syncMeasureMs, async (n) => {
    const outcome = await sync.host.addTask({ ...family, task: { jobId: `sync-${n}` } }).catch(() => null)
    if (outcome !== null) accepted++
    if (outcome?.kind === 'matched') matched++
  })
  // Adds that found no poller free were spooled; the pollers take them from the backlog.
  await until(() => sync.started >= accepted, 10_000)
  const syncPerS = (sync.started * 1000) / (performance.now() - syncStart)
  await sync.stopPollers()
  await sync.host.close()
  console.log(`  ${label}: sync ${syncPerS.toFixed(0)} tasks/s (${added} adds, ${accepted} accepted, ${matched} matched without an insert, ${sync.started} started in ${((performance.now() - syncStart) / 1000).toFixed(1)} s)`)

  // Backlog: spool with nobody polling, then drain.
  const spool = makeRig(store, `${label}-backlog`)
  const spoolStart = performance.now()
  let spooled = 0
  await produce(200, (made) => made >= backlog, async (n) => {
    const outcome = await spool.host.addTask({ ...family, task: { jobId: `backlog-${n}` } }).catch(() => null)
    if (outcome !== null) spooled++
  })
  const spoolPerS = (spooled * 1000) / (performance.now() - spoolStart)
  console.log(`  ${label}: spooled ${spooled} at ${spoolPerS.toFixed(0)} tasks/s`)
  const drainStart = performance.now()
  spool.startPollers(64)
  await until(() => spool.started >= spooled, drainCapMs)
  const drainPerS = (spool.started * 1000) / (performance.now() - drainStart)
  const drained = spool.started
  await spool.stopPollers()
  await spool.host.close()
  console.log(`  ${label}: drained ${drained} at ${drainPerS.toFixed(0)} tasks/s`)

  // Latency: one add at a time, pollers waiting.
  const latency = makeRig(store, `${label}-latency`)
  latency.startPollers(16)
  await latency.host.addTask({ ...family, task: { jobId: 'warm-up' } })
  const samples: number[] = []
  for (let n = 0; n < latencySamples; n++) {
    const jobId = `latency-${n}`
    const start = performance.now()
    await latency.host.addTask({ ...family, task: { jobId } }).catch(() => null)
    await until(() => latency.startedAt.has(jobId), 5_000)
    samples.push((latency.startedAt.get(jobId) ?? Number.NaN) - start)
  }
  await latency.stopPollers()
  await latency.host.close()
  samples.sort((a, b) => a - b)
  const quantile = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))] as number
  return { syncPerS, matchedShare: matched / Math.max(1, added), spoolPerS, drainPerS, backlog: spooled, drained, p50Ms: quantile(0.5), p99Ms: quantile(0.99) }
}

let cluster: RunningCluster | undefined
const database = `mb_matching_bench_${process.pid}`
let admin: pg.Client | undefined
let url: URL | undefined
if (storesMeasured.has('postgres')) {
  const fromEnv = process.env.DATABASE_URL
  const adminUrl = fromEnv !== undefined && fromEnv !== '' ? fromEnv : (cluster = startCluster()).url
  admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${database} TEMPLATE template0`)
  url = new URL(adminUrl)
  url.pathname = `/${database}`
}

const benchStart = performance.now()
const results = new Map<string, Result>()
try {
  for (const [label, open, backlog] of [
    ['memory', async () => makeMemoryStore(), backlogSize],
    ['embedded', () => openEmbeddedStore(), pgliteBacklogSize],
    ['postgres', () => openPostgresStore({ connectionString: String(url) }), backlogSize],
  ] as const) {
    if (!storesMeasured.has(label)) continue
    console.log(`${label}…`)
    const store: Store = await open()
    results.set(label, await measure(label, store, backlog))
    await store.close()
  }
} finally {
  await admin?.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {})
  await admin?.end()
  cluster?.stop()
}

const memory = results.get('memory') ?? ([...results.values()][0] as Result)
const ratio = (value: number, base: number) => `${value.toFixed(0).padStart(8)} (${(value / base).toFixed(2)}×)`
console.log('')
console.log(`store     | sync match tasks/s  | spool tasks/s       | drain tasks/s       | backlog | add→started p50 / p99`)
console.log(`----------|---------------------|---------------------|---------------------|---------|----------------------`)
for (const [label, result] of results) {
  console.log(
    `${label.padEnd(9)} | ${ratio(result.syncPerS, memory.syncPerS).padEnd(19)} | ${ratio(result.spoolPerS, memory.spoolPerS).padEnd(19)} | ${ratio(result.drainPerS, memory.drainPerS).padEnd(19)} | ${String(result.drained === result.backlog ? result.backlog : `${result.drained}/${result.backlog}`).padStart(7)} | ${result.p50Ms.toFixed(2)} / ${result.p99Ms.toFixed(2)} ms`,
  )
}
console.log('')
console.log(`sync-matched share of adds: ${[...results].map(([label, result]) => `${label} ${(result.matchedShare * 100).toFixed(0)}%`).join(', ')}`)
console.log(`postgres: ${!storesMeasured.has('postgres') ? 'not measured' : cluster === undefined ? 'DATABASE_URL' : 'throwaway cluster (fsync=off, synchronous_commit=off, Unix socket)'}; total ${((performance.now() - benchStart) / 1000).toFixed(0)} s`)
process.exit(0)
