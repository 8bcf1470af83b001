/**
 * SqlDashboardReads — the dashboard's reads on the SQL stores (PGlite and PostgreSQL, one text),
 * each answered from an index so that a page costs the same on a queue of ten jobs and of ten
 * million:
 *
 * - the queue names: a skip scan (recursive CTE) over the pending jobs' `(queue, id)`, the
 *   processing jobs' `(queue, due_ms)` and the dead jobs' `(queue, id)` — one index probe per
 *   distinct queue, never a scan of the rows;
 * - counts: `count(*)` of an index range cut off at the cap (`LIMIT cap + 1`), so "10,000+" is
 *   the most a count ever reads; scheduled-later walks the claim-head index per priority level;
 * - a jobs page: the pending jobs' `(queue, id)` index backwards from a keyset bound, newest
 *   first, or the processing jobs' index (only what is in flight) sorted by id;
 * - search: the primary keys (id) and the key indexes of both tables;
 * - pending jobs by fairness key: the first `countCap` + 1 of the queue's pending `(queue, id)`, grouped;
 * - deaths per minute of the last hour: `(queue, died_at_ms)` backwards, cut off at the cap.
 *
 * Invariants: parameterized SQL only (the quoted schema is the only interpolated text); rows are
 * decoded with the job store's decoder, which asserts their shape; failures are store errors.
 */
import { priorityMax } from '../../../kernel/Limits.ts'
import type { Driver } from '../../sql/Driver.ts'
import type { Schema } from '../../sql/Schema.ts'
import { makeSqlSession } from '../../sql/SqlSession.ts'
import { toSafeInteger } from '../../queues/sql/SqlValues.ts'
import { checkListLimit, checkName, checkState } from '../../jobs/JobInput.ts'
import { decodeJob } from '../../jobs/sql/jobRows.ts'
import { pausedQueuesSql } from '../../jobs/sql/pauseSql.ts'
import { deadRecord, liveRecord } from '../../jobs/sql/jobSql.ts'
import { bucketDeaths, type CappedCount, type DashboardReads, throughputMinutes } from '../DashboardReads.ts'

type Row = Record<string, unknown>

const priorities = `ARRAY[${Array.from({ length: priorityMax + 1 }, (_, level) => level).join(',')}]::smallint[]`

function statements(schema: Schema) {
  const s = schema.quoted
  // The distinct queues of `table`'s rows that meet `where` (an index's predicate, so the probes read that index).
  const distinct = (name: string, table: string, where: string) => `
  ${name}_queues(queue) AS (
    (SELECT queue FROM ${s}.${table} WHERE ${where} ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT t.queue FROM ${s}.${table} t WHERE ${where} AND t.queue > q.queue ORDER BY t.queue LIMIT 1) FROM ${name}_queues q WHERE q.queue IS NOT NULL
  )`
  // A page of live jobs in state `$2`, newest first: a branch per state, each naming its state so that it reads that state's index.
  const livePage = (bound: string) => `
SELECT * FROM (
${(['pending', 'processing'] as const)
  .map((state) => `  (SELECT ${liveRecord} FROM ${s}.jobs WHERE $2::text = '${state}' AND state = '${state}' AND queue = $1::text${bound} ORDER BY id DESC LIMIT $3::integer)`)
  .join('\n  UNION ALL\n')}
) AS page ORDER BY id DESC`
  const capCount = (from: string) => `(SELECT count(*) FROM (SELECT 1 FROM ${from} LIMIT $2::integer + 1) AS c)`
  return {
    queueNames: `WITH RECURSIVE ${distinct('pending', 'jobs', "state = 'pending'")}, ${distinct('processing', 'jobs', "state = 'processing'")}, ${distinct('dead', 'dead_jobs', 'true')}
SELECT queue FROM (SELECT queue FROM pending_queues UNION SELECT queue FROM processing_queues UNION SELECT queue FROM dead_queues) AS q
WHERE queue IS NOT NULL ORDER BY queue LIMIT $1::integer`,
    queueCounts: `
SELECT q.queue,
  ${capCount(`${s}.jobs WHERE queue = q.queue AND state = 'pending'`)} AS pending,
  ${capCount(`${s}.jobs WHERE queue = q.queue AND state = 'processing'`)} AS processing,
  ${capCount(`${s}.dead_jobs WHERE queue = q.queue`)} AS dead,
  ${capCount(`${s}.jobs WHERE queue = q.queue AND priority = ANY(${priorities}) AND due_ms > $3::bigint AND state = 'pending' AND run_at_ms > $3::bigint`)} AS later,
  (SELECT created_at_ms FROM ${s}.jobs WHERE queue = q.queue AND state = 'pending' ORDER BY id LIMIT 1) AS oldest
FROM unnest($1::text[]) AS q(queue) ORDER BY q.queue`,
    // The newest deaths of the last hour per queue, at most the cap each, off (queue, died_at_ms).
    deaths: `SELECT q.queue, d.died_at_ms FROM unnest($1::text[]) AS q(queue)
CROSS JOIN LATERAL (SELECT died_at_ms FROM ${s}.dead_jobs WHERE queue = q.queue AND died_at_ms > $2::bigint - ${throughputMinutes * 60_000} AND died_at_ms <= $2::bigint
  ORDER BY died_at_ms DESC LIMIT $3::integer + 1) AS d`,
    liveFirst: livePage(''),
    liveBefore: livePage(' AND id < $4::text'),
    deadFirst: `SELECT ${deadRecord} FROM ${s}.dead_jobs WHERE queue = $1::text ORDER BY id DESC LIMIT $2::integer`,
    deadBefore: `SELECT ${deadRecord} FROM ${s}.dead_jobs WHERE queue = $1::text AND id < $3::text ORDER BY id DESC LIMIT $2::integer`,
    byId: `SELECT ${liveRecord} FROM ${s}.jobs WHERE id = $1::text UNION ALL SELECT ${deadRecord} FROM ${s}.dead_jobs WHERE id = $1::text`,
    byKey: `(SELECT ${liveRecord} FROM ${s}.jobs WHERE queue = $2::text AND job_key = $1::text)
UNION ALL (SELECT ${deadRecord} FROM ${s}.dead_jobs WHERE queue = $2::text AND job_key = $1::text ORDER BY id DESC LIMIT $3::integer)`,
    hosts: `SELECT host_id, last_seen_ms, expires_at_ms FROM ${s}.membership_hosts ORDER BY host_id LIMIT $1::integer`,
    physicalQueues: `SELECT queue_key, namespace, family, task_type, partition, version, range_id, last_task_id, updated_at_ms FROM ${s}.task_queues
ORDER BY namespace, family, partition, queue_key LIMIT $1::integer`,
    // The first cap + 1 pending jobs of a queue by id (the pending (queue, id) index), grouped by key.
    keyBacklog: `SELECT fairness_key, count(*) AS pending, sum(count(*)) OVER () AS seen
FROM (SELECT fairness_key FROM ${s}.jobs WHERE queue = $1::text AND state = 'pending' ORDER BY id LIMIT $2::integer + 1) AS p
GROUP BY fairness_key ORDER BY count(*) DESC, fairness_key NULLS FIRST LIMIT $3::integer`,
    pausedQueues: pausedQueuesSql(schema),
    deadIds: `SELECT id FROM ${s}.dead_jobs WHERE queue = $1::text ORDER BY id LIMIT $2::integer`,
    deleteDead: `WITH deleted AS (DELETE FROM ${s}.dead_jobs WHERE queue = $1::text AND id = ANY($2::text[]) RETURNING 1) SELECT count(*) AS deleted FROM deleted`,
  }
}

const cappedOf = (value: unknown, field: string, cap: number): CappedCount => {
  const count = toSafeInteger(value, field)
  return count > cap ? { count: cap, capped: true } : { count, capped: false }
}

/** The dashboard's reads over `driver`'s migrated `schema`. The caller owns the driver. */
export function makeSqlDashboardReads(driver: Driver, schema: Schema): DashboardReads {
  const sql = statements(schema)
  const session = makeSqlSession(driver)
  const read = (operation: string, text: string, params: ReadonlyArray<unknown>) => session.read<Row>(operation, text, params)
  const { validated } = session
  return {
    indexed: true,
    async queues(params) {
      const { limit, countCap } = validated('dashboard.queues', () => ({ limit: checkListLimit('limit', params.limit), countCap: toSafeInteger(params.countCap, 'countCap') }))
      const names = (await read('dashboard.queues', sql.queueNames, [limit])).map((row) => row.queue as string)
      if (names.length === 0) return []
      const rows = await read('dashboard.queues', sql.queueCounts, [names, countCap, params.nowMs])
      const deaths = new Map<string, number[]>()
      for (const row of await read('dashboard.queues', sql.deaths, [names, params.nowMs, countCap])) {
        const list = deaths.get(row.queue as string) ?? []
        list.push(toSafeInteger(row.died_at_ms, 'died_at_ms'))
        deaths.set(row.queue as string, list)
      }
      return rows.map((row) => ({
        queue: row.queue as string,
        pending: cappedOf(row.pending, 'pending', countCap),
        processing: cappedOf(row.processing, 'processing', countCap),
        dead: cappedOf(row.dead, 'dead', countCap),
        scheduledLater: cappedOf(row.later, 'later', countCap),
        oldestPendingCreatedAtMs: row.oldest === null ? null : toSafeInteger(row.oldest, 'oldest'),
        diedPerMinute: bucketDeaths(deaths.get(row.queue as string)?.slice(0, countCap) ?? [], params.nowMs),
        diedCapped: (deaths.get(row.queue as string)?.length ?? 0) > countCap,
      }))
    },
    async jobsPage(params) {
      const { queue, state, limit, beforeId } = validated('dashboard.jobsPage', () => ({
        queue: checkName('queue', params.queue),
        state: checkState('state', params.state),
        limit: checkListLimit('limit', params.limit),
        beforeId: params.beforeId === null ? null : checkName('beforeId', params.beforeId),
      }))
      const rows =
        state === 'dead'
          ? await read('dashboard.jobsPage', beforeId === null ? sql.deadFirst : sql.deadBefore, beforeId === null ? [queue, limit] : [queue, limit, beforeId])
          : await read('dashboard.jobsPage', beforeId === null ? sql.liveFirst : sql.liveBefore, beforeId === null ? [queue, state, limit] : [queue, state, limit, beforeId])
      return rows.map(decodeJob)
    },
    async findJobs(params) {
      const { text, queue, limit } = validated('dashboard.findJobs', () => ({
        text: checkName('text', params.text),
        queue: params.queue === null ? null : checkName('queue', params.queue),
        limit: checkListLimit('limit', params.limit),
      }))
      const byId = (await read('dashboard.findJobs', sql.byId, [text])).map(decodeJob).filter((job) => queue === null || job.queue === queue)
      const byKey = queue === null ? [] : (await read('dashboard.findJobs', sql.byKey, [text, queue, limit])).map(decodeJob)
      return [...byId, ...byKey.filter((job) => job.id !== text)].slice(0, limit)
    },
    async hosts({ limit }) {
      const rows = await read('dashboard.hosts', sql.hosts, [limit])
      return rows.map((row) => ({ hostId: row.host_id as string, lastSeenMs: toSafeInteger(row.last_seen_ms, 'last_seen_ms'), expiresAtMs: toSafeInteger(row.expires_at_ms, 'expires_at_ms') }))
    },
    async physicalQueues({ limit }) {
      const rows = await read('dashboard.physicalQueues', sql.physicalQueues, [limit])
      return rows.map((row) => ({
        queueKey: row.queue_key as string,
        namespace: row.namespace as string,
        family: row.family as string,
        taskType: row.task_type as string,
        partition: toSafeInteger(row.partition, 'partition'),
        version: (row.version as string | null) ?? null,
        rangeId: toSafeInteger(row.range_id, 'range_id'),
        lastTaskId: toSafeInteger(row.last_task_id, 'last_task_id'),
        updatedAtMs: toSafeInteger(row.updated_at_ms, 'updated_at_ms'),
      }))
    },
    async pendingByFairnessKey(params) {
      const { queue, limit, countCap } = validated('dashboard.pendingByFairnessKey', () => ({
        queue: checkName('queue', params.queue),
        limit: checkListLimit('limit', params.limit),
        countCap: toSafeInteger(params.countCap, 'countCap'),
      }))
      const rows = await read('dashboard.pendingByFairnessKey', sql.keyBacklog, [queue, countCap, limit])
      const seen = rows.length === 0 ? 0 : toSafeInteger(rows[0]?.seen, 'seen')
      const keys = rows.map((row) => ({ key: (row.fairness_key as string | null) ?? null, pending: toSafeInteger(row.pending, 'pending') }))
      // Past the cap every count is still a lower bound of the key's pending jobs.
      return { keys, capped: seen > countCap }
    },
    async pausedQueues(params) {
      const limit = validated('dashboard.pausedQueues', () => checkListLimit('limit', params.limit))
      const rows = await read('dashboard.pausedQueues', sql.pausedQueues, [limit])
      return rows.map((row) => ({ queue: row.queue as string, pausedAtMs: toSafeInteger(row.paused_at_ms, 'paused_at_ms') }))
    },
    async deadIds(params) {
      const { queue, limit } = validated('dashboard.deadIds', () => ({ queue: checkName('queue', params.queue), limit: checkListLimit('limit', params.limit) }))
      return (await read('dashboard.deadIds', sql.deadIds, [queue, limit])).map((row) => row.id as string)
    },
    async deleteDead(params) {
      const { queue, ids } = validated('dashboard.deleteDead', () => ({ queue: checkName('queue', params.queue), ids: params.ids.map((id, index) => checkName(`ids[${index}]`, id)) }))
      const [row] = await session.write<Row>('dashboard.deleteDead', sql.deleteDead, [queue, ids])
      return toSafeInteger(row?.deleted ?? 0, 'deleted')
    },
  }
}
