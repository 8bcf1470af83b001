/**
 * Peers bench — `npx tsx bench/peers.ts [--quick] [--durable] [--jobs N] [--workloads a,b]`: Matchbox beside graphile-worker
 * and pg-boss on one throwaway PostgreSQL, and beside a floor: the drains' work in hand-written
 * SQL with no library (peerFloor.ts), so each drain row reads Matchbox ÷ graphile-worker and
 * Matchbox ÷ what the server does for that work at all. Matchbox runs as users run it, from its
 * compiled package in dist/, built at the start (bench/built.ts; `MATCHBOX_BENCH_SOURCE=src` for src/).
 *
 * One cluster per run (test/harness/PostgresCluster.ts, fsync off; `--durable`: on), restarted once with
 * `pg_stat_statements` preloaded; each library gets a database of its own and a pool of at most
 * `poolMax` connections per process. Workloads, each library's number the median of `rounds`
 * rounds run A B C, A B C… so drift hits every library alike:
 * - enqueue one at a time (one producer awaiting each enqueue) and in batches of `batchSize`
 *   (each library's batch insert; n/a where a library has none);
 * - end-to-end drain of `jobs` pre-enqueued no-op jobs at concurrency 1 and 16 and with each
 *   library's batching (peerLibraries.ts says how each library is configured), timed from
 *   starting the workers to the last handler start; the floor runs each drain too, with the
 *   same connection budget: one-at-a-time claim + delete at concurrency 1 and 16, a batched
 *   claim and a batched delete at the batch mode's workers and batch size;
 * - enqueue → handler-start latency, p50 and p99, with the worker in a child process
 *   (peerLatencyChild.ts) and the producer enqueueing `latencyJobs` jobs at `latencyRatePerS`
 *   with the wall clock in the payload; for Matchbox also with both in one process.
 *
 * Libraries alternate inside each round, and each round starts one library further on (the
 * first round graphile-worker, pg-boss, Matchbox; the second pg-boss, Matchbox, graphile-worker),
 * so that no library always runs right after the same one: on a virtual machine a long
 * CPU-heavy step is followed by time stolen by the hypervisor, which would otherwise always land
 * on the same next library.
 *
 * Machine load: before each step the bench waits (bounded) for other processes to go quiet,
 * then measures other processes' CPU over the step (machineLoad.ts). A step during which they
 * used more than `othersCpuPercentQuiet` is re-run up to `retriesMax` times; if none is quiet,
 * its number is kept and printed flagged `busy`.
 *
 * A step line names the deadlocks PostgreSQL detected during the step, if any (each stalls its
 * statements for the one-second deadlock timeout).
 *
 * Statements per job are counted from `pg_stat_statements` (top-level statements as clients
 * send them, BEGIN and COMMIT included, background polling and maintenance included) over each
 * step, per database; if the extension cannot be loaded, from `pg_stat_database` transaction
 * counts instead, and the table says which.
 *
 * CPU per job, over each step: this process and its children (each library's Node side, the
 * latency child included; the bench's own waiting is idle) and the PostgreSQL processes, from
 * /proc's 10 ms ticks. It shows where a step's time went when a rate alone cannot: a library
 * waiting on round trips uses less CPU than its rate suggests.
 *
 * Numbers compare libraries on one machine at one moment; they are not claims.
 *
 * Longer than the house ~400 lines: the workloads share one measuring protocol (quiet check,
 * window, retries) and read best in one file; the libraries, the child, the load meter and the
 * table live beside it (peerLibraries.ts, peerLatencyChild.ts, machineLoad.ts, peerTable.ts).
 */
import { Command } from 'commander'
import { fork, spawnSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { type RunningCluster, startCluster } from '../test/harness/PostgresCluster.ts'
import { coreCount, type Load, makeLoadMeter, othersCpuPercentQuiet } from './machineLoad.ts'
import { floorConfiguration, openFloor } from './peerFloor.ts'
import { type Cell, format, type Outcome, printTable, type Row } from './peerTable.ts'
import {
  type BenchPayload,
  batchSize,
  batchWorkers,
  configurationOf,
  type DrainMode,
  type ContenderName,
  floorName,
  libraryNames,
  openPeer,
  type PeerSession,
} from './peerLibraries.ts'

const workloadKeys = ['enqueue-one', 'enqueue-batch', 'drain-1', 'drain-16', 'drain-batch', 'latency-process', 'latency-same'] as const
const given = new Command()
  .option('--quick', 'small sizes, one round: a smoke run')
  .option('--durable', 'run the server with fsync, synchronous_commit and full_page_writes on (default: off, the fast profile)')
  .option('--jobs <n>', 'jobs per drain (default 10000, 500 with --quick)')
  .option('--workloads <list>', `comma-separated subset of ${workloadKeys.join(', ')}`, workloadKeys.join(','))
  .parse()
  .opts<{ quick?: boolean; durable?: boolean; jobs?: string; workloads: string }>()
const quick = given.quick === true
const durable = given.durable === true
const jobs = given.jobs !== undefined ? Number(given.jobs) : quick ? 500 : 10_000
if (!Number.isInteger(jobs) || jobs < 1) throw new Error('--jobs takes a positive integer')
const chosenWorkloads = new Set(given.workloads.split(',').map((key) => key.trim()))
for (const key of chosenWorkloads) if (!(workloadKeys as ReadonlyArray<string>).includes(key)) throw new Error(`--workloads: unknown workload ${key} (${workloadKeys.join(', ')})`)

/** Rounds per workload; the median is reported. */
const rounds = quick ? 1 : 3
/** Re-runs of a step measured while the machine was busy: one rides out a burst. */
const retriesMax = 1
/** Only a step shorter than this is re-run, so a busy machine cannot double the long drains: a full run still ends within about 25 minutes. */
const retryStepMsMax = 20_000
/** Jobs in the one-at-a-time enqueue workload: a fifth of a drain, as each costs a round trip. */
const enqueueOneJobs = Math.max(50, Math.round(jobs / 5))
/** Jobs in a latency step, and the rate they are enqueued at: well below every library's throughput, so latency is delivery and not queueing. */
const latencyJobs = quick ? 200 : 1_000
const latencyRatePerS = 200
/** Worker concurrency in the latency workloads. */
const latencyConcurrency = 16
/** Connections per library per workload: 18 in a single process; split 2 (producer) + 16 (worker) across the two latency processes. */
const poolMax = 18
const latencyProducerPoolMax = 2
/** A drain that has not finished by then reports its partial rate, flagged `capped`. */
const drainCapMs = quick ? 30_000 : 120_000
/** How long a latency step waits for the last job after the last enqueue. */
const latencyGraceMs = 10_000
/** The pre-step quiet check: spans of this length, at most this many. */
const quietSampleMs = 500
const quietSamplesMax = 4
/** Jobs per insert when filling a backlog before a drain (untimed). */
const fillChunk = 1_000
/** Concurrent enqueues when a library has no batch insert and fills a backlog one job at a time (untimed). */
const fillConcurrency = 32

const here = dirname(fileURLToPath(import.meta.url))
const wallClockMs = (): number => performance.timeOrigin + performance.now()
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
const databaseOf = (name: ContenderName): string => `bench_${name.toLowerCase().replace(/[^a-z]/g, '_')}`


interface Workload {
  readonly key: string
  readonly title: string
  readonly libraries: ReadonlyArray<ContenderName>
  /** Why a library shows n/a, if it does. */
  readonly unavailable?: (name: ContenderName) => string | null
  run(name: ContenderName, tag: string): Promise<Outcome>
}

// ——— cluster and statement counting ———

let cluster: RunningCluster | undefined
let admin: pg.Client | undefined
const meter = makeLoadMeter()
let countingMethod: 'pg_stat_statements' | 'pg_stat_database xact_commit + xact_rollback' = 'pg_stat_statements'

function urlOf(database: string): string {
  const url = new URL((cluster as RunningCluster).url)
  url.pathname = `/${database}`
  return url.toString()
}

async function connectAdmin(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: (cluster as RunningCluster).url })
  await client.connect()
  return client
}

// Preloads pg_stat_statements: ALTER SYSTEM, then a restart with the options the harness started it with (postmaster.opts).
async function enableStatementStatistics(): Promise<boolean> {
  const client = await connectAdmin()
  try {
    await client.query("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    const binDirectory = (await client.query<{ setting: string }>("SELECT setting FROM pg_config WHERE name = 'BINDIR'")).rows[0]?.setting
    const dataDirectory = (await client.query<{ data_directory: string }>('SHOW data_directory')).rows[0]?.data_directory
    if (binDirectory === undefined || dataDirectory === undefined) return false
    await client.end()
    const pgCtl = [join(binDirectory, 'pg_ctl'), 'restart', '-D', dataDirectory, '-m', 'fast', '-w', '-t', '60', '-l', join(dirname(dataDirectory), 'server.log')]
    const argvOf = process.getuid?.() === 0 ? ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', '--', ...pgCtl] : pgCtl
    const result = spawnSync(argvOf[0] as string, argvOf.slice(1), { encoding: 'utf8', cwd: dirname(dataDirectory) })
    if (result.status !== 0) {
      console.log(`pg_ctl restart failed (${result.status}): ${result.stderr || result.stdout}`)
      return false
    }
    const again = await connectAdmin()
    try {
      await again.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
      return true
    } catch (error) {
      console.log(`pg_stat_statements unavailable: ${error instanceof Error ? error.message : String(error)}`)
      return false
    } finally {
      await again.end()
    }
  } finally {
    await client.end().catch(() => {})
  }
}

async function statementCount(database: string): Promise<number> {
  const client = admin as pg.Client
  if (countingMethod === 'pg_stat_statements') {
    const result = await client.query<{ n: string }>('SELECT coalesce(sum(s.calls), 0)::bigint AS n FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1', [database])
    return Number(result.rows[0]?.n ?? 0)
  }
  await client.query('SELECT pg_stat_clear_snapshot()')
  const result = await client.query<{ n: string }>('SELECT (xact_commit + xact_rollback)::bigint AS n FROM pg_stat_database WHERE datname = $1', [database])
  return Number(result.rows[0]?.n ?? 0)
}

// ——— measuring a step ———

/** A timed window: other processes' load over it, and the statements its database ran. */
async function openWindow(database: string): Promise<{ end: () => Load; statementsSince: () => Promise<number> }> {
  const before = await statementCount(database)
  const end = meter.start()
  return { end, statementsSince: async () => (await statementCount(database)) - before }
}

async function waitForQuiet(): Promise<void> {
  for (let sample = 0; sample < quietSamplesMax; sample++) {
    const end = meter.start()
    await sleep(quietSampleMs)
    if (end().quiet) return
  }
}

const describeLoad = (load: Load): string =>
  `others ${load.othersCpuPercent.toFixed(1)}% CPU${load.stealCpuPercent >= 0.05 ? ` (${load.stealCpuPercent.toFixed(1)}% of it stolen by the hypervisor)` : ''}, load ${load.loadAverage1m.toFixed(2)}`

// Deadlocks PostgreSQL detected so far, over the whole cluster (one library runs per step).
async function deadlockCount(): Promise<number> {
  const client = admin as pg.Client
  await client.query('SELECT pg_stat_clear_snapshot()')
  const result = await client.query<{ n: string }>('SELECT coalesce(sum(deadlocks), 0)::bigint AS n FROM pg_stat_database')
  return Number(result.rows[0]?.n ?? 0)
}

// CPU per job over a step: this process and its children (the libraries' Node side), or the server.
const cpuPerJob = (outcome: Outcome, side: 'benchCpuMs' | 'serverCpuMs'): number => outcome.load[side] / Math.max(1, outcome.jobs)

async function measured(label: string, step: () => Promise<Outcome>): Promise<Outcome & { busy: boolean }> {
  let last: Outcome | undefined
  for (let attempt = 0; attempt <= retriesMax; attempt++) {
    await waitForQuiet()
    const deadlocksBefore = await deadlockCount()
    const started = performance.now()
    const outcome = await step()
    const deadlocks = (await deadlockCount()) - deadlocksBefore
    const retry = attempt < retriesMax && performance.now() - started < retryStepMsMax
    const shown = outcome.p99 === undefined ? `${format(outcome.value)}` : `p50 ${format(outcome.value, 'ms')} ms, p99 ${format(outcome.p99, 'ms')} ms`
    const verdict = outcome.load.quiet ? 'quiet' : retry ? `busy, re-run ${attempt + 1}/${retriesMax}` : 'busy, kept flagged'
    // A deadlock stalls its statements for PostgreSQL's deadlock timeout (1 s): worth seeing beside the number.
    const deadlockNote = deadlocks === 0 ? '' : `, ${deadlocks} deadlock${deadlocks === 1 ? '' : 's'}`
    const cpu = `CPU/job ${format(cpuPerJob(outcome, 'benchCpuMs'), 'cpu ms')} ms Node, ${format(cpuPerJob(outcome, 'serverCpuMs'), 'cpu ms')} ms server`
    console.log(`  · ${label}: ${shown}, ${outcome.statementsPerJob.toFixed(2)} stmt/job, ${cpu}${deadlockNote}${outcome.note === undefined ? '' : ` (${outcome.note})`} — ${describeLoad(outcome.load)} (${verdict})`)
    if (outcome.load.quiet) return { ...outcome, busy: false }
    last = outcome
    if (!retry) break
  }
  return { ...(last as Outcome), busy: true }
}

// ——— workloads ———

async function withSession<T>(name: ContenderName, use: (session: PeerSession) => Promise<T>, options: { poolMax?: number; role?: 'worker' | 'producer' } = {}): Promise<T> {
  const peerOptions = { databaseUrl: urlOf(databaseOf(name)), poolMax: options.poolMax ?? poolMax, ...(options.role === undefined ? {} : { role: options.role }) }
  const session = name === floorName ? await openFloor(peerOptions) : await openPeer(name, peerOptions)
  try {
    return await use(session)
  } finally {
    await session.close()
  }
}

async function fill(session: PeerSession, queue: string, count: number): Promise<void> {
  const payloads = Array.from({ length: count }, (_, n): BenchPayload => ({ n }))
  if (session.enqueueBatch !== null) {
    for (let at = 0; at < count; at += fillChunk) await session.enqueueBatch(queue, payloads.slice(at, at + fillChunk))
    return
  }
  for (let at = 0; at < count; at += fillConcurrency) await Promise.all(payloads.slice(at, at + fillConcurrency).map((payload) => session.enqueue(queue, payload)))
}

/**
 * The enqueue workloads run each library as an enqueue-only process, as a web app does:
 * graphile-worker's WorkerUtils and pg-boss's `send` start no worker, and Matchbox opens with
 * `role: 'producer'` (it owns no partition, so it delivers nothing while enqueueing).
 */
const enqueueOnly = { role: 'producer' } as const

const enqueueOne: Workload = {
  key: 'enqueue-one',
  title: `enqueue one at a time, jobs/s (${enqueueOneJobs} jobs, 1 producer)`,
  libraries: libraryNames,
  run: (name, tag) =>
    withSession(name, async (session) => {
      const queue = `enqueue-one-${tag}`
      await session.prepareQueue(queue)
      const window = await openWindow(databaseOf(name))
      const started = performance.now()
      for (let n = 0; n < enqueueOneJobs; n++) await session.enqueue(queue, { n })
      const elapsedMs = performance.now() - started
      const load = window.end()
      const statements = await window.statementsSince()
      await session.discard(queue)
      return { value: (enqueueOneJobs * 1000) / elapsedMs, statementsPerJob: statements / enqueueOneJobs, jobs: enqueueOneJobs, load }
    }, enqueueOnly),
}

const enqueueBatch: Workload = {
  key: 'enqueue-batch',
  title: `enqueue in batches of ${batchSize}, jobs/s (${jobs} jobs)`,
  libraries: libraryNames,
  unavailable: (name) => (name === 'Matchbox' && !matchboxHasEnqueueMany ? 'no queue.enqueueMany in this Matchbox' : null),
  run: (name, tag) =>
    withSession(name, async (session) => {
      const enqueueBatchOf = session.enqueueBatch
      if (enqueueBatchOf === null) throw new Error(`${name} has no batch enqueue`)
      const queue = `enqueue-batch-${tag}`
      await session.prepareQueue(queue)
      const window = await openWindow(databaseOf(name))
      const started = performance.now()
      for (let at = 0; at < jobs; at += batchSize) {
        await enqueueBatchOf(
          queue,
          Array.from({ length: Math.min(batchSize, jobs - at) }, (_, i) => ({ n: at + i })),
        )
      }
      const elapsedMs = performance.now() - started
      const load = window.end()
      const statements = await window.statementsSince()
      await session.discard(queue)
      return { value: (jobs * 1000) / elapsedMs, statementsPerJob: statements / jobs, jobs, load }
    }, enqueueOnly),
}

/** The drains run the libraries and the floor. */
const drainContenders: ReadonlyArray<ContenderName> = [...libraryNames, floorName]

function drain(key: string, title: string, mode: DrainMode): Workload {
  return {
    key,
    title,
    libraries: drainContenders,
    run: (name, tag) =>
      withSession(name, async (session) => {
        const queue = `${key}-${tag}`
        await session.prepareQueue(queue)
        await fill(session, queue, jobs)
        let handled = 0
        let finishedAt: number | null = null
        let finish = (): void => {}
        const finished = new Promise<void>((resolve) => {
          finish = resolve
        })
        const window = await openWindow(databaseOf(name))
        const started = performance.now()
        const stop = await session.startWorkers(queue, mode, () => {
          handled++
          if (handled === jobs) {
            finishedAt = performance.now()
            finish()
          }
        })
        let cap: NodeJS.Timeout | undefined
        await Promise.race([finished, new Promise<void>((resolve) => (cap = setTimeout(resolve, drainCapMs)))])
        clearTimeout(cap)
        const elapsedMs = (finishedAt ?? performance.now()) - started
        const load = window.end()
        const reached = handled
        await stop()
        const statements = await window.statementsSince()
        return {
          value: (Math.min(reached, jobs) * 1000) / elapsedMs,
          statementsPerJob: statements / Math.max(1, reached),
          jobs: reached,
          load,
          ...(finishedAt === null ? { note: `capped: ${reached}/${jobs} jobs in ${drainCapMs / 1000} s` } : {}),
        }
      }),
  }
}

const percentile = (sorted: ReadonlyArray<number>, p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN

// Enqueues `latencyJobs` at `latencyRatePerS`, open loop (each at its due time, not after the previous one), with the wall clock in the payload.
async function produceAtRate(session: PeerSession, queue: string): Promise<void> {
  const started = performance.now()
  const enqueues: Promise<void>[] = []
  for (let n = 0; n < latencyJobs; n++) {
    const dueMs = started + (n * 1000) / latencyRatePerS
    const waitMs = dueMs - performance.now()
    if (waitMs > 0) await sleep(waitMs)
    enqueues.push(session.enqueue(queue, { n, t: wallClockMs() }))
  }
  await Promise.all(enqueues)
}

function latencyOutcome(latenciesMs: ReadonlyArray<number>, statements: number, load: Load): Outcome {
  const sorted = [...latenciesMs].sort((a, b) => a - b)
  const missing = latencyJobs - sorted.length
  return {
    value: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    statementsPerJob: statements / Math.max(1, sorted.length),
    jobs: sorted.length,
    load,
    ...(missing > 0 ? { note: `${missing} of ${latencyJobs} jobs not started within ${latencyGraceMs / 1000} s` } : {}),
  }
}

interface ChildMessage {
  readonly kind: 'ready' | 'count' | 'samples'
  readonly count?: number
  readonly latenciesMs?: number[]
}

const latencyCrossProcess: Workload = {
  key: 'latency-process',
  title: `enqueue → handler start, worker in another process (${latencyJobs} jobs at ${latencyRatePerS}/s, concurrency ${latencyConcurrency})`,
  libraries: libraryNames,
  async run(name, tag) {
    const queue = `latency-${tag}`
    const child = fork(join(here, 'peerLatencyChild.ts'), [name, urlOf(databaseOf(name)), queue, String(latencyConcurrency), String(poolMax - latencyProducerPoolMax)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const waiters = new Map<string, { resolve: (message: ChildMessage) => void; reject: (error: Error) => void }>()
    child.on('message', (message: ChildMessage) => waiters.get(message.kind)?.resolve(message))
    child.once('exit', (code) => {
      for (const [kind, waiter] of waiters) waiter.reject(new Error(`${name} latency child exited (${code}) before '${kind}'`))
    })
    const next = (kind: ChildMessage['kind']): Promise<ChildMessage> => new Promise((resolve, reject) => waiters.set(kind, { resolve, reject }))
    try {
      await next('ready')
      return await withSession(
        name,
        async (producer) => {
          await producer.prepareQueue(queue)
          const window = await openWindow(databaseOf(name))
          await produceAtRate(producer, queue)
          const deadline = performance.now() + latencyGraceMs
          while (performance.now() < deadline) {
            const counted = next('count')
            child.send({ kind: 'count' })
            if (((await counted).count ?? 0) >= latencyJobs) break
            await sleep(50)
          }
          const load = window.end()
          const samples = next('samples')
          child.send({ kind: 'stop' })
          const { latenciesMs = [] } = await samples
          const statements = await window.statementsSince()
          await producer.discard(queue)
          return latencyOutcome(latenciesMs, statements, load)
        },
        { poolMax: latencyProducerPoolMax, role: 'producer' },
      )
    } finally {
      if (child.exitCode === null) {
        await Promise.race([new Promise((resolve) => child.once('exit', resolve)), sleep(10_000)])
        if (child.exitCode === null) child.kill()
      }
    }
  },
}

const latencySameProcess: Workload = {
  key: 'latency-same',
  title: `enqueue → handler start, worker in the same process (${latencyJobs} jobs at ${latencyRatePerS}/s, concurrency ${latencyConcurrency})`,
  libraries: ['Matchbox'],
  run: (name, tag) =>
    withSession(name, async (session) => {
      const queue = `latency-same-${tag}`
      const latenciesMs: number[] = []
      const stop = await session.startLatencyWorker(queue, latencyConcurrency, (payload) => {
        if (payload.t !== undefined) latenciesMs.push(wallClockMs() - payload.t)
      })
      const window = await openWindow(databaseOf(name))
      await produceAtRate(session, queue)
      const deadline = performance.now() + latencyGraceMs
      while (latenciesMs.length < latencyJobs && performance.now() < deadline) await sleep(20)
      const load = window.end()
      await stop()
      const statements = await window.statementsSince()
      return latencyOutcome(latenciesMs, statements, load)
    }),
}

// ——— main ———

let matchboxHasEnqueueMany = false

// A run stopped by a signal stops its cluster too, which would otherwise run on under /tmp.
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.once(signal, () => {
    cluster?.stop()
    process.exit(code)
  })
}

try {
  cluster = startCluster({ durable })
  const statementStatistics = await enableStatementStatistics()
  if (!statementStatistics) countingMethod = 'pg_stat_database xact_commit + xact_rollback'
  admin = await connectAdmin()
  const backendPid = (await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid
  const version = (await admin.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version
  if (backendPid !== undefined) {
    const { readFileSync } = await import('node:fs')
    const stat = readFileSync(`/proc/${backendPid}/stat`, 'utf8')
    meter.setServerPid(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
  }
  for (const name of drainContenders) await admin.query(`CREATE DATABASE ${databaseOf(name)}`)
  // Migrations happen here, once per library (and the floor's table), outside every measurement.
  for (const name of drainContenders) {
    await withSession(name, async (session) => {
      if (name === 'Matchbox') matchboxHasEnqueueMany = session.enqueueBatch !== null
    })
  }

  console.log(`peers bench ${new Date().toISOString()}: node ${process.version}, ${coreCount()} cores, PostgreSQL ${version} (throwaway, ${durable ? 'durable profile: fsync, synchronous_commit and full_page_writes on' : 'fast profile: fsync off, synchronous_commit off'})`)
  console.log(`  ${quick ? 'quick: ' : ''}${jobs} jobs per drain, ${rounds} round(s) per workload (median), libraries alternate inside each round, each round starting one library further on; pool max ${poolMax} per library per workload`)
  console.log(`  a step is clean when other processes used ≤ ${othersCpuPercentQuiet}% of the machine's CPU over it (/proc/stat less this bench's and its server's processes; time the hypervisor stole counts, since the libraries lost it too); busy steps shorter than ${retryStepMsMax / 1000} s re-run ≤ ${retriesMax}×`)
  console.log(`  statements per job from ${countingMethod}`)
  for (const name of libraryNames) console.log(`  ${name}: ${configurationOf(name, poolMax)}`)
  console.log(`  ${floorName} (drains only): ${floorConfiguration(poolMax)}`)

  const workloads: Workload[] = [
    enqueueOne,
    enqueueBatch,
    drain('drain-1', `drain ${jobs} no-op jobs, concurrency 1, jobs/s`, { concurrency: 1 }),
    drain('drain-16', `drain ${jobs} no-op jobs, concurrency 16, jobs/s`, { concurrency: 16 }),
    drain('drain-batch', `drain ${jobs} no-op jobs, ${batchWorkers} workers + batching (${batchSize}), jobs/s`, 'batch'),
    latencyCrossProcess,
    latencySameProcess,
  ].filter((workload) => chosenWorkloads.has(workload.key))
  const results = new Map<string, Map<ContenderName, Cell>>()
  for (const workload of workloads) {
    console.log(`\n${workload.title}`)
    const cells = new Map<ContenderName, Cell>()
    for (const name of workload.libraries) {
      const unavailable = workload.unavailable?.(name) ?? null
      if (unavailable !== null) console.log(`  · ${name}: n/a (${unavailable})`)
      cells.set(name, { outcomes: [], unavailable })
    }
    for (let round = 1; round <= rounds; round++) {
      // Rotated per round (see the header).
      const shift = (round - 1) % workload.libraries.length
      for (const name of [...workload.libraries.slice(shift), ...workload.libraries.slice(0, shift)]) {
        const cell = cells.get(name)
        if (cell === undefined || cell.unavailable !== null) continue
        let attempt = 0
        cell.outcomes.push(await measured(`${name} round ${round}`, () => workload.run(name, `${round}-${attempt++}`)))
      }
    }
    results.set(workload.key, cells)
  }

  const rowsOf = (kind: 'results' | 'statements' | 'cpu'): Row[] =>
    workloads.flatMap((workload): Row[] => {
      const cells: ReadonlyMap<ContenderName, Cell> = results.get(workload.key) ?? new Map()
      const latency = workload.key.startsWith('latency')
      const where = workload.key === 'latency-process' ? 'other process' : 'same process'
      const short = latency ? `latency, ${where}` : workload.title.replace(/, jobs\/s.*$/, '')
      if (kind === 'statements') return [{ title: short, unit: 'ms' as const, pick: (o: Outcome) => o.statementsPerJob, cells, higherIsBetter: false }]
      if (kind === 'cpu') {
        return [
          { title: `${short}: Node`, unit: 'cpu ms' as const, pick: (o: Outcome) => cpuPerJob(o, 'benchCpuMs'), cells, higherIsBetter: false },
          { title: `${short}: server`, unit: 'cpu ms' as const, pick: (o: Outcome) => cpuPerJob(o, 'serverCpuMs'), cells, higherIsBetter: false },
        ]
      }
      if (!latency) return [{ title: workload.title, unit: 'jobs/s' as const, pick: (o: Outcome) => o.value, cells, higherIsBetter: true }]
      return [
        { title: `enqueue → handler start p50 ms, ${where}`, unit: 'ms' as const, pick: (o: Outcome) => o.value, cells, higherIsBetter: false },
        { title: `enqueue → handler start p99 ms, ${where}`, unit: 'ms' as const, pick: (o: Outcome) => o.p99 ?? Number.NaN, cells, higherIsBetter: false },
      ]
    })
  printTable(`Results (median of ${rounds}; jobs/s: higher is better, ms: lower is better; ratio > 1 means Matchbox is faster for jobs/s, < 1 means lower latency for ms)`, rowsOf('results'))
  printTable(`SQL statements per job (${countingMethod}, median; lower is cheaper for the database, ratio < 1 means Matchbox sends fewer)`, rowsOf('statements'))
  printTable(
    'CPU per job, ms (median; Node: this process and its children, the latency worker included; server: the PostgreSQL processes; /proc ticks of 10 ms; ratio < 1 means Matchbox uses less)',
    rowsOf('cpu'),
  )
  console.log(`\n'busy k/n': k of the n rounds had no clean attempt (other processes > ${othersCpuPercentQuiet}% CPU), the number is kept as measured; '!': a drain hit its ${drainCapMs / 1000} s cap or latency jobs went missing (see the step lines); '—': not run for this library.`)
} finally {
  await admin?.end().catch(() => {})
  cluster?.stop()
}
