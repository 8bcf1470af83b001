/**
 * jobSql — the statements on `jobs` and `dead_jobs` (migrations 003 and 004), as readable SQL text.
 *
 * Invariants: every transition is ONE statement with its validity predicate in its WHERE
 * clause, so concurrent transitions on a row serialize on the row lock and the loser re-checks
 * the predicate against the winner's version (a reclaim racing an ack: exactly one wins). A
 * dead-letter is one statement too: `DELETE … RETURNING` feeding `INSERT INTO dead_jobs`.
 * Every value is a parameter — the dead reasons too, which the callers take from
 * domain/JobRules.ts; the quoted schema is the only interpolation.
 *
 * The rules are defined in domain/JobRules.ts (the source of truth, which the memory store
 * calls); here each is spelled once, in SQL, because it must run inside the statement that
 * writes. The conformance suite checks the two spellings agree at every edge.
 * - valid claim (`isValidClaim`): processing, `claim_token = $token`, `deadline_ms > $now`;
 * - claimable (`isClaimable`): unexpired, `attempts < max_attempts`, and pending with
 *   `run_at_ms <= $now` or processing with `deadline_ms <= $now`;
 * - exhausted (`isExhausted`): processing, `deadline_ms <= $now`, `attempts >= max_attempts`,
 *   and not expired by its deadline — it died at its deadline as `deadReasonExhausted`;
 * - expired (`isExpired`): `expires_at_ms <= $now`; retention over (`isRetentionOver`):
 *   `died_at_ms + dead_letter_retention_ms <= $now`;
 * - paused (pauseSql.ts's `notPaused`): every claim and due-time read of a queue carries it.
 *
 * Concurrency keys (migration 011): the guard's fragments live in concurrencySql.ts; every claim
 * here embeds its admission (`admitCtes`) and every exit from processing its release
 * (`freeSlotsCtes`), in the statement that moves the job.
 *
 * Rate limits (migration 012): the guard's fragments live in rateSql.ts; every claim here that
 * runs the concurrency admission runs the rate admission (`rateAdmitCtes`) on what it admitted,
 * in the same statement, and the head reads and the due-time reservations leave out the jobs of
 * empty buckets (`rateHasToken`).
 *
 * Length: past 400 lines (about 1,100) because every job statement stays in one file, next to the
 * one spelling of each rule above, so a reviewer checks the predicates in one place; a claim's
 * fenced form is a flag of the same builder, so the two forms cannot drift apart. Most of the
 * length is the statements' own doc comments, which give each one's parameters and why it is
 * shaped as it is.
 */
import { jobAttemptErrorsKept, jobClaimsKept } from '../../../kernel/Limits.ts'
import type { Schema } from '../../sql/Schema.ts'
import { fairnessStride, fairnessStrideMax } from '../JobStore.ts'
import { fairBatchCtes } from './fairBatchSql.ts'
import { fenceCte, fenceHeld } from './claimFenceSql.ts'
import { admitCtes, type AdmitOptions, freeSlotsCtes, parkLimitedCtes, slotHasRoom, slotRowCte, slotRowsCtes } from './concurrencySql.ts'
import { notPaused } from './pauseSql.ts'
import { handedNotify, waiterTokenCtes } from './waiterSql.ts'
import { bucketRowCte, bucketRowsCtes, nextTokenSql, parkRatedCtes, queueHasBuckets, queueTokensCap, rateAdmitCtes, rateHasToken } from './rateSql.ts'

/** Columns of a live row, as every statement returns them (followed by the two dead-only ones). */
const liveColumns =
  'id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, created_at_ms, run_at_ms, claimed_at_ms, expires_at_ms, claim_token, deadline_ms, job_key, last_handler_error, last_handler_stack, attempt_errors, progress, claim_history, progress_at_ms'

/** A live row as a job record: its columns and null dead-only ones. */
export const liveRecord = `${liveColumns}, NULL::text AS last_error, NULL::bigint AS died_at_ms`

/** A dead_jobs row as a job record, in the order of `liveRecord`. */
export const deadRecord = `id, queue, 'dead' AS state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms,
       created_at_ms, run_at_ms, claimed_at_ms, expires_at_ms, NULL::text AS claim_token, NULL::bigint AS deadline_ms, job_key, last_handler_error, last_handler_stack,
       attempt_errors, progress, claim_history, progress_at_ms, last_error, died_at_ms`

const deadInsertColumns =
  'id, queue, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, created_at_ms, run_at_ms, claimed_at_ms, expires_at_ms, job_key, progress, claim_history, progress_at_ms, concurrency_key, last_error, died_at_ms, last_handler_error, last_handler_stack, attempt_errors'

const movedColumns =
  'id, queue, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, created_at_ms, run_at_ms, claimed_at_ms, expires_at_ms, job_key, progress, claim_history, progress_at_ms, concurrency_key'

/**
 * The row's `attempt_errors` (`column`) with one more entry — this attempt's error `error` and
 * `stack`, recorded at `now` — keeping the last `jobAttemptErrorsKept`: entries are added one at
 * a time, so dropping the oldest of a full array keeps the bound.
 */
const withAttemptError = (column: string, error: string, stack: string, now: string, retryAt?: string): string =>
  `${keepingLast(column, jobAttemptErrorsKept)}
    || jsonb_build_array(jsonb_build_object('attempt', attempts, 'error', ${error}, 'stack', ${stack}, 'atMs', ${now}${retryAt === undefined ? '' : `, 'retryAtMs', ${retryAt}`}))`

// The JSON array in `column` (null: empty) with room for one more entry under `kept`: entries
// are added one at a time, so dropping the oldest of a full array keeps the bound.
const keepingLast = (column: string, kept: number): string =>
  `(CASE WHEN jsonb_array_length(COALESCE(${column}, '[]'::jsonb)) >= ${kept} THEN ${column} - 0 ELSE COALESCE(${column}, '[]'::jsonb) END)`

/**
 * A claim's new `claim_history` (of the row by `row` prefix), recording attempt `attempt` at
 * `now`, the last `jobClaimsKept` kept.
 */
const withClaim = (row: string, attempt: string, now: string): string =>
  `${keepingLast(`${row}claim_history`, jobClaimsKept)} || jsonb_build_array(jsonb_build_object('attempt', ${attempt}, 'atMs', ${now}))`

// The rules of domain/JobRules.ts over the columns of `jobs`, for the given SQL expressions.
const notExpired = (now: string) => `(expires_at_ms IS NULL OR expires_at_ms > ${now})`
// A valid claim: the row is processing under `token` and its deadline has not passed. The token is
// compared to the row's token while processing (null otherwise) rather than beside a plain
// `state = 'processing'` test: that test implies the processing index's predicate, and the
// generic plans of the acks, heartbeats and retries then read that whole index (every claim in
// flight, and every acked claim's dead entry until a vacuum) for the one row each names, where
// the primary key finds it in one probe. The same rows match.
const validClaimOf = (token: string, now: string) => `(CASE WHEN state = 'processing' THEN claim_token END) = ${token} AND deadline_ms > ${now}`
const validClaim = validClaimOf('$2::text', '$3::bigint')
/**
 * Which queues a statement covers: every queue, one, or several. Each is its own text because
 * PostgreSQL plans a prepared statement once only when its generic plan looks as cheap as one
 * planned for the values given; `$n IS NULL OR queue = ANY($n)` never does (it cannot use an
 * index on queue for every value), so such a statement is planned afresh at every execution.
 * The parameter is a text array (null for every queue), referenced in every form.
 */
export type QueueFilter = 'every' | 'one' | 'several'
const queueFilter = (queues: QueueFilter, param: string): string =>
  queues === 'every' ? `${param}::text[] IS NULL` : queues === 'one' ? `queue = (${param}::text[])[1]` : `queue = ANY(${param}::text[])`

const claimable = (now: string) =>
  `attempts < max_attempts AND ${notExpired(now)} AND ((state = 'pending' AND run_at_ms <= ${now}) OR (state = 'processing' AND deadline_ms <= ${now}))`
/**
 * `claimable` for the rows of one state, with the state a literal: a pending row and a processing
 * one are in different partial indexes (migration 009), and only a statement whose WHERE names
 * the state can use them. The two together are `claimable`.
 */
const claimableIn = (state: 'pending' | 'processing', now: string) =>
  `state = '${state}' AND attempts < max_attempts AND ${notExpired(now)} AND ${state === 'pending' ? 'run_at_ms' : 'deadline_ms'} <= ${now}`
/**
 * Claim order, the one every head read sorts by: priority, then the fairness pass (migration 010;
 * a job without a fairness key has none and sorts by its due time), then ready order.
 */
const claimOrder = 'priority DESC, GREATEST(fair_pass, due_ms), ready_seq'
/** A head read's order key as a column (`fair_order`), and claim order over merged reads by it (a UNION sorts by columns only). */
const fairOrder = 'GREATEST(fair_pass, due_ms) AS fair_order'
const mergedOrder = 'priority DESC, fair_order, ready_seq'
const exhausted = (now: string) =>
  `state = 'processing' AND deadline_ms <= ${now} AND attempts >= max_attempts AND (expires_at_ms IS NULL OR expires_at_ms > deadline_ms)`

// A lapsed claim of a job with a concurrency key that expired: dead by its expiry, holding its slot until buried.
const lapsedExpiredKeyed = (now: string) => `(state = 'processing' AND concurrency_key IS NOT NULL AND deadline_ms <= ${now} AND expires_at_ms <= ${now})`

// Moves the rows of `moved` into dead_jobs with the given error and death-time expressions; the
// handler's error (and the attempt history) is the row's own unless the caller's transition
// records a new one.
const bury = (schema: Schema, error: string, diedAt: string, handlerError = 'last_handler_error, last_handler_stack', attemptErrors = 'attempt_errors') =>
  `INSERT INTO ${schema.quoted}.dead_jobs (${deadInsertColumns}) SELECT ${movedColumns}, ${error}, ${diedAt}, ${handlerError}, ${attemptErrors} FROM moved`

// The rows of a statement's `moved` CTE (rows it deleted) that were processing: the concurrency
// slots it frees (concurrencySql.ts).
const movedOut = `SELECT queue, concurrency_key FROM moved WHERE state = 'processing'`

// A due signal's payload (bus/Channels.ts's `dueSignalPayload`): the queue, a tab, the due time.
const dueSignal = (queue: string, dueMs: string): string => `${queue} || chr(9) || (${dueMs})::text`

// Every claim's SET keeps the claim order key it displaces (the row's, by `row` prefix: due
// time and ready order before the claim), for `release` to restore. A due time still ahead at
// the claim (`now`) is a reservation — the job's task was with Matching — not a place: none is kept.
const keepUnclaimed = (row: string, now: string): string =>
  `unclaimed_due_ms = CASE WHEN ${row}due_ms <= ${now} THEN ${row}due_ms END, unclaimed_ready_seq = ${row}ready_seq`

/**
 * `$1` id, `$2` queue, `$3` payload json, `$4` priority, `$5` max attempts, `$6` visibility ms,
 * `$7` backoff base ms, `$8` retention ms or null, `$9` now, `$10` run at, `$11` expires at or null,
 * `$12` the due channel, `$13` key or null, `$14` a claim token or null. One statement, so it can
 * run on a caller's transaction; it raises the due signal (NOTIFY, delivered only when the
 * transaction commits) for the queue's owner. With a claim token the row is inserted claimed
 * (processing, attempt 1, deadline and due time `$9 + $6`, the due time it would have had kept
 * for `release`, its ready order being the insert's own) and no signal is raised.
 *
 * Answers the inserted id (`was_inserted` true) and nothing else: the caller knows the row it
 * wrote (JobStore.ts's `insertedJobRecord`), and a payload read back would cross the wire and be
 * parsed twice. A key held by a live job of the queue is a conflict on the partial unique index:
 * nothing is inserted and the holder's id is answered instead (`was_inserted` false). No row at
 * all means the holder committed after this statement's snapshot, or went away meanwhile: run it again.
 *
 * `fenced`: the claimed insert of a partition's owner, fenced by `$15` physical queue key and
 * `$16` range id (claimFenceSql.ts): nothing is inserted unless the fence holds, and the answer
 * comes through the fence — no row when refused, a row of nulls for "run it again".
 *
 * `fair`: the job has a fairness key, `$15` (`$17` when fenced), with stride `$16` (`$18`): its
 * pass is drawn from and written to the key's row of fairness_passes in the same statement
 * (`fairPassCte`). An unkeyed job's text draws the implicit key's pass the same way, but only in
 * a queue with a real key's row; in any other it probes fairness_passes once and writes no other row.
 *
 * `limited`: the job has a concurrency key and limit, the two parameters after the fairness
 * ones (`limitParams`); the key's slot row is created if missing, its limit written if it
 * differs (concurrencySql.ts's `slotRowCte`). The caller
 * never gives such a job a claim token: it is inserted pending and claimed under the guard.
 *
 * `toWaiter` (unfenced, without fairness, limit or rate only): `$14` is not a claim token but the
 * `handed` message's stem (jobs/HandOver.ts); the job goes to the queue's first waiter when one
 * still waits and nothing else of the queue is claimable (waiterSql.ts), inserted claimed with
 * its token, and the statement raises the message on the waiter's channel instead of the due
 * signal. The answer's `handed_to` is the waiter's engine, `handed_token` its token and
 * `handed_queue_key`, `handed_range_id` its fence (nulls when none was taken).
 *
 * `rated`: the job carries rate limits, the five parameters after all the others
 * (`rateParamsFirst`): its queue's and its key's buckets are created if missing, their limits
 * written if they differ (rateSql.ts's `bucketRowCte`). Whatever the form, a claim token is
 * ignored in a queue with buckets: the job is inserted pending and claimed under the guard.
 */
export function enqueueSql(schema: Schema, fenced = false, fair = false, limited = false, rated = false, toWaiter = false): string {
  // The claim token the row is inserted with: none when the queue is paused (a CASE's branches
  // are tried in order, so an unclaimed insert never reads the pauses).
  const token = `(SELECT token FROM claim_token)`
  // A queue with rate buckets never gets a job inserted claimed: its claims take tokens.
  const claimToken = toWaiter
    ? waiterTokenCtes(schema)
    : `claim_token AS (SELECT CASE WHEN $14::text IS NULL THEN NULL WHEN ${notPaused(schema, '$2::text')} AND NOT ${queueHasBuckets(schema, '$2::text')} THEN $14::text END AS token)`
  const row = `$1::text, $2::text, CASE WHEN ${token} IS NULL THEN 'pending' ELSE 'processing' END, $3::jsonb, $4::smallint,
   CASE WHEN ${token} IS NULL THEN 0 ELSE 1 END, $5::integer, $6::bigint, $7::bigint, $8::bigint,
   $9::bigint, $10::bigint, $11::bigint, CASE WHEN ${token} IS NULL THEN GREATEST($10::bigint, $9::bigint) ELSE $9::bigint + $6::bigint END, $13::text,
   CASE WHEN ${token} IS NULL THEN NULL ELSE $9::bigint END, ${token}, CASE WHEN ${token} IS NULL THEN NULL ELSE $9::bigint + $6::bigint END,
   CASE WHEN ${token} IS NULL THEN NULL ELSE GREATEST($10::bigint, $9::bigint) END,
   CASE WHEN ${token} IS NULL THEN NULL ELSE jsonb_build_array(jsonb_build_object('attempt', 1, 'atMs', $9::bigint)) END${fair ? `,
   ${fairParams(fenced).key}::text` : ''}, (SELECT last_pass FROM fair_pass)${limited ? `,
   ${limitParams(fenced, fair).key}::text` : ''}`
  const slotRow = limited ? `${slotRowCte(schema, '$2::text', `${limitParams(fenced, fair).key}::text`, `${limitParams(fenced, fair).limit}::integer`)}, ` : ''
  const bucketRow = rated ? `${bucketRowCte(schema, '$2::text', rateParamsFirst(fenced, fair, limited), '$9::bigint')}, ` : ''
  const inserted = `${fairPassCte(schema, fenced, fair)}, ${slotRow}${bucketRow}inserted AS (
INSERT INTO ${schema.quoted}.jobs
  (id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms,
   created_at_ms, run_at_ms, expires_at_ms, due_ms, job_key,
   claimed_at_ms, claim_token, deadline_ms, unclaimed_due_ms, claim_history${fair ? ', fairness_key' : ''}, fair_pass${limited ? ', concurrency_key' : ''})
${fenced ? `SELECT ${row} FROM fence` : `VALUES (${row})`}
ON CONFLICT (queue, job_key) WHERE job_key IS NOT NULL DO NOTHING
RETURNING id, queue, due_ms, claim_token
)`
  const holder = `SELECT id, false AS was_inserted, false AS was_claimed${toWaiter ? ', NULL::text AS handed_to, NULL::text AS handed_token, NULL::text AS handed_queue_key, NULL::bigint AS handed_range_id' : ''} FROM ${schema.quoted}.jobs
WHERE $13::text IS NOT NULL AND queue = $2::text AND job_key = $13::text AND NOT EXISTS (SELECT 1 FROM inserted)`
  const answer = `SELECT inserted.id, true AS was_inserted, inserted.claim_token IS NOT NULL AS was_claimed${toWaiter ? ', (SELECT host_id FROM waiter) AS handed_to, inserted.claim_token AS handed_token, (SELECT queue_key FROM waiter) AS handed_queue_key, (SELECT range_id FROM waiter) AS handed_range_id' : ''} FROM inserted
LEFT JOIN LATERAL (SELECT pg_notify($12::text, ${dueSignal('inserted.queue', 'inserted.due_ms')}) WHERE inserted.claim_token IS NULL) AS signal ON true${toWaiter ? `\n${handedNotify}` : ''}
UNION ALL
${holder}`
  if (fenced) return `
WITH ${fenceCte(schema, { queueKey: '$15', rangeId: '$16' })}, ${claimToken}, ${inserted}
SELECT answer.* FROM fence LEFT JOIN (
${answer}
) AS answer ON true`
  return `
WITH ${claimToken}, ${inserted}
${answer}`
}

// Where a keyed enqueue's fairness key and stride are: after the fence's two when fenced.
const fairParams = (fenced: boolean) => (fenced ? { key: '$17', stride: '$18' } : { key: '$15', stride: '$16' })

// Where a limited enqueue's concurrency key and limit are: after the fence's and the fairness key's.
const limitParams = (fenced: boolean, fair: boolean) => {
  const first = 15 + (fenced ? 2 : 0) + (fair ? 2 : 0)
  return { key: `$${first}`, limit: `$${first + 1}` }
}

// Where a rated enqueue's five rate parameters start (rateSql.ts's `bucketRowCte`): after every other.
const rateParamsFirst = (fenced: boolean, fair: boolean, limited: boolean): number => 15 + (fenced ? 2 : 0) + (fair ? 2 : 0) + (limited ? 2 : 0)

// An enqueue's pass, as `fair_pass`: V is the claim order key of the head of the queue's pending
// rows at the job's priority (an index probe of jobs_pending_head), or the job's due time when
// there is none; a key new to the queue starts at V, a known one at max(V, its last pass +
// stride). The key's row is written in place, so concurrent enqueues of one key queue behind
// each other (and only those). An enqueue whose job key (`$13`) a live job holds writes no job,
// so it leaves the pass alone too: a caller that enqueues the same job key again and again does
// not push its fairness key back. (Two enqueues of one new job key at once may both step it: the
// second's duplicate is found only at its insert.)
//
// A job without a key (`fair` false) takes the implicit key's turn: the row '' (no key can be
// empty), stride 1000, weight 1's. It does so only in a queue with a real key's row, found by
// one probe of fairness_passes' primary key; elsewhere the probe fails, the head is not read, no
// row is locked or written, and the job gets no pass (a null `fair_pass`), as in a queue without
// keys. (The statement still opens fairness_passes for the insert that writes nothing: a few
// per cent of an unkeyed enqueue, against a second statement on every enqueue of a queue with keys.)
const fairPassCte = (schema: Schema, fenced: boolean, fair: boolean): string => {
  const { key, stride } = fair ? fairParams(fenced) : { key: `''`, stride: `${fairnessStride(1)}` }
  const jobKeyFree = `($13::text IS NULL OR NOT EXISTS (SELECT 1 FROM ${schema.quoted}.jobs WHERE queue = $2::text AND job_key = $13::text))`
  const mixed = fair ? '' : `EXISTS (SELECT 1 FROM ${schema.quoted}.fairness_passes WHERE queue = $2::text AND fairness_key <> '') AND `
  return `fair_head AS (
  SELECT COALESCE((SELECT GREATEST(fair_pass, due_ms) FROM ${schema.quoted}.jobs
    WHERE queue = $2::text AND priority = $4::smallint AND due_ms IS NOT NULL AND state = 'pending'
    ORDER BY priority DESC, GREATEST(fair_pass, due_ms), ready_seq LIMIT 1), GREATEST($10::bigint, $9::bigint)) AS v
), fair_pass AS (
  INSERT INTO ${schema.quoted}.fairness_passes AS known (queue, fairness_key, last_pass)
  SELECT $2::text, ${key}::text, v FROM fair_head${fenced ? ' CROSS JOIN fence' : ''} WHERE ${mixed}${jobKeyFree}
  ON CONFLICT (queue, fairness_key) DO UPDATE SET last_pass = GREATEST(EXCLUDED.last_pass, known.last_pass + ${stride}::bigint)
  RETURNING last_pass
)`
}

// enqueueManySql's rate limits per (queue, scope), the batch's last of each: without fairness
// keys every per-key limit is the implicit key's (''), with them each job's key's.
const rateSource = `SELECT DISTINCT ON (queue, per_key) queue, per_key, ('' COLLATE "C") AS rate_key, per_second, burst FROM (
    SELECT queue, false AS per_key, rate_per_second AS per_second, rate_burst AS burst, position FROM input WHERE rate_per_second IS NOT NULL
    UNION ALL
    SELECT queue, true AS per_key, key_rate_per_second, key_rate_burst, position FROM input WHERE key_rate_per_second IS NOT NULL
  ) AS given ORDER BY queue, per_key, position DESC`
const fairRateSource = `SELECT DISTINCT ON (queue, per_key, rate_key) queue, per_key, rate_key, per_second, burst FROM (
    SELECT queue, false AS per_key, ('' COLLATE "C") AS rate_key, rate_per_second AS per_second, rate_burst AS burst, position FROM input WHERE rate_per_second IS NOT NULL
    UNION ALL
    SELECT queue, true AS per_key, (COALESCE(fairness_key, '') COLLATE "C"), key_rate_per_second, key_rate_burst, position FROM input WHERE key_rate_per_second IS NOT NULL
  ) AS given ORDER BY queue, per_key, rate_key, position DESC`

/**
 * Which statement of `enqueueManySql` a batch runs; each part it does not need is left out of
 * the text. `fair`: the keyed form (below); `keyed`: some job has a job key (only then is the
 * insert an ON CONFLICT insert, whose speculative insertion costs every row, and only then are
 * keyed answers read); `limited`: some job has a concurrency key; `rated`: some job has rate limits.
 */
export interface EnqueueManyForm {
  readonly fair: boolean
  readonly keyed: boolean
  readonly limited: boolean
  readonly rated: boolean
}

/**
 * `enqueueSql` for many jobs in ONE statement, so it can run on a caller's transaction too.
 * `$1` the jobs as one JSON array (`enqueueManyParams`: one object per job, its payload wrapped
 * in a one-element array so a JSON null payload stays a value), `$2` now, `$3` the due channel,
 * then the batch's first job's `$4` queue, `$5` priority, `$6` max attempts, `$7` visibility ms,
 * `$8` backoff base ms and `$9` run at (and, in the unkeyed form, `$10` the batch's queues): a
 * job's object carries its id, its payload, each of those
 * only where it differs from the first job's, and each nullable field only when set (absent
 * reads as null), so an ordinary job's object is its id and payload. A job's place in the batch
 * is its place in the array (WITH ORDINALITY). One document parses faster on both sides than a
 * dozen parallel arrays with escaped elements, and fields the server would parse 64 times the
 * same go once, as parameters.
 * The due signal is raised once per queue that got a row, not once per row, with the rows' due
 * time when they share one.
 *
 * Returns a row only for a job with a job key: an inserted one as its id alone (`run_at_ms` and
 * `asked_id` null: the caller knows the runAt it sent), and one that inserted nothing as the live
 * job of its queue holding its key — its id and runAt, and `asked_id` the job it answers. A job
 * without a key is inserted whenever the statement succeeds, so it is answered by no row at all.
 * A keyed job answered by neither raced a holder as `enqueueSql` describes: run it again. The
 * caller sends each (queue, key) at most once per statement. A job with a concurrency key
 * (`concurrency_key`, `concurrency_limit`) creates its key's slot row if missing, and the
 * batch's last limit of a key is written to it if it differs; a job with rate limits
 * (`rate_per_second` and `rate_burst`, `key_rate_per_second` and `key_rate_burst`) likewise its
 * queue's and its fairness key's buckets (a job without one: the implicit key's bucket).
 *
 * `fair`: some job has a fairness key (`fairness_key`, `fair_stride`; absent for one without),
 * or some queue of the batch has keys: the jobs' passes are drawn as enqueueing them one by one
 * would draw them (fairBatchSql.ts; an unkeyed job of a queue with keys takes the implicit key's
 * turn), and each key's row of fairness_passes is written once. A batch without keys runs the
 * text without that step, which reads no other row but one probe of fairness_passes per queue:
 * when a queue of the batch has a real key's row it writes nothing and answers one row of nulls
 * (the refusal), to be sent again in the keyed form. A refusal and a second statement, rather
 * than the keyed form's steps made conditional in this text, because a batch of a queue without
 * keys is the common case, and this text runs as fast as it did without the probe, within the
 * noise of runs of one text, while the keyed form on the same batch is much slower.
 */
export function enqueueManySql(schema: Schema, form: EnqueueManyForm): string {
  const { fair, keyed, limited, rated } = form
  const fairColumns = fair ? ', fairness_key text, fair_stride bigint' : ''
  const fairNames = fair ? ', fairness_key, fair_stride' : ''
  // The keyed form joins the passes, so it names input's columns.
  const of = fair ? 'input.' : ''
  const given = `SELECT sent.id, COALESCE(sent.queue, $4::text) AS queue, sent.payload, COALESCE(sent.priority, $5::smallint) AS priority,
      COALESCE(sent.max_attempts, $6::integer) AS max_attempts, COALESCE(sent.visibility_timeout_ms, $7::bigint) AS visibility_timeout_ms,
      COALESCE(sent.backoff_base_ms, $8::bigint) AS backoff_base_ms, sent.dead_letter_retention_ms, COALESCE(sent.run_at_ms, $9::bigint) AS run_at_ms,
      sent.expires_at_ms, sent.job_key, sent.concurrency_key, sent.concurrency_limit, sent.rate_per_second, sent.rate_burst,
      sent.key_rate_per_second, sent.key_rate_burst, sent.position${fair ? ', sent.fairness_key, sent.fair_stride' : ''}
    FROM ROWS FROM (json_to_recordset($1::json)
      AS (id text, queue text, payload jsonb, priority smallint, max_attempts integer, visibility_timeout_ms bigint, backoff_base_ms bigint,
          dead_letter_retention_ms bigint, run_at_ms bigint, expires_at_ms bigint, job_key text, concurrency_key text, concurrency_limit integer,
          rate_per_second double precision, rate_burst integer, key_rate_per_second double precision, key_rate_burst integer${fairColumns})) WITH ORDINALITY
    AS sent(id, queue, payload, priority, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at_ms, expires_at_ms, job_key,
            concurrency_key, concurrency_limit, rate_per_second, rate_burst, key_rate_per_second, key_rate_burst${fairNames}, position)`
  // The unkeyed form refuses a batch with a queue that has a real key's row (one probe of
  // fairness_passes' primary key per queue of the batch, `$10` the batch's queues): it writes
  // nothing and answers one row of nulls, and the caller sends the batch again in the keyed form.
  // The queues come as a parameter so that the probe runs first and the document is read in one
  // pass, into the one CTE every later step reads.
  const input = fair
    ? `input AS (
  ${given}
)`
    : `refused AS (
  SELECT EXISTS (SELECT 1 FROM ${schema.quoted}.fairness_passes AS known WHERE known.queue = ANY($10::text[]) AND known.fairness_key <> '') AS mixed
), input AS (
  ${given}
    WHERE NOT (SELECT mixed FROM refused)
)`
  const slots = limited
    ? `${slotRowsCtes(schema, `SELECT DISTINCT ON (queue, concurrency_key) queue, concurrency_key, concurrency_limit FROM input WHERE concurrency_key IS NOT NULL ORDER BY queue, concurrency_key, position DESC`)}, `
    : ''
  const buckets = rated ? `${bucketRowsCtes(schema, fair ? fairRateSource : rateSource, '$2::bigint')}, ` : ''
  // Inserted keyed jobs and the holders of the keys the others found taken: only a keyed batch has either.
  const keyedAnswers = keyed
    ? `
UNION ALL
SELECT inserted.id, NULL::bigint, NULL::text FROM inserted WHERE inserted.job_key IS NOT NULL
UNION ALL
SELECT holder.id, holder.run_at_ms, input.id AS asked_id
FROM input JOIN ${schema.quoted}.jobs AS holder ON holder.queue = input.queue AND holder.job_key = input.job_key
WHERE input.job_key IS NOT NULL AND NOT EXISTS (SELECT 1 FROM inserted WHERE inserted.id = input.id)`
    : ''
  return `
WITH ${input}, ${fair ? `${fairBatchCtes(schema)}, ` : ''}${slots}${buckets}inserted AS (
  INSERT INTO ${schema.quoted}.jobs
    (id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms,
     created_at_ms, run_at_ms, expires_at_ms, due_ms, job_key, concurrency_key${fair ? ', fairness_key, fair_pass' : ''})
  SELECT ${of}id, ${of}queue, 'pending', ${of}payload -> 0, ${of}priority, 0, ${of}max_attempts, ${of}visibility_timeout_ms, ${of}backoff_base_ms, ${of}dead_letter_retention_ms,
     $2::bigint, ${of}run_at_ms, ${of}expires_at_ms, GREATEST(${of}run_at_ms, $2::bigint), ${of}job_key, ${of}concurrency_key${fair ? ', input.fairness_key, fair.pass' : ''}
  FROM input${fair ? ` LEFT JOIN fair_pass AS fair ON fair.position = input.position
  -- The key rows are written before the first job row (an init plan), the order a keyed enqueue writes in.
  WHERE (SELECT count(*) FROM fair_rows) >= 0` : ''} ORDER BY ${of}position${keyed ? `
  ON CONFLICT (queue, job_key) WHERE job_key IS NOT NULL DO NOTHING` : ''}
  RETURNING id, queue, due_ms${keyed ? ', job_key' : ''}
)
-- The due signals, raised as the branch is read; it answers no row.
SELECT NULL::text AS id, NULL::bigint AS run_at_ms, NULL::text AS asked_id
FROM (
  SELECT count(pg_notify($3::text, payload)) AS raised FROM (
    SELECT CASE WHEN min(due_ms) = max(due_ms) THEN ${dueSignal('queue', 'min(due_ms)')} ELSE queue END AS payload FROM inserted GROUP BY queue
  ) AS queues
) AS signal WHERE signal.raised < 0${keyedAnswers}${fair ? '' : `
UNION ALL
SELECT NULL::text, NULL::bigint, NULL::text FROM refused WHERE mixed`}`
}

/** `$1` id, `$2` queue. The job in either table. */
export function getJobSql(schema: Schema): string {
  return `
SELECT ${liveRecord}, fairness_key, fair_pass, concurrency_key FROM ${schema.quoted}.jobs WHERE id = $1::text AND queue = $2::text
UNION ALL
SELECT ${deadRecord}, NULL::text, NULL::bigint, NULL::text FROM ${schema.quoted}.dead_jobs WHERE id = $1::text AND queue = $2::text`
}

/** `$1` queue. Jobs of the queue by state. */
export function countJobsSql(schema: Schema): string {
  return `
SELECT (SELECT count(*) FROM ${schema.quoted}.jobs WHERE queue = $1::text AND state = 'pending') AS pending,
       (SELECT count(*) FROM ${schema.quoted}.jobs WHERE queue = $1::text AND state = 'processing') AS processing,
       (SELECT count(*) FROM ${schema.quoted}.dead_jobs WHERE queue = $1::text) AS dead`
}

/** `$1` limit. Jobs by state for every queue that has any, by queue name. */
export function countQueuesSql(schema: Schema): string {
  return `
SELECT queue, sum(pending) AS pending, sum(processing) AS processing, sum(dead) AS dead FROM (
  SELECT queue, count(*) FILTER (WHERE state = 'pending') AS pending, count(*) FILTER (WHERE state = 'processing') AS processing, 0::bigint AS dead
  FROM ${schema.quoted}.jobs GROUP BY queue
  UNION ALL
  SELECT queue, 0::bigint, 0::bigint, count(*) FROM ${schema.quoted}.dead_jobs GROUP BY queue
) AS counted
GROUP BY queue ORDER BY queue LIMIT $1::integer`
}

/**
 * `$1` queue, `$2` state, `$3` after id or null, `$4` limit. A keyset page of live jobs in one
 * state: a branch per state, each naming its state, so each reads its own partial index
 * (migration 009); the other branch is cut by a one-time filter on `$2`.
 */
export function listLiveJobsSql(schema: Schema): string {
  const page = (state: 'pending' | 'processing') => `(SELECT ${liveRecord} FROM ${schema.quoted}.jobs
  WHERE $2::text = '${state}' AND state = '${state}' AND queue = $1::text AND ($3::text IS NULL OR id > $3::text)
  ORDER BY id LIMIT $4::integer)`
  return `
SELECT * FROM (
${page('pending')}
UNION ALL
${page('processing')}
) AS page ORDER BY id`
}

/** `$1` queue, `$2` after id or null, `$3` limit. A keyset page of dead jobs. */
export function listDeadJobsSql(schema: Schema): string {
  return `
SELECT ${deadRecord} FROM ${schema.quoted}.dead_jobs
WHERE queue = $1::text AND ($2::text IS NULL OR id > $2::text)
ORDER BY id LIMIT $3::integer`
}

/**
 * `$1` id, `$2` queue, `$3` now, `$4` the due channel. Moves a dead job back to `jobs` as a
 * fresh pending job (same id; attempts 0; created, runnable and due now; a passed expiry
 * dropped; attempt 0 appended to its claims) in ONE statement. When its key is held by a live job the insert does nothing while
 * the delete happened: `moved` = 1 with no row revived, and the caller must roll back.
 */
export function retryDeadSql(schema: Schema): string {
  return `
WITH moved AS (
  DELETE FROM ${schema.quoted}.dead_jobs WHERE id = $1::text AND queue = $2::text RETURNING *
), revived AS (
  INSERT INTO ${schema.quoted}.jobs
    (id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms,
     created_at_ms, run_at_ms, expires_at_ms, due_ms, job_key, last_handler_error, last_handler_stack, attempt_errors, concurrency_key, claim_history)
  SELECT id, queue, 'pending', payload, priority, 0, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms,
     $3::bigint, $3::bigint, CASE WHEN expires_at_ms > $3::bigint THEN expires_at_ms END, $3::bigint, job_key, last_handler_error, last_handler_stack, attempt_errors,
     concurrency_key,
     ${keepingLast('claim_history', jobClaimsKept)} || jsonb_build_array(jsonb_build_object('attempt', 0, 'atMs', $3::bigint))
  FROM moved
  ON CONFLICT (queue, job_key) WHERE job_key IS NOT NULL DO NOTHING
  RETURNING ${liveRecord}
)
SELECT (SELECT count(*) FROM moved) AS moved, revived.*
FROM (SELECT 1) AS one
LEFT JOIN revived ON true
LEFT JOIN LATERAL (SELECT pg_notify($4::text, revived.queue) WHERE revived.id IS NOT NULL) AS signal ON true`
}

/** `$1` queue, `$2` key. The live job holding a key. */
export function keyHolderSql(schema: Schema): string {
  return `SELECT id FROM ${schema.quoted}.jobs WHERE queue = $1::text AND job_key = $2::text`
}

/**
 * A claim's guards over its candidates (`$3` now; `single`: at most one, a claim by id): the concurrency admission (concurrencySql.ts),
 * then the rate admission of what it admitted (rateSql.ts), whose `rate_admitted` holds the rows
 * the statement claims; the concurrency slots are taken for those rows only.
 */
const guardCtes = (schema: Schema, options: Omit<AdmitOptions, 'then'>, single = false): string =>
  admitCtes(schema, { ...options, then: { ctes: rateAdmitCtes(schema, { candidates: 'admitted', order: options.order, now: '$3::bigint', single }), claimed: 'rate_admitted' } })

/**
 * A fenced form of a claim statement (claimFenceSql.ts): `write`, a data-modifying statement
 * already gated on the fence, becomes the CTE `claimed`, and the answer comes through the fence —
 * no row when refused, else the claimed rows or one row of nulls.
 */
const throughFence = (schema: Schema, fenceParams: { readonly queueKey: string; readonly rangeId: string }, ctes: string, write: string): string => `
WITH ${fenceCte(schema, fenceParams)}${ctes === '' ? '' : `, ${ctes}`}, claimed AS (
${write}
)
SELECT claimed.* FROM fence LEFT JOIN claimed ON true`

/**
 * `$1` id, `$2` new claim token, `$3` now. Claims a claimable job; returns it. `fenced`: with
 * `$4` physical queue key and `$5` range id, answered through the fence (`throughFence`).
 */
export function claimSql(schema: Schema, fenced = false): string {
  const gate = claimByIdGate(schema, fenced)
  // The job locked first, then its key's slot (concurrencySql.ts), then its buckets (rateSql.ts): admitted or not under the limits.
  const ctes = `target AS (
  SELECT id, queue, state, concurrency_key, fairness_key FROM ${schema.quoted}.jobs WHERE id = $1::text AND ${gate} FOR UPDATE
), ${guardCtes(schema, { candidates: 'target', order: 'c.id' }, true)}`
  const claim = `
UPDATE ${schema.quoted}.jobs
SET ${claimByIdSet(schema)}
FROM (SELECT id AS admitted_id FROM rate_admitted) AS chosen
WHERE id = chosen.admitted_id AND ${gate}
RETURNING ${liveRecord}`
  return fenced ? throughFence(schema, { queueKey: '$4', rangeId: '$5' }, ctes, claim) : `WITH ${ctes}${claim}`
}

// Which row a claim by id may take at `$3` now: claimable, its queue not paused, the fence held.
const claimByIdGate = (schema: Schema, fenced: boolean): string =>
  `${claimable('$3::bigint')} AND ${notPaused(schema, `${schema.quoted}.jobs.queue`)}${fenced ? ` AND ${fenceHeld}` : ''}`

// What a claim by id writes: `$2` the token, `$3` now.
const claimByIdSet = (schema: Schema): string => `state = 'processing', attempts = attempts + 1, claimed_at_ms = $3::bigint, claim_token = $2::text,
    deadline_ms = $3::bigint + visibility_timeout_ms, due_ms = $3::bigint + visibility_timeout_ms, claim_history = ${withClaim('', 'attempts + 1', '$3::bigint')},
    ready_seq = nextval('${schema.quoted}.job_ready_seq'), ${keepUnclaimed('', '$3::bigint')}, revision = revision + 1`

/**
 * `claimSql` without the admission steps, for the job of a queue without keys or limits: it
 * claims only when the job has no concurrency key and its queue no rate bucket as of its
 * snapshot (a keyed or limited enqueue writes those rows in the statement that inserts the job),
 * and answers one row: `keyed_queue` — true when it claimed nothing for that reason, and the
 * caller claims again with `claimSql` — and the claimed job's columns, nulls when it claimed
 * none. `fenced`: with `$4` and `$5`, no row when the fence failed.
 */
export function claimKeylessSql(schema: Schema, fenced = false): string {
  const gate = claimByIdGate(schema, fenced)
  return `
WITH ${fenced ? `${fenceCte(schema, { queueKey: '$4', rangeId: '$5' })}, ` : ''}target AS (
  SELECT id, queue, concurrency_key FROM ${schema.quoted}.jobs WHERE id = $1::text AND ${gate} FOR UPDATE
), keyed_probe AS (
  SELECT EXISTS (SELECT 1 FROM target WHERE target.concurrency_key IS NOT NULL OR ${queueHasBuckets(schema, 'target.queue')}) AS keyed_queue
), claimed AS (
UPDATE ${schema.quoted}.jobs
SET ${claimByIdSet(schema)}
FROM (SELECT id AS target_id FROM target) AS chosen
WHERE id = chosen.target_id AND NOT (SELECT keyed_queue FROM keyed_probe)
RETURNING ${liveRecord}
)
SELECT keyed_probe.keyed_queue, claimed.* FROM ${fenced ? 'fence CROSS JOIN ' : ''}keyed_probe LEFT JOIN claimed ON true`
}

/**
 * `$1` queue, `$2` claim tokens, `$3` now. Claims the first claimable rows of the queue in claim
 * order — due ones and those whose task is with Matching (due null), which come first within a
 * priority — as many as tokens (rows another transaction holds are skipped), the n-th with the
 * n-th token: `claimSql`'s transition. Answers each claimed row with its `rank`: as
 * json in `job` for up to 16 tokens, else as columns (`claimedRows` says why).
 *
 * The token count is written into the text as the head's LIMIT (`headCount`), so a prepared
 * statement's generic plan knows it: with the limit a parameter, PostgreSQL priced the generic
 * plan as if it read a tenth of the queue, planned every execution afresh, and spent some 40%
 * of its CPU per job of a one-at-a-time drain on that planning. A batch size is one text.
 *
 * `fenced`: with `$4` physical queue key and `$5` range id, the head is read only when the fence
 * holds, and the answer comes through it (`throughFence`). `guard`: `ClaimGuard`; the `keyless`
 * form answers one row more, of nulls but `keyed_queue`, when it claims nothing.
 */
export function claimDueSql(schema: Schema, headCount: number, fenced = false, guard: ClaimGuard = 'admit'): string {
  const claim = `UPDATE ${schema.quoted}.jobs AS job
SET ${claimHeadSet(schema, headCount)}
${claimedHeads(headCount)}
RETURNING ${headRank(headCount)} AS rank, ${claimedRows(headCount)}`
  if (guard === 'keyless') {
    return `
WITH ${fenced ? `${fenceCte(schema, { queueKey: '$4', rangeId: '$5' })}, ` : ''}${claimHeadCtes(schema, headCount, fenced, undefined, guard)}, claimed AS (
${claim}
)
SELECT keyless.keyed_queue, claimed.* FROM ${fenced ? 'fence CROSS JOIN ' : ''}(SELECT ${keyedAnswer} AS keyed_queue) AS keyless LEFT JOIN claimed ON true`
  }
  if (fenced) return throughFence(schema, { queueKey: '$4', rangeId: '$5' }, claimHeadCtes(schema, headCount, true), claim)
  return `
WITH ${claimHeadCtes(schema, headCount)}
${claim}`
}

/**
 * How a head claim (`claimDueSql`, `ackAndClaimDueSql`) guards concurrency keys and rate limits.
 * `admit`: through concurrencySql.ts's admission, then rateSql.ts's, for a queue with keys or
 * limits. `keyless`: for a queue the store has not seen keys or limits in, cheaper by both
 * admissions — it claims only while the queue has no slot row and no rate bucket at all as of
 * its snapshot (a keyed or limited enqueue writes its rows in the statement that inserts the
 * job, so no snapshot sees such a job of the queue without them), and answers `keyed_queue`,
 * whether the queue has one: when it does, it claimed nothing, and the caller claims again with
 * `admit` (and keeps to it: slot rows and buckets are never deleted). Its acks free their slots
 * as every exit from processing does.
 */
export type ClaimGuard = 'admit' | 'keyless'

// The keyless form's answer, read from its `keyed_probe` CTE (claimHeadCtes), which probes once.
const keyedAnswer = '(SELECT keyed_queue FROM keyed_probe)'

// Whether `$1`'s queue has a slot row or a rate bucket: a probe of each primary key's prefix.
const queueHasSlots = (schema: Schema): string =>
  `(EXISTS (SELECT 1 FROM ${schema.quoted}.concurrency_slots AS slot WHERE slot.queue = $1::text) OR ${queueHasBuckets(schema, '$1::text')})`

// How a claim of up to `headCount` rows answers them. A client prepares a decoder per result
// column once per statement, which for twenty columns cost more than decoding the one row of a
// one-at-a-time drain: a small claim answers each row as one json column (`job`, the columns by
// name; the dead-only ones absent, read as null). Building that json costs the server more per
// row than sending the columns, so a large batch answers the columns.
const claimedRows = (headCount: number): string => (headCount <= claimedAsJsonMax ? 'row_to_json(job) AS job' : liveRecord)
const claimedAsJsonMax = 16

/**
 * `$1` queue, `$2` claim tokens, `$3` now, then the acks: `$4` ids and `$5` claim tokens
 * (parallel arrays) — or, with `oneAck`, `$4` the one id and `$5` its token, a text whose plan is
 * an index probe (jobTexts.ts says why that matters). The acks (`ackSql`, `ackBatchSql`) and
 * `claimDueSql` in one statement, for a worker that settles the jobs its handlers finished and
 * takes its next ones in one round trip. An acked row, under a valid claim, is never among the
 * claimable ones. Answers one row per claimed job (`rank`, and the row as `claimDueSql` answers
 * it), or one row of nulls when none was claimed; `acked` holds the deleted ids on one of the
 * rows (null on the others, and when none), so that they are sent and decoded once: an array, or
 * with `oneAck` the id itself.
 *
 * `fenced`: with `$6` physical queue key and `$7` range id, neither the acks nor the claims are
 * written unless the fence holds, and the answer comes through it: no row at all when refused.
 * `guard`: `ClaimGuard`; the `keyless` form answers `keyed_queue` on every row. `heads`:
 * `HeadForm`; every row answers `rare_heads` (the `lean` form claimed nothing when it is true).
 */
export function ackAndClaimDueSql(schema: Schema, headCount: number, oneAck: boolean, fenced = false, guard: ClaimGuard = 'admit', heads: HeadForm = 'full'): string {
  // The guarded form frees the acks' slots in its admission (`freed`, which the claims may take
  // again). The keyless form acks only jobs without a concurrency key, so it frees no slot and
  // carries no slot CTE: a keyed job's ack is left for the guarded `ackMany`, which the store
  // runs when this statement answers that the queue has slot rows (as it must, holding a keyed job).
  const gate = `${fenced ? ` AND ${fenceHeld}` : ''}${guard === 'keyless' ? ' AND concurrency_key IS NULL' : ''}`
  const ack = oneAck
    ? `DELETE FROM ${schema.quoted}.jobs WHERE id = $4::text AND ${validClaimOf('$5::text', '$3::bigint')}${gate} RETURNING id, queue, concurrency_key`
    : `DELETE FROM ${schema.quoted}.jobs AS job USING unnest($4::text[], $5::text[]) AS claim(id, token)
  WHERE job.id = claim.id AND ${validClaimOf('claim.token', '$3::bigint')}${gate} RETURNING job.id, job.queue, job.concurrency_key`
  return `
WITH ${fenced ? `${fenceCte(schema, { queueKey: '$6', rangeId: '$7' })}, ` : ''}acked AS (
  ${ack}
), ${claimHeadCtes(schema, headCount, fenced, 'acked', guard, heads)}, claimed AS (
  UPDATE ${schema.quoted}.jobs AS job
  SET ${claimHeadSet(schema, headCount)}
  ${claimedHeads(headCount)}
  RETURNING ${headRank(headCount)} AS rank, ${claimedRows(headCount)}
)
SELECT ${headCount === 1 ? 'ack.acked' : 'CASE WHEN row_number() OVER () = 1 THEN ack.acked END AS acked'}${guard === 'keyless' ? ', ack.keyed_queue' : ''}, ack.rare_heads, claimed.*
FROM ${fenced ? 'fence CROSS JOIN ' : ''}(SELECT ${oneAck ? 'min(id)' : 'array_agg(id)'} AS acked${guard === 'keyless' ? `, ${keyedAnswer} AS keyed_queue` : ''}, ${rareAnswer(heads)} AS rare_heads FROM acked) AS ack LEFT JOIN claimed ON true`
}

// The head of a queue's claimable rows for claimDue (`$1` queue, `$3` now), `headCount` of them in
// claim order and ranked; the count is a literal of the text (claimDueSql says why). Pending rows,
// rows whose task is with Matching (due null: pending ones, and lapsed claims a pass handed to
// Matching again) and lapsed claims still in the store are read each through its own
// partial index (migrations 003 and 009), the first `headCount` of each locked (rows another
// transaction holds are skipped), then merged in claim order, with-Matching rows first within a
// priority (they were due before any row still in the store): up to twice `headCount` rows more
// than the claim takes stay locked to the statement's end. A with-Matching row claimed here ends
// its task: delivered later, it finds the job started or gone. One row is ranked 1 without a
// window: a window's sort is a tenth of a one-row claim's server time. `fenced`: read only when
// the statement's fence holds (a one-time filter, evaluated first).
//
// The pending branch's due test is written `due_ms + 0`, which no index can answer, so that the
// plan reads the queue's head in claim order and stops after `headCount` rows. Written plainly, a
// generic plan of a several-row claim priced the every-queue due index (due_ms) as cheaper, then
// read and sorted every due row of the table for each claim.
//
// `heads`: `HeadForm`. The lean form reads the pending head alone, gated on its probe
// (`rare_probe`) finding no claimable row with Matching and no lapsed claim of the queue.
function claimHeadCtes(schema: Schema, headCount: number, fenced = false, freed?: string, guard: ClaimGuard = 'admit', heads: HeadForm = 'full'): string {
  const limit = Math.floor(headCount)
  // The keyless form asks once (`keyed_probe`) whether the queue has slot rows or buckets.
  const gate = `${notPaused(schema, '$1::text')}${fenced ? ` AND ${fenceHeld}` : ''}${guard === 'keyless' ? ` AND NOT ${keyedAnswer}` : ''}`
  // Keys already at their limit stay out of the pending branches: they would take other keys' places.
  const room = guard === 'admit' ? ` AND ${slotHasRoom(schema, `${schema.quoted}.jobs`, '$1::text', freed)}` : ''
  // A lapsed claim handed to Matching again holds its key's slot already: only pending rows need room.
  // Every claim, a lapsed one's too, needs a token: empty buckets' jobs stay out of every branch.
  const tokens = guard === 'admit' ? ` AND ${rateHasToken(schema, `${schema.quoted}.jobs`, '$3::bigint', '$1::text')}` : ''
  const roomUnlessLapsed = guard === 'admit' ? ` AND (${schema.quoted}.jobs.state = 'processing' OR ${slotHasRoom(schema, `${schema.quoted}.jobs`, '$1::text', freed)})${tokens}` : ''
  // The lean form reads the pending head only while the queue has no claimable row of the other two.
  const leanGate = heads === 'lean' ? ` AND NOT ${rareAnswer('lean')}` : ''
  const branch = (state: 'pending' | 'processing') => `SELECT id, priority, due_ms, ${fairOrder}, ready_seq, ${headKeyColumns(guard)} FROM ${schema.quoted}.jobs
  WHERE queue = $1::text AND ${state === 'pending' ? 'due_ms + 0' : 'due_ms'} <= $3::bigint AND ${claimableIn(state, '$3::bigint')} AND ${gate}${state === 'pending' ? `${room}${leanGate}` : ''}${tokens}
  ORDER BY ${claimOrder}
  LIMIT ${limit}
  FOR UPDATE SKIP LOCKED`
  const keyedProbe = guard === 'keyless' ? `keyed_probe AS (SELECT ${queueHasSlots(schema)} AS keyed_queue), ` : ''
  // The guards' admission (the admit form) and the ranking, over `head`: the merged head, or in the lean form the pending head alone.
  const admitted = (head: string) => `${guard === 'admit' ? `${guardCtes(schema, { candidates: head, order: headOrderOf('c'), ...(freed === undefined ? {} : { freed }) })}, ` : ''}ranked AS (
  SELECT id AS head_id, ${headCount === 1 ? '1::bigint' : `row_number() OVER (ORDER BY ${headOrder})`} AS rank FROM ${guard === 'admit' ? 'rate_admitted' : head}
)`
  if (heads === 'lean') {
    return `${keyedProbe}rare_probe AS MATERIALIZED (
  SELECT EXISTS (SELECT 1 FROM ${schema.quoted}.jobs WHERE queue = $1::text AND due_ms IS NULL AND ${claimable('$3::bigint')})
    OR EXISTS (SELECT 1 FROM ${schema.quoted}.jobs WHERE queue = $1::text AND ${dueByNowBounded} AND ${claimableIn('processing', '$3::bigint')}) AS rare_heads
), head_pending AS (
  ${branch('pending')}
), ${admitted('head_pending')}`
  }
  return `${keyedProbe}head_pending AS (
  ${branch('pending')}
), head_matching AS (
  SELECT id, priority, due_ms, NULL::bigint AS fair_order, ready_seq, ${headKeyColumns(guard)} FROM ${schema.quoted}.jobs
  WHERE queue = $1::text AND due_ms IS NULL AND ${claimable('$3::bigint')} AND ${gate}${roomUnlessLapsed}
  ORDER BY priority DESC, ready_seq
  LIMIT ${limit}
  FOR UPDATE SKIP LOCKED
), head_lapsed AS (
  ${branch('processing')}
), head AS (
  SELECT * FROM head_matching UNION ALL SELECT * FROM head_pending UNION ALL SELECT * FROM head_lapsed ORDER BY ${headOrder} LIMIT ${limit}
), ${admitted('head')}`
}

/**
 * Which heads a head claim reads (`ackAndClaimDueSql`). `full`: all three (`claimHeadCtes`).
 * `lean`: the pending head only, behind one probe (`rare_probe`) of the queue's claimable rows
 * whose task is with Matching and of its lapsed claims still in the store — a superset of what
 * the other two heads would read, rows others hold included. While it finds none, the full form
 * would have claimed the same rows; when it finds one, the lean form claims nothing and answers
 * `rare_heads`, and the caller claims with the full form. Those heads are nearly always empty,
 * and a plan without them costs the server less per one-job claim (executor setup and locks
 * scale with the plan; a branch that reads nothing costs about as much as the probe does).
 */
export type HeadForm = 'full' | 'lean'

// A head claim's `rare_heads` answer: in the lean form the probe's verdict; in the full form
// whether its other two heads read a row (rows others hold are skipped, so it may say no while
// such rows remain: the lean form's probe then says yes).
const rareAnswer = (heads: HeadForm): string =>
  heads === 'lean' ? '(SELECT rare_heads FROM rare_probe)' : '(EXISTS (SELECT 1 FROM head_matching) OR EXISTS (SELECT 1 FROM head_lapsed))'

// `due_ms <= $3` (now) as a bounded range, for the lean form's probe of lapsed claims. A generic
// plan prices `due_ms <= $param` as a third of the rows, so in a queue with thousands of claims
// in flight (due later) it expected a lapsed one early in a sequential scan of the table, and read
// every row at every claim; a range with a constant lower bound as well is priced as a narrow one,
// and the probe reads the processing index. The bound is the least bigint: the same rows match.
const dueByNowBounded = 'due_ms BETWEEN (-9223372036854775808)::bigint AND $3::bigint'

// Claim order over the merged head: a row with Matching (due null) first within its priority.
const headOrder = 'priority DESC, fair_order NULLS FIRST, ready_seq'
const headOrderOf = (row: string): string => `${row}.priority DESC, ${row}.fair_order NULLS FIRST, ${row}.ready_seq`
// What the concurrency and rate guards read of a head row (`admitCtes`, `rateAdmitCtes`); the
// keyless form runs neither, and its head rows stay as narrow as they were before the guards.
const headKeyColumns = (guard: ClaimGuard): string => (guard === 'admit' ? 'queue, state, concurrency_key, fairness_key' : 'queue, state, concurrency_key')

// How a head claim's UPDATE finds its rows, and each one's rank. One head row joins `ranked`
// (a one-row join probes the primary key). Several are named as one array of ids in claim order,
// matched by `= ANY`, an index condition on the primary key, each row's rank its place in the
// array: joined to `ranked` instead, a generic plan of a 64-row claim hashed the head rows and
// read the whole table to find them.
const claimedHeads = (headCount: number): string =>
  headCount === 1 ? 'FROM ranked WHERE job.id = ranked.head_id' : 'FROM (SELECT array_agg(head_id ORDER BY rank) AS ids FROM ranked) AS heads WHERE job.id = ANY(heads.ids)'
const headRank = (headCount: number): string => (headCount === 1 ? 'ranked.rank' : 'array_position(heads.ids, job.id)::bigint')

// claimDue's transition of a ranked head row (`job`), with the rank-th of the tokens `$2`.
const claimHeadSet = (schema: Schema, headCount: number): string =>
  `state = 'processing', attempts = job.attempts + 1, claimed_at_ms = $3::bigint, claim_token = ($2::text[])[${headRank(headCount)}],
    deadline_ms = $3::bigint + job.visibility_timeout_ms, due_ms = $3::bigint + job.visibility_timeout_ms, claim_history = ${withClaim('job.', 'job.attempts + 1', '$3::bigint')},
    ready_seq = nextval('${schema.quoted}.job_ready_seq'), ${keepUnclaimed('job.', '$3::bigint')}, revision = job.revision + 1`

/**
 * `$1` ids, `$2` new claim tokens (parallel arrays), `$3` now. `claimSql` for many jobs in one
 * statement: each claimable job among them is claimed with its token (the first token given for
 * a job named twice); returns the claimed rows. The rest are judged one by one by the caller.
 * `fenced`: with `$4` physical queue key and `$5` range id, answered through the fence (`throughFence`).
 */
export function claimManySql(schema: Schema, fenced = false): string {
  const gate = `${claimable('$3::bigint')} AND ${notPaused(schema, 'job.queue')}${fenced ? ` AND ${fenceHeld}` : ''}`
  // The jobs locked first, then their keys' slots (concurrencySql.ts): each key's jobs admitted
  // in the order given while its limit leaves room.
  const ctes = `target AS (
  SELECT job.id, job.queue, job.state, job.concurrency_key, job.fairness_key, wanted.token, wanted.position FROM ${schema.quoted}.jobs AS job
  JOIN (SELECT DISTINCT ON (asked_id) asked_id, token, position FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS asked(asked_id, token, position) ORDER BY asked_id, position) AS wanted
    ON job.id = wanted.asked_id
  WHERE ${gate}
  FOR UPDATE OF job
), ${guardCtes(schema, { candidates: 'target', order: 'c.position' })}`
  const claim = `
UPDATE ${schema.quoted}.jobs AS job
SET state = 'processing', attempts = job.attempts + 1, claimed_at_ms = $3::bigint, claim_token = chosen.token,
    deadline_ms = $3::bigint + job.visibility_timeout_ms, due_ms = $3::bigint + job.visibility_timeout_ms, claim_history = ${withClaim('job.', 'job.attempts + 1', '$3::bigint')},
    ready_seq = nextval('${schema.quoted}.job_ready_seq'), ${keepUnclaimed('job.', '$3::bigint')}, revision = job.revision + 1
FROM (SELECT id AS admitted_id, token FROM rate_admitted) AS chosen
WHERE job.id = chosen.admitted_id AND ${gate}
RETURNING ${liveRecord}`
  return fenced ? throughFence(schema, { queueKey: '$4', rangeId: '$5' }, ctes, claim) : `WITH ${ctes}${claim}`
}

/**
 * `$1` id, `$2` now, `$3` the exhausted dead reason, `$4` how far ahead a job its key's limit
 * refused is due again (ms). One round trip after a claim by id claimed nothing: dead-letters the
 * job at its deadline when the exhaustion rule covers it (`outcome` 'exhausted'), else parks it
 * when only its key's limit refused it (due `$4` from now) or only its buckets did (due at their
 * next token; `outcome` 'limited' for either), and answers what it found besides: the live row's
 * state, deadline, expiry and whether its queue is paused, or state 'dead', or nulls when the job
 * is missing. The three writes rule each other out (exhausted rows are out of attempts, a limited
 * park comes before a rated one), so the statement touches the row at most once.
 */
export function claimRefusedSql(schema: Schema): string {
  const claimableNow = `job.attempts < job.max_attempts AND (job.expires_at_ms IS NULL OR job.expires_at_ms > $2::bigint)`
  return `
WITH moved AS (DELETE FROM ${schema.quoted}.jobs WHERE id = $1::text AND ${exhausted('$2::bigint')} RETURNING *), ${freeSlotsCtes(schema, movedOut)}, buried AS (
  ${bury(schema, '$3::text', 'deadline_ms')}
  RETURNING id
), ${parkLimitedCtes(schema, `${claimableNow} AND job.run_at_ms <= $2::bigint AND ${notPaused(schema, 'job.queue')}`, '$4::bigint')}, ${parkRatedCtes(
    schema,
    `${claimableNow} AND ((job.state = 'pending' AND job.run_at_ms <= $2::bigint) OR (job.state = 'processing' AND job.deadline_ms <= $2::bigint)) AND ${notPaused(schema, 'job.queue')}`,
    'limited_job',
  )}, found AS (
  SELECT state, deadline_ms, expires_at_ms, NOT ${notPaused(schema, `${schema.quoted}.jobs.queue`)} AS paused FROM ${schema.quoted}.jobs WHERE id = $1::text
  UNION ALL
  SELECT 'dead', NULL::bigint, NULL::bigint, false FROM ${schema.quoted}.dead_jobs WHERE id = $1::text
)
SELECT CASE WHEN EXISTS (SELECT 1 FROM buried) THEN 'exhausted' WHEN EXISTS (SELECT 1 FROM limited_job) OR EXISTS (SELECT 1 FROM rated_job) THEN 'limited' END AS outcome,
       found.state, found.deadline_ms, found.expires_at_ms, found.paused
FROM (SELECT 1) AS one LEFT JOIN found ON true`
}

/** `$1` id, `$2` token, `$3` now, `$4` extension ms or null. Renews a valid claim; returns the row. */
export function heartbeatSql(schema: Schema): string {
  return `
UPDATE ${schema.quoted}.jobs
SET deadline_ms = $3::bigint + COALESCE($4::bigint, visibility_timeout_ms), due_ms = $3::bigint + COALESCE($4::bigint, visibility_timeout_ms),
    ready_seq = nextval('${schema.quoted}.job_ready_seq'), revision = revision + 1
WHERE id = $1::text AND ${validClaim}
RETURNING ${liveRecord}`
}

/** `$1` id, `$2` token, `$3` now. Deletes the job under a valid claim (freeing its concurrency slot). */
export function ackSql(schema: Schema): string {
  return `
WITH acked AS (DELETE FROM ${schema.quoted}.jobs WHERE id = $1::text AND ${validClaim} RETURNING id, queue, concurrency_key), ${freeSlotsCtes(schema, 'SELECT queue, concurrency_key FROM acked')}
SELECT id FROM acked`
}

/** `$1` id, `$2` token, `$3` now, `$4` progress json. Stores the progress under a valid claim. */
export function setProgressSql(schema: Schema): string {
  return `UPDATE ${schema.quoted}.jobs SET progress = $4::jsonb, progress_at_ms = $3::bigint WHERE id = $1::text AND ${validClaim} RETURNING id`
}

/** `$1` ids, `$2` tokens (parallel arrays), `$3` now. Deletes every job under a valid claim. */
export function ackBatchSql(schema: Schema): string {
  return `
WITH acked AS (
  DELETE FROM ${schema.quoted}.jobs AS job
  USING unnest($1::text[], $2::text[]) AS claim(id, token)
  WHERE job.id = claim.id AND ${validClaimOf('claim.token', '$3::bigint')}
  RETURNING job.id, job.queue, job.concurrency_key
), ${freeSlotsCtes(schema, 'SELECT queue, concurrency_key FROM acked')}
SELECT id FROM acked`
}

/**
 * `$1` ids, `$2` tokens (parallel arrays), `$3` now, `$4` the due channel. Gives back every
 * claim that is valid (the first one named per id): pending, the attempt taken back, the claim
 * fields cleared, and the claim order key the claim displaced restored, its due time no later
 * than now (now when none was kept: its task was with Matching; a row claimed before migration
 * 006 keeps its claim's ready order). Raises the due signal once per queue given rows back, due
 * now. Answers the released ids with their place in the input (`position`), in input order.
 */
export function releaseSql(schema: Schema): string {
  return releaseOf(schema, 'SELECT DISTINCT ON (id) id, token, position FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS asked(id, token, position) ORDER BY id, position')
}

/**
 * `$1` queue, `$2` waiter tokens, `$3` now, `$4` the due channel. `releaseSql` of the claims the
 * tokens hold in the queue (found through the queue's processing rows, jobs_processing), answered
 * in token order with each its token.
 */
export function releaseHandedOverSql(schema: Schema): string {
  return releaseOf(
    schema,
    `SELECT job.id, given.token, given.position FROM unnest($2::text[]) WITH ORDINALITY AS given(token, position)
  JOIN ${schema.quoted}.jobs AS job ON job.queue = $1::text AND job.state = 'processing' AND job.claim_token = given.token`,
  )
}

// The give-back of `releaseSql` for the claims `asked` selects (id, token, position).
function releaseOf(schema: Schema, asked: string): string {
  return `
WITH asked AS (
  ${asked}
), released AS (
  UPDATE ${schema.quoted}.jobs AS job
  SET state = 'pending', attempts = GREATEST(job.attempts - 1, 0), claimed_at_ms = NULL, claim_token = NULL, deadline_ms = NULL,
      due_ms = LEAST(COALESCE(job.unclaimed_due_ms, $3::bigint), $3::bigint), ready_seq = COALESCE(job.unclaimed_ready_seq, job.ready_seq),
      unclaimed_due_ms = NULL, unclaimed_ready_seq = NULL, claim_history = job.claim_history - (-1), revision = job.revision + 1
  FROM asked
  WHERE job.id = asked.id AND ${validClaimOf('asked.token', '$3::bigint')}
  RETURNING job.id, job.queue, job.concurrency_key, asked.position, asked.token
), ${freeSlotsCtes(schema, 'SELECT queue, concurrency_key FROM released')}
SELECT released.id, released.position, released.token
FROM released CROSS JOIN (
  SELECT count(pg_notify($4::text, ${dueSignal('queue', '$3::bigint')})) FROM (SELECT DISTINCT queue FROM released) AS queues
) AS signal
ORDER BY released.position`
}

/**
 * `$1` id, `$2` token, `$3` now, `$4` delay ms, `$5` error, `$6` stack or null, `$7` the
 * exhausted dead reason. Under a valid claim: back to pending at now + delay with the handler's
 * error recorded, or — at the budget — dead as `$7` with the handler's error kept beside it.
 * The two branches exclude each other.
 */
export function retrySql(schema: Schema): string {
  return `
WITH retried AS (
  UPDATE ${schema.quoted}.jobs
  SET state = 'pending', run_at_ms = $3::bigint + $4::bigint, due_ms = $3::bigint + $4::bigint, claim_token = NULL, deadline_ms = NULL,
      last_handler_error = $5::text, last_handler_stack = $6::text,
      attempt_errors = ${withAttemptError('attempt_errors', '$5::text', '$6::text', '$3::bigint', '$3::bigint + $4::bigint')},
      ready_seq = nextval('${schema.quoted}.job_ready_seq'), revision = revision + 1
  WHERE id = $1::text AND ${validClaim} AND attempts < max_attempts
  RETURNING run_at_ms, queue, concurrency_key
), moved AS (
  DELETE FROM ${schema.quoted}.jobs WHERE id = $1::text AND ${validClaim} AND attempts >= max_attempts RETURNING *
), ${freeSlotsCtes(schema, 'SELECT queue, concurrency_key FROM retried UNION ALL SELECT queue, concurrency_key FROM moved')}, buried AS (
  ${bury(schema, '$7::text', '$3::bigint', '$5::text, $6::text', withAttemptError('attempt_errors', '$5::text', '$6::text', '$3::bigint'))} RETURNING id
)
SELECT 'retried' AS outcome, run_at_ms FROM retried
UNION ALL
SELECT 'dead' AS outcome, NULL::bigint FROM buried`
}

/** `$1` id, `$2` token, `$3` now, `$4` error, `$5` stack or null. Dead-letters under a valid claim. */
export function failSql(schema: Schema): string {
  return `
WITH moved AS (DELETE FROM ${schema.quoted}.jobs WHERE id = $1::text AND ${validClaim} RETURNING *), ${freeSlotsCtes(schema, movedOut)}
${bury(schema, '$4::text', '$3::bigint', '$4::text, $5::text', withAttemptError('attempt_errors', '$4::text', '$5::text', '$3::bigint'))}
RETURNING id`
}

/** `$1` id, `$2` queue. Deletes a live job, unconditionally (a processing one frees its concurrency slot). */
export function cancelSql(schema: Schema): string {
  return `
WITH moved AS (DELETE FROM ${schema.quoted}.jobs WHERE id = $1::text AND queue = $2::text RETURNING id, queue, state, concurrency_key), ${freeSlotsCtes(schema, movedOut)}
SELECT id FROM moved`
}

/**
 * `$1` queue, `$2` now, `$3` the exhausted and `$4` the expired dead reason. Expired live rows
 * move to dead (`sweptDeath`: the exhaustion rule's verdict at the deadline, else expired now);
 * dead rows past retention as of the statement's snapshot are deleted, and so are the queue's
 * fairness keys a longest stride behind its virtual now (`fairnessStrideMax`): their next job
 * would enter at the head anyway.
 */
export function sweepExpiredSql(schema: Schema): string {
  return `
WITH moved AS (
  DELETE FROM ${schema.quoted}.jobs WHERE queue = $1::text AND expires_at_ms <= $2::bigint RETURNING *
), ${freeSlotsCtes(schema, movedOut)}, buried AS (
  INSERT INTO ${schema.quoted}.dead_jobs (${deadInsertColumns})
  SELECT ${movedColumns},
         CASE WHEN ${exhausted('$2::bigint')} THEN $3::text ELSE $4::text END,
         CASE WHEN ${exhausted('$2::bigint')} THEN deadline_ms ELSE $2::bigint END,
         last_handler_error, last_handler_stack, attempt_errors
  FROM moved
  RETURNING id
), purged AS (
  DELETE FROM ${schema.quoted}.dead_jobs
  WHERE queue = $1::text AND dead_letter_retention_ms IS NOT NULL AND died_at_ms + dead_letter_retention_ms <= $2::bigint
  RETURNING id
), forgotten AS (
  DELETE FROM ${schema.quoted}.fairness_passes
  WHERE queue = $1::text AND last_pass + ${fairnessStrideMax} <= LEAST($2::bigint, (SELECT min(GREATEST(fair_pass, due_ms)) FROM ${schema.quoted}.jobs
    WHERE queue = $1::text AND due_ms IS NOT NULL AND state = 'pending'))
  RETURNING 1
)
SELECT (SELECT count(*) FROM buried) AS dead, (SELECT count(*) FROM purged) AS purged`
}

/**
 * `$1` now, `$2` reserve until, `$3` limit, `$4` queues (null for every queue, as `queues` says),
 * `$5` the exhausted and `$6` the expired dead reason, `$7` the concurrency keys whose pending
 * jobs are passed over (empty for none).
 * One round trip for the due-time driver's pass: dead-letters every lapsed row the exhaustion
 * rule covers, and every lapsed claim of a job with a concurrency key that expired (as a sweep
 * would: its slot would otherwise stay held until one, and no engine sweeps unless asked) — due,
 * or with its task handed to Matching (due null), whose claim may never come — and reserves the first due unexpired rows that rule does not cover, in claim order
 * (rows another connection holds are skipped), returning them with their previous due time. The
 * two sets are disjoint, so the statement never touches a row twice. A pending job whose
 * concurrency key is at its limit is passed over (concurrencySql.ts's `slotHasRoom`), and of a key
 * with room only as many are reserved as it has room for (`reservedWithinRoom`): their claims
 * would be refused; they stay due, for the claims and passes after a slot frees. So is a job whose
 * queue's or key's rate bucket is empty (rateSql.ts's `rateHasToken`), until its next token;
 * with the one-queue filter, no more rows are reserved than its queue-wide bucket holds whole
 * tokens as of the snapshot (`queueTokensCap`).
 */
export function takeDueSql(schema: Schema, queues: QueueFilter): string {
  // One queue's reservations are capped at its queue-wide bucket's whole tokens: more would be
  // handed to Matching only for their claims to be refused and parked.
  const limit = queues === 'one' ? `LEAST($3::integer, ${queueTokensCap(schema, '($4::text[])[1]', '$1::bigint')})` : '$3::integer'
  return `
WITH moved AS (
  DELETE FROM ${schema.quoted}.jobs
  WHERE ${queueFilter(queues, '$4')} AND ((due_ms <= $1::bigint AND (${exhausted('$1::bigint')} OR ${lapsedExpiredKeyed('$1::bigint')})) OR (due_ms IS NULL AND ${lapsedExpiredKeyed('$1::bigint')}))
  RETURNING *
), ${freeSlotsCtes(schema, movedOut)}, buried AS (
  ${bury(schema, `CASE WHEN ${exhausted('$1::bigint')} THEN $5::text ELSE $6::text END`, `CASE WHEN ${exhausted('$1::bigint')} THEN deadline_ms ELSE $1::bigint END`)}
  RETURNING id
), ${(['pending', 'processing'] as const).map((state) => `due_${state}${state === 'pending' ? '_rows' : ''} AS (
  SELECT id, due_ms, ${fairOrder}, priority, ready_seq${state === 'pending' ? ', queue, concurrency_key' : ''} FROM ${schema.quoted}.jobs
  WHERE state = '${state}' AND due_ms <= $1::bigint AND ${queueFilter(queues, '$4')} AND ${notExpired('$1::bigint')}
    AND NOT COALESCE(${exhausted('$1::bigint')}, false) AND ${notPaused(schema, `${schema.quoted}.jobs.queue`)}${state === 'pending' ? ` AND ${slotHasRoom(schema, `${schema.quoted}.jobs`)} AND NOT COALESCE(concurrency_key = ANY($7::text[]), false)` : ''}
    AND ${rateHasToken(schema, `${schema.quoted}.jobs`, '$1::bigint')}
  ORDER BY ${claimOrder}
  LIMIT ${limit}
  FOR UPDATE SKIP LOCKED
)`).join(', ')}, due_pending AS (
  ${reservedWithinRoom(schema, 'due_pending_rows')}
), due AS (
  SELECT id, due_ms FROM (SELECT * FROM due_pending UNION ALL SELECT * FROM due_processing ORDER BY ${mergedOrder} LIMIT ${limit}) AS merged
)
UPDATE ${schema.quoted}.jobs AS job SET due_ms = $2::bigint, revision = job.revision + 1
FROM due WHERE job.id = due.id
RETURNING job.id, job.queue, job.priority, due.due_ms AS previous_due_ms, job.ready_seq, job.revision, job.expires_at_ms, job.concurrency_key`
}

// Of `rows` (pending head rows with their queue and concurrency key), those a pass may reserve:
// every unkeyed one, and of each key's, in claim order, as many as its slot has room for as of
// the statement's snapshot — reserving more would hand Matching tasks whose claims the key's
// limit refuses. The claim still decides through the slot's lock (concurrencySql.ts).
const reservedWithinRoom = (schema: Schema, rows: string): string => `SELECT ranked.id, ranked.due_ms, ranked.fair_order, ranked.priority, ranked.ready_seq FROM (
    SELECT r.*, row_number() OVER (PARTITION BY r.queue, r.concurrency_key ORDER BY ${mergedOrder}) AS key_rank FROM ${rows} AS r
  ) AS ranked
  LEFT JOIN ${schema.quoted}.concurrency_slots AS slot ON slot.queue = ranked.queue AND slot.concurrency_key = ranked.concurrency_key
  WHERE ranked.concurrency_key IS NULL OR ranked.key_rank <= slot.concurrency_limit - slot.held`

/**
 * `$1` ids, `$2` revisions (parallel arrays). Clears the due time of rows still at their revision,
 * skipping rows another transaction holds: the holder is almost always a claim of the same job,
 * which sets the due time itself, and waiting for it could close a lock cycle with a claim batch
 * (PostgreSQL breaks those only after its deadlock timeout). A skipped row keeps its reservation.
 */
export function confirmDeliveredSql(schema: Schema): string {
  return `
WITH delivered AS (
  SELECT job.id FROM ${schema.quoted}.jobs AS job
  JOIN unnest($1::text[], $2::bigint[]) AS wanted(id, revision) ON job.id = wanted.id AND job.revision = wanted.revision
  FOR UPDATE OF job SKIP LOCKED
)
UPDATE ${schema.quoted}.jobs AS job SET due_ms = NULL
FROM delivered WHERE job.id = delivered.id
RETURNING job.id`
}

/** `$1` ids, `$2` revisions, `$3` the new due time: gives back reservations still held at their revision. */
export function releaseDeliveredSql(schema: Schema): string {
  return `
UPDATE ${schema.quoted}.jobs AS job SET due_ms = $3::bigint
FROM unnest($1::text[], $2::bigint[]) AS released(id, revision)
WHERE job.id = released.id AND job.revision = released.revision AND job.due_ms IS NOT NULL
RETURNING job.id`
}

/**
 * `$1` now, `$2` queues (null for every queue, as `queues` says). The earliest due time after now
 * among unexpired rows, and the next token of a rate bucket of the queues that has none now.
 */
export function nextDueSql(schema: Schema, queues: QueueFilter): string {
  // Pending rows and claims each through their own partial index (migration 009).
  const earliest = (state: 'pending' | 'processing') => `SELECT min(due_ms) AS due_ms FROM ${schema.quoted}.jobs
  WHERE state = '${state}' AND due_ms > $1::bigint AND ${queueFilter(queues, '$2')} AND ${notExpired('$1::bigint')} AND ${notPaused(schema, queues === 'one' ? '($2::text[])[1]' : `${schema.quoted}.jobs.queue`)}`
  // A queue whose buckets are empty is due again at its next token (rateSql.ts).
  return `
SELECT min(due_ms) AS next_due_ms FROM (
  ${earliest('pending')}
  UNION ALL
  ${earliest('processing')}
  UNION ALL
  ${nextTokenSql(schema, '$1::bigint', `${queueFilter(queues, '$2')} AND ${notPaused(schema, queues === 'one' ? '($2::text[])[1]' : `${schema.quoted}.rate_buckets.queue`)}`)}
) AS earliest`
}

/** `$1` now, `$2` limit. Queues with unexpired due rows and their earliest due time, earliest first. */
export function dueQueuesSql(schema: Schema): string {
  // A lapsed claim that expired only after its deadline still counts: the scan's exhaustion rule
  // buries it as of that deadline (max attempts exceeded), before its expiry.
  // So does an expired lapsed claim of a job with a concurrency key: the scan buries it, freeing its slot.
  const live = (state: 'pending' | 'processing') => (state === 'pending' ? notExpired('$1::bigint') : '(expires_at_ms IS NULL OR expires_at_ms > LEAST(due_ms, $1::bigint) OR concurrency_key IS NOT NULL)')
  const due = (state: 'pending' | 'processing') => `SELECT queue, due_ms FROM ${schema.quoted}.jobs
  WHERE state = '${state}' AND due_ms IS NOT NULL AND ${live(state)} AND ${notPaused(schema, `${schema.quoted}.jobs.queue`)}`
  return `
SELECT queue, min(due_ms) AS next_due_ms FROM (
  ${due('pending')}
  UNION ALL
  ${due('processing')}
) AS due
GROUP BY queue ORDER BY next_due_ms, queue LIMIT $2::integer`
}

/** `$1` queue, `$2` now, `$3` limit. Claimable rows whose task is with Matching, up to the limit. */
export function deliverableCountSql(schema: Schema): string {
  return `
SELECT count(*) AS deliverable FROM (
  SELECT 1 FROM ${schema.quoted}.jobs
  WHERE queue = $1::text AND due_ms IS NULL AND ${claimable('$2::bigint')} AND ${notPaused(schema, '$1::text')}
  LIMIT $3::integer
) AS deliverable`
}
