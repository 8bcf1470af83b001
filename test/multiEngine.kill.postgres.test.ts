/**
 * Engines SIGKILLed under load on one PostgreSQL database: three worker engine processes and a
 * producer-only engine process (test/harness/engineChild.ts), all on the real clock. The
 * producer enqueues a steady stream to one queue (one partition: one owner, the others forward
 * their polls); every cycle a seeded random worker is SIGKILLed at a seeded moment and respawned,
 * under its old host id (a restart: it takes its partitions straight back) or a new one (the
 * others take over once its heartbeat row expires). Handlers record each job id in a table of
 * the same database before they return.
 *
 * Checks: every job the producer reported as enqueued was handled at least once; after a final
 * drain no job of the queue is left pending or processing, none died, and no engine process
 * ended other than by our SIGKILL or close. Short visibility timeouts make a kill cost ~1 s.
 *
 * Every wait is on a condition (events from the children, or the database polled) with a bound;
 * a bound that runs out fails the test with the seed. `SIM_SEED=<seed>` replays the kill
 * schedule (which engine, when in the enqueue stream, old or new host id) — not the timing of
 * the processes, which is real.
 */
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { Random, seedFromEntropy } from '../src/kernel/Random.ts'
import { freshDatabase } from './harness/database.ts'
import { type ChildExit, type EngineProcess, startEngineProcess } from './harness/engineProcess.ts'

const seed = process.env.SIM_SEED !== undefined && process.env.SIM_SEED !== '' ? Number(process.env.SIM_SEED) : (seedFromEntropy() >>> 0) % 2 ** 31
console.log(`multi-engine kill: SIM_SEED=${seed}`)

const cycles = 15
const slots = 3
const queue = 'kill-stream'
// maxAttempts: kills and lost hand-overs spend attempts without running a handler; the test is
// about delivery, not the attempt budget.
const queueOptions = { visibilityTimeoutS: 1, maxAttempts: 1_000 }
const table = 'kill_handled'
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
// A hang watchdog for the whole test, far past a slow run's need.
const testTimeoutMs = 400_000
const stepBoundMs = 60_000

const random = Random.make(seed)
const engines = new Set<EngineProcess>()
const expectedEnds = new WeakSet<EngineProcess>()
const unexpectedEnds: string[] = []
const errors: string[] = []
let pool: pg.Pool | undefined
// Processes started ahead of need, first come first used.
const standbys: Array<Promise<EngineProcess>> = []

function track(engine: EngineProcess): EngineProcess {
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

async function until(condition: () => boolean | Promise<boolean>, what: string, boundMs: number, everyMs = 100): Promise<void> {
  const deadline = performance.now() + boundMs
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`SIM_SEED=${seed}: ${what} did not happen within ${boundMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

afterAll(async () => {
  await Promise.all(standbys.map((starting) => starting.catch(() => {})))
  for (const engine of engines) expectedEnds.add(engine)
  await Promise.all([...engines].map((engine) => engine.close(10_000)))
  await pool?.end()
})

describe('engine processes SIGKILLed under load on PostgreSQL', () => {
  it(`${cycles} kills of a random worker: every reported enqueue handled, nothing left pending or processing`, async () => {
    const startedMs = performance.now()
    const startedWallMs = performance.timeOrigin + startedMs
    const url = await freshDatabase('multi_engine_kill')
    pool = new pg.Pool({ connectionString: url, max: 2 })
    await pool.query(`CREATE TABLE ${table} (job_id text PRIMARY KEY, host_id text NOT NULL, enqueued_at_ms double precision, handled_at_ms double precision NOT NULL)`)
    // A respawn opens an engine in a process that has already loaded (a standby): starting Node
    // with tsx takes seconds on a busy machine, opening an engine a fraction of one.
    const standby = () => {
      const starting = startEngineProcess().then(track)
      // Observed here so a failed start is never an unhandled rejection; awaited where used.
      starting.catch(() => {})
      standbys.push(starting)
    }
    for (let index = 0; index < slots + 1 + standbysAhead; index++) standby()
    const spawn = async (hostId: string, role: 'worker' | 'producer') => {
      const engine = await (standbys.shift() as Promise<EngineProcess>)
      standby()
      await engine.open({ url, hostId, role, seed: random.int(1, 0x7fff_ffff) })
      return engine
    }
    const startWork = (engine: EngineProcess) => engine.send({ type: 'work', url, queues: [queue], queueOptions, concurrency: 4, table })

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
    const streamDone = producer.waitFor((event) => (event.type === 'enqueueDone' ? event : undefined), 'the end of the enqueue stream', 600_000)
    producer.send({ type: 'enqueue', queue, queueOptions, count: 1_000_000, ratePerS: producerRatePerS, inflightMax: 8 })

    let generation = 0
    for (let cycle = 0; cycle < cycles; cycle++) {
      const mark = reported.length + random.int(...enqueuesBetweenKills)
      await until(() => reported.length >= mark, `cycle ${cycle}: ${mark} reported enqueues`, stepBoundMs, 10)
      const slot = random.int(0, slots - 1)
      const victim = workers[slot] as EngineProcess
      const sameId = random.chance(0.5)
      const hostId = sameId ? victim.hostId : `w${slot}g${++generation}`
      expectedEnds.add(victim)
      const exit = await victim.kill()
      expect(exit.signal, `SIM_SEED=${seed}: cycle ${cycle}`).toBe('SIGKILL')
      const respawned = await spawn(hostId, 'worker')
      workers[slot] = respawned
      startWork(respawned)
      console.log(`cycle ${cycle}: killed ${victim.hostId} at ${reported.length} reported enqueues, respawned as ${hostId} (${((performance.now() - startedMs) / 1000).toFixed(1)} s)`)
    }

    producer.send({ type: 'stopEnqueue' })
    const stream = await streamDone
    const drainStartedMs = performance.now()
    const left = async () => {
      const { rows } = await (pool as pg.Pool).query<{ unhandled: number; live: number }>(
        `SELECT (SELECT count(*)::int FROM unnest($1::text[]) AS id WHERE NOT EXISTS (SELECT 1 FROM ${table} WHERE job_id = id)) AS unhandled,
                (SELECT count(*)::int FROM matchbox.jobs WHERE queue = $2 AND state IN ('pending', 'processing')) AS live`,
        [reported, queue],
      )
      return rows[0] as { unhandled: number; live: number }
    }
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
      console.log(`SIM_SEED=${seed}: left ${JSON.stringify(await left())}\njobs: ${JSON.stringify(missing.rows)}\nqueues: ${JSON.stringify(queues.rows)}\nhosts: ${JSON.stringify(hosts.rows)}`)
      for (const engine of engines) console.log(`--- ${engine.hostId} stderr tail ---\n${engine.stderr().slice(-2_000)}`)
      throw error
    }
    const drainMs = performance.now() - drainStartedMs

    const { rows: delays } = await pool.query<{ handled: number; by_hosts: number; over_5s: number; max_ms: number }>(
      `SELECT count(*)::int AS handled, count(DISTINCT host_id)::int AS by_hosts, count(*) FILTER (WHERE handled_at_ms - enqueued_at_ms > 5000)::int AS over_5s,
              coalesce(max(handled_at_ms - enqueued_at_ms), 0)::float AS max_ms FROM ${table}`,
    )
    // The shape of the run: per 5 s of enqueue time (since the test began), how long jobs waited for a first handler.
    const { rows: buckets } = await pool.query<{ at_s: number; n: number; p50_ms: number; max_ms: number }>(
      `SELECT (floor((enqueued_at_ms - $1::float) / 5000) * 5)::int AS at_s, count(*)::int AS n,
              round(percentile_cont(0.5) WITHIN GROUP (ORDER BY handled_at_ms - enqueued_at_ms))::int AS p50_ms, round(max(handled_at_ms - enqueued_at_ms))::int AS max_ms
       FROM ${table} WHERE enqueued_at_ms IS NOT NULL GROUP BY 1 ORDER BY 1`,
      [startedWallMs],
    )
    console.log(`enqueue→first handler start by enqueue time: ${buckets.map((b) => `${b.at_s}s n=${b.n} p50=${b.p50_ms} max=${b.max_ms}`).join(' | ')}`)
    const { rows: dead } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM matchbox.dead_jobs WHERE queue = $1', [queue])
    console.log(
      `SIM_SEED=${seed}: ${cycles} kills, ${reported.length} enqueues reported (${stream.failed} failed), ${delays[0]?.handled} handled by ${delays[0]?.by_hosts} host ids; ` +
        `enqueue→first handler start over 5 s: ${delays[0]?.over_5s}, max ${Math.round(delays[0]?.max_ms ?? 0)} ms; final drain ${Math.round(drainMs)} ms; ` +
        `${errors.length} worker errors${errors.length > 0 ? ` (first: ${errors[0]})` : ''}; total ${((performance.now() - startedMs) / 1000).toFixed(1)} s`,
    )
    expect(dead[0]?.n, `SIM_SEED=${seed}: dead jobs`).toBe(0)
    expect(unexpectedEnds, `SIM_SEED=${seed}: engine processes that ended by themselves`).toEqual([])
    expect(reported.length).toBeGreaterThan(cycles * enqueuesBetweenKills[0])
  }, testTimeoutMs)
})
