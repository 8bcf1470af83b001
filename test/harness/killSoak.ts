/**
 * killSoak — engine processes SIGKILLed under load on one PostgreSQL database, shared by
 * test/multiEngine.kill.postgres.test.ts (a few kills, asserted) and bench/killSoak.ts (a
 * thousand, printed). Three worker engine processes and a producer-only engine process
 * (engineChild.ts), all on the real clock. The producer enqueues a steady stream to one queue
 * (one partition: one owner, the others forward their polls); every cycle a seeded random worker
 * is SIGKILLed at a seeded moment and respawned, under its old host id (a restart: it takes its
 * partitions straight back) or a new one (the others take over once its heartbeat row expires).
 * Handlers record every run of a job in a table of the same database before they return (the
 * table has no key, so a job run twice has two rows).
 *
 * Figures: enqueues the producer reported, jobs handled at least once, the reported ones never
 * handled (lost), jobs left pending or processing after a final drain, dead jobs, duplicates
 * (runs past the first), redelivery waits (from one run of a job to the next), enqueue → first
 * run, and engine processes that ended other than by our SIGKILL or close.
 *
 * Every wait is on a condition (events from the children, or the database polled) with a bound;
 * a bound that runs out throws with the seed. The seed replays the kill schedule (which engine,
 * when in the enqueue stream, old or new host id) — not the timing of the processes, which is real.
 */
import pg from 'pg'
import { Random } from '../../src/kernel/Random.ts'
import { type ChildExit, type EngineProcess, startEngineProcess } from './engineProcess.ts'

const slots = 3
const queue = 'kill-stream'
// maxAttempts: kills and lost hand-overs spend attempts without running a handler; the soak is
// about delivery, not the attempt budget. Short visibility timeouts make a kill cost ~1 s.
const queueOptions = { visibilityTimeoutS: 1, maxAttempts: 1_000 }
const table = 'kill_runs'
// Low enough that the group catches up within a few seconds after an owner's outage (a killed
// owner under a new id is served again only once its row expires) on a busy two-core machine.
const producerRatePerS = 20
// A kill comes after this many more reported enqueues (0.25–1 s of the stream).
const enqueuesBetweenKills = [5, 20] as const
// Processes kept loading ahead of the next respawn.
const standbysAhead = 2
// The final drain: a claim lapses after 1 s and a dead owner's row after 5 s; a delivery
// reservation the owner made just before its kill is offered again after jobDeliveryRetryMs
// (30 s); the backlog the churn left behind drains at the group's rate. Past this, a job is stuck.
const drainBoundMs = 90_000
const stepBoundMs = 60_000

/** Options of a soak. */
export interface KillSoakOptions {
  readonly url: string
  readonly kills: number
  readonly seed: number
  /** Start the compiled engine child on plain Node (engineProcess's buildCompiledChild ran). */
  readonly compiled?: boolean
  readonly log?: (line: string) => void
}

/** Percentiles of a set of durations, ms (0 when empty). */
export interface Spread {
  readonly count: number
  readonly p50Ms: number
  readonly p95Ms: number
  readonly maxMs: number
}

/** What a soak saw. */
export interface KillSoakFigures {
  readonly seed: number
  readonly kills: number
  readonly reported: number
  readonly enqueueFailures: number
  readonly handled: number
  readonly byHosts: number
  readonly lost: number
  readonly leftLive: number
  readonly dead: number
  readonly duplicates: number
  readonly redeliveryWaits: Spread
  readonly firstRun: Spread
  readonly drainMs: number
  readonly totalMs: number
  readonly workerErrors: ReadonlyArray<string>
  readonly unexpectedEnds: ReadonlyArray<string>
}

/** Runs the soak; throws (with the seed and the stuck jobs logged) when a bound runs out. */
export async function runKillSoak(options: KillSoakOptions): Promise<KillSoakFigures> {
  const log = options.log ?? (() => {})
  const { seed, url } = options
  const random = Random.make(seed)
  const engines = new Set<EngineProcess>()
  const expectedEnds = new WeakSet<EngineProcess>()
  const unexpectedEnds: string[] = []
  const errors: string[] = []
  // Processes started ahead of need, first come first used.
  const standbys: Array<Promise<EngineProcess>> = []
  const pool = new pg.Pool({ connectionString: url, max: 2 })

  const until = async (condition: () => boolean | Promise<boolean>, what: string, boundMs: number, everyMs = 100): Promise<void> => {
    const deadline = performance.now() + boundMs
    while (!(await condition())) {
      if (performance.now() > deadline) throw new Error(`SIM_SEED=${seed}: ${what} did not happen within ${boundMs} ms`)
      await new Promise((resolve) => setTimeout(resolve, everyMs))
    }
  }
  const track = (engine: EngineProcess): EngineProcess => {
    engines.add(engine)
    engine.on((event) => {
      if (event.type === 'error') errors.push(`${engine.hostId}: ${event.message.split('\n')[0]}`)
    })
    void engine.exited.then((exit: ChildExit) => {
      engines.delete(engine)
      if (!expectedEnds.has(engine)) unexpectedEnds.push(`${engine.hostId} (pid ${engine.pid}) ended by itself: code ${exit.code}, signal ${exit.signal}\n${engine.stderr().slice(-2_000)}`)
    })
    return engine
  }
  // A respawn opens an engine in a process that has already loaded (a standby): starting Node
  // takes a second or more on a busy machine, opening an engine a fraction of one.
  const standby = () => {
    const starting = startEngineProcess({ compiled: options.compiled === true }).then(track)
    // Observed here so a failed start is never an unhandled rejection; awaited where used.
    starting.catch(() => {})
    standbys.push(starting)
  }
  const spawn = async (hostId: string, role: 'worker' | 'producer') => {
    const engine = await (standbys.shift() as Promise<EngineProcess>)
    standby()
    await engine.open({ url, hostId, role, seed: random.int(1, 0x7fff_ffff) })
    return engine
  }
  const startWork = (engine: EngineProcess) => engine.send({ type: 'work', url, queues: [queue], queueOptions, concurrency: 4, table })

  try {
    const startedMs = performance.now()
    await pool.query(`CREATE TABLE ${table} (job_id text NOT NULL, host_id text NOT NULL, enqueued_at_ms double precision, handled_at_ms double precision NOT NULL)`)
    await pool.query(`CREATE INDEX ON ${table} (job_id)`)
    for (let index = 0; index < slots + 1 + standbysAhead; index++) standby()
    // The producer first: it migrates the schema the workers then find.
    const producer = await spawn('producer', 'producer')
    const slotIds = Array.from({ length: slots }, (_, slot) => `w${slot}`)
    const workers: EngineProcess[] = []
    for (const hostId of slotIds) workers.push(await spawn(hostId, 'worker'))
    await until(() => [producer, ...workers].every((engine) => engine.hosts().join(',') === slotIds.join(',')), 'every engine seeing the three workers', stepBoundMs)
    for (const worker of workers) startWork(worker)

    const reported: string[] = []
    producer.on((event) => {
      if (event.type === 'enqueued') reported.push(...event.ids)
    })
    const streamDone = producer.waitFor((event) => (event.type === 'enqueueDone' ? event : undefined), 'the end of the enqueue stream', 3_600_000)
    producer.send({ type: 'enqueue', queue, queueOptions, count: 100_000_000, ratePerS: producerRatePerS, inflightMax: 8 })

    let generation = 0
    for (let cycle = 0; cycle < options.kills; cycle++) {
      const mark = reported.length + random.int(...enqueuesBetweenKills)
      await until(() => reported.length >= mark, `cycle ${cycle}: ${mark} reported enqueues`, stepBoundMs, 10)
      const slot = random.int(0, slots - 1)
      const victim = workers[slot] as EngineProcess
      const hostId = random.chance(0.5) ? victim.hostId : `w${slot}g${++generation}`
      expectedEnds.add(victim)
      const exit = await victim.kill()
      if (exit.signal !== 'SIGKILL') unexpectedEnds.push(`${victim.hostId}: ended with ${exit.signal ?? exit.code} instead of our SIGKILL`)
      const respawned = await spawn(hostId, 'worker')
      workers[slot] = respawned
      startWork(respawned)
      log(`cycle ${cycle}: killed ${victim.hostId} at ${reported.length} reported enqueues, respawned as ${hostId} (${((performance.now() - startedMs) / 1000).toFixed(1)} s)`)
    }

    producer.send({ type: 'stopEnqueue' })
    const stream = await streamDone
    const drainStartedMs = performance.now()
    await drain(pool, reported, until, log, engines)
    const drainMs = performance.now() - drainStartedMs
    return { seed, kills: options.kills, reported: reported.length, enqueueFailures: stream.failed, ...(await figuresOf(pool, reported)), drainMs, totalMs: performance.now() - startedMs, workerErrors: errors, unexpectedEnds }
  } finally {
    await Promise.all(standbys.map((starting) => starting.catch(() => {})))
    for (const engine of engines) expectedEnds.add(engine)
    await Promise.all([...engines].map((engine) => engine.close(10_000)))
    await pool.end()
  }
}

type Until = (condition: () => Promise<boolean>, what: string, boundMs: number, everyMs?: number) => Promise<void>

const leftQuery = `SELECT (SELECT count(*)::int FROM unnest($1::text[]) AS id WHERE NOT EXISTS (SELECT 1 FROM ${table} WHERE job_id = id)) AS unhandled,
                          (SELECT count(*)::int FROM matchbox.jobs WHERE queue = $2 AND state IN ('pending', 'processing')) AS live`

// Waits until every reported enqueue ran and nothing is live; logs the stuck jobs if not.
async function drain(pool: pg.Pool, reported: string[], until: Until, log: (line: string) => void, engines: Set<EngineProcess>): Promise<void> {
  const left = async () => (await pool.query<{ unhandled: number; live: number }>(leftQuery, [reported, queue])).rows[0] as { unhandled: number; live: number }
  try {
    await until(async () => {
      const { unhandled, live } = await left()
      return unhandled === 0 && live === 0
    }, 'the final drain', drainBoundMs, 200)
  } catch (error) {
    const missing = await pool.query(
      `SELECT id, state, attempts, due_ms, deadline_ms, claim_token FROM matchbox.jobs WHERE queue = $1 AND (state IN ('pending', 'processing') OR id = ANY($2::text[])) ORDER BY id LIMIT 20`,
      [queue, reported],
    )
    const queues = await pool.query('SELECT queue_key, range_id, last_task_id, ack_levels FROM matchbox.task_queues ORDER BY queue_key')
    const hosts = await pool.query('SELECT host_id, expires_at_ms FROM matchbox.membership_hosts ORDER BY host_id')
    log(`left ${JSON.stringify(await left())}\njobs: ${JSON.stringify(missing.rows)}\nqueues: ${JSON.stringify(queues.rows)}\nhosts: ${JSON.stringify(hosts.rows)}`)
    for (const engine of engines) log(`--- ${engine.hostId} stderr tail ---\n${engine.stderr().slice(-2_000)}`)
    throw error
  }
}

const spreadSql = (expression: string) =>
  `count(${expression})::int AS count, coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY ${expression}), 0)::float AS p50,
   coalesce(percentile_cont(0.95) WITHIN GROUP (ORDER BY ${expression}), 0)::float AS p95, coalesce(max(${expression}), 0)::float AS max`
const spreadOf = (row: { count: number; p50: number; p95: number; max: number }): Spread => ({ count: row.count, p50Ms: row.p50, p95Ms: row.p95, maxMs: row.max })

async function figuresOf(pool: pg.Pool, reported: string[]): Promise<Pick<KillSoakFigures, 'handled' | 'byHosts' | 'lost' | 'leftLive' | 'dead' | 'duplicates' | 'redeliveryWaits' | 'firstRun'>> {
  const { unhandled, live } = (await pool.query<{ unhandled: number; live: number }>(leftQuery, [reported, queue])).rows[0] as { unhandled: number; live: number }
  const counts = (await pool.query<{ handled: number; runs: number; by_hosts: number }>(`SELECT count(DISTINCT job_id)::int AS handled, count(*)::int AS runs, count(DISTINCT host_id)::int AS by_hosts FROM ${table}`)).rows[0]
  const dead = (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM matchbox.dead_jobs WHERE queue = $1', [queue])).rows[0]?.n ?? 0
  type SpreadRow = { count: number; p50: number; p95: number; max: number }
  const waits = (
    await pool.query<SpreadRow>(
      `SELECT ${spreadSql('wait_ms')} FROM (SELECT handled_at_ms - lag(handled_at_ms) OVER (PARTITION BY job_id ORDER BY handled_at_ms) AS wait_ms FROM ${table}) AS runs WHERE wait_ms IS NOT NULL`,
    )
  ).rows[0] as SpreadRow
  const first = (await pool.query<SpreadRow>(`SELECT ${spreadSql('first_ms')} FROM (SELECT min(handled_at_ms) - min(enqueued_at_ms) AS first_ms FROM ${table} GROUP BY job_id) AS jobs`)).rows[0] as SpreadRow
  return {
    handled: counts?.handled ?? 0,
    byHosts: counts?.by_hosts ?? 0,
    lost: unhandled,
    leftLive: live,
    dead,
    duplicates: (counts?.runs ?? 0) - (counts?.handled ?? 0),
    redeliveryWaits: spreadOf(waits),
    firstRun: spreadOf(first),
  }
}
