/**
 * failoverRun — primary failover under load, shared by test/failover.deep.postgres.test.ts
 * (which asserts) and bench/failover.ts (which prints): a PostgreSQL primary with a
 * synchronous streaming standby (ReplicatedNodes.ts), four engines in this process on the real
 * clock reaching the database only through TcpProxy fronts, jobs streaming in and worked.
 *
 * Engines: `producer` (role producer, enqueues) and workers `a` and `b` behind the main proxy;
 * worker `x` behind a proxy of its own, which also enqueues. Queue `stream` is acked by its
 * handler; queue `doomed` (one attempt) throws, so its jobs die through their handles.
 *
 * 1. Kill: the primary p1 is SIGKILLed (every process at once), the standby s1 promoted, both
 *    proxies pointed at it. Checked on s1 before any engine reaches it: every enqueue acknowledged
 *    so far is there (or was acked), no acked job is left, every acknowledged death is dead.
 * 2. Isolation: s1 gets a synchronous standby s2 of its own. The main proxy's connections are cut
 *    (a partition: producer, a and b lose s1), s2 is promoted and the main proxy points at it —
 *    while s1 keeps running and `x` keeps its connections to it. The same checks on s2. For a
 *    while `x` keeps writing to s1: with synchronous replication s1 cannot acknowledge a commit
 *    (its standby is gone), so none of those writes is acknowledged; `x`'s statements fail with
 *    `Unavailable` instead. Then the old primary is fenced for good (its connections cut, the
 *    server stopped) and `x`'s proxy points at s2: `x` resumes, without a restart.
 *    `asynchronous: true` leaves s1 without `synchronous_standby_names`, to show what that loses.
 * 3. Drain: producers stop; the run waits until nothing is pending or processing on s2.
 *
 * Across the run, from the engines' own acknowledgements: an acknowledged enqueue never handled
 * is lost; a handler start after the job's ack was acknowledged is a lost ack. Waits are on
 * conditions, each bounded; the producers pace themselves with timers (a rate, not a sleep).
 *
 * Does not: assert. It returns figures; the caller judges them.
 */
import pg from 'pg'
import { type Matchbox, type MatchboxEvent, open } from '../../src/index.ts'
import { makeNodeSet, makeSynchronous, type NodeSet, type PgNode } from './ReplicatedNodes.ts'
import { startTcpProxy, type TcpProxy } from './TcpProxy.ts'

const database = 'failover'
const streamQueue = 'stream'
// Four partitions, so that x is likely to own one and its owner-side writes are tried too.
const streamOptions = { visibilityTimeoutS: 2, maxAttempts: 1_000, partitions: 4 }
const doomedQueue = 'doomed'
const doomedOptions = { visibilityTimeoutS: 2, maxAttempts: 1 }
// Short bounds so a write to a server that cannot acknowledge fails in seconds, not in 30.
const storeBounds = { connectTimeoutMs: 1_000, statementTimeoutMs: 2_000 }
// Enqueue pacing per producing loop (jobs/s): light enough for a busy two-core machine.
const producerRatePerS = 25
// Every tenth enqueue goes to the doomed queue.
const doomedEvery = 10
// How long x talks to the isolated old primary: past its statement bound and the grace after it.
const isolationMs = 8_000
// How often x tries one more enqueue while isolated.
const probeEveryMs = 250
// A commit a standby flushed just before it was promoted may still reach x a moment after the
// promotion returned; past this margin nothing s1 answers can be acknowledged.
const acknowledgementMarginMs = 1_000
// Bounds on each wait: steady progress, resumption after a failover, the final drain.
const progressBoundMs = 60_000
const drainBoundMs = 120_000

/** What one run of the failover saw. */
export interface FailoverFigures {
  readonly seed: number
  readonly asynchronous: boolean
  readonly enqueuesAcknowledged: number
  readonly enqueueErrors: number
  readonly handled: number
  readonly duplicates: number
  readonly acksAcknowledged: number
  readonly deathsAcknowledged: number
  /** Acknowledged enqueues with no handler record (`stream`) or not dead (`doomed`) on the final primary. */
  readonly lostEnqueues: ReadonlyArray<string>
  /** Jobs whose handler started again after their ack was acknowledged. */
  readonly lostAcks: ReadonlyArray<string>
  readonly failovers: ReadonlyArray<FailoverStep>
  readonly isolated: IsolatedEngine
  /** Live jobs left on the final primary after the drain (0 unless the drain timed out). */
  readonly leftLive: number
}

/** One failover as seen on the promoted server before any engine reached it, and after. */
export interface FailoverStep {
  readonly name: string
  /** From the kill (or partition) until `pg_ctl promote` returned, ms. */
  readonly promoteMs: number
  /** From pointing the proxy at the new primary until a job enqueued after that was handled, ms. */
  readonly resumeMs: number
  /** Engines that enqueued or handled again after the failover, by host id. */
  readonly resumedHosts: ReadonlyArray<string>
  readonly checkedEnqueues: number
  readonly checkedAcks: number
  readonly checkedDeaths: number
  /** Acknowledged enqueues absent from the promoted server (and not acked). */
  readonly missingEnqueues: ReadonlyArray<string>
  /** Acknowledged acks whose job is still on the promoted server. */
  readonly undoneAcks: ReadonlyArray<string>
  /** Acknowledged deaths not in the promoted server's dead jobs. */
  readonly missingDeaths: ReadonlyArray<string>
}

/** The engine that kept talking to the old primary. */
export interface IsolatedEngine {
  /** Writes x started while it could reach only the isolated old primary. */
  readonly writesAttempted: number
  /** Of those, and of its claims and acks, how many the old primary acknowledged. */
  readonly writesAcknowledged: number
  readonly writeErrors: number
  /** From healing x's proxy until x handled a job and had an enqueue acknowledged, ms. */
  readonly resumeMs: number
}

/** Options of a run. */
export interface FailoverOptions {
  readonly seed: number
  readonly asynchronous?: boolean
  readonly log?: (line: string) => void
}

interface Stamp {
  readonly host: string
  readonly atMs: number
}

// The engines' acknowledgements, timed on this process's clock.
interface Ledger {
  readonly enqueued: Map<string, Stamp & { readonly queue: string }>
  readonly starts: Map<string, Stamp[]>
  readonly acked: Map<string, Stamp>
  readonly dead: Map<string, Stamp>
  readonly attempts: Array<Stamp & { ok?: boolean }>
  enqueueErrors: number
}

const nowMs = (): number => performance.now()
const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

async function waitUntil(condition: () => boolean | Promise<boolean>, what: string, boundMs: number): Promise<void> {
  const deadline = nowMs() + boundMs
  while (!(await condition())) {
    if (nowMs() > deadline) throw new Error(`failover: ${what} did not happen within ${boundMs} ms`)
    await delay(50)
  }
}

function record(ledger: Ledger, host: string) {
  return (event: MatchboxEvent): void => {
    if (event.type === 'job.completed') ledger.acked.set(event.id, { host, atMs: nowMs() })
    if (event.type === 'job.dead') ledger.dead.set(event.id, { host, atMs: nowMs() })
  }
}

async function openEngine(proxy: TcpProxy, hostId: string, role: 'worker' | 'producer', seed: number, ledger: Ledger): Promise<Matchbox> {
  return open({ store: { databaseUrl: proxy.url(database), ...storeBounds }, hostId, role, seed, onEvent: record(ledger, hostId) })
}

// A pool beside an engine, through the engine's proxy, for its handlers' records: what a handler
// did lands on whichever server the engine reaches, and survives a failover only as its writes do.
function recorderFor(proxy: TcpProxy): pg.Pool {
  const pool = new pg.Pool({ connectionString: proxy.url(database), max: 4, connectionTimeoutMillis: storeBounds.connectTimeoutMs, query_timeout: 2 * storeBounds.statementTimeoutMs })
  pool.on('error', () => {})
  return pool
}

// Handlers record the job in the `handled` table before they return (stream) or throw (doomed).
function work(mb: Matchbox, recorder: pg.Pool, ledger: Ledger): Array<() => Promise<void>> {
  const started = async (id: string) => {
    const stamps = ledger.starts.get(id) ?? []
    stamps.push({ host: mb.hostId, atMs: nowMs() })
    ledger.starts.set(id, stamps)
    await recorder.query('INSERT INTO handled (job_id, host_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [id, mb.hostId])
  }
  const onError = () => {}
  return [
    mb.queue(streamQueue, streamOptions).work(async (job) => started(job.id), { concurrency: 4, onError }),
    mb.queue(doomedQueue, doomedOptions).work(async (job) => {
      await started(job.id)
      throw new Error('doomed: dies through its handle')
    }, { concurrency: 2, onError }),
  ]
}

// One enqueue loop: paced, each enqueue awaited, its outcome in the ledger.
async function produce(mb: Matchbox, ledger: Ledger, stopped: () => boolean): Promise<void> {
  for (let n = 0; !stopped(); n++) {
    const doomed = n % doomedEvery === doomedEvery - 1
    const queue = doomed ? doomedQueue : streamQueue
    const attempt: Stamp & { ok?: boolean } = { host: mb.hostId, atMs: nowMs() }
    ledger.attempts.push(attempt)
    try {
      const id = await mb.queue(queue, doomed ? doomedOptions : streamOptions).enqueue({ n, host: mb.hostId })
      ledger.enqueued.set(id, { host: mb.hostId, atMs: nowMs(), queue })
      attempt.ok = true
    } catch {
      ledger.enqueueErrors++
      attempt.ok = false
    }
    await delay(1_000 / producerRatePerS)
  }
}

// Enqueues from `mb` every probeEveryMs for `forMs`, none awaiting another: the writes an engine
// on an isolated server keeps trying (they queue for connections, or wait on the server).
async function probe(mb: Matchbox, ledger: Ledger, forMs: number): Promise<void> {
  const probes: Array<Promise<void>> = []
  for (const untilMs = nowMs() + forMs; nowMs() < untilMs; await delay(probeEveryMs)) {
    const attempt: Stamp & { ok?: boolean } = { host: mb.hostId, atMs: nowMs() }
    ledger.attempts.push(attempt)
    probes.push(
      mb.queue(streamQueue, streamOptions).enqueue({ probe: true }).then(
        (id) => {
          ledger.enqueued.set(id, { host: mb.hostId, atMs: nowMs(), queue: streamQueue })
          attempt.ok = true
        },
        () => {
          ledger.enqueueErrors++
          attempt.ok = false
        },
      ),
    )
  }
  // Those still waiting settle later, through whichever server x reaches then.
  void Promise.allSettled(probes)
}

const handledAfter = (ledger: Ledger, host: string, sinceMs: number): boolean =>
  Array.from(ledger.starts.values()).some((stamps) => stamps.some((stamp) => stamp.host === host && stamp.atMs > sinceMs))
const enqueuedAfter = (ledger: Ledger, host: string, sinceMs: number): boolean => Array.from(ledger.enqueued.values()).some((stamp) => stamp.host === host && stamp.atMs > sinceMs)

// The checks on a promoted server, before any engine reaches it.
async function checkPromoted(node: PgNode, ledger: Ledger): Promise<Pick<FailoverStep, 'checkedEnqueues' | 'checkedAcks' | 'checkedDeaths' | 'missingEnqueues' | 'undoneAcks' | 'missingDeaths'>> {
  const enqueued = Array.from(ledger.enqueued.keys())
  const acked = Array.from(ledger.acked.keys())
  const dead = Array.from(ledger.dead.keys())
  const client = new pg.Client({ connectionString: node.url(database) })
  await client.connect()
  try {
    const present = await client.query<{ id: string }>('SELECT id FROM matchbox.jobs WHERE id = ANY($1::text[]) UNION SELECT id FROM matchbox.dead_jobs WHERE id = ANY($1::text[])', [enqueued])
    const presentIds = new Set(present.rows.map((row) => row.id))
    const undone = await client.query<{ id: string }>('SELECT id FROM matchbox.jobs WHERE id = ANY($1::text[])', [acked])
    const deadRows = await client.query<{ id: string }>('SELECT id FROM matchbox.dead_jobs WHERE id = ANY($1::text[])', [dead])
    const deadIds = new Set(deadRows.rows.map((row) => row.id))
    return {
      checkedEnqueues: enqueued.length,
      checkedAcks: acked.length,
      checkedDeaths: dead.length,
      missingEnqueues: enqueued.filter((id) => !presentIds.has(id) && !ledger.acked.has(id)),
      undoneAcks: undone.rows.map((row) => row.id),
      missingDeaths: dead.filter((id) => !deadIds.has(id)),
    }
  } finally {
    await client.end()
  }
}

// After pointing the proxies at a new primary: how long until a job enqueued since is handled,
// and which engines enqueued or handled again.
async function awaitResumption(ledger: Ledger, sinceMs: number, hosts: ReadonlyArray<string>): Promise<{ resumeMs: number; resumedHosts: string[] }> {
  const firstHandledMs = (): number => {
    let first = Number.POSITIVE_INFINITY
    for (const [id, stamp] of ledger.enqueued) if (stamp.atMs > sinceMs) first = Math.min(first, ledger.starts.get(id)?.[0]?.atMs ?? first)
    return first
  }
  const resumed = (host: string) => handledAfter(ledger, host, sinceMs) || enqueuedAfter(ledger, host, sinceMs)
  await waitUntil(() => firstHandledMs() < Number.POSITIVE_INFINITY && hosts.every(resumed), `every engine resuming (${hosts.join(', ')})`, progressBoundMs)
  return { resumeMs: firstHandledMs() - sinceMs, resumedHosts: hosts.filter(resumed) }
}

const progressed = (ledger: Ledger, handledAtLeast: number) => waitUntil(() => ledger.starts.size >= handledAtLeast, `${handledAtLeast} jobs handled`, progressBoundMs)

/** Runs the whole failover scenario; figures for the caller to judge. Cleans up what it started. */
export async function runFailover(options: FailoverOptions): Promise<FailoverFigures> {
  const log = options.log ?? (() => {})
  const nodes: NodeSet = makeNodeSet()
  const proxies: TcpProxy[] = []
  const engines: Matchbox[] = []
  const stops: Array<() => Promise<void>> = []
  const recorders: pg.Pool[] = []
  let producing = true
  const loops: Array<Promise<void>> = []
  try {
    return await scenario()
  } finally {
    producing = false
    await Promise.allSettled(loops)
    await Promise.allSettled(stops.map((stop) => stop()))
    await Promise.allSettled(engines.map((mb) => mb.close()))
    await Promise.allSettled(recorders.map((recorder) => recorder.end()))
    await Promise.allSettled(proxies.map((proxy) => proxy.close()))
    nodes.removeAll()
  }

  async function scenario(): Promise<FailoverFigures> {
    const ledger: Ledger = { enqueued: new Map(), starts: new Map(), acked: new Map(), dead: new Map(), attempts: [], enqueueErrors: 0 }
    const p1 = nodes.primary('p1')
    const s1 = nodes.standby('s1', p1)
    await makeSynchronous(p1)
    const admin = new pg.Client({ connectionString: p1.url('postgres') })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${database}`)
    await admin.end()
    const setup = new pg.Client({ connectionString: p1.url(database) })
    await setup.connect()
    await setup.query('CREATE TABLE handled (job_id text PRIMARY KEY, host_id text NOT NULL)')
    await setup.end()
    const main = await startTcpProxy(p1.socketPath)
    const side = await startTcpProxy(p1.socketPath)
    proxies.push(main, side)
    const producer = await openEngine(main, 'producer', 'producer', options.seed, ledger)
    engines.push(producer)
    for (const [proxy, host] of [[main, 'a'], [main, 'b'], [side, 'x']] as const) {
      const mb = await openEngine(proxy, host, 'worker', options.seed + engines.length, ledger)
      const recorder = recorderFor(proxy)
      recorders.push(recorder)
      engines.push(mb)
      stops.push(...work(mb, recorder, ledger))
    }
    const x = engines[3] as Matchbox
    loops.push(produce(producer, ledger, () => !producing), produce(producer, ledger, () => !producing), produce(x, ledger, () => !producing))
    await progressed(ledger, 100)
    log(`steady on p1: ${ledger.enqueued.size} enqueued, ${ledger.starts.size} handled`)

    // 1. The primary dies.
    const killedAtMs = nowMs()
    main.point(null)
    side.point(null)
    p1.kill()
    s1.promote()
    const promotedAtMs = nowMs()
    const atKill = await checkPromoted(s1, ledger)
    main.point(s1.socketPath)
    side.point(s1.socketPath)
    const kill = { name: 'p1 SIGKILLed, s1 promoted', promoteMs: promotedAtMs - killedAtMs, ...atKill, ...(await awaitResumption(ledger, nowMs(), ['producer', 'a', 'b', 'x'])) }
    log(`${kill.name}: promoted in ${Math.round(kill.promoteMs)} ms, resumed ${Math.round(kill.resumeMs)} ms after; checked ${kill.checkedEnqueues} enqueues, ${kill.checkedAcks} acks`)

    // 2. The primary is cut off from most engines but keeps running, with x still on it.
    const s2 = nodes.standby('s2', s1)
    if (options.asynchronous !== true) await makeSynchronous(s1)
    await progressed(ledger, ledger.starts.size + 100)
    const cutAtMs = nowMs()
    main.point(null)
    main.cut()
    s2.promote()
    const promoted2AtMs = nowMs()
    const atPartition = await checkPromoted(s2, ledger)
    main.point(s2.socketPath)
    const repointedAtMs = nowMs()
    const isolatedFromMs = promoted2AtMs + acknowledgementMarginMs
    await probe(x, ledger, isolationMs)
    const healedAtMs = nowMs()
    side.point(null)
    side.cut()
    s1.stop()
    side.point(s2.socketPath)
    const isolated = isolatedFigures(ledger, 'x', isolatedFromMs, healedAtMs)
    const partition = { name: 's1 isolated with x, s2 promoted', promoteMs: promoted2AtMs - cutAtMs, ...atPartition, ...(await awaitResumption(ledger, repointedAtMs, ['producer', 'a', 'b'])) }
    log(`${partition.name}: promoted in ${Math.round(partition.promoteMs)} ms, resumed ${Math.round(partition.resumeMs)} ms after; x: ${isolated.writesAttempted} writes tried while isolated, ${isolated.writesAcknowledged} acknowledged`)
    await waitUntil(() => handledAfter(ledger, 'x', healedAtMs) && enqueuedAfter(ledger, 'x', healedAtMs), 'x handling and enqueueing again after the heal', progressBoundMs)
    const firstAfter = (stamps: Iterable<Stamp>) => Math.min(...Array.from(stamps).filter((stamp) => stamp.host === 'x' && stamp.atMs > healedAtMs).map((stamp) => stamp.atMs))
    const xResumeMs = Math.max(firstAfter(Array.from(ledger.starts.values()).flat()), firstAfter(ledger.enqueued.values())) - healedAtMs

    // 3. The drain.
    producing = false
    await Promise.allSettled(loops)
    const final = await drain(s2)
    return summarize(ledger, options, [kill, partition], { ...isolated, resumeMs: xResumeMs }, final)
  }
}

function isolatedFigures(ledger: Ledger, host: string, fromMs: number, toMs: number): Omit<IsolatedEngine, 'resumeMs'> {
  const within = (stamp: Stamp) => stamp.host === host && stamp.atMs >= fromMs && stamp.atMs < toMs
  const attempts = ledger.attempts.filter(within)
  const acknowledged =
    Array.from(ledger.enqueued.values()).filter(within).length +
    Array.from(ledger.acked.values()).filter(within).length +
    Array.from(ledger.dead.values()).filter(within).length +
    Array.from(ledger.starts.values()).flat().filter(within).length
  return { writesAttempted: attempts.length, writesAcknowledged: acknowledged, writeErrors: attempts.filter((attempt) => attempt.ok === false).length }
}

// Waits until nothing is pending or processing on the final primary (a bounded wait: what is
// left is reported, not thrown); returns that count and the ids of its dead jobs.
async function drain(node: PgNode): Promise<FinalState> {
  const client = new pg.Client({ connectionString: node.url(database) })
  await client.connect()
  const live = async () => (await client.query<{ n: number }>("SELECT count(*)::int AS n FROM matchbox.jobs WHERE state IN ('pending', 'processing')")).rows[0]?.n ?? 0
  try {
    await waitUntil(async () => (await live()) === 0, 'the final drain', drainBoundMs).catch(() => {})
    const dead = await client.query<{ id: string }>('SELECT id FROM matchbox.dead_jobs')
    const handled = await client.query<{ job_id: string }>('SELECT job_id FROM handled')
    return { leftLive: await live(), deadIds: new Set(dead.rows.map((row) => row.id)), handledIds: new Set(handled.rows.map((row) => row.job_id)) }
  } finally {
    await client.end()
  }
}

// What the final primary holds after the drain.
interface FinalState {
  readonly leftLive: number
  readonly deadIds: ReadonlySet<string>
  /** Jobs whose handler's record reached the history that survived. */
  readonly handledIds: ReadonlySet<string>
}

function summarize(ledger: Ledger, options: FailoverOptions, failovers: FailoverStep[], isolated: IsolatedEngine, final: FinalState): FailoverFigures {
  // Judged on the final primary: a stream job is kept if a handler's record of it survived; a
  // doomed job if it is dead there (one whose single claim lapsed dies without a handler run).
  const lostEnqueues = Array.from(ledger.enqueued).filter(([id, stamp]) => (stamp.queue === doomedQueue ? !final.deadIds.has(id) : !final.handledIds.has(id)))
  const lostAcks = Array.from(ledger.acked).filter(([id, acked]) => (ledger.starts.get(id) ?? []).some((start) => start.atMs > acked.atMs))
  const duplicates = Array.from(ledger.starts.values()).reduce((sum, stamps) => sum + stamps.length - 1, 0)
  return {
    seed: options.seed,
    asynchronous: options.asynchronous === true,
    enqueuesAcknowledged: ledger.enqueued.size,
    enqueueErrors: ledger.enqueueErrors,
    handled: ledger.starts.size,
    duplicates,
    acksAcknowledged: ledger.acked.size,
    deathsAcknowledged: ledger.dead.size,
    lostEnqueues: lostEnqueues.map(([id]) => id),
    lostAcks: lostAcks.map(([id]) => id),
    failovers,
    isolated,
    leftLive: final.leftLive,
  }
}
