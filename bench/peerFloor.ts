/**
 * peerFloor — the raw-SQL floor of bench/peers.ts: the drains' work done with hand-written SQL
 * and no library, on the same server, in the same run, at the same connection budget, so each
 * library's drain rate reads against what one PostgreSQL does for that work at all.
 *
 * One table of its own (`floor_jobs`: a bigserial id, the queue, the payload, a run-at time, the
 * claim time) with one partial index of unclaimed rows in claim order, which a claimed row leaves.
 * The drain modes, as each library's (peerLibraries.ts):
 * - `{ concurrency }`: that many loops of claim one (`UPDATE … FROM (SELECT … FOR UPDATE SKIP
 *   LOCKED LIMIT 1) … RETURNING`) → handler → delete one, each statement its own round trip;
 * - `'batch'`: `batchWorkers` loops of the same claim with `LIMIT batchSize` → every handler →
 *   one `DELETE … WHERE id = ANY($1)`.
 * Every statement is a named (prepared) statement, as graphile-worker's are. A loop that finds
 * the queue empty looks again after `emptyPollMs`: a drain starts with its backlog in place, so
 * that happens only at the end.
 *
 * Does not: retry, time out claims, fence, or anything else a job queue must do: it is the cost
 * of the claim and the delete alone, the floor no library can go below on this server.
 */
import pg from 'pg'
import { type BenchPayload, batchSize, batchWorkers, floorName, type PeerOptions, type PeerSession } from './peerLibraries.ts'

/** How long a loop that found no job waits before it claims again. */
const emptyPollMs = 5

/** What the floor runs, printed with the results. */
export const floorConfiguration = (poolMax: number): string =>
  `hand-written SQL, no library: pg.Pool({ max: ${poolMax} }), named statements; claim UPDATE … FROM (SELECT id … ORDER BY run_at, id LIMIT n FOR UPDATE SKIP LOCKED) … RETURNING id, payload ` +
  `on a partial index of unclaimed rows; drains: N loops of claim 1 → delete 1, batch mode ${batchWorkers} loops of claim ${batchSize} → DELETE … = ANY(ids)`

const schemaSql = `
CREATE TABLE IF NOT EXISTS floor_jobs (
  id bigserial PRIMARY KEY,
  queue text NOT NULL,
  payload jsonb NOT NULL,
  run_at timestamptz NOT NULL DEFAULT now(),
  locked_at timestamptz
);
CREATE INDEX IF NOT EXISTS floor_jobs_ready ON floor_jobs (queue, run_at, id) WHERE locked_at IS NULL`

const claimSql = `
UPDATE floor_jobs AS job SET locked_at = now()
FROM (SELECT id FROM floor_jobs WHERE queue = $1 AND locked_at IS NULL AND run_at <= now() ORDER BY run_at, id LIMIT $2 FOR UPDATE SKIP LOCKED) AS next
WHERE job.id = next.id
RETURNING job.id, job.payload`

/** Opens the floor on its database, creating its table on first use. */
export async function openFloor(options: PeerOptions): Promise<PeerSession> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: options.poolMax })
  pool.on('error', () => {})
  await pool.query(schemaSql)
  const claim = async (queue: string, limit: number): Promise<ReadonlyArray<{ id: string; payload: BenchPayload }>> =>
    (await pool.query<{ id: string; payload: BenchPayload }>({ name: 'floor-claim', text: claimSql, values: [queue, limit] })).rows
  const startWorkers: PeerSession['startWorkers'] = async (queue, mode, onJob) => {
    let stopping = false
    const limit = mode === 'batch' ? batchSize : 1
    const loop = async (): Promise<void> => {
      while (!stopping) {
        const jobs = await claim(queue, limit)
        if (jobs.length === 0) {
          await new Promise((resolve) => setTimeout(resolve, emptyPollMs))
          continue
        }
        for (const job of jobs) onJob(job.payload)
        if (limit === 1) await pool.query({ name: 'floor-delete-one', text: 'DELETE FROM floor_jobs WHERE id = $1', values: [(jobs[0] as { id: string }).id] })
        else await pool.query({ name: 'floor-delete-many', text: 'DELETE FROM floor_jobs WHERE id = ANY($1::bigint[])', values: [jobs.map((job) => job.id)] })
      }
    }
    const loops = Array.from({ length: mode === 'batch' ? batchWorkers : mode.concurrency }, () => loop())
    return async () => {
      stopping = true
      await Promise.all(loops)
    }
  }
  return {
    name: floorName,
    async prepareQueue() {},
    async enqueue(queue, payload) {
      await pool.query({ name: 'floor-insert-one', text: 'INSERT INTO floor_jobs (queue, payload) VALUES ($1, $2)', values: [queue, JSON.stringify(payload)] })
    },
    async enqueueBatch(queue, payloads) {
      await pool.query({
        name: 'floor-insert-many',
        text: 'INSERT INTO floor_jobs (queue, payload) SELECT $1, value FROM jsonb_array_elements($2::jsonb)',
        values: [queue, JSON.stringify(payloads)],
      })
    },
    startWorkers,
    startLatencyWorker: () => Promise.reject(new Error('the SQL floor has no latency worker: it runs the drains only')),
    async discard(queue) {
      await pool.query('DELETE FROM floor_jobs WHERE queue = $1', [queue])
    },
    close: () => pool.end(),
  }
}
