/**
 * Multi-host bench — `npx tsx bench/multihost.ts [--quick] [--jobs 10000] [--latency-jobs 2000]
 * [--rate 200] [--kills 3] [--concurrency 16] [--reruns 1] [--steps latency,drain,kill]
 * [--partitions 1,4]`.
 *
 * Several engine processes on one throwaway PostgreSQL (test/harness/PostgresCluster.ts, fsync
 * off), each a Matchbox engine in a process of its own (test/harness/engineChild.ts, driven
 * over IPC). Three steps, one table each:
 * 1. latency: a producer-only process enqueues jobs at a fixed rate (open loop) for a worker
 *    process; enqueue → handler start p50, p99 and max. The enqueue time travels in the payload
 *    (wall clock, `performance.timeOrigin + now()`: both processes are on this machine).
 * 2. drain: a backlog enqueued by this process (a producer) before any worker exists, then 1,
 *    2 and 3 worker processes draining it, with the queue's default one partition and with
 *    `partitions: 4`. The clock starts when every worker sees the whole group and is told to
 *    work (the owners may have begun delivering the backlog into Matching while the others
 *    joined: the "delivered at start" column says how much), and stops when the queue has no
 *    job row left. Ratio to the 1-host time of the same partition count. Range increments: the
 *    sum over the queue's partitions of range_id at the end minus range_id when the first job
 *    was handled (the group had settled) — 0 means no partition changed owner while draining. A
 *    partition first loaded after that moment shows 0 in "settled", and its first acquire
 *    (range 1) is not an increment. Deadlocks: those PostgreSQL detected in the database while
 *    draining (each stalls its statements for the 1 s deadlock timeout); 0 is expected.
 * 3. kill: three workers on twelve queues; one is SIGKILLed and a job is enqueued at once to
 *    each queue it owned; the time until the last of those is handled by a survivor (its
 *    partitions are served again), next to when the survivors' view dropped it (the membership
 *    TTL is 5 s; heartbeats every 1 s). The victim is respawned with its host id between kills.
 *
 * Honesty: before each step the bench waits (up to 20 s) for a quiet machine and records the
 * CPU other processes used during the step (bench/CpuWatch.ts). A step during which others used
 * more than `busyCoresMax` is run again up to `--reruns` times (not with --quick), the least
 * disturbed run is kept, and it is flagged if still busy.
 * Numbers are this machine's, in this run; they are not claims.
 */
import { Command } from 'commander'
import pg from 'pg'
import { makePartitionKey } from '../src/domain/QueueKey.ts'
import { ownerOf } from '../src/domain/Rendezvous.ts'
import { type Matchbox, open } from '../src/index.ts'
import { type EngineProcess, type HandledJob, spawnEngine } from '../test/harness/engineProcess.ts'
import { type RunningCluster, startCluster } from '../test/harness/PostgresCluster.ts'
import { type CpuShare, makeCpuWatch, postmasterPidOf } from './CpuWatch.ts'

const program = new Command()
  .option('--quick', 'small sizes, no re-runs (a smoke run)')
  .option('--jobs <n>', 'backlog size of the drain step', '10000')
  .option('--latency-jobs <n>', 'jobs of the latency step', '2000')
  .option('--rate <n>', 'enqueues per second of the latency step', '200')
  .option('--kills <n>', 'SIGKILLs in the kill step', '3')
  .option('--concurrency <n>', 'handlers per worker process in the drain step', '16')
  .option('--steps <list>', 'which steps to run, comma-separated: latency, drain, kill', 'latency,drain,kill')
  .option('--partitions <list>', 'partition counts of the drain step, comma-separated', '1,4')
  .option('--reruns <n>', 'times a step measured while others used the CPU is run again (0 with --quick)', '1')
  .parse()
const given = program.opts<{ quick?: boolean; steps: string; partitions: string; jobs: string; latencyJobs: string; rate: string; kills: string; concurrency: string; reruns: string }>()
const whole = (name: string, text: string, least = 1): number => {
  const value = Number(text)
  if (!Number.isSafeInteger(value) || value < least) throw new Error(`--${name} needs a whole number ≥ ${least}`)
  return value
}
const quick = given.quick === true
const drainPartitions = given.partitions.split(',').map((count) => whole('partitions', count.trim()))
const steps = new Set(given.steps.split(',').map((step) => step.trim()))
for (const step of steps) if (!['latency', 'drain', 'kill'].includes(step)) throw new Error(`--steps: unknown step ${step} (latency, drain, kill)`)
const backlogJobs = quick ? 2_000 : whole('jobs', given.jobs)
const latencyJobs = quick ? 400 : whole('latency-jobs', given.latencyJobs)
const ratePerS = whole('rate', given.rate)
const kills = quick ? 1 : whole('kills', given.kills)
const concurrency = whole('concurrency', given.concurrency)
const reruns = quick ? 0 : whole('reruns', given.reruns, 0)

// Another process using half a core on this two-core machine moves our numbers visibly.
const busyCoresMax = 0.5
const quietWaitMs = 20_000
// After every handler has started, the acks land within milliseconds; rows left past this are stuck.
const leftBoundMs = 30_000
const killQueues = Array.from({ length: 12 }, (_, index) => `kill-${index}`)

const percentile = (sorted: ReadonlyArray<number>, p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
const wallMs = (): number => performance.timeOrigin + performance.now()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const ms = (value: number): string => (Number.isFinite(value) ? `${value.toFixed(value < 10 ? 2 : value < 100 ? 1 : 0)} ms` : 'n/a')

let cluster: RunningCluster | undefined
let pool!: pg.Pool
let url: string
let parent!: Matchbox
let cpu: ReturnType<typeof makeCpuWatch>
let seed = 1
const live = new Set<EngineProcess>()

async function spawn(hostId: string, role: 'worker' | 'producer'): Promise<EngineProcess> {
  const engine = await spawnEngine({ url, hostId, role, seed: seed++ })
  live.add(engine)
  void engine.exited.then(() => live.delete(engine))
  return engine
}

async function closeAll(engines: Iterable<EngineProcess>): Promise<void> {
  await Promise.all([...engines].map((engine) => engine.close()))
}

// Polls `condition` every `everyMs` until it holds; throws after `timeoutMs`.
async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs: number, everyMs = 5): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`bench: ${what} did not happen within ${timeoutMs} ms`)
    await sleep(everyMs)
  }
}

const everyoneSees = (engines: ReadonlyArray<EngineProcess>, hosts: ReadonlyArray<string>) => () =>
  engines.every((engine) => engine.hosts().join(',') === [...hosts].sort().join(','))

// Waits for a machine other processes leave alone (≤ busyCoresMax over one second), up to quietWaitMs.
async function quiet(): Promise<CpuShare> {
  const deadline = performance.now() + quietWaitMs
  for (;;) {
    const from = cpu.sample()
    await sleep(1_000)
    const share = cpu.share(from, cpu.sample())
    if (!(share.othersCores > busyCoresMax) || performance.now() > deadline) return share
  }
}

interface Measured<T> {
  readonly result: T
  readonly before: CpuShare
  readonly during: CpuShare
  readonly runs: number
}

// Runs a step on a quiet machine; re-runs it once when others used the CPU meanwhile.
async function measured<T>(step: () => Promise<T>): Promise<Measured<T>> {
  let best: Measured<T> | null = null
  for (let run = 1; run <= 1 + reruns; run++) {
    const before = await quiet()
    const from = cpu.sample()
    const result = await step()
    const during = cpu.share(from, cpu.sample())
    if (best === null || during.othersCores < best.during.othersCores) best = { result, before, during, runs: run }
    if (!(during.othersCores > busyCoresMax)) break
  }
  return best as Measured<T>
}

const cpuNote = (m: Measured<unknown>): string =>
  `others ${m.during.othersCores.toFixed(2)} cores during (${m.before.othersCores.toFixed(2)} before), load ${m.during.load1.toFixed(2)}` +
  (m.runs > 1 ? `, run ${m.runs}` : '') +
  (m.during.othersCores > busyCoresMax ? '  ** BUSY: other processes used the CPU **' : '')

// --- 1. latency -------------------------------------------------------------------------------

interface LatencyResult {
  readonly samples: ReadonlyArray<number>
  readonly failed: number
}

async function latencyStep(round: number): Promise<LatencyResult> {
  const queue = `latency-${round}`
  const producer = await spawn(`lat${round}-producer`, 'producer')
  const worker = await spawn(`lat${round}-worker`, 'worker')
  try {
    await until(everyoneSees([producer, worker], [worker.hostId]), 'the producer seeing the worker', 15_000)
    const samples: number[] = []
    let warm = 0
    worker.on((event) => {
      if (event.type !== 'handled') return
      for (const job of event.jobs) {
        if (warm < 50) warm++
        else samples.push(job.latencyMs ?? Number.NaN)
      }
    })
    worker.send({ type: 'work', url, queues: [queue], concurrency: 8 })
    // Warm-up: the first jobs load the queue's partition and JIT the path; not counted.
    producer.send({ type: 'enqueue', queue, count: 50, ratePerS, inflightMax: 32 })
    await producer.waitFor((event) => (event.type === 'enqueueDone' ? event : undefined), 'the warm-up enqueues', 30_000)
    await until(() => warm >= 50, 'the warm-up jobs handled', 30_000)
    const done = producer.waitFor((event) => (event.type === 'enqueueDone' ? event : undefined), 'the enqueues', 60_000 + (latencyJobs * 1000) / ratePerS)
    producer.send({ type: 'enqueue', queue, count: latencyJobs, ratePerS, inflightMax: 32 })
    const { failed } = await done
    await until(() => samples.length >= latencyJobs - failed, 'every job handled', 30_000)
    return { samples, failed }
  } finally {
    await closeAll([producer, worker])
  }
}

// --- 2. drain ---------------------------------------------------------------------------------

interface DrainResult {
  /** NaN when rows were left after every handler had run (see `leftOver`). */
  readonly drainMs: number
  readonly leftOver: string
  readonly deliveredAtStart: number
  readonly rangeSettled: number
  readonly rangeEnd: number
  readonly increments: number
  readonly owners: string
  readonly byHost: string
  readonly duplicates: number
  /** Database transactions committed while draining, per job handled (statements outside a transaction count one each). */
  readonly transactionsPerJob: number
  /** CPU the bench's processes (workers, PostgreSQL, this one) used while draining, in ms per 1,000 jobs. */
  readonly cpuMsPerThousand: number
  /** Deadlocks PostgreSQL detected while draining: each stalls the statements in its cycle for `deadlock_timeout` (1 s) and fails one. */
  readonly deadlocks: number
}

/** The database's committed transactions and detected deadlocks so far. */
async function databaseCounters(): Promise<{ readonly transactions: number; readonly deadlocks: number }> {
  await pool.query('SELECT pg_stat_clear_snapshot()')
  const { rows } = await pool.query<{ n: string; deadlocks: string }>('SELECT xact_commit AS n, deadlocks FROM pg_stat_database WHERE datname = current_database()')
  return { transactions: Number(rows[0]?.n), deadlocks: Number(rows[0]?.deadlocks) }
}

async function rangesOf(queue: string): Promise<Map<number, number>> {
  const { rows } = await pool.query<{ partition: string; range_id: string }>('SELECT partition, range_id FROM matchbox.task_queues WHERE namespace = $1 AND family = $2', ['jobs', queue])
  return new Map(rows.map((row) => [Number(row.partition), Number(row.range_id)]))
}

async function jobsLeft(queue: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM matchbox.jobs WHERE queue = $1', [queue])
  return rows[0]?.n ?? Number.NaN
}

async function enqueueBacklog(queue: string, partitions: number, count: number): Promise<void> {
  const handle = parent.queue(queue, { partitions })
  let next = 0
  const lane = async () => {
    while (next < count) {
      next++
      await handle.enqueue({ n: next })
    }
  }
  await Promise.all(Array.from({ length: 32 }, lane))
}

async function drainStep(partitions: number, hostCount: number, round: number): Promise<DrainResult> {
  const queue = `drain-p${partitions}-h${hostCount}-${round}`
  await enqueueBacklog(queue, partitions, backlogJobs)
  const hostIds = Array.from({ length: hostCount }, (_, index) => `d${partitions}${hostCount}r${round}-w${index + 1}`)
  const workers = await Promise.all(hostIds.map((hostId) => spawn(hostId, 'worker')))
  try {
    await until(everyoneSees(workers, hostIds), 'every worker seeing the whole group', 15_000)
    const owners = Array.from({ length: partitions }, (_, partition) => ownerOf(makePartitionKey({ namespace: 'jobs', family: queue, type: 'activity', partition }), hostIds) ?? '?')
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM matchbox.jobs WHERE queue = $1 AND due_ms IS NULL', [queue])
    const deliveredAtStart = rows[0]?.n ?? Number.NaN
    const handledBy = new Map<string, number>()
    const seen = new Set<string>()
    let handled = 0
    let settled: Promise<Map<number, number>> | null = null
    for (const worker of workers) {
      worker.on((event) => {
        if (event.type !== 'handled') return
        settled ??= rangesOf(queue)
        for (const job of event.jobs) {
          handled++
          seen.add(job.id)
          handledBy.set(worker.hostId, (handledBy.get(worker.hostId) ?? 0) + 1)
        }
      })
    }
    const countersBefore = await databaseCounters()
    const cpuFrom = cpu.sample()
    const startedMs = performance.now()
    for (const worker of workers) worker.send({ type: 'work', url, queues: [queue], queueOptions: { partitions }, concurrency })
    await until(() => seen.size >= backlogJobs, `${backlogJobs} jobs handled (${seen.size} so far)`, 300_000, 10)
    let drainMs = Number.NaN
    let leftOver = ''
    try {
      await until(async () => (await jobsLeft(queue)) === 0, 'no job row left', leftBoundMs)
      drainMs = performance.now() - startedMs
    } catch {
      // Every handler ran but rows remain: say what they are instead of a time.
      const { rows: left } = await pool.query<{ state: string; attempts: number; n: number; deadline_in_ms: number | null }>(
        'SELECT state, attempts, count(*)::int AS n, (min(deadline_ms) - $2::bigint)::int AS deadline_in_ms FROM matchbox.jobs WHERE queue = $1 GROUP BY 1, 2 ORDER BY 1, 2',
        [queue, Math.round(wallMs())],
      )
      leftOver = left.map((row) => `${row.n} ${row.state} (attempts ${row.attempts}, deadline in ${row.deadline_in_ms} ms)`).join(', ')
    }
    const cpuDuring = cpu.share(cpuFrom, cpu.sample())
    const cpuMsPerThousand = (cpuDuring.oursCores * (performance.now() - startedMs) * 1000) / backlogJobs
    const countersAfter = await databaseCounters()
    const transactionsPerJob = (countersAfter.transactions - countersBefore.transactions) / backlogJobs
    const before = await (settled ?? rangesOf(queue))
    const after = await rangesOf(queue)
    let increments = 0
    // A partition first loaded after the first handled job starts at range 1: its first acquire is not a change of owner.
    for (const [partition, range] of after) increments += range - (before.get(partition) ?? 1)
    return {
      drainMs,
      leftOver,
      deliveredAtStart,
      rangeSettled: [...after.keys()].reduce((sum, partition) => sum + (before.get(partition) ?? 0), 0),
      rangeEnd: [...after.values()].reduce((sum, value) => sum + value, 0),
      increments,
      owners: hostIds.map((hostId) => owners.filter((owner) => owner === hostId).length).join('/'),
      byHost: hostIds.map((hostId) => handledBy.get(hostId) ?? 0).join('/'),
      duplicates: handled - seen.size,
      transactionsPerJob,
      cpuMsPerThousand,
      deadlocks: countersAfter.deadlocks - countersBefore.deadlocks,
    }
  } finally {
    await closeAll(workers)
  }
}

// --- 3. kill ----------------------------------------------------------------------------------

interface KillResult {
  readonly victim: string
  readonly queues: number
  readonly servedMinMs: number
  readonly servedMaxMs: number
  readonly droppedMs: number
}

async function killStep(): Promise<ReadonlyArray<KillResult>> {
  const hostIds = ['k-w1', 'k-w2', 'k-w3']
  const workers = new Map<string, EngineProcess>()
  const handled = new Map<string, HandledJob>()
  const listen = (engine: EngineProcess) =>
    engine.on((event) => {
      if (event.type === 'handled') for (const job of event.jobs) if (!handled.has(job.id)) handled.set(job.id, job)
    })
  const startWorker = async (hostId: string) => {
    const engine = await spawn(hostId, 'worker')
    listen(engine)
    workers.set(hostId, engine)
  }
  // Every queue handled once: the group has settled and every partition is loaded.
  const warmUp = async () => {
    await until(everyoneSees([...workers.values()], hostIds), 'every worker seeing the whole group', 30_000)
    const ids = await Promise.all(killQueues.map((queue) => parent.queue(queue, { visibilityTimeoutS: 5 }).enqueue({ warmUp: true })))
    await until(() => ids.every((id) => handled.has(id)), 'the warm-up jobs handled', 60_000)
  }
  const results: KillResult[] = []
  try {
    await Promise.all(hostIds.map(startWorker))
    for (const engine of workers.values()) engine.send({ type: 'work', url, queues: killQueues, queueOptions: { visibilityTimeoutS: 5 }, concurrency: 2 })
    await warmUp()
    for (let kill = 0; kill < kills; kill++) {
      const victim = hostIds[kill % hostIds.length] as string
      const owned = killQueues.filter((queue) => ownerOf(makePartitionKey({ namespace: 'jobs', family: queue, type: 'activity', partition: 0 }), hostIds) === victim)
      const survivors = [...workers.values()].filter((engine) => engine.hostId !== victim)
      let droppedAtMs = Number.NaN
      const unsubscribe = survivors.map((engine) =>
        engine.on((event) => {
          if (event.type === 'hosts' && !event.hosts.includes(victim) && Number.isNaN(droppedAtMs)) droppedAtMs = event.atMs
        }),
      )
      const killedAtMs = wallMs()
      await (workers.get(victim) as EngineProcess).kill()
      const ids = await Promise.all(owned.map((queue) => parent.queue(queue, { visibilityTimeoutS: 5 }).enqueue({ probe: kill })))
      await until(() => ids.every((id) => handled.has(id)), `the probes to ${victim}'s queues handled`, 60_000)
      for (const stop of unsubscribe) stop()
      const served = ids.map((id) => (handled.get(id) as HandledJob).startedMs - killedAtMs)
      results.push({ victim, queues: owned.length, servedMinMs: Math.min(...served), servedMaxMs: Math.max(...served), droppedMs: droppedAtMs - killedAtMs })
      await startWorker(victim)
      ;(workers.get(victim) as EngineProcess).send({ type: 'work', url, queues: killQueues, queueOptions: { visibilityTimeoutS: 5 }, concurrency: 2 })
      await warmUp()
    }
    return results
  } finally {
    await closeAll(workers.values())
  }
}

// --- main -------------------------------------------------------------------------------------

try {
  const startedMs = performance.now()
  console.log(
    `multi-host bench: node ${process.version}, ${quick ? '--quick, ' : ''}backlog ${backlogJobs}, latency ${latencyJobs} jobs at ${ratePerS}/s, ${kills} kills, ` +
      `drain concurrency ${concurrency} per worker, ${reruns} re-runs of a busy step; busy = others > ${busyCoresMax} cores`,
  )
  cluster = startCluster()
  const admin = new pg.Client({ connectionString: cluster.url })
  await admin.connect()
  await admin.query('CREATE DATABASE mb_multihost TEMPLATE template0')
  await admin.end()
  const databaseUrl = new URL(cluster.url)
  databaseUrl.pathname = '/mb_multihost'
  url = databaseUrl.toString()
  pool = new pg.Pool({ connectionString: url, max: 4 })
  parent = await open({ store: { databaseUrl: url }, role: 'producer', hostId: 'bench-parent' })
  const postmaster = postmasterPidOf(cluster.url)
  cpu = makeCpuWatch(postmaster === null ? [] : [postmaster])
  if (postmaster === null) console.log('(the postmaster pid is unknown: PostgreSQL CPU counts as others)')

  if (steps.has('latency')) {
    console.log(`\n1. enqueue → handler start, producer process → worker process, ${latencyJobs} jobs at ${ratePerS}/s (targets p50 ≤ 5 ms, p99 ≤ 50 ms, max ≤ 1 s)`)
    let latencyRound = 0
    const latency = await measured(() => latencyStep(latencyRound++))
    const sorted = [...latency.result.samples].sort((a, b) => a - b)
    const verdict = (value: number, target: number) => (value <= target ? 'ok' : 'MISSED')
    console.log(
      `   p50 ${ms(percentile(sorted, 50))} (${verdict(percentile(sorted, 50), 5)})   p99 ${ms(percentile(sorted, 99))} (${verdict(percentile(sorted, 99), 50)})   ` +
        `max ${ms(sorted.at(-1) ?? Number.NaN)} (${verdict(sorted.at(-1) ?? Number.NaN, 1_000)})   ${sorted.length} samples, ${latency.result.failed} failed enqueues`,
    )
    console.log(`   ${cpuNote(latency)}`)
  }

  if (steps.has('drain')) {
    console.log(`\n2. draining a ${backlogJobs}-job backlog (target: 2 and 3 hosts ≤ 1.0× the 1-host time; range increments after start-up 0)`)
    console.log('   partitions hosts   drain      ratio  jobs/s   delivered@start  owned   handled by      range settled→end (+incr)  dup  tx/job  cpu ms/1k  deadlocks')
    let drainRound = 0
    for (const partitions of drainPartitions) {
      let baseline = Number.NaN
      for (const hostCount of [1, 2, 3]) {
        const m = await measured(() => drainStep(partitions, hostCount, drainRound++))
        const r = m.result
        if (hostCount === 1) baseline = r.drainMs
        console.log(
          `   ${String(partitions).padStart(10)} ${String(hostCount).padStart(5)}   ${ms(r.drainMs).padStart(9)}  ${(r.drainMs / baseline).toFixed(2).padStart(5)}×  ` +
            `${((backlogJobs * 1000) / r.drainMs).toFixed(0).padStart(6)}   ${String(r.deliveredAtStart).padStart(15)}  ${r.owners.padEnd(6)}  ${r.byHost.padEnd(14)}  ` +
            `${`${r.rangeSettled}→${r.rangeEnd} (+${r.increments})`.padEnd(25)}  ${String(r.duplicates).padStart(3)}  ${r.transactionsPerJob.toFixed(2).padStart(6)}  ${r.cpuMsPerThousand.toFixed(0).padStart(9)}  ${String(r.deadlocks).padStart(9)}   ${cpuNote(m)}`,
        )
        if (r.leftOver !== '') console.log(`   ** every handler ran, yet ${leftBoundMs / 1000} s later the queue still had job rows: ${r.leftOver} **`)
      }
  }

  }

  if (steps.has('kill')) {
    console.log(`\n3. SIGKILL one of three workers; a job enqueued at once to each queue it owned (membership TTL 5 s, heartbeat 1 s)`)
    const killed = await measured(killStep)
    for (const result of killed.result) {
      console.log(
        `   killed ${result.victim}: its ${result.queues} queues served again after ${ms(result.servedMinMs)} … ${ms(result.servedMaxMs)}; survivors dropped it after ${ms(result.droppedMs)}`,
      )
  }
  console.log(`   ${cpuNote(killed)}`)
  }
  console.log(`\ndone in ${((performance.now() - startedMs) / 1000).toFixed(0)} s`)
} finally {
  await closeAll(live).catch(() => {})
  await (parent as Matchbox | undefined)?.close().catch(() => {})
  await (pool as pg.Pool | undefined)?.end().catch(() => {})
  cluster?.stop()
}
