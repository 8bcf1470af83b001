/**
 * JobStore — the persistence contract of jobs (DESIGN.md §7), beside the Matching
 * Store. Memory and SQL (PGlite, `pg`) implement it; one conformance suite binds to all three.
 *
 * Job states: `pending` → `processing` → `dead`, plus absence (ack and cancel delete the row).
 * Dead jobs move to dead storage with `lastError` and `diedAtMs`; `getJob` still sees them.
 * Every row carries its resolved options, stamped at enqueue; no operation reads a registry.
 *
 * The rules every store applies — the validity predicate, claimable, exhausted, expired, the dead
 * reasons — are defined once, as pure functions and constants, in domain/JobRules.ts.
 *
 * One validity predicate fences every handle operation (ack, heartbeat, retry, fail, ackBatch, release):
 * the job is processing, its deadline has not passed (`nowMs < deadlineMs`) and the caller's
 * claim token is the current one. Otherwise the operation returns false / null / 0 and changes
 * nothing. Each transition is ONE atomic statement with the predicate inside it, so a reclaim
 * racing an ack has exactly one winner, across connections.
 *
 * Delivery due-times (the History role's timers, DESIGN.md §7): each live row has `dueMs`, the
 * time at which it needs a (new) Matching task — at enqueue max(runAt, now), after a retry its
 * new runAt, while processing its claim deadline — or null when a task was handed to Matching
 * and nothing is needed until the job changes state. `takeDue` reserves due rows (pushing their
 * due time forward) in claim order; `confirmDelivered` clears the reservation once the task is
 * added. Claim order: priority DESC, due time ASC, then `readySeq` (the order in which rows
 * became ready: enqueue, retry, claim or heartbeat). A claim keeps the order key it displaced,
 * so that `release` can give the job back its place.
 *
 * One rule for budget exhaustion, independent of when anybody looks: a processing job whose
 * claim lapsed at `deadlineMs` with `attempts >= maxAttempts` died at its deadline with
 * "max attempts exceeded" — unless it expired at or before that deadline, in which case the
 * sweep kills it as "expired". `takeDue`, `claim` and `sweepExpired` all apply it.
 *
 * Keys: a job may carry a key. While a live (pending or processing) job of a queue holds a key,
 * `enqueue` of another job with that key in that queue writes nothing and returns the live
 * job (the caller sees a different id than it drew). Dead jobs keep their key for inspection
 * but do not hold it. The SQL stores enforce this with a partial unique index, not a read.
 *
 * Handler errors: every `retry` and `fail` records the caller's error text and stack as
 * `lastHandlerError`/`lastHandlerStack` on the row — while it waits for its next attempt and
 * after it is dead — whereas `lastError` stays dead-only and may be the contract's
 * "max attempts exceeded" or "expired". Each also appends it, with its attempt number and time,
 * to `attemptErrors`, which keeps the last `jobAttemptErrorsKept` (oldest dropped first) and
 * survives death and `retryDead`. An attempt whose claim lapsed records nothing: no handler said why.
 *
 * A retry's entry also holds `retryAtMs`, when the next attempt is due.
 *
 * Claims: every claim (fresh or reclaim, by any claim operation or a claimed `enqueue`) appends
 * its attempt number and time to `claims`, and `retryDead` appends attempt 0 (the attempt count
 * starts again) at its time; the list keeps the last `jobClaimsKept` entries (oldest dropped
 * first) and survives death and `retryDead`; `release` takes the claim it gives back off again.
 * With the attempt errors, both in the order they were written, this is the job's timeline: a
 * claim with no error of its attempt before the next entry lapsed.
 *
 * Progress: `setProgress`, under the validity predicate, stores a small JSON value on the job
 * (at most `jobProgressBytesMax` bytes as JSON) and the time as `progressAtMs`, which every read
 * returns until the next one; both are kept when the job dies and cleared by `retryDead`.
 *
 * Claim fences: a claim the owner of a job queue partition makes (`claim`, `claimMany`,
 * `claimDue`, `ackAndClaimDue`, `enqueue` with a claim token) may carry that partition's range
 * fence (`ClaimFence`). It then commits only while the physical queue's stored range id is the
 * fence's: otherwise it is refused with `OwnershipLost` and writes nothing at all (no claim, no
 * riding ack, no insert), exactly as the Matching Store refuses a stale append — in one
 * statement on SQL, across connections. A physical queue never acquired refuses every fence.
 * Without a fence a call claims as it always did (a producer's enqueue owns nothing).
 *
 * Waiters (HandOver.ts): a claim of the queue's owner waiting idle may be registered
 * (`addWaiters`, under its partition's fence) so that an enqueue on another engine (`toWaiter`)
 * inserts its job claimed with the waiter's token, in one statement, only while the waiter's
 * range is current and nothing older of the queue is claimable; a SQL store raises the `handed`
 * message in that statement. Taken, a waiter is gone; `removeWaiters` takes some back.
 *
 * Paused queues: while `queue` is paused (`pauseQueue` until `resumeQueue`) no claim of the
 * store claims a job of it — `claim` and `claimMany` answer `obsolete` ('paused') for a job they
 * would have claimed, `claimDue` and `ackAndClaimDue` claim nothing (their acks still apply), a
 * claimed `enqueue` inserts the job pending — and the due-time operations (`takeDue`,
 * `nextDueMs`, `dueQueues`, `deliverableCount`) see none of its rows, so nothing delivers it.
 * Enqueues, acks, heartbeats, retries, fails and cancels go on as before: handlers already
 * running finish. The check is inside each claim's own statement (SQL: a row of
 * `queue_pauses`), so the bound across processes is one claim statement: a claim that begins
 * after `pauseQueue` resolved claims nothing of the queue, whichever connection runs it.
 *
 * Concurrency keys: a job may carry a concurrency key and its limit n (the key's limit in its
 * queue, as the latest enqueue of the key gave it). At most n rows of a queue with one key are
 * processing at any instant — a lapsed claim counts until its job is claimed
 * again (which takes over its slot), dead-lettered, cancelled or swept — whatever claims them:
 * `claim`, `claimMany`, `claimDue`, `ackAndClaimDue` (whose acks free their slots first). A
 * claim never claims a pending keyed job whose key is at its limit: `claimDue` takes the next
 * eligible job in claim order instead (other keys are not held up; a batch may come back short
 * when one key fills up within it), `claim` answers `obsolete` ('limited') and makes the job
 * due again one due-time scan from now (`jobDueScanIntervalMs`), and `takeDue` passes over
 * pending jobs of keys at their limit, so a full key's backlog is not handed to Matching only to
 * be refused. A claimed `enqueue` of a keyed job inserts it pending. `ack`, `retry`, `fail`, `release`,
 * `cancel`, the sweep and every dead-lettering free the slot in the statement that moves the
 * job. SQL stores hold each key's count in a row the claim locks (migration 011), so the bound
 * holds across connections and engines.
 *
 * Rate limits: a job may carry its queue's rate limit and its per-key rate limit (`RateLimit`;
 * the latest enqueue that gives one sets the queue's, or the key's). Every claim — `claim`,
 * `claimMany`, `claimDue`, `ackAndClaimDue`, a lapsed claim's too — takes one token of the
 * queue's bucket and one of the bucket of the job's fairness key (jobs without one share one
 * bucket); a bucket refills at `perSecond` up to `burst`, by the callers' `nowMs`, and a `nowMs`
 * earlier than one it has seen refills nothing. A claim never claims a job whose bucket has no
 * whole token: `claimDue` takes other keys' jobs instead (a batch may come back short), `claim`
 * answers `obsolete` ('limited') and makes the job due when its bucket next holds a token,
 * `takeDue` passes over jobs of empty buckets, and `nextDueMs` includes a bucket's next token,
 * so a due-time driver comes back then. A queue with buckets never gets a job inserted claimed by
 * `enqueue`. SQL stores hold each bucket in a row the claim locks (migration 012), so across
 * engines at most burst + perSecond × (the span of their clocks' times) jobs start in any span.
 *
 * Time: every operation takes `nowMs` from the caller (whole epoch ms); no store reads a clock.
 * Length: past 400 lines because the contract is one interface, each operation with the doc
 * comment that states its rules; splitting it would split the contract.
 * Errors: `InvalidInput` before anything is written; `OwnershipLost` for a stale fence;
 * `Unavailable` from SQL stores.
 */
import type { JsonValue } from '../../domain/Json.ts'
import type { QueueKey } from '../../domain/QueueKey.ts'
import type { JobState } from '../../domain/JobRules.ts'

export type { JobState } from '../../domain/JobRules.ts'

/** Which implementation a job store is. */
export type JobStoreKind = 'memory' | 'embedded' | 'postgres'

/** The options stamped on a job at enqueue, in milliseconds. */
export interface JobStamps {
  readonly maxAttempts: number
  readonly visibilityTimeoutMs: number
  readonly backoffBaseMs: number
  /** How long a dead job is kept before `sweepExpired` deletes it; null = forever. */
  readonly deadLetterRetentionMs: number | null
}

/** A job to insert. Ids are drawn by the caller (seeded Random), never by the store. */
export interface NewJob extends JobStamps {
  readonly id: string
  readonly queue: string
  readonly payload: JsonValue
  /** 0…9, higher is claimed first. */
  readonly priority: number
  /** Not claimable before this epoch ms. */
  readonly runAtMs: number
  /** Swept to dead as "expired" at or after this epoch ms; null = never. */
  readonly expiresAtMs: number | null
  /** Idempotency key: at most one live job per queue holds it (see the file header); absent or null = none. */
  readonly key?: string | null
  /**
   * Fairness key (at most 64 UTF-8 bytes): within a priority, the queue's keys are claimed in
   * proportion to their weights (stride scheduling, `fairnessStride`), FIFO within a key. Absent
   * or null = none: in a queue with some key's state the job takes the implicit key's turn (one
   * more key of weight 1, shared by the unkeyed jobs, FIFO among them); in a queue without, it
   * is ordered by its due time.
   */
  readonly fairnessKey?: string | null
  /** The key's weight for this job, 0.001…1000 (default 1); ignored without a fairness key. */
  readonly fairnessWeight?: number
  /**
   * Concurrency key (at most 64 UTF-8 bytes): while `concurrencyLimit` jobs of the queue with this
   * key are processing (lapsed claims included, until claimed again, dead or gone), no claim of
   * the store claims another; see "Concurrency keys" in the file header. Absent or null = none:
   * the job is never limited.
   */
  readonly concurrencyKey?: string | null
  /**
   * How many jobs of the key may be processing at once, 1…10,000; required with a concurrency
   * key, refused without one. The limit is the key's (per queue), not the job's: the latest
   * enqueue of the key sets it.
   */
  readonly concurrencyLimit?: number
  /**
   * The queue's rate limit (jobs started per second, across every engine): absent or null = this
   * enqueue sets none. The limit is the queue's, not the job's: the latest enqueue that gives one
   * sets it; see "Rate limits" in the file header.
   */
  readonly rateLimit?: RateLimit | null
  /** The per-key rate limit, each fairness key (unkeyed jobs sharing one implicit key) with a bucket of its own; as `rateLimit`. */
  readonly rateLimitPerKey?: RateLimit | null
}

/** A token bucket's limit: `perSecond` tokens a second (> 0, finite, ≤ 1,000,000), at most `burst` (a whole number 1…1,000,000) held. */
export interface RateLimit {
  readonly perSecond: number
  readonly burst: number
}

/** A fairness key's stride for a weight: how far one job moves the key's pass. */
export const fairnessStride = (weight: number): number => Math.max(1, Math.floor(1000 / weight))

/**
 * The longest stride, the lightest weight's (0.001): a key whose last pass is this far behind
 * its queue's virtual now (the head of its pending rows, or now when there is none) would enter
 * at the virtual now anyway, so `sweepExpired` forgets it — the per-key state of a queue stays as
 * large as its recently active keys, not every key it ever saw.
 */
export const fairnessStrideMax = fairnessStride(0.001)

/** One attempt's handler error, as `retry` or `fail` recorded it. */
export interface AttemptError {
  /** The attempt (1 for the first claim) whose handler gave it. */
  readonly attempt: number
  readonly error: string
  readonly stack: string | null
  /** When it was recorded, epoch ms. */
  readonly atMs: number
  /** When the next attempt was due, for an error a `retry` recorded (absent for a death). */
  readonly retryAtMs?: number
}

/** One claim of a job, as `claims` keeps it, or (attempt 0) its return from dead storage. */
export interface ClaimEntry {
  /** The attempt the claim counted (1 for the first); 0 for a `retryDead`. */
  readonly attempt: number
  /** When it was claimed, epoch ms. */
  readonly atMs: number
}

/** A job as stored. Claim fields are non-null exactly while processing; dead fields exactly when dead. */
export interface JobRecord extends NewJob {
  readonly state: JobState
  /** Claims so far, fresh or reclaim. */
  readonly attempts: number
  readonly createdAtMs: number
  /** Time of the latest claim; null before the first. */
  readonly claimedAtMs: number | null
  /** The current claim's fence. */
  readonly claimToken: string | null
  /** Handle operations are valid while `nowMs < deadlineMs`. */
  readonly deadlineMs: number | null
  readonly key: string | null
  /** Why it died (dead rows only): the caller's `fail` error, "max attempts exceeded" or "expired". */
  readonly lastError: string | null
  readonly diedAtMs: number | null
  /** The error text of the latest `retry` or `fail`, live or dead; null before the first. */
  readonly lastHandlerError: string | null
  /** The stack recorded with `lastHandlerError`, if the caller gave one. */
  readonly lastHandlerStack: string | null
  /** The handler errors of the latest attempts that recorded one, oldest first (see the file header). */
  readonly attemptErrors: ReadonlyArray<AttemptError>
  /**
   * The latest claims, oldest first (see the file header). Every store sets it; optional so that
   * a record built by hand (a test's, a simulator model's) may leave it out, read as none.
   */
  readonly claims?: ReadonlyArray<ClaimEntry>
  /** The latest progress value a handler stored; null before the first. */
  readonly progress: JsonValue | null
  /** When `progress` was stored; null with it (absent read as null, as `claims`). */
  readonly progressAtMs?: number | null
  /**
   * A job's place in its queue's fair order: its stride pass, in due-time milliseconds
   * (`fairnessStride`), its key's or, for an unkeyed job of a queue with keys, the implicit
   * key's. Within a priority, jobs are claimed in order of the later of this and their due time.
   * `getJob` fills it, with `fairnessKey` and `concurrencyKey`, for a live job that has them;
   * absent otherwise (no pass, a dead job, the records claims answer).
   */
  readonly fairPass?: number | null
}

/**
 * What a store answers for `job` just inserted at `nowMs`: pending or — with `claimToken` —
 * claimed at once (attempt 1, its deadline one visibility timeout away), carrying `payload` (the
 * store decides whether the answer gets a copy). Every store answers an insert with this record,
 * so none needs to read back what it wrote.
 */
export function insertedJobRecord(job: NewJob, nowMs: number, claimToken: string | null, payload: JsonValue): JobRecord {
  const claimed = claimToken !== null
  // Every field spelled out, in decodeJob's order, rather than spread from `job`: each record
  // then has one shape, and building it costs a fraction of a spread's copy.
  return {
    id: job.id, queue: job.queue, state: claimed ? 'processing' : 'pending', payload, priority: job.priority, attempts: claimed ? 1 : 0,
    maxAttempts: job.maxAttempts, visibilityTimeoutMs: job.visibilityTimeoutMs, backoffBaseMs: job.backoffBaseMs, deadLetterRetentionMs: job.deadLetterRetentionMs,
    createdAtMs: nowMs, runAtMs: job.runAtMs, claimedAtMs: claimed ? nowMs : null, expiresAtMs: job.expiresAtMs,
    claimToken, deadlineMs: claimed ? nowMs + job.visibilityTimeoutMs : null, key: job.key ?? null,
    lastError: null, diedAtMs: null, lastHandlerError: null, lastHandlerStack: null, attemptErrors: [],
    claims: claimed ? [{ attempt: 1, atMs: nowMs }] : [], progress: null, progressAtMs: null,
  }
}

/** A claim registered as a waiter (HandOver.ts): its token, its engine, its queue, until when it waits (epoch ms), and the range fence of its engine's partition. */
export interface Waiter {
  readonly queue: string
  readonly claimToken: string
  readonly hostId: string
  readonly untilMs: number
  readonly fence: ClaimFence
}

/** What `enqueue` answers: the job (or its key's holder); `handedTo`, the waiter a `toWaiter` enqueue handed it to: its engine and fence. */
export type EnqueueAnswer = JobRecord & { readonly handedTo?: { readonly hostId: string; readonly fence: ClaimFence } }

/** Jobs of one queue by state. */
export interface JobCounts {
  readonly pending: number
  readonly processing: number
  readonly dead: number
}

/** What `retryDead` did. */
export type RetryDeadOutcome =
  | { readonly kind: 'retried'; readonly job: JobRecord }
  /** No dead job with that id in that queue (live, acked, purged or unknown). */
  | { readonly kind: 'not-dead' }
  /** The dead job's key is held by the live job `liveId`; nothing changed. */
  | { readonly kind: 'key-taken'; readonly liveId: string }

/** What `claim` did. `obsolete` carries why, for traces. */
export type ClaimOutcome =
  | { readonly kind: 'claimed'; readonly job: JobRecord }
  | { readonly kind: 'already-started' }
  | { readonly kind: 'obsolete'; readonly reason: 'missing' | 'dead' | 'not-due' | 'expired' | 'exhausted' | 'paused' | 'limited' }

/** What `retry` did; null when the predicate failed. */
export type RetryOutcome = { readonly kind: 'retried'; readonly runAtMs: number } | { readonly kind: 'dead' }

/** A due row reserved by `takeDue`: enough to add its Matching task and confirm it. */
export interface DueJob {
  readonly id: string
  readonly queue: string
  readonly priority: number
  /** The due time the row had before the reservation (ordering). */
  readonly dueMs: number
  readonly readySeq: number
  /** The row's revision after the reservation; `confirmDelivered` succeeds only at it. */
  readonly revision: number
  readonly expiresAtMs: number | null
  /** The job's concurrency key, for a job that has one (a pass asking again passes over its key). */
  readonly concurrencyKey?: string
}

/**
 * What a schedule's occurrence jobs carry besides the default stamps, as `NewJob` carries it;
 * each field absent when not given (the default priority, no key). A weight goes with a fairness
 * key and a limit with a concurrency key.
 */
export interface ScheduleJobKeys {
  readonly priority?: number
  readonly fairnessKey?: string
  readonly fairnessWeight?: number
  readonly concurrencyKey?: string
  readonly concurrencyLimit?: number
}

/** A registered schedule. */
export interface ScheduleRecord extends ScheduleJobKeys {
  readonly name: string
  readonly spec: string
  readonly queue: string
  readonly payload: JsonValue
  /** Occurrences are counted from here (registration, or the last change of spec/queue/payload). */
  readonly anchorMs: number
  /** The latest occurrence enqueued; null before the first. */
  readonly lastFiredMs: number | null
  /** The IANA time zone a cron spec is read in; null = UTC. */
  readonly timezone: string | null
  /** +1 on every change and every firing: the compare-and-set token of `fireSchedule`. */
  readonly revision: number
}

/** The caller's open transaction (a `pg` client inside BEGIN), for a transactional enqueue. */
export interface SqlClient {
  query(text: string, values?: unknown[]): Promise<{ readonly rows: ReadonlyArray<unknown> }>
}

/**
 * The range fence a claim carries: the physical queue it is made through (a queue partition's
 * default physical queue, as the Matching store keys it) and the range id its owner loaded.
 */
export interface ClaimFence {
  readonly queueKey: QueueKey
  readonly rangeId: number
}

/** A claim named by a handle: the job and the token that fences it. */
export interface ClaimRef {
  readonly id: string
  readonly claimToken: string
}

/** What `enqueueMany` answers for one job: the job now holding its place (new, or the key's holder). */
export interface EnqueuedJob {
  readonly id: string
  readonly runAtMs: number
}

/** The JobStore contract; see the file header for the rules every operation keeps. */
export interface JobStore {
  readonly kind: JobStoreKind

  /**
   * Inserts a pending job (attempts 0, due at max(runAt, now)). With `tx` (SQL stores only) the
   * insert is one plain statement on the caller's transaction: the job exists iff it commits.
   * When a live job of the queue holds the job's key, writes nothing and returns that job.
   *
   * With `claimToken`, the job is inserted already claimed with that token, as `claim` would
   * leave it (processing, attempt 1, deadline from its visibility stamp, due at the deadline) and
   * without the due signal: the engine hands it straight to a worker of its own that is waiting.
   * Only a job claimable now can be: runAt ≤ now and not expired, else `InvalidInput`. A key's
   * holder is returned unclaimed, as without the token. Such an insert is a claim: with `fence`
   * (only beside a claim token, else `InvalidInput`) a stale range inserts nothing.
   *
   * With `toWaiter` (a producer's enqueue; not beside a claim token, nor with `tx`, else
   * `InvalidInput`), a job that HandOver.ts's `isHandOverCandidate` allows goes to the queue's
   * waiter registered first, when one still waits under a current fence, no other row of the
   * queue is claimable now and the queue is not paused: the waiter is taken and the job inserted
   * claimed with its token, without the due signal, and the answer's `handedTo` names the
   * waiter's engine and the fence it carried. A SQL store
   * sends that engine the `handed` message in the same statement (at commit); the memory store
   * leaves it to the caller.
   */
  enqueue(params: { readonly job: NewJob; readonly nowMs: number; readonly claimToken?: string; readonly fence?: ClaimFence; readonly toWaiter?: boolean }, tx?: SqlClient): Promise<EnqueueAnswer>

  /**
   * Registers `claimTokens` (1…`waiterTokensMax`, in order), each a claim of engine `hostId`
   * waiting for a job of `queue` until `untilMs` (HandOver.ts): an enqueue with `toWaiter`
   * elsewhere may insert its job claimed with one of them. The waiter carries the range `fence` of the queue's partition its engine owns,
   * and an enqueue takes it only while that range is still the partition's: the claim is the
   * owner's, fenced as its own claims are, though another engine's statement makes it.
   * Registering forgets the queue's waiters whose time has passed (an engine that died leaves
   * its own). At most one waiter per token: a token registered again is renewed, last in order.
   */
  addWaiters(params: Omit<Waiter, 'claimToken'> & { readonly claimTokens: ReadonlyArray<string>; readonly nowMs: number }): Promise<void>

  /**
   * Takes the waiters of `claimTokens` back; answers those that were still registered. One not
   * among them was taken by an enqueue (a job claimed with its token is on its way, or its
   * message was lost) or never registered.
   */
  removeWaiters(params: { readonly claimTokens: ReadonlyArray<string> }): Promise<ReadonlyArray<string>>

  /**
   * Gives back the jobs enqueues claimed with waiter tokens of `queue` that `removeWaiters` no
   * longer found (their engine stopped waiting and will not run them), as `release` gives back a
   * claim: each job of the queue processing under one of `claimTokens`, judged by the validity
   * predicate. Answers the claims released (id and token), in the order of their tokens; a token
   * no job holds (never taken, or its job already acked, retried or lapsed) writes nothing. One
   * statement on SQL stores, which raise the due signal for the queue when they give a job back.
   */
  releaseHandedOver(params: { readonly queue: string; readonly claimTokens: ReadonlyArray<string>; readonly nowMs: number }): Promise<ReadonlyArray<ClaimRef>>

  /**
   * `enqueue` of every job in `jobs`, in order, all or nothing: one statement on SQL stores (on
   * the caller's transaction with `tx`). The answer holds one entry per job, in the same order:
   * the id and runAt of the job that answers — the new one, or, when a live job of its queue
   * holds the job's key, that job (and nothing is written). It carries no payloads, so a large
   * batch is not read back.
   */
  enqueueMany(params: { readonly jobs: ReadonlyArray<NewJob>; readonly nowMs: number }, tx?: SqlClient): Promise<ReadonlyArray<EnqueuedJob>>

  /** The job in any state (dead included), or null; only if it belongs to `queue`. */
  getJob(params: { readonly queue: string; readonly id: string }): Promise<JobRecord | null>

  /**
   * Claims job `id` if it is claimable now: pending with runAt ≤ now, or processing with a lapsed
   * deadline — in both cases unexpired and within budget. Counts an attempt, sets the deadline
   * from the job's own visibility stamp, installs `claimToken`, and makes the deadline the due
   * time. A lapsed job at its budget is dead-lettered instead (the exhaustion rule).
   */
  claim(params: { readonly id: string; readonly claimToken: string; readonly nowMs: number; readonly fence?: ClaimFence }): Promise<ClaimOutcome>

  /** Resets the deadline to now + (extendMs ?? the visibility stamp). Null when invalid. */
  heartbeat(params: ClaimRef & { readonly extendMs: number | null; readonly nowMs: number }): Promise<JobRecord | null>

  /** Deletes the job if the claim is valid. */
  ack(params: ClaimRef & { readonly nowMs: number }): Promise<boolean>

  /** `ack` per claim, independently; returns how many were deleted (duplicates count once). */
  ackBatch(params: { readonly claims: ReadonlyArray<ClaimRef>; readonly nowMs: number }): Promise<number>

  /**
   * `claim` for several jobs in one round trip, each judged independently exactly as `claim`
   * judges it; outcomes in the order given. Two claims of one job: at most one is `claimed`.
   * With `fence`, a stale range refuses the whole batch.
   */
  claimMany(params: { readonly claims: ReadonlyArray<ClaimRef>; readonly nowMs: number; readonly fence?: ClaimFence }): Promise<ReadonlyArray<ClaimOutcome>>

  /** `ackBatch` that says which: the ids whose claim was valid and that were deleted. */
  ackMany(params: { readonly claims: ReadonlyArray<ClaimRef>; readonly nowMs: number }): Promise<ReadonlyArray<string>>

  /**
   * Gives back claims that never reached a handler (the poll or worker they were made for has
   * gone), each judged independently by the validity predicate, as `ackMany` judges acks: the job
   * goes back to pending with the attempt the claim counted taken back (never below 0), its claim
   * token, claimed-at and deadline cleared, and its place in claim order restored — the due time
   * and ready order it had before the claim, the due time no later than now (now when its task
   * was with Matching at the claim). It is then due and claimable at once, the head again if it
   * was the head. Answers the ids released, in the order given; an invalid claim (stale token,
   * lapsed, acked, dead, unknown) writes nothing. A job named twice: its first claim is judged,
   * the second is skipped. One statement on SQL stores, which raise the due signal for the
   * released jobs' queues.
   */
  release(params: { readonly claims: ReadonlyArray<ClaimRef>; readonly nowMs: number }): Promise<ReadonlyArray<string>>

  /**
   * With a valid claim: back to pending at now + delayMs (due then), or — when attempts have
   * reached the budget — dead with "max attempts exceeded". Null when invalid.
   */
  retry(params: ClaimRef & { readonly error: string; readonly stack?: string | null; readonly delayMs: number; readonly nowMs: number }): Promise<RetryOutcome | null>

  /** With a valid claim: stores `progress` (validated JSON, at most `jobProgressBytesMax` bytes) on the job. False when invalid. */
  setProgress(params: ClaimRef & { readonly progress: JsonValue; readonly nowMs: number }): Promise<boolean>

  /** With a valid claim: dead at once with `error` (as both `lastError` and `lastHandlerError`). */
  fail(params: ClaimRef & { readonly error: string; readonly stack?: string | null; readonly nowMs: number }): Promise<boolean>

  /** Deletes a pending or processing job of `queue`, whoever holds it; dead jobs stay (false). */
  cancel(params: { readonly queue: string; readonly id: string }): Promise<boolean>

  /**
   * Moves every live job of `queue` with expiresAt ≤ now to dead ("expired", or the exhaustion
   * rule's verdict), and deletes dead jobs of `queue` whose retention had passed before this call.
   */
  sweepExpired(params: { readonly queue: string; readonly nowMs: number }): Promise<{ readonly dead: number; readonly purged: number }>

  /** How many jobs of `queue` are pending, processing (lapsed claims included) and dead. */
  countJobs(params: { readonly queue: string }): Promise<JobCounts>

  /** `countJobs` for every queue that has jobs, by queue name, at most `limit` queues. */
  countQueues(params: { readonly limit: number }): Promise<ReadonlyArray<JobCounts & { readonly queue: string }>>

  /**
   * Up to `limit` jobs of `queue` in `state`, in id order, after `afterId` (exclusive; null =
   * from the start): keyset pages that stay stable while jobs come and go.
   */
  listJobs(params: { readonly queue: string; readonly state: JobState; readonly limit: number; readonly afterId: string | null }): Promise<ReadonlyArray<JobRecord>>

  /**
   * Moves dead job `id` of `queue` back to live storage as a fresh pending job, atomically: the
   * same id, payload, priority, stamps and key; attempts 0, created and runnable now, due now,
   * its handler error kept, an expiry already passed dropped. Nothing changes unless it answers
   * 'retried'.
   */
  retryDead(params: { readonly queue: string; readonly id: string; readonly nowMs: number }): Promise<RetryDeadOutcome>

  /**
   * Claims, in one statement, up to `claimTokens.length` jobs of `queue` that are claimable now
   * and either due (due ≤ now) or with Matching (due null), in claim order (priority, then due
   * time with Matching's first, then ready order), installing the tokens in that order; rows
   * another transaction holds and rows reserved for a Matching append (due ahead) are skipped.
   * Each claim is `claim`'s transition. A job with Matching claimed here ends its task: Matching
   * delivers it later as already started (or gone), so one such job never holds up the queue's
   * other jobs. How the engine that delivers a queue claims straight for its own workers,
   * without a Matching task. Returns the claimed jobs in claim order.
   */
  claimDue(params: { readonly queue: string; readonly nowMs: number; readonly claimTokens: ReadonlyArray<string>; readonly fence?: ClaimFence }): Promise<ReadonlyArray<JobRecord>>

  /**
   * `ackMany` of `acks`, then `claimDue`, in one statement: answers what the two calls one after
   * the other would (an acked job, claimed until now, is never among those claimed; `acked`
   * names the ids deleted). Every input is validated before anything is written. How a worker
   * settles the jobs its handlers finished and takes its next ones in one round trip. With
   * `fence` and at least one token, a stale range refuses the acks with the claim: the caller
   * acks alone after (`ackMany`). With no token it is `ackMany`, which no fence guards.
   */
  ackAndClaimDue(params: {
    readonly acks: ReadonlyArray<ClaimRef>
    readonly queue: string
    readonly nowMs: number
    readonly claimTokens: ReadonlyArray<string>
    readonly fence?: ClaimFence
  }): Promise<{ readonly acked: ReadonlyArray<string>; readonly claimed: ReadonlyArray<JobRecord> }>

  /**
   * Applies the exhaustion rule to lapsed rows, then reserves up to `limit` unexpired rows with
   * due ≤ now (due := reserveUntilMs), returned in claim order. `queues` limits both to those
   * queues (the families whose partition this host owns); null means every queue. A limit of 0
   * only buries.
   */
  takeDue(params: {
    readonly nowMs: number
    readonly reserveUntilMs: number
    readonly limit: number
    readonly queues: ReadonlyArray<string> | null
    /**
     * Pending jobs of these concurrency keys are passed over (at most 1,000 keys): a pass asking
     * again for claims still waiting names the keys it reserved already, whose claims may not
     * hold their slots yet, so that it reserves no job a slot would refuse.
     */
    readonly skipConcurrencyKeys?: ReadonlyArray<string>
  }): Promise<ReadonlyArray<DueJob>>

  /**
   * Clears the due time of rows still at their reservation revision; returns how many. The SQL
   * stores skip rows another transaction holds (a claim in flight sets the due time itself); a
   * skipped row keeps its reservation, so at worst its job is delivered again when it ends.
   */
  confirmDelivered(params: { readonly deliveries: ReadonlyArray<{ readonly id: string; readonly revision: number }> }): Promise<number>

  /**
   * Gives back reservations whose task was definitely not added (Matching refused it, nothing
   * written): rows still at their reservation revision become due at `dueMs` instead of waiting
   * out the whole reservation. Returns how many.
   */
  releaseDelivered(params: { readonly deliveries: ReadonlyArray<{ readonly id: string; readonly revision: number }>; readonly dueMs: number }): Promise<number>

  /**
   * The earliest due time after `nowMs` among unexpired rows (of `queues`, null = all), or null:
   * when the due-time driver next has work. Rows already due are not asked about: they are the
   * backlog claims take from, or rows another connection holds, which the scan looks at again.
   */
  nextDueMs(params: { readonly nowMs: number; readonly queues: ReadonlyArray<string> | null }): Promise<number | null>

  /**
   * The queues that have unexpired rows with a due time, each with its earliest one, earliest
   * first, up to `limit` queues: how an engine that delivers only the queues it owns finds them.
   * A lapsed claim that expired only after its deadline counts as unexpired: the scan's
   * `takeDue` buries it of its attempts as of that deadline.
   */
  dueQueues(params: { readonly nowMs: number; readonly limit: number }): Promise<ReadonlyArray<{ readonly queue: string; readonly nextDueMs: number }>>

  /** Claimable jobs of `queue` whose task is with Matching (due null), counted up to `limit`. */
  deliverableCount(params: { readonly queue: string; readonly nowMs: number; readonly limit: number }): Promise<number>

  /**
   * Registers a schedule. Same spec, queue, payload, zone and job keys as stored: unchanged (so
   * every process may register its schedules at start). Otherwise it is (re)anchored at now with
   * nothing fired.
   */
  putSchedule(params: ScheduleJobKeys & {
    readonly name: string
    readonly spec: string
    readonly queue: string
    readonly payload: JsonValue
    /** IANA time zone of a cron spec; absent or null = UTC. A change of zone re-anchors too. */
    readonly timezone?: string | null
    readonly nowMs: number
  }): Promise<ScheduleRecord>

  /** Removes schedule `name`; false when there was none. Jobs it already enqueued stay. */
  deleteSchedule(params: { readonly name: string }): Promise<boolean>

  /** Every schedule, by name. */
  listSchedules(): Promise<ReadonlyArray<ScheduleRecord>>

  /**
   * Takes or renews the lease `name` for `holder`: granted when free, expired, or already the
   * holder's; the fencing token grows by one on every change of holder (and on re-taking an
   * expired lease). Null when another holder's lease is live.
   */
  acquireLease(params: { readonly name: string; readonly holder: string; readonly nowMs: number; readonly ttlMs: number }): Promise<{ readonly fence: number } | null>

  /**
   * In ONE transaction: checks lease `leaseName` still has `fence` ('fenced' otherwise), sets the
   * schedule's lastFiredMs if its revision is `expectedRevision` ('conflict' otherwise), and
   * enqueues `jobs`. Nothing is written unless it answers 'fired'.
   */
  fireSchedule(params: {
    readonly leaseName: string
    readonly fence: number
    readonly name: string
    readonly expectedRevision: number
    readonly lastFiredMs: number
    readonly jobs: ReadonlyArray<NewJob>
    readonly nowMs: number
  }): Promise<'fired' | 'fenced' | 'conflict'>

  /**
   * Pauses `queue` as of `nowMs` (see the file header for what a pause stops and what it does
   * not). True when it was not paused; pausing a paused queue changes nothing (false). A queue
   * need not have jobs to be paused.
   */
  pauseQueue(params: { readonly queue: string; readonly nowMs: number }): Promise<boolean>

  /**
   * Ends the pause of `queue`. Its rows whose task went to Matching (due null) become due again —
   * a task that reached a claim during the pause was answered `obsolete` and dropped: pending rows
   * at `nowMs`, claimed rows (whose lapse went to Matching) at the later of `nowMs` and their
   * deadline — and the SQL stores raise the queue's due signal. True when it was paused.
   */
  resumeQueue(params: { readonly queue: string; readonly nowMs: number }): Promise<boolean>

  /** When `queue` was paused, or null when it is not paused. */
  queuePause(params: { readonly queue: string }): Promise<{ readonly pausedAtMs: number } | null>

  /** The paused queues, by name, at most `limit`. */
  pausedQueues(params: { readonly limit: number }): Promise<ReadonlyArray<{ readonly queue: string; readonly pausedAtMs: number }>>

  /** Releases what the store opened (a shared driver is closed by its owner; closing twice is harmless). */
  close(): Promise<void>
}
