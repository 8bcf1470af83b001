/**
 * concurrencySql — the per-key concurrency guard (migration 011) as SQL fragments that the job
 * statements of jobSql.ts embed, so that every statement moving a keyed job into or out of
 * processing adjusts its key's count in `concurrency_slots` in that same statement.
 *
 * Invariant: a key's `held` is the number of the queue's rows with that key that are processing
 * (lapsed claims included). A claim admits a pending keyed row only while `held` is below the
 * key's limit (the slot row's `concurrency_limit`), reading `held` through a lock on the key's
 * row, never from the statement's snapshot: under READ COMMITTED, `SELECT … FOR UPDATE` waits
 * for a concurrent writer and returns the row as it committed, so two claims from two pools
 * serialize on the key (SKIP LOCKED on the job rows alone would let both take a different job
 * of one key past the limit). A claim of a lapsed row takes over the slot its lapsed claim held:
 * it neither needs nor takes another.
 *
 * Lock order: every claim and exit locks the slot rows it touches in (queue, key) order before
 * it writes them, and a statement touches them in one fragment, so two of them never wait on
 * each other's slot rows in a cycle. (An enqueueMany that changes several keys' limits at once
 * writes them in join order; limits change rarely.)
 *
 * Cost: a row without a key never reaches the table — each guard starts with
 * `concurrency_key IS NULL` — so a statement whose rows are all unkeyed writes no slot, and its
 * head read looks up only the keys at their limit (`slotHasRoom`).
 *
 * Does not: create slot rows for claims (a keyed enqueue creates its key's row and sets its
 * limit, `slotRowsCtes`), or delete them.
 */
import type { Schema } from '../../sql/Schema.ts'

const slotsTable = (schema: Schema): string => `${schema.quoted}.concurrency_slots`

// The slot rows of the keys of `keys` (a FROM item of (queue, concurrency_key) rows in key
// order), each locked through its primary key: a LATERAL subquery is run per key, in the order
// of `keys`, so the locks are taken in key order, and no plan can read the whole table for them
// (a generic plan hash-joined the keys to a scan of every slot row).
const lockSlot = (schema: Schema, keys: string): string =>
  `CROSS JOIN LATERAL (SELECT * FROM ${slotsTable(schema)} AS slot WHERE slot.queue = ${keys}.queue AND slot.concurrency_key = ${keys}.concurrency_key FOR UPDATE) AS slot`

/**
 * The CTEs `slot_freed_locked` and `slot_freed`: for the rows of `source` — a query of
 * (queue, concurrency_key) rows, one per job the statement moved out of processing — lowers each
 * key's count by its number of rows, its slot rows locked in key order first.
 */
export function freeSlotsCtes(schema: Schema, source: string): string {
  return `slot_freed_locked AS (
  SELECT slot.queue, slot.concurrency_key, freed.freed
  FROM (SELECT queue, concurrency_key, count(*)::integer AS freed FROM (${source}) AS left_rows WHERE concurrency_key IS NOT NULL GROUP BY queue, concurrency_key ORDER BY queue, concurrency_key) AS freed
  ${lockSlot(schema, 'freed')}
), slot_freed AS (
  UPDATE ${slotsTable(schema)} AS slot SET held = slot.held - locked.freed
  FROM slot_freed_locked AS locked WHERE slot.queue = locked.queue AND slot.concurrency_key = locked.concurrency_key
  RETURNING slot.queue
)`
}

/** The options of `admitCtes`. */
export interface AdmitOptions {
  /** A CTE of candidate rows to claim: id, queue, state, concurrency_key and the order columns. */
  readonly candidates: string
  /** The order within a key in which candidates are admitted (columns of `candidates`). */
  readonly order: string
  /** A CTE of (queue, concurrency_key) rows the same statement moves out of processing (acks), whose slots the claim may take. */
  readonly freed?: string
  /**
   * CTEs placed after `admitted` (rateSql.ts's admission of what this one admitted), and the one
   * of them holding the rows the statement claims: `slot_taken` counts those, so a row this guard
   * admitted but a later one refused takes no slot.
   */
  readonly then?: { readonly ctes: string; readonly claimed: string }
}

/**
 * The CTEs `slot_locked`, `admitted` and `slot_taken`: `admitted` is the candidates a claim may
 * take — every unkeyed row and every lapsed (processing) one, and of each key's pending rows, in
 * `order`, as many as its limit leaves room for after the key's current count (read through the
 * lock) less the rows `freed` gives back; `slot_taken` writes each key's new count once (of the
 * rows `then.claimed` names, when later CTEs narrow `admitted` down). A key
 * whose slot row is missing admits nothing (every keyed enqueue creates it).
 */
export function admitCtes(schema: Schema, options: AdmitOptions): string {
  const limited = `c.concurrency_key IS NOT NULL AND c.state = 'pending'`
  const freedCount =
    options.freed === undefined
      ? '0'
      : `(SELECT count(*) FROM ${options.freed} AS freed WHERE freed.queue = slot.queue AND freed.concurrency_key = slot.concurrency_key)::integer`
  const freedKeys = options.freed === undefined ? '' : ` UNION SELECT queue, concurrency_key FROM ${options.freed} WHERE concurrency_key IS NOT NULL`
  // The keys are joined to their slot rows through the primary key, so a claim reads and locks
  // only the rows of the keys it touches; unkeyed and lapsed candidates skip the ranking.
  return `slot_locked AS (
  SELECT slot.queue, slot.concurrency_key, slot.held, slot.concurrency_limit, ${freedCount} AS freed
  FROM (SELECT DISTINCT c.queue, c.concurrency_key FROM ${options.candidates} AS c WHERE ${limited}${freedKeys} ORDER BY 1, 2) AS touched
  ${lockSlot(schema, 'touched')}
), admitted AS (
  SELECT c.*, NULL::bigint AS key_rank FROM ${options.candidates} AS c WHERE NOT (${limited})
  UNION ALL
  SELECT c.* FROM (
    SELECT c.*, row_number() OVER (PARTITION BY c.queue, c.concurrency_key ORDER BY ${options.order}) AS key_rank FROM ${options.candidates} AS c WHERE ${limited}
  ) AS c
  JOIN slot_locked AS slot ON slot.queue = c.queue AND slot.concurrency_key = c.concurrency_key
  WHERE c.key_rank <= slot.concurrency_limit - (slot.held - slot.freed)
), ${options.then === undefined ? '' : `${options.then.ctes}, `}slot_taken AS (
  UPDATE ${slotsTable(schema)} AS slot SET held = locked.held - locked.freed + COALESCE(taken.taken, 0)
  FROM slot_locked AS locked
  LEFT JOIN (SELECT c.queue, c.concurrency_key, count(*)::integer AS taken FROM ${options.then?.claimed ?? 'admitted'} AS c WHERE ${limited} GROUP BY c.queue, c.concurrency_key) AS taken
    ON taken.queue = locked.queue AND taken.concurrency_key = locked.concurrency_key
  WHERE slot.queue = locked.queue AND slot.concurrency_key = locked.concurrency_key AND (locked.freed > 0 OR taken.taken > 0)
  RETURNING slot.queue
)`
}

/**
 * A head read's pre-filter (`row` the jobs row's name): unkeyed, or its key is not among the
 * keys at their limit as of the statement's snapshot (`concurrency_slots_full`), less the rows
 * the CTE `freed` (the statement's acks) give back. The keys at their limit are read once per
 * statement (an uncorrelated subquery, which the planner hashes), so the filter costs a row a
 * hash probe, and a queue whose keys all have room reads no slot row. With `queue` (an SQL
 * expression) only that queue's keys are read. It only keeps keys already full out of the head,
 * so that they do not take the places of other keys' jobs; `admitCtes` decides through the lock.
 */
export const slotHasRoom = (schema: Schema, row: string, queue?: string, freed?: string): string => {
  const given =
    freed === undefined
      ? ''
      : ` AND full_key.held - (SELECT count(*) FROM ${freed} AS freed WHERE freed.queue = full_key.queue AND freed.concurrency_key = full_key.concurrency_key) >= full_key.concurrency_limit`
  const full = `FROM ${slotsTable(schema)} AS full_key WHERE ${queue === undefined ? '' : `full_key.queue = ${queue} AND `}full_key.held >= full_key.concurrency_limit${given}`
  return queue === undefined
    ? `(${row}.concurrency_key IS NULL OR (${row}.queue, ${row}.concurrency_key) NOT IN (SELECT full_key.queue, full_key.concurrency_key ${full}))`
    : `(${row}.concurrency_key IS NULL OR ${row}.concurrency_key NOT IN (SELECT full_key.concurrency_key ${full}))`
}

/**
 * The CTEs `slot_source`, `slot_rows` and `slot_limits`: for each row of `source` — a query of
 * (queue, concurrency_key, concurrency_limit), one per key a statement enqueues — creates the
 * key's slot row at held 0 if it is missing, and writes the limit if it differs. An UPDATE
 * locks only the rows it changes, so an enqueue of a key whose limit is unchanged (the usual
 * case, on a caller's transaction too) holds no lock the key's claims would wait on.
 */
export function slotRowsCtes(schema: Schema, source: string): string {
  return `slot_source AS (
  ${source}
), slot_rows AS (
  INSERT INTO ${slotsTable(schema)} (queue, concurrency_key, held, concurrency_limit) SELECT queue, concurrency_key, 0, concurrency_limit FROM slot_source
  ON CONFLICT (queue, concurrency_key) DO NOTHING
  RETURNING queue
), slot_limits AS (
  UPDATE ${slotsTable(schema)} AS slot SET concurrency_limit = given.concurrency_limit FROM slot_source AS given
  WHERE slot.queue = given.queue AND slot.concurrency_key = given.concurrency_key AND slot.concurrency_limit <> given.concurrency_limit
  RETURNING slot.queue
)`
}

/** `slotRowsCtes` for one enqueue: key `key` with limit `limit` (SQL expressions) in queue `queue`. */
export function slotRowCte(schema: Schema, queue: string, key: string, limit: string): string {
  return slotRowsCtes(schema, `SELECT ${queue} AS queue, ${key} AS concurrency_key, ${limit} AS concurrency_limit`)
}

/**
 * The CTEs `limited_job` and `limited`, `$1` id, `$2` now; `claimableNow` the claimable rule over
 * `job` at `$2` (jobSql.ts spells it), the queue not paused; `wait` an SQL expression in ms.
 * After a claim of job `$1` was refused for its key's limit: the job is made due `wait` from now
 * (its revision moved on, so a reservation the due-time driver has yet to confirm cannot clear
 * it), so that a task Matching dropped is delivered again rather than the job waiting for ever;
 * until its key has room the due-time driver's reservations pass it over (`slotHasRoom`).
 * `limited_job` holds the job's id when it is pending, claimable but for its key's limit.
 */
export function parkLimitedCtes(schema: Schema, claimableNow: string, wait: string): string {
  return `limited_job AS (
  SELECT job.id FROM ${schema.quoted}.jobs AS job
  JOIN ${slotsTable(schema)} AS slot ON slot.queue = job.queue AND slot.concurrency_key = job.concurrency_key
  WHERE job.id = $1::text AND job.state = 'pending' AND slot.held >= slot.concurrency_limit AND ${claimableNow}
), limited AS (
  UPDATE ${schema.quoted}.jobs AS parked SET due_ms = $2::bigint + ${wait}, revision = parked.revision + 1
  FROM limited_job WHERE parked.id = limited_job.id
  RETURNING parked.id
)`
}
