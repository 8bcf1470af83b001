/**
 * peerLibraries — Matchbox, graphile-worker and pg-boss behind one small face, for bench/peers.ts
 * and its latency child (bench/peerLatencyChild.ts).
 *
 * Each library gets a PostgreSQL database of its own and a pool of at most `poolMax`
 * connections per process (graphile-worker `maxPoolSize`, pg-boss `max`, Matchbox a `pg.Pool`
 * passed as `{ pool }`). Everything else is each library's default unless `configurationOf`
 * says otherwise; that text is printed with the results so a run can be reproduced.
 *
 * The drain modes:
 * - `{ concurrency }`: the library's ordinary one-job-at-a-time workers — graphile-worker `run`
 *   with `concurrency`; pg-boss `concurrency` loops of `fetch` → handler → `complete` (its
 *   `work` sleeps `pollingIntervalSeconds`, at least 0.5 s, after every fetch, even a full one,
 *   so it cannot drain a backlog faster than one fetch per 0.5 s per worker); Matchbox
 *   `work({ concurrency })`.
 * - `'batch'`: each library's batching at 16 workers and batches of `batchSize` —
 *   graphile-worker's local queue (`localQueue.size`) with `completeJobBatchDelay: 0`; pg-boss 16
 *   loops of `fetch({ batchSize })` → `complete(ids)`; Matchbox `work({ concurrency: 16, batch:
 *   batchSize })` (claims ahead into a local queue; claims and acks of one turn share a statement).
 * Batch enqueue: graphile-worker `addJobs`, pg-boss `insert`, Matchbox `enqueueMany` — each one
 * statement per call of `batchSize` jobs.
 *
 * Does not: time anything, or check the machine (bench/peers.ts does).
 */
import { type JobHelpers, Logger, makeWorkerUtils, run, type WorkerUtils } from 'graphile-worker'
import pg from 'pg'
import PgBoss from 'pg-boss'
import type * as MatchboxPackage from '../src/index.ts'
import { benchSourceText, loadBuilt } from './built.ts'

// Matchbox as users run it: the compiled package (bench/built.ts).
const { open } = await loadBuilt<typeof MatchboxPackage>('src/index.ts')

/** The libraries compared, in the order they run inside every workload. */
export const libraryNames = ['graphile-worker', 'pg-boss', 'Matchbox'] as const
export type LibraryName = (typeof libraryNames)[number]
/** The raw-SQL floor (peerFloor.ts): a column of the tables beside the libraries, in the drains only. */
export const floorName = 'SQL floor'
/** A column of the tables: a library or the floor. */
export type ContenderName = LibraryName | typeof floorName

/** Workers in the batch mode; the concurrency of the other end-to-end mode that uses 16. */
export const batchWorkers = 16
/** Jobs per batch (fetch, local queue, ack) in the batch mode and per insert in batch enqueues: big enough to amortise a round trip, small enough that 16 workers share a 10,000-job backlog evenly. */
export const batchSize = 64

/**
 * pg-boss's `work` fetches once per polling interval (≥ 0.5 s) however full the fetch, so 16 of them
 * with `batchSize` 1 top out at 32 jobs/s, under the latency workload's 200/s: with 16 a fetch
 * they keep up (512 jobs/s) and the latency measured is delivery, not a growing backlog.
 */
export const latencyBatchSizePgBoss = 16

/** A drain mode: ordinary workers at a concurrency, or the library's batching. */
export type DrainMode = { readonly concurrency: number } | 'batch'

/** A job's payload in every workload. */
export interface BenchPayload {
  readonly n: number
  /** Wall-clock ms (sub-ms precision) when the producer called enqueue; latency workloads only. */
  readonly t?: number
}

/** One library opened on its database. */
export interface PeerSession {
  readonly name: ContenderName
  /** Makes `queue` ready for jobs (pg-boss needs `createQueue`). */
  prepareQueue(queue: string): Promise<void>
  enqueue(queue: string, payload: BenchPayload): Promise<void>
  /** The library's batch insert, or null when it has none. */
  readonly enqueueBatch: ((queue: string, payloads: ReadonlyArray<BenchPayload>) => Promise<void>) | null
  /** Starts workers calling `onJob` at each handler start; resolves once they run; returns stop. */
  startWorkers(queue: string, mode: DrainMode, onJob: (payload: BenchPayload) => void): Promise<() => Promise<void>>
  /** Starts the worker an application would run for latency: as `startWorkers`, except pg-boss runs its own `work`. */
  startLatencyWorker(queue: string, concurrency: number, onJob: (payload: BenchPayload) => void): Promise<() => Promise<void>>
  /** Deletes the jobs an enqueue workload left in `queue`, where leftovers would slow the next workload. */
  discard(queue: string): Promise<void>
  close(): Promise<void>
}

/** Options of `openPeer`. */
export interface PeerOptions {
  readonly databaseUrl: string
  readonly poolMax: number
  /** Matchbox only: 'producer' for a process that only enqueues. */
  readonly role?: 'worker' | 'producer'
}

const silentLogger = new Logger(() => () => {})

/** What each library runs with, beyond its defaults. */
export function configurationOf(name: LibraryName, poolMax: number): string {
  switch (name) {
    case 'graphile-worker':
      return (
        `makeWorkerUtils + run({ maxPoolSize: ${poolMax}, concurrency, taskList, noHandleSignals }), prepared statements on (default), ` +
        `pollInterval 2000 ms (default; new jobs arrive by LISTEN/NOTIFY); batch mode adds preset.worker { localQueue: { size: ${batchSize} }, completeJobBatchDelay: 0 }; ` +
        `batch enqueue addJobs (${batchSize} per call)`
      )
    case 'pg-boss':
      return (
        `new PgBoss({ connectionString, max: ${poolMax} }) with default maintenance and scheduling, queues by createQueue (policy standard); ` +
        `drains: N loops of fetch(queue) → complete(queue, id), batch mode ${batchWorkers} loops of fetch(queue, { batchSize: ${batchSize} }) → complete(queue, ids); ` +
        `latency worker: work(queue, { pollingIntervalSeconds: 0.5 (the minimum), batchSize: ${latencyBatchSizePgBoss} }) × concurrency (pg-boss 10 has no LISTEN/NOTIFY wake-up); batch enqueue insert(${batchSize} jobs)`
      )
    case 'Matchbox':
      return (
        `${benchSourceText}; open({ store: { pool: new pg.Pool({ max: ${poolMax} }) } }) (plus its one LISTEN connection outside the pool), schema matchbox, one partition (default); ` +
        `drains work({ concurrency }); batch mode work({ concurrency: ${batchWorkers}, batch: ${batchSize} }); ` +
        `enqueue workloads and the latency producer open({ role: 'producer' }) (an enqueue-only process); batch enqueue queue.enqueueMany(${batchSize} jobs)`
      )
  }
}

/** Opens `name` on its database (migrating it on first use). */
export async function openPeer(name: LibraryName, options: PeerOptions): Promise<PeerSession> {
  switch (name) {
    case 'graphile-worker':
      return openGraphile(options)
    case 'pg-boss':
      return openPgBoss(options)
    case 'Matchbox':
      return openMatchbox(options)
  }
}

async function openGraphile(options: PeerOptions): Promise<PeerSession> {
  const shared = { connectionString: options.databaseUrl, maxPoolSize: options.poolMax, logger: silentLogger }
  const utils: WorkerUtils = await makeWorkerUtils(shared)
  await utils.migrate()
  const startWorkers: PeerSession['startWorkers'] = async (queue, mode, onJob) => {
    const runner = await run({
      ...shared,
      concurrency: mode === 'batch' ? batchWorkers : mode.concurrency,
      noHandleSignals: true,
      taskList: {
        [queue]: async (payload: unknown, _helpers: JobHelpers) => {
          onJob(payload as BenchPayload)
        },
      },
      ...(mode === 'batch' ? { preset: { worker: { localQueue: { size: batchSize }, completeJobBatchDelay: 0 } } } : {}),
    })
    return async () => {
      await runner.stop()
    }
  }
  return {
    name: 'graphile-worker',
    async prepareQueue() {},
    async enqueue(queue, payload) {
      await utils.addJob(queue, payload)
    },
    async enqueueBatch(queue, payloads) {
      await utils.addJobs(payloads.map((payload) => ({ identifier: queue, payload })))
    },
    startWorkers,
    startLatencyWorker: (queue, concurrency, onJob) => startWorkers(queue, { concurrency }, onJob),
    async discard(queue) {
      // Its jobs of every task share one table and one index, so a backlog of another task slows the next fetch.
      await utils.withPgClient((client) =>
        client.query('DELETE FROM graphile_worker._private_jobs j USING graphile_worker._private_tasks t WHERE t.id = j.task_id AND t.identifier = $1', [queue]),
      )
    },
    async close() {
      await utils.release()
    },
  }
}

async function openPgBoss(options: PeerOptions): Promise<PeerSession> {
  const boss = new PgBoss({ connectionString: options.databaseUrl, max: options.poolMax })
  boss.on('error', (error) => console.error(`pg-boss: ${error.message}`))
  await boss.start()
  return {
    name: 'pg-boss',
    prepareQueue: (queue) => boss.createQueue(queue),
    async enqueue(queue, payload) {
      await boss.send(queue, payload)
    },
    enqueueBatch: (queue, payloads) => boss.insert(payloads.map((data) => ({ name: queue, data }))),
    async startWorkers(queue, mode, onJob) {
      let stopping = false
      const size = mode === 'batch' ? batchSize : 1
      const loop = async (): Promise<void> => {
        while (!stopping) {
          const jobs = await boss.fetch<BenchPayload>(queue, { batchSize: size })
          if (jobs.length === 0) {
            // An empty backlog: poll as its own `work` would, at its minimum interval.
            await new Promise((resolve) => setTimeout(resolve, 500))
            continue
          }
          for (const job of jobs) onJob(job.data)
          await boss.complete(
            queue,
            jobs.map((job) => job.id),
          )
        }
      }
      const loops = Array.from({ length: mode === 'batch' ? batchWorkers : mode.concurrency }, () => loop())
      return async () => {
        stopping = true
        await Promise.all(loops)
      }
    },
    async startLatencyWorker(queue, concurrency, onJob) {
      for (let i = 0; i < concurrency; i++) {
        await boss.work<BenchPayload>(queue, { pollingIntervalSeconds: 0.5, batchSize: latencyBatchSizePgBoss }, async (jobs) => {
          for (const job of jobs) onJob(job.data)
        })
      }
      return () => boss.offWork(queue)
    },
    async discard() {
      // Each queue's jobs are a partition of their own (pg-boss 10), so leftovers touch no other queue.
    },
    close: () => boss.stop({ graceful: true, wait: true, timeout: 5_000 }),
  }
}

async function openMatchbox(options: PeerOptions): Promise<PeerSession> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: options.poolMax })
  pool.on('error', () => {})
  const mb = await open({ store: { pool }, ...(options.role === undefined ? {} : { role: options.role }) })
  const startWorkers: PeerSession['startWorkers'] = async (queue, mode, onJob) => {
    const handle = mb.queue(queue)
    const options = mode === 'batch' ? { concurrency: batchWorkers, batch: batchSize } : { concurrency: mode.concurrency }
    return handle.work(async (job) => onJob(job.payload as unknown as BenchPayload), options)
  }
  return {
    name: 'Matchbox',
    async prepareQueue() {},
    async enqueue(queue, payload) {
      await mb.queue(queue).enqueue(payload)
    },
    async enqueueBatch(queue, payloads) {
      await mb.queue(queue).enqueueMany(payloads.map((payload) => ({ payload })))
    },
    startWorkers,
    startLatencyWorker: (queue, concurrency, onJob) => startWorkers(queue, { concurrency }, onJob),
    async discard(queue) {
      // An enqueue-only engine leaves its jobs due; remove them so a later worker engine's scan
      // does not deliver them while another workload is measured.
      await pool.query('DELETE FROM matchbox.jobs WHERE queue = $1', [queue])
    },
    async close() {
      await mb.close()
      await pool.end()
    },
  }
}
