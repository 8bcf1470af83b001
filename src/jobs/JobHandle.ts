/**
 * JobHandle — a claimed job as a worker holds it. (`Job`, the snapshot `getJob` returns, is in
 * Job.ts and exported from here too.)
 *
 * Every handle operation (ack, heartbeat, retry, fail) is the store's one validity predicate at
 * the clock's now: processing, deadline not passed, and this handle's claim token current.
 * Otherwise it returns false and nothing changes. `retry(err)` draws its delay from the
 * equal-jitter curve on the job's own backoff stamp and attempt count, capped at one hour;
 * `retry(err, delayS)` overrides it.
 *
 * Every `retry` and `fail` records the error's message and its stack (capped) on the job, so
 * `getJob` shows why while the job waits for its next attempt and after it is dead, and appends
 * it to the job's attempt history (the last `jobAttemptErrorsKept`). `progress(value)` stores a
 * small JSON value on the job under the same validity predicate. Each
 * successful op emits its event (Events.ts) with the attempt and the time since the claim.
 *
 * `signal` aborts, with a `ClaimLost` reason, when the handle learns its claim is gone: a
 * heartbeat refused (the job was cancelled, or its deadline passed, or another claim took it) or a
 * heartbeat that failed at the store once the deadline had passed. `work` heartbeats every
 * remaining time / `workerHeartbeatDivisor`, so a handler hears of a cancel within a third of its
 * visibility timeout, and of a lapse by its deadline. It also aborts, with a `WorkerStopped`
 * reason, when the worker's `stop({ graceS })` gives up waiting for the handler; a plain `stop()`
 * and `close()` wait for every handler without a time limit and never abort it.
 *
 * Invariants: a handle never outlives its claim token — a reclaim elsewhere makes every op
 * false; delays and deadlines come from the job's stamps, never the queue handle's options.
 */
import { Data } from 'effect'
import { equalJitterDelayMs, retryDelayCapMs } from '../domain/Backoff.ts'
import type { JsonValue } from '../domain/Json.ts'
import { deadReasonExhausted } from '../domain/JobRules.ts'
import { jobErrorLengthMax, jobErrorStackLengthMax } from '../kernel/Limits.ts'
import type { ClaimRef, JobRecord } from '../persistence/jobs/JobStore.ts'
import { secondsToMs } from './QueueOptions.ts'
import type { AckHook, JobsRuntime } from './Runtime.ts'

export { type AttemptErrorInfo, type HandlerError, type Job, toJob } from './Job.ts'

/** Why a job's `signal` aborted: its claim is gone, so nothing its handler does can settle it any more. */
export class ClaimLost extends Data.TaggedError('ClaimLost')<{ readonly id: string; readonly message: string }> {}

/**
 * Why a job's `signal` aborted when its claim may still be valid: the worker's `stop({ graceS })`
 * gave up waiting for the handler. No more heartbeats renew the claim, so the job is delivered
 * again once it lapses, unless the handler settles it first.
 */
export class WorkerStopped extends Data.TaggedError('WorkerStopped')<{ readonly id: string; readonly message: string }> {}

/**
 * A claimed job. Each operation resolves true when it took effect, false when the claim was no
 * longer valid; it rejects with `ShuttingDown` (not retryable) once the engine is closed.
 */
export interface JobHandle<T = JsonValue> {
  readonly id: string
  readonly queue: string
  readonly payload: T
  /** This claim's attempt number (1 on the first claim). */
  readonly attempts: number
  readonly maxAttempts: number
  readonly priority: number
  /** Fences this claim; use it to fence your own writes too. */
  readonly claimToken: string
  /** The claim's current deadline, epoch ms (moved by successful heartbeats). */
  readonly deadline: number
  /**
   * Aborts (reason: `ClaimLost`) once the engine learns the claim is gone — the job was
   * cancelled, its deadline passed, or another claim took it — at a heartbeat (`work` beats every
   * third of the remaining time). Pass it to `fetch` and friends, or check `signal.aborted`, to
   * stop work whose result can no longer be acked. Also aborts (reason: `WorkerStopped`) when the
   * worker's `stop({ graceS })` gives up waiting for this handler; never by a plain `stop()` or
   * `close()`, which wait for it.
   */
  readonly signal: AbortSignal
  /** Deletes the job: done. */
  ack(): Promise<boolean>
  /** Resets the deadline to now + `extendS` (default: the job's visibility timeout). A late heartbeat is refused. */
  heartbeat(extendS?: number): Promise<boolean>
  /**
   * Back to pending after `delayS` (default: the retry curve), recording `error` (message and
   * stack) as the job's `lastHandlerError`; dead-letters with "max attempts exceeded" at the budget.
   */
  retry(error: unknown, delayS?: number): Promise<boolean>
  /** Dead-letters now with `error` (its message becomes `lastError`; message and stack `lastHandlerError`). */
  fail(error: unknown): Promise<boolean>
  /**
   * Stores `value` as the job's progress (a counter, a fraction, a short status: plain JSON of
   * at most `jobProgressBytesMax`, 4 KiB, as JSON text; `InvalidInput` past it, nothing written),
   * which `getJob` and the dashboard show. False when the claim is no longer valid.
   */
  progress(value: JsonValue): Promise<boolean>
}

/** The text kept for a handler's error: its message, truncated to `jobErrorLengthMax`. */
function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : typeof error === 'string' ? error : safeStringify(error)
  return text.replaceAll('\u0000', '\uFFFD').slice(0, jobErrorLengthMax)
}

/** The stack kept with a handler's error, truncated to `jobErrorStackLengthMax`; null when it has none. */
function errorStack(error: unknown): string | null {
  const stack = error instanceof Error ? error.stack : undefined
  return typeof stack === 'string' && stack.length > 0 ? stack.replaceAll('\u0000', '\uFFFD').slice(0, jobErrorStackLengthMax) : null
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** Aborts `job.signal` with a `WorkerStopped` reason saying `why` (no-op once aborted). */
export function abortStopped(job: JobHandle<unknown>, why: string): void {
  ClaimedJob.abortStopped(job, why)
}

/** The ack hook of a handle this engine made (to ack it with `ackWith`). */
export function ackHookOf(job: JobHandle<unknown>): AckHook {
  return ClaimedJob.hookOf(job)
}

/**
 * `job.ack()`: the job's ack on its own, batched with the engine's other acks of the turn
 * (the runtime's `ack`); refused once the stores close, `job.completed` emitted when it took effect.
 */
export async function ackAlone(runtime: JobsRuntime, hook: AckHook): Promise<boolean> {
  runtime.refuseIfStoresClosed()
  const nowMs = runtime.now()
  const acked = await runtime.ack({ ...hook.ref, nowMs })
  if (acked) hook.completed(nowMs)
  return acked
}

/**
 * Acks the jobs of `hooks` (distinct ids) through `ack` — a store statement that also does more,
 * such as claiming the next jobs — with what `job.ack()` does around its own: refused once the
 * stores close, `job.completed` emitted for each job the statement deleted (`acked` names them).
 * Answers what `ack` answered.
 */
export async function ackWith<R extends { readonly acked: ReadonlyArray<string> }>(
  runtime: JobsRuntime,
  hooks: ReadonlyArray<AckHook>,
  ack: (refs: ReadonlyArray<ClaimRef>, nowMs: number) => Promise<R>,
): Promise<R> {
  runtime.refuseIfStoresClosed()
  const nowMs = runtime.now()
  const answer = await ack(
    hooks.map((hook) => hook.ref),
    nowMs,
  )
  const acked = new Set(answer.acked)
  for (const hook of hooks) if (acked.has(hook.ref.id)) hook.completed(nowMs)
  return answer
}

/** Wraps a claimed record into a handle bound to `runtime`; emits `job.started`. */
export function makeJobHandle<T = JsonValue>(runtime: JobsRuntime, claimed: JobRecord): JobHandle<T> {
  return new ClaimedJob<T>(runtime, claimed)
}

/**
 * A handle as this engine makes one for every claimed job: its operations are methods and its
 * engine-side state private fields, so a claim costs one object (no closure per operation), and
 * its `signal`'s AbortController is made only when a handler asks for the signal or the claim
 * is lost (most jobs end without either). An abort before the signal was asked for is kept and
 * applied when it is: the signal a handler reads is aborted with the same reason either way.
 */
class ClaimedJob<T> implements JobHandle<T> {
  readonly id: string
  readonly queue: string
  readonly payload: T
  readonly attempts: number
  readonly maxAttempts: number
  readonly priority: number
  readonly claimToken: string
  readonly #runtime: JobsRuntime
  readonly #claimed: JobRecord
  readonly #claimedAtMs: number
  #deadline: number
  #lost: AbortController | undefined
  #lostReason: ClaimLost | WorkerStopped | undefined
  #hook: AckHook | undefined

  constructor(runtime: JobsRuntime, claimed: JobRecord) {
    this.id = claimed.id
    this.queue = claimed.queue
    this.payload = claimed.payload as T
    this.attempts = claimed.attempts
    this.maxAttempts = claimed.maxAttempts
    this.priority = claimed.priority
    this.claimToken = claimed.claimToken as string
    this.#runtime = runtime
    this.#claimed = claimed
    this.#claimedAtMs = claimed.claimedAtMs ?? runtime.now()
    this.#deadline = claimed.deadlineMs as number
    runtime.events.emit({
      type: 'job.started',
      queue: claimed.queue,
      id: claimed.id,
      attempt: claimed.attempts,
      maxAttempts: claimed.maxAttempts,
      lagMs: Math.max(0, this.#claimedAtMs - claimed.runAtMs),
      at: runtime.now(),
    })
  }

  /** The ack hook of `job`, a handle this class made. */
  static hookOf(job: JobHandle<unknown>): AckHook {
    if (!(job instanceof ClaimedJob)) throw new Error(`job ${job.id}: not a handle of this engine`)
    job.#hook ??= { ref: { id: job.id, claimToken: job.claimToken }, completed: (nowMs) => job.#completed(nowMs) }
    return job.#hook
  }

  /** Aborts `job`'s signal as the worker's stop gave up on it (no-op once aborted, or for a handle of another kind). */
  static abortStopped(job: JobHandle<unknown>, why: string): void {
    if (job instanceof ClaimedJob) job.#abort(new WorkerStopped({ id: job.id, message: `job ${job.id}: ${why}` }))
  }

  get deadline(): number {
    return this.#deadline
  }

  get signal(): AbortSignal {
    if (this.#lost === undefined) {
      this.#lost = new AbortController()
      if (this.#lostReason !== undefined) this.#lost.abort(this.#lostReason)
    }
    return this.#lost.signal
  }

  ack(): Promise<boolean> {
    return ackAlone(this.#runtime, ClaimedJob.hookOf(this))
  }

  async heartbeat(extendS?: number): Promise<boolean> {
    const runtime = this.#runtime
    runtime.refuseIfStoresClosed()
    const extendMs = extendS === undefined ? null : secondsToMs('extendS', extendS, true)
    let renewed: JobRecord | null
    try {
      renewed = await runtime.jobStore.heartbeat({ id: this.id, claimToken: this.claimToken, extendMs, nowMs: runtime.now() })
    } catch (error) {
      // The store did not answer; once the deadline has passed the claim is gone either way.
      if (runtime.now() >= this.#deadline) this.#claimLost('its claim lapsed (the deadline passed while the store did not answer)')
      throw error
    }
    if (renewed === null) {
      this.#claimLost('its claim is gone: the job was cancelled, its deadline passed, or another claim took it')
      return false
    }
    this.#deadline = renewed.deadlineMs as number
    runtime.driver.notifyDue(this.#deadline, this.queue)
    return true
  }

  async retry(error: unknown, delayS?: number): Promise<boolean> {
    const runtime = this.#runtime
    const claimed = this.#claimed
    runtime.refuseIfStoresClosed()
    const delayMs =
      delayS === undefined
        ? equalJitterDelayMs(claimed.backoffBaseMs, claimed.attempts, runtime.random.float(), retryDelayCapMs)
        : secondsToMs('delayS', delayS, false)
    const nowMs = runtime.now()
    const text = errorText(error)
    const outcome = await runtime.jobStore.retry({ id: this.id, claimToken: this.claimToken, error: text, stack: errorStack(error), delayMs, nowMs })
    if (outcome !== null) this.#left()
    if (outcome?.kind === 'retried') {
      runtime.announceDue(this.queue, outcome.runAtMs, false)
      runtime.events.emit({ type: 'job.retried', queue: this.queue, id: this.id, attempt: this.attempts, durationMs: nowMs - this.#claimedAtMs, delayMs, error: text, at: nowMs })
    } else if (outcome?.kind === 'dead') {
      runtime.events.emit({ type: 'job.dead', queue: this.queue, id: this.id, attempt: this.attempts, durationMs: nowMs - this.#claimedAtMs, reason: deadReasonExhausted, error: text, at: nowMs })
    }
    return outcome !== null
  }

  async progress(value: JsonValue): Promise<boolean> {
    const runtime = this.#runtime
    runtime.refuseIfStoresClosed()
    return runtime.jobStore.setProgress({ id: this.id, claimToken: this.claimToken, progress: value, nowMs: runtime.now() })
  }

  async fail(error: unknown): Promise<boolean> {
    const runtime = this.#runtime
    runtime.refuseIfStoresClosed()
    const nowMs = runtime.now()
    const text = errorText(error)
    const failed = await runtime.jobStore.fail({ id: this.id, claimToken: this.claimToken, error: text, stack: errorStack(error), nowMs })
    if (failed) {
      this.#left()
      runtime.events.emit({ type: 'job.dead', queue: this.queue, id: this.id, attempt: this.attempts, durationMs: nowMs - this.#claimedAtMs, reason: 'failed', error: text, at: nowMs })
    }
    return failed
  }

  // The ack took effect: the key's slot is free and `job.completed` is heard.
  #completed(nowMs: number): void {
    this.#left()
    this.#runtime.events.emit({ type: 'job.completed', queue: this.queue, id: this.id, attempt: this.attempts, durationMs: nowMs - this.#claimedAtMs, at: nowMs })
  }

  // A job leaving processing on a queue limited per key frees its key's slot for the next job.
  #left(): void {
    if (this.#runtime.limitedQueues.has(this.queue)) this.#runtime.dispatch.of(this.queue).slotFreed()
  }

  #claimLost(why: string): void {
    this.#abort(new ClaimLost({ id: this.id, message: `job ${this.id}: ${why}` }))
  }

  // The first abort wins; a signal not yet asked for takes it when it is.
  #abort(reason: ClaimLost | WorkerStopped): void {
    if (this.#lostReason !== undefined) return
    this.#lostReason = reason
    this.#lost?.abort(reason)
  }
}
