/**
 * faultRun — jobs flowing through one engine on real PostgreSQL while a fault strikes the
 * database, shared by test/faults.postgres.test.ts and bench/faults.ts.
 *
 * One run: an engine on `url` (real clock, short connect bound), a worker (`concurrency` 4)
 * recording each job id it handles, and a producer enqueueing one job at a time. Each cycle
 * waits for `enqueuesPerCycle` more successful enqueues, then awaits `fault()` (a server
 * restart, a round of killed connections…) while jobs keep flowing. Then the producer stops and
 * the run drains: it waits until every job whose enqueue resolved was handled and the queue's
 * rows are gone from `jobs` (acked), and reads what is left.
 *
 * Checks (returned as violation lines, so the bench can run many cycles and list them all):
 * every successfully enqueued job was handled at least once; after the drain no job of the
 * queue is pending or processing and none is dead. A failed enqueue (`Unavailable`) is retried
 * by the producer as a new job; one that may have committed can be handled too, which is fine.
 *
 * Waits are on conditions (counts reached, the table polled) with bounds; nothing sleeps for a
 * set time. Does not: use vitest (the bench runs it too).
 */
import pg from 'pg'
import { type Matchbox, open } from '../../src/index.ts'

/** What to run. */
export interface FaultRunOptions {
  /** A database of its own (the run reads `<schema>.jobs`). */
  readonly url: string
  readonly seed: number
  readonly cycles: number
  /** Successful enqueues between faults (default 100). */
  readonly enqueuesPerCycle?: number
  /** The fault of one cycle; jobs keep flowing while it runs (`flow` tells how far). */
  readonly fault: (cycle: number, flow: Flow) => Promise<void>
  /** How long the final drain may take (default 45 s: past a delivery reservation's 30 s). */
  readonly drainBoundMs?: number
  readonly log?: (line: string) => void
}

/** What happened. */
export interface FaultRunReport {
  readonly enqueued: number
  readonly enqueueFailures: number
  readonly handled: number
  /** Handler runs past the first per job (redeliveries after a lost ack or a lapsed claim). */
  readonly handledAgain: number
  readonly workerErrors: number
  /** Per cycle, ms from the fault's end until the next job was handled (null: none within 30 s). */
  readonly recoveryMs: ReadonlyArray<number | null>
  readonly violations: ReadonlyArray<string>
}

/** How far the jobs have flowed, for a fault that strikes in step with them. */
export interface Flow {
  enqueued(): number
  handled(): number
  /** Resolves once `count` more enqueues succeeded (false when `boundMs` ran out first). */
  moreEnqueued(count: number, boundMs?: number): Promise<boolean>
}

const queueName = 'faults'

// The database may still be coming back from the last fault: a few tries.
async function retried<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read()
    } catch (error) {
      if (attempt >= 20) throw error
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

async function until(condition: () => boolean | Promise<boolean>, boundMs: number, everyMs = 50): Promise<boolean> {
  const deadline = performance.now() + boundMs
  while (!(await condition())) {
    if (performance.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
  return true
}

/** Runs the cycles and the drain; closes everything it opened. */
export async function runUnderFaults(options: FaultRunOptions): Promise<FaultRunReport> {
  const log = options.log ?? (() => {})
  const perCycle = options.enqueuesPerCycle ?? 100
  const mb: Matchbox = await open({ store: { databaseUrl: options.url, connectTimeoutMs: 2_000 }, seed: options.seed, hostId: `faults-${options.seed}` })
  // A pool: the faults kill its connections too, and a pool opens fresh ones.
  const admin = new pg.Pool({ connectionString: options.url, max: 2 })
  admin.on('error', () => {})
  const violations: string[] = []
  const enqueued: string[] = []
  const handled = new Map<string, number>()
  let enqueueFailures = 0
  let workerErrors = 0
  const recoveryMs: Array<number | null> = []
  let producing = true
  let stopWork: (() => Promise<void>) | null = null
  try {
    // Short claims: a claim whose ack was lost costs a second, not five minutes.
    const queue = mb.queue(queueName, { visibilityTimeoutS: 1, maxAttempts: 10_000 })
    stopWork = queue.work(
      async (job) => {
        handled.set(job.id, (handled.get(job.id) ?? 0) + 1)
      },
      { concurrency: 4, onError: () => void workerErrors++ },
    )
    const flow: Flow = {
      enqueued: () => enqueued.length,
      handled: () => handled.size,
      moreEnqueued(count, boundMs = 10_000) {
        const target = enqueued.length + count
        return until(() => enqueued.length >= target, boundMs, 5)
      },
    }
    const producer = (async () => {
      while (producing) {
        try {
          enqueued.push(await queue.enqueue({ n: enqueued.length }))
        } catch {
          enqueueFailures++
          // The store is down: let the fault run rather than spin on refusals.
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
      }
    })()
    for (let cycle = 0; cycle < options.cycles; cycle++) {
      const target = enqueued.length + perCycle
      if (!(await until(() => enqueued.length >= target, 30_000))) violations.push(`cycle ${cycle}: the producer stalled at ${enqueued.length} enqueues`)
      await options.fault(cycle, flow)
      const handledBefore = handled.size
      const faultEndedMs = performance.now()
      recoveryMs.push((await until(() => handled.size > handledBefore, 30_000, 5)) ? Math.round(performance.now() - faultEndedMs) : null)
      log(`cycle ${cycle}: ${enqueued.length} enqueued, ${handled.size} handled, ${enqueueFailures} enqueue failures, ${workerErrors} worker errors, handling again ${recoveryMs.at(-1) ?? 'never'} ms after the fault`)
    }
    const target = enqueued.length + perCycle
    await until(() => enqueued.length >= target, 30_000)
    producing = false
    await producer

    const jobsLeft = async (): Promise<number> => {
      try {
        return Number((await admin.query('SELECT count(*) AS n FROM matchbox.jobs WHERE queue = $1', [queueName])).rows[0].n)
      } catch {
        return -1
      }
    }
    const drained = await until(async () => enqueued.every((id) => handled.has(id)) && (await jobsLeft()) === 0, options.drainBoundMs ?? 45_000, 100)
    const missing = enqueued.filter((id) => !handled.has(id))
    if (missing.length > 0) violations.push(`${missing.length} of ${enqueued.length} enqueued jobs never handled, e.g. ${missing.slice(0, 3).join(', ')}`)
    const left = await retried(() => admin.query('SELECT state, count(*) AS n FROM matchbox.jobs WHERE queue = $1 GROUP BY state ORDER BY state', [queueName]))
    for (const row of left.rows as Array<{ state: string; n: string }>) violations.push(`${row.n} jobs stranded ${row.state} after the drain`)
    const dead = await retried(() => admin.query('SELECT count(*) AS n FROM matchbox.dead_jobs WHERE queue = $1', [queueName]))
    if (Number(dead.rows[0].n) > 0) violations.push(`${dead.rows[0].n} jobs died`)
    if (!drained && violations.length === 0) violations.push('the drain did not finish within its bound')
  } finally {
    producing = false
    await stopWork?.().catch(() => {})
    await mb.close().catch(() => {})
    await admin.end().catch(() => {})
  }
  const handledAgain = [...handled.values()].reduce((sum, count) => sum + count - 1, 0)
  return { enqueued: enqueued.length, enqueueFailures, handled: handled.size, handledAgain, workerErrors, recoveryMs, violations }
}

/** Terminates every backend of `database` but the caller's own; resolves with how many. */
export async function terminateBackends(admin: pg.Pool | pg.Client, database: string): Promise<number> {
  const result = await admin.query('SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database])
  return Number(result.rows[0].n)
}
