/**
 * SqlJobEnqueue — the inserting half of the SQL job store (SqlJobStore.ts): `enqueue` and
 * `enqueueMany`, each ONE statement (jobSql.ts; a batch goes in several only past one statement's
 * parameters, where a fairness key's jobs (the implicit key's too) change priority, or after the unkeyed form's refusal,
 * which writes nothing) that runs on the store's driver or, given `tx`, on the caller's open
 * transaction, where the jobs exist iff it commits and the due signal
 * (NOTIFY) is delivered at that commit. `insertMany` is enqueueMany's insert over any statement
 * runner, so `fireSchedule` inserts its occurrences the same way inside its own transaction.
 *
 * Keys: a keyed job whose key a live job holds answers with the holder and writes nothing; in a
 * batch, a job whose (queue, key) an earlier job of the batch has answers as that job did, so a
 * batch answers what enqueueing its jobs one by one would. A keyed insert that raced a holder
 * committing after the statement's snapshot finds neither row: it runs again, on a new snapshot.
 *
 * Fairness keys: a batch with keyed jobs runs enqueueManySql's keyed form, which gives them the
 * passes the same enqueues one by one would (fairBatchSql.ts); a batch without runs the form
 * that touches no key state, and when it refuses (a queue of the batch has keys, so its unkeyed
 * jobs take the implicit key's turns) the batch runs again in the keyed form. The refusal costs
 * a second statement only on queues with keys; a batch on a queue without keys runs one
 * statement, with one probe of fairness_passes more than the key state it never touches. Each
 * statement is the text its jobs need (jobSql.ts's `EnqueueManyForm`): a batch of plain jobs runs
 * one without the job-key arbiter, the concurrency slots and the rate buckets.
 *
 * Statistics: the store refreshes the planner's statistics of `jobs` as it enqueues (after 1,000
 * jobs, then each doubling), unless they already count every job it has enqueued.
 *
 * Waiters (jobs/HandOver.ts, waiterSql.ts): `addWaiters` and `removeWaiters` register and take
 * back a claim waiting on another engine, and an enqueue with `toWaiter` of a job that may be
 * handed over runs enqueueSql's waiter form: one statement still, which raises the `handed`
 * message itself when it took a waiter.
 *
 * A claimed insert may carry the owner's range fence: it runs enqueueSql's fenced form, and a
 * refusal (no row at all) is `OwnershipLost` with nothing inserted.
 *
 * Invariants: every input is validated (JobInput.ts) before any SQL, so a bad job anywhere in a
 * batch writes nothing; failures on the caller's transaction map into the catalogue like the
 * store's own (that transaction is then the caller's to roll back).
 */
import { InvalidInput } from '../../../domain/errors.ts'
import { assert } from '../../../kernel/assert.ts'
import { enqueueBatchBytesMax, enqueueBatchSizeMax, jobStatsRefreshRowsFirst, jobStatsRefreshRowsMax } from '../../../kernel/Limits.ts'
import { toDriverError } from '../../sql/Driver.ts'
import type { Schema } from '../../sql/Schema.ts'
import { type SqlSession, toStoreError } from '../../sql/SqlSession.ts'
import { decodeQueueKey } from '../../../domain/QueueKey.ts'
import { hostChannelOf } from '../../bus/Channels.ts'
import { toSafeInteger } from '../../queues/sql/SqlValues.ts'
import { handOverMessageStem, isHandOverCandidate } from '../HandOver.ts'
import { checkEnqueue, checkName, checkNewJobs, checkTime, checkTx, checkWaiters, isRated } from '../JobInput.ts'
import { type EnqueueAnswer, type EnqueuedJob, fairnessStride, insertedJobRecord, type JobStore, type NewJob, type SqlClient } from '../JobStore.ts'
import { fenceRefusal, fenceValues } from './claimFenceSql.ts'
import { decodeEnqueued, decodeJob, enqueueManyParams, enqueueParams, enqueuePayloadParam } from './jobRows.ts'
import * as jobSql from './jobSql.ts'
import { addWaitersSql, removeWaitersSql } from './waiterSql.ts'

type Row = Record<string, unknown>

// A keyed enqueue that finds neither its insert nor the key's holder raced a holder that
// committed after its snapshot or went away meanwhile; the next snapshot settles it.
const keyedEnqueueAttemptsMax = 5

// What a failed statement on the caller's transaction means. Nothing it wrote can commit but by
// the caller's own COMMIT (the client was inside an open transaction when the call was checked),
// so it never "may have committed". A transaction that became aborted meanwhile, or a client
// closed meanwhile (pg refuses the query without sending it), is the caller's to handle: named
// `tx`, not an outage to retry.
function txError(operation: string, error: unknown): unknown {
  const driverError = toDriverError(error, true)
  if (driverError.sqlState === '25P02') return new InvalidInput({ field: 'tx', reason: 'is inside an aborted transaction (a statement of it failed): roll it back; nothing was written' })
  if (/not queryable/.test(driverError.message)) return new InvalidInput({ field: 'tx', reason: `cannot run statements (${driverError.message}); nothing was sent` })
  return toStoreError(operation, false, driverError)
}

// A rated enqueue's five rate parameters (rateSql.ts's `bucketRowCte`): each limit's two, or nulls, then the job's bucket key.
const rateValues = (job: NewJob): unknown[] => [
  job.rateLimit?.perSecond ?? null,
  job.rateLimit?.burst ?? null,
  job.rateLimitPerKey?.perSecond ?? null,
  job.rateLimitPerKey?.burst ?? null,
  job.fairnessKey ?? '',
]

// Where two jobs of a batch compete for one key.
const keyOf = (job: NewJob): string => JSON.stringify([job.queue, job.key])

/** The enqueue operations over `session`'s migrated `schema`; `dueChannel` is the store's due signal. */
export function makeSqlJobEnqueue(schema: Schema, session: SqlSession, dueChannel: string): Pick<JobStore, 'enqueue' | 'enqueueMany' | 'addWaiters' | 'removeWaiters'> {
  const enqueueManyText = enqueueManyTexts(schema)
  const sql = {
    getJob: jobSql.getJobSql(schema),
    enqueueToWaiter: jobSql.enqueueSql(schema, false, false, false, false, true),
  }
  const { validated } = session
  const enqueueText = enqueueTextsOf(schema)
  const inserted = makeStatsRefresh(schema, session)

  // An enqueue that may go to a waiter (HandOver.ts): one statement takes the queue's first
  // waiter, inserts the job claimed with its token and raises the `handed` message; or, none
  // taken, inserts it pending with the due signal, as any enqueue.
  const enqueueToWaiter = async (job: NewJob, nowMs: number, payloadText: string): Promise<EnqueueAnswer> => {
    const values = enqueueParams(job, nowMs, dueChannel, JSON.stringify(handOverMessageStem(job, nowMs)))
    values[enqueuePayloadParam] = payloadText
    const [row] = await session.write<Row>('enqueue', sql.enqueueToWaiter, values)
    assert(row?.was_inserted === true, `enqueue of ${job.id} (no key) answered no insert`)
    inserted(1)
    if (typeof row.handed_token !== 'string' || typeof row.handed_to !== 'string' || typeof row.handed_queue_key !== 'string') return insertedJobRecord(job, nowMs, null, job.payload)
    const fence = { queueKey: decodeQueueKey(row.handed_queue_key), rangeId: toSafeInteger(row.handed_range_id, 'handed_range_id') }
    return { ...insertedJobRecord(job, nowMs, row.handed_token, JSON.parse(payloadText)), handedTo: { hostId: row.handed_to, fence } }
  }

  // A statement on the caller's transaction when there is one, else a write of the store's own.
  const runOn = async (tx: SqlClient | undefined, operation: string, text: string, params: unknown[]): Promise<ReadonlyArray<Row>> => {
    if (tx === undefined) return session.write<Row>(operation, text, params)
    try {
      return (await tx.query(text, params)).rows as ReadonlyArray<Row>
    } catch (error) {
      throw txError(operation, error)
    }
  }

  return {
    async enqueue(params, tx) {
      const checked = validated('enqueue', () => checkEnqueue(params))
      const { job, nowMs } = checked
      checkTx('tx', tx)
      if (checked.toWaiter) {
        if (tx !== undefined) throw new InvalidInput({ field: 'toWaiter', reason: "hands a job over at once, which a caller's transaction would hold until it commits: enqueue without tx" })
        const payloadText = JSON.stringify(job.payload)
        if (isHandOverCandidate(job, nowMs, Buffer.byteLength(payloadText, 'utf8'))) return enqueueToWaiter(job, nowMs, payloadText)
      }
      // A limited job is inserted pending, so that its claim goes through the key's guard: a
      // claim token (and the fence that guards it) is dropped, as a paused queue drops it.
      // So is a rated job: its claim takes its buckets' tokens.
      const limited = job.concurrencyKey === undefined || job.concurrencyKey === null ? [] : [job.concurrencyKey, job.concurrencyLimit]
      const rated = isRated(job) ? rateValues(job) : []
      const claimToken = limited.length === 0 && rated.length === 0 ? checked.claimToken : null
      const fence = claimToken === null ? null : checked.fence
      const fair = job.fairnessKey === undefined || job.fairnessKey === null ? [] : [job.fairnessKey, fairnessStride(job.fairnessWeight ?? 1)]
      const values = [...enqueueParams(job, nowMs, dueChannel, claimToken), ...(fence === null ? [] : fenceValues(fence)), ...fair, ...limited, ...rated]
      const text = enqueueText(fence !== null, fair.length > 0, limited.length > 0, rated.length > 0)
      for (let attempt = 1; ; attempt++) {
        const rows = await runOn(tx, 'enqueue', text, values)
        assert(rows.length <= 1, `enqueue of ${job.id} returned ${rows.length} rows`)
        if (fence !== null && rows.length === 0) {
          throw await fenceRefusal(schema, fence, (text, refusalValues) =>
            tx === undefined ? session.read<Row>('enqueue', text, refusalValues) : runOn(tx, 'enqueue', text, refusalValues),
          )
        }
        // The fenced form's row of nulls is the unfenced form's "no row": run it again.
        const row = rows[0]?.id === null ? undefined : rows[0]
        if (row?.was_inserted === true) {
          inserted(1)
          // A claimed job goes to a handler, which gets a payload of its own (parsed from the text
          // sent); a pending job's answer is read for its id and times only.
          // A paused queue's job is inserted pending even when a claim token came with it.
          const claimedWith = row.was_claimed === true ? claimToken : null
          return insertedJobRecord(job, nowMs, claimedWith, claimedWith === null ? job.payload : JSON.parse(values[enqueuePayloadParam] as string))
        }
        // The key's holder, read on the same connection (the caller's transaction, if any).
        const [holder] = row === undefined ? [] : await runOn(tx, 'enqueue', sql.getJob, [row.id, job.queue])
        if (holder !== undefined) return decodeJob(holder)
        // Only a keyed insert can find no row (see enqueueSql), or a holder that went away since.
        assert(job.key !== null && attempt < keyedEnqueueAttemptsMax, `enqueue of ${job.id} found neither its row nor the holder of key ${String(job.key)}`)
      }
    },

    ...makeSqlWaiters(schema, session),

    async enqueueMany(params, tx) {
      const { jobs, nowMs } = validated('enqueueMany', () => ({ jobs: checkNewJobs(params.jobs), nowMs: checkTime('nowMs', params.nowMs) }))
      checkTx('tx', tx)
      // checkNewJobs refused a batch whose payloads pass enqueueBatchBytesMax in all: none is measured again.
      const enqueued = await insertMany((values, form) => runOn(tx, 'enqueueMany', enqueueManyText(form), values), jobs, nowMs, dueChannel, enqueueBatchBytesMax)
      inserted(enqueued.length)
      return enqueued
    },
  }
}

// enqueueSql's forms, by (fenced, fair, limited, rated), made once per store; a limited or rated
// insert is never fenced (see `enqueue`).
function enqueueTextsOf(schema: Schema): (fenced: boolean, fair: boolean, limited: boolean, rated: boolean) => string {
  const texts = new Map<string, string>()
  for (const fenced of [false, true]) for (const fair of [false, true]) for (const limited of fenced ? [false] : [false, true]) for (const rated of fenced ? [false] : [false, true]) {
    texts.set(`${fenced}/${fair}/${limited}/${rated}`, jobSql.enqueueSql(schema, fenced, fair, limited, rated))
  }
  return (fenced, fair, limited, rated) => {
    const text = texts.get(`${fenced}/${fair}/${limited}/${rated}`)
    assert(text !== undefined, 'a limited or rated enqueue is never fenced')
    return text
  }
}

/** Counts the rows this store inserted and refreshes the table's planner statistics as they grow. */
function makeStatsRefresh(schema: Schema, session: SqlSession): (rows: number) => void {
  const analyze = `ANALYZE ${schema.quoted}.jobs`
  const plannedRows = `SELECT c.reltuples FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = $1::text AND c.relname = 'jobs'`
  // Planner statistics follow a growing table: after every `refreshAfter` jobs enqueued here
  // (doubling, up to a cap) the table is analyzed on the store's own connection, without waiting
  // for it — unless the statistics already count at least every job this store has enqueued
  // (another engine's refresh, or autovacuum's, got there first), which a catalog read tells for
  // a fraction of an ANALYZE's cost: a process that opens a store for a few thousand jobs does
  // not analyze a table whose statistics are current. A failure (no right to analyze, the store
  // unavailable) only leaves the refresh to autovacuum.
  let insertedSinceRefresh = 0
  let insertedInAll = 0
  let refreshAfter = jobStatsRefreshRowsFirst
  return (rows: number): void => {
    insertedSinceRefresh += rows
    insertedInAll += rows
    if (insertedSinceRefresh < refreshAfter) return
    insertedSinceRefresh = 0
    refreshAfter = Math.min(refreshAfter * 2, jobStatsRefreshRowsMax)
    const counted = insertedInAll
    session
      .read<Row>('analyze', plannedRows, [schema.name])
      .then(async ([row]) => {
        // reltuples is -1 on a table never analyzed.
        if (Number(row?.reltuples ?? -1) < counted) await session.write('analyze', analyze, [])
      })
      .catch(() => {})
  }
}

// Where a fairness key's passes chain: its queue and key; with `implicit`, an unkeyed job's are
// its queue's implicit key's (it may take that key's turn: fairBatchSql.ts).
const fairnessKeyOf = (job: NewJob, implicit = false): string | null =>
  job.fairnessKey === undefined || job.fairnessKey === null ? (implicit ? JSON.stringify([job.queue, '']) : null) : JSON.stringify([job.queue, job.fairnessKey])

// `jobs` in runs of at most enqueueBatchSizeMax jobs and enqueueBatchBytesMax payload bytes, in
// order: one statement's parameters each (a single job always fits; payloads are ≤ 1 MiB). A
// fairness key's jobs in one run share one priority (fairBatchSql.ts draws a key's passes at one
// priority's head): a job of a key the run has at another priority starts the next run. With
// `implicit` (runs for the keyed form) a queue's unkeyed jobs count as one key too.
// `bytesMax` bounds the payloads' total from above: within enqueueBatchBytesMax none is measured.
function* batchesOf(jobs: ReadonlyArray<NewJob>, implicit = false, bytesMax = Number.POSITIVE_INFINITY): Generator<ReadonlyArray<NewJob>> {
  let batch: NewJob[] = []
  let bytes = 0
  const priorities = new Map<string, number>()
  const measured = bytesMax > enqueueBatchBytesMax
  for (const job of jobs) {
    const size = measured ? Buffer.byteLength(JSON.stringify(job.payload), 'utf8') : 0
    const fairnessKey = fairnessKeyOf(job, implicit)
    const priority = fairnessKey === null ? undefined : priorities.get(fairnessKey)
    if (batch.length > 0 && (batch.length === enqueueBatchSizeMax || bytes + size > enqueueBatchBytesMax || (priority !== undefined && priority !== job.priority))) {
      yield batch
      batch = []
      bytes = 0
      priorities.clear()
    }
    batch.push(job)
    bytes += size
    if (fairnessKey !== null) priorities.set(fairnessKey, job.priority)
  }
  if (batch.length > 0) yield batch
}

/**
 * `enqueueManySql`'s texts over `schema`, by form, each built the first time a batch needs it:
 * a batch of ordinary jobs runs the text without the parts it has no use for.
 */
export function enqueueManyTexts(schema: Schema): (form: jobSql.EnqueueManyForm) => string {
  const texts = new Map<string, string>()
  return (form) => {
    const name = `${form.fair}/${form.keyed}/${form.limited}/${form.rated}`
    const known = texts.get(name)
    if (known !== undefined) return known
    const text = jobSql.enqueueManySql(schema, form)
    texts.set(name, text)
    return text
  }
}

// The form of `enqueueManySql` that `batch` needs (`fair` for the keyed form).
const formOf = (batch: ReadonlyArray<NewJob>, fair: boolean): jobSql.EnqueueManyForm => ({
  fair,
  keyed: batch.some((job) => job.key !== null),
  limited: batch.some((job) => job.concurrencyKey !== undefined && job.concurrencyKey !== null),
  rated: batch.some(isRated),
})

/**
 * Inserts validated `jobs` as `enqueueMany` answers them, running `enqueueManySql` through `run`
 * (the store's own write, or a statement on a transaction in progress) in the form the batch
 * needs (`fair` for the keyed form that draws passes): each (queue, key) goes into a statement
 * once and later jobs with it answer as the first; a batch too large for one statement's
 * parameters goes in several, in order; a batch with a fairness key goes in the keyed form, and
 * so does one the unkeyed form refused (a queue of it has keys); a keyed job that raced its
 * holder is sent again. Returns one answer per job, in the order of `jobs`. `bytesMax`, when
 * known, bounds the payloads' total from above.
 */
export async function insertMany(
  run: (params: unknown[], form: jobSql.EnqueueManyForm) => Promise<ReadonlyArray<Row>>,
  jobs: ReadonlyArray<NewJob>,
  nowMs: number,
  dueChannel: string,
  bytesMax = Number.POSITIVE_INFINITY,
): Promise<ReadonlyArray<EnqueuedJob>> {
  const firstOfKey = new Map<string, NewJob>()
  const sent: NewJob[] = []
  for (const job of jobs) {
    if (job.key !== null && firstOfKey.has(keyOf(job))) continue
    if (job.key !== null) firstOfKey.set(keyOf(job), job)
    sent.push(job)
  }
  // A keyed job's answer, by its id; a job without a key is answered by itself once a statement
  // that carried it succeeded (counted, to assert that every one was carried).
  const answers = new Map<string, EnqueuedJob>()
  let unkeyedIn = 0
  // Sends `batch` until every job of it is answered; answers the jobs the unkeyed form refused.
  const send = async (batch: ReadonlyArray<NewJob>, fair: boolean): Promise<ReadonlyArray<NewJob>> => {
    let missing = batch
    for (let attempt = 1; missing.length > 0; attempt++) {
      // Only keyed jobs can go unanswered (see enqueueManySql); the next snapshot settles them.
      assert(attempt <= keyedEnqueueAttemptsMax, `enqueueMany found neither the rows nor the key holders of ${missing.length} jobs`)
      const rows = await run(enqueueManyParams(missing, nowMs, dueChannel, fair), formOf(missing, fair))
      if (rows.some((row) => row.id === null)) {
        assert(!fair && rows.length === 1, 'only the unkeyed form refuses, with one row and nothing written')
        return missing
      }
      // The statement succeeded, so every job without a key is in; a keyed job is answered by a row.
      const byId = new Map<string, NewJob>()
      for (const job of missing) {
        if (job.key === null) unkeyedIn++
        else byId.set(job.id, job)
      }
      if (byId.size === 0) return []
      for (const row of rows) {
        const { askedId, answer } = decodeEnqueued(row, byId)
        answers.set(askedId, answer)
      }
      missing = missing.filter((job) => job.key !== null && !answers.has(job.id))
    }
    return []
  }
  for (const batch of batchesOf(sent, false, bytesMax)) {
    const refused = batch.some((job) => fairnessKeyOf(job) !== null) ? batch : await send(batch, false)
    for (const keyed of batchesOf(refused, true, bytesMax)) assert((await send(keyed, true)).length === 0, 'the keyed form refuses nothing')
  }
  assert(unkeyedIn === sent.length - firstOfKey.size, () => `enqueueMany carried ${unkeyedIn} of ${sent.length - firstOfKey.size} jobs without a key`)
  return jobs.map((job) => {
    if (job.key === null) return { id: job.id, runAtMs: job.runAtMs }
    const answer = answers.get(job.id) ?? answers.get(firstOfKey.get(keyOf(job))?.id ?? '')
    assert(answer !== undefined, `enqueueMany has no answer for ${job.id}`)
    return answer
  })
}

// Waiters (jobs/HandOver.ts): registering claims that wait on another engine, and taking them back.
function makeSqlWaiters(schema: Schema, session: SqlSession): Pick<JobStore, 'addWaiters' | 'removeWaiters'> {
  const addWaitersText = addWaitersSql(schema)
  const removeWaitersText = removeWaitersSql(schema)
  return {
    addWaiters: async (params) => {
      const { claimTokens, queue, hostId, untilMs, nowMs, fence } = session.validated('addWaiters', () => checkWaiters(params))
      await session.write('addWaiters', addWaitersText, [claimTokens, queue, hostId, hostChannelOf(schema.name, hostId), untilMs, nowMs, ...fenceValues(fence)])
    },

    removeWaiters: async (params) => {
      const claimTokens = session.validated('removeWaiters', () => {
        if (!Array.isArray(params.claimTokens)) throw new InvalidInput({ field: 'claimTokens', reason: 'must be an array of tokens' })
        return params.claimTokens.map((token, index) => checkName(`claimTokens[${index}]`, token))
      })
      if (claimTokens.length === 0) return []
      return (await session.write<Row>('removeWaiters', removeWaitersText, [claimTokens])).map((row) => row.claim_token as string)
    },
  }
}
