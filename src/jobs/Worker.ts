/**
 * Worker — `queue.work(handler, { concurrency, batch })`: `concurrency` loops that claim a job, run the
 * handler, and settle it — return → ack, throw → retry(err) on the curve — heartbeating on the
 * handler's behalf every visibility timeout / `workerHeartbeatDivisor` on one timer of the
 * injected clock for all its running jobs (Heartbeats.ts). A heartbeat refused (the claim lapsed or the job was cancelled) stops the beats; the
 * handler runs on and its ack is then refused, the honest at-least-once window of the job contract.
 *
 * With `{ batch }` claiming and handling are apart: a local queue of at most `batch` claimed jobs
 * (LocalQueue.ts), filled several at a time straight from the store or by parked polls, which
 * `concurrency` handler loops drain in claim order (graphile-worker's local queue); the acks of
 * jobs finished while its claim is at the store ride on its next claim. Without it, the loops'
 * claims of one turn taken straight from the store share one statement (`claimDue`); either way
 * deliveries that reach several polls parked in Matching share one (History's `claimMany`), as
 * do the acks that go alone (the runtime's `ackMany`).
 *
 * When a loop's next claim goes straight to the store (this engine delivers the queue and due
 * jobs wait there), the ack of its job travels in the statement that claims the next one, which
 * the other loops' acks and claims of the turn share: one round trip a job for a lone loop.
 * Otherwise a loop claims its next job while the previous job's ack (or retry) is still on its
 * way to the store, so a handler may start before the previous job's ack has landed; at most one
 * such settle per loop is in flight.
 *
 * `stop()` stops claiming, wakes idle loops at once, and resolves when every handler in flight
 * has finished and been settled. A job already claimed when stop was asked still runs (its
 * attempt is spent) — the local queue's included, unless its claim lapsed while it waited.
 * `stop({ graceS })` waits at most `graceS` on the engine's clock: then it gives up — aborts the
 * signal of every handler still running (reason `WorkerStopped`), ends their heartbeats (so
 * their claims lapse and the jobs are delivered again) and resolves. A handler that ends later
 * is still settled while the engine is open and its claim valid.
 *
 * Errors: a failed ack/retry/heartbeat (store unavailable) goes to `onError` and the job lapses
 * to be delivered again; non-catalogue errors (defects) default to being rethrown asynchronously.
 * While the store keeps failing the loops back off together (OutageBackoff.ts: 50 ms doubling
 * to 1 s, with jitter) and `onError` hears at most one store error per step, with a count of
 * those it did not hear; the first successful claim ends the outage.
 */
import { setMaxListeners } from 'node:events'
import { InvalidInput, isMatchboxError } from '../domain/errors.ts'
import type { Clock } from '../kernel/Clock.ts'
import { workerClaimWaitMs, workerConcurrencyMax } from '../kernel/Limits.ts'
import { claimNext } from './Claimer.ts'
import { ackAndClaimNext, canClaimSeveral, claimSeveral } from './StoreClaims.ts'
import { type Heartbeats, makeHeartbeats } from './Heartbeats.ts'
import { abortStopped, ackHookOf, type JobHandle, makeJobHandle } from './JobHandle.ts'
import { makeLocalQueue } from './LocalQueue.ts'
import { makeOutageBackoff, type OutageBackoff } from './OutageBackoff.ts'
import { secondsToMs } from './QueueOptions.ts'
import type { JobsRuntime } from './Runtime.ts'

/** Options of `work`. */
export interface WorkOptions {
  /** Handlers running at once (default 1, at most 1000). */
  readonly concurrency?: number
  /**
   * Claims ahead of the handlers (1…1000; default: none, each handler claims its own next job)
   * into a local queue of at most `batch` claimed jobs, counting claims in flight, that the
   * `concurrency` handlers drain in claim order. While due jobs wait in the store the worker
   * claims them several at a time, in one statement, whenever half the local queue is free; when
   * none is due it keeps a claim waiting per free slot, which a new job reaches at once (several
   * claims served by one statement). A job waiting in the local queue is already claimed:
   * its visibility timeout runs (heartbeats start with its handler), a job whose claim lapsed
   * while it waited is skipped (delivered again, as any lapsed claim), and a job that becomes
   * due meanwhile — even at a higher priority — runs after those already claimed. Keep
   * `batch` × handler time well inside the visibility timeout. `stop()` claims no more and runs
   * what the local queue holds before it resolves.
   */
  readonly batch?: number
  /**
   * Store failures (claiming, or settling a job: it lapses and is redelivered) and defects;
   * default: catalogue errors ignored, others rethrown. While the store keeps failing, at most
   * one catalogue error is reported per back-off step; `suppressed` counts those left unreported
   * since the previous report (defects are always reported).
   */
  readonly onError?: (error: unknown, job: JobHandle | null, details: { readonly suppressed: number }) => void
}

/** Options of the `stop` that `work` returns. */
export interface StopOptions {
  /**
   * How long to wait for the handlers still running, in seconds on the engine's clock (default:
   * no limit). Past it `stop` gives up: each such handler's `job.signal` aborts with a
   * `WorkerStopped` reason, its heartbeats end (its claim lapses and the job is delivered again)
   * and `stop` resolves without waiting for it.
   */
  readonly graceS?: number
}

/** Stops a worker (see `StopOptions`); resolves once its handlers have ended or it gave up on them. */
export type StopWork = (options?: StopOptions) => Promise<void>

// The options `work` takes.
const workOptionKeys = ['concurrency', 'batch', 'onError']

// How a handler ended.
type HandlerOutcome = { ok: true } | { ok: false; error: unknown }

// One worker's state, shared by its loops (or its local queue), its heartbeats and its stop.
interface WorkerState {
  readonly runtime: JobsRuntime
  readonly queue: string
  readonly handler: (job: JobHandle) => Promise<unknown>
  readonly options: WorkOptions
  readonly partitions: number | undefined
  stopping: boolean
  readonly isStopping: () => boolean
  // Shared by the loops: while the store fails they wait out one back-off and report once per step.
  readonly outage: OutageBackoff
  readonly heartbeats: Heartbeats
  // The jobs whose handler is running: those a stop that gives up aborts.
  readonly handling: Set<JobHandle>
  readonly stopped: AbortController
}

/**
 * Starts the loops; returns `stop`. `partitions` is the handle's partition count, if it names one.
 * The loops, their shared outage back-off, heartbeats and stop flag are one worker's state
 * (`WorkerState`); each part is a module function over it.
 */
export function startWorkers(runtime: JobsRuntime, queue: string, handler: (job: JobHandle) => Promise<unknown>, options: WorkOptions = {}, partitions?: number): StopWork {
  const { concurrency, batch } = checkWorkOptions(handler, options)
  const outage = makeOutageBackoff(runtime.random)
  const worker: WorkerState = {
    runtime,
    queue,
    handler,
    options,
    partitions,
    stopping: false,
    isStopping: () => worker.stopping,
    outage,
    heartbeats: makeHeartbeats(runtime.clock, () => runtime.now(), (error, job, startedMs) => report(worker, error, job, startedMs)),
    handling: new Set<JobHandle>(),
    stopped: new AbortController(),
  }
  // Every claiming loop's wait listens on this signal: one per loop, not a leak.
  setMaxListeners(Math.max(10, batch ?? concurrency), worker.stopped.signal)
  const local =
    batch === undefined
      ? null
      : makeLocalQueue(batch, {
          running: () => running(worker),
          claimOne: () => claim(worker),
          canClaimSeveral: () => canClaimSeveral(runtime, queue),
          claimSeveral: (count, acks) => claimMany(worker, count, acks),
          handle: (job) => runHandler(worker, job),
          acks: (outcome) => outcome.ok,
          finish: (job, outcome) => finish(worker, job, outcome),
          now: () => runtime.now(),
        })
  const loops = local === null ? Array.from({ length: concurrency }, () => loop(worker)) : [local.run(concurrency)]
  const stop: StopWork = (stopOptions) => stopWorker(worker, stop, loops, local, stopOptions)
  runtime.workers.add(stop)
  return stop
}

// The validated `concurrency` and `batch` of `work`'s options; InvalidInput for a bad handler or option.
function checkWorkOptions(handler: unknown, options: WorkOptions): { readonly concurrency: number; readonly batch: number | undefined } {
  if (typeof handler !== 'function') throw new InvalidInput({ field: 'handler', reason: 'must be a function' })
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new InvalidInput({ field: 'options', reason: 'must be an object' })
  // A misspelt option would otherwise be ignored (`concurency: 8` running one loop).
  for (const key of Object.keys(options)) if (!workOptionKeys.includes(key)) throw new InvalidInput({ field: `options.${key}`, reason: `is not an option (known: ${workOptionKeys.join(', ')})` })
  if (options.onError !== undefined && typeof options.onError !== 'function') throw new InvalidInput({ field: 'options.onError', reason: 'must be a function' })
  const concurrency = options.concurrency === undefined ? 1 : options.concurrency
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > workerConcurrencyMax) {
    throw new InvalidInput({ field: 'options.concurrency', reason: `must be an integer in 1…${workerConcurrencyMax}` })
  }
  const batch = options.batch
  if (batch !== undefined && (!Number.isInteger(batch) || batch < 1 || batch > workerConcurrencyMax)) {
    throw new InvalidInput({ field: 'options.batch', reason: `must be an integer in 1…${workerConcurrencyMax}` })
  }
  return { concurrency, batch }
}

// Hands a failure to `onError`, at most one store error per back-off step; a defect without
// `onError` is rethrown asynchronously.
function report(worker: WorkerState, error: unknown, job: JobHandle | null, startedMs: number): void {
  const { options } = worker
  let suppressed = 0
  if (isMatchboxError(error)) {
    const step = worker.outage.failed(startedMs, worker.runtime.now())
    if (step.report === null) return
    suppressed = step.report.suppressed
  }
  if (options.onError !== undefined) return options.onError(error, job, { suppressed })
  if (!isMatchboxError(error)) {
    queueMicrotask(() => {
      throw error
    })
  }
}

// Runs the handler, heartbeating for it; says how it ended.
async function runHandler(worker: WorkerState, job: JobHandle): Promise<HandlerOutcome> {
  const { handler, heartbeats, handling, runtime } = worker
  heartbeats.start(job)
  handling.add(job)
  try {
    let running: Promise<unknown>
    try {
      running = handler(job)
    } finally {
      // Started: the queue's line polls beyond its parked workers end now, behind it.
      runtime.dispatch.of(worker.queue).endIdlePolls()
    }
    await running
    return { ok: true }
  } catch (error) {
    return { ok: false, error }
  } finally {
    handling.delete(job)
    heartbeats.stop(job)
  }
}

// Acks or retries a job whose handler ended; a store failure goes to onError (the job lapses).
async function finish(worker: WorkerState, job: JobHandle, outcome: HandlerOutcome): Promise<void> {
  const settleStartedMs = worker.runtime.now()
  try {
    if (outcome.ok) await job.ack()
    else await job.retry(outcome.error)
  } catch (error) {
    report(worker, error, job, settleStartedMs)
  }
}

// Runs one claim attempt for the loops: a failure is reported (a defect also paces the loops
// like a store failure, and is reported every time) and answers `empty`, as does a closed engine.
async function attemptClaim<T>(worker: WorkerState, attempt: () => Promise<T>, empty: T, succeeded: (got: T) => boolean): Promise<T> {
  const { runtime, outage } = worker
  const startedMs = runtime.now()
  try {
    const got = await attempt()
    if (succeeded(got)) outage.succeeded()
    return got
  } catch (error) {
    if (runtime.isClosed()) return empty
    report(worker, error, null, startedMs)
    if (!isMatchboxError(error)) outage.failed(startedMs, runtime.now())
    return empty
  }
}

// Claims the next job, pacing the loops while the store fails; null when none came (or stopping).
async function claim(worker: WorkerState): Promise<JobHandle | null> {
  const { runtime, outage, queue } = worker
  // While the store is failing, wait out the back-off step (a stop wakes the wait).
  if (outage.retryAtMs() > runtime.now()) {
    await runtime.driver.waitForDelivery(queue, outage.retryAtMs())
    return null
  }
  return attemptClaim(worker, () => claimNext(runtime, queue, workerClaimWaitMs, false, worker.isStopping, worker.stopped.signal, worker.partitions), null, () => true)
}

// The local queue's claim of several jobs in one statement, which also acks `acks`, paced and
// reported like `claim`; undefined when the store could not serve it that way (the claim loops
// then park polls, whose claim waits out a back-off, and the acks go alone). A failed statement
// is reported as each ack's failure too (those jobs lapse and are delivered again).
async function claimMany(worker: WorkerState, count: number, acks: ReadonlyArray<JobHandle>): Promise<ReadonlyArray<JobHandle> | undefined> {
  const { runtime, outage, queue } = worker
  if (outage.retryAtMs() > runtime.now()) return undefined
  const startedMs = runtime.now()
  const answer = await attemptClaim(
    worker,
    () => claimSeveral(runtime, queue, count, worker.partitions, acks).catch((error: unknown) => {
      for (const job of acks) report(worker, error, job, startedMs)
      throw error
    }),
    null,
    (got) => (got?.claimed.length ?? 0) > 0,
  )
  if (answer === undefined) return undefined
  return (answer?.claimed ?? []).map((job) => makeJobHandle(runtime, job))
}

function running(worker: WorkerState): boolean {
  return !worker.stopping && !worker.runtime.isClosed()
}

// A loop claims its next job while the previous one's ack or retry is on its way to the store,
// so the two round trips overlap; at most one settle per loop is in flight, and the loop ends
// only once its last one has landed.
async function loop(worker: WorkerState): Promise<void> {
  let settling: Promise<void> = Promise.resolve()
  let next: JobHandle | null = null
  while (running(worker)) {
    const job = next ?? (await claim(worker))
    next = null
    if (job === null) continue
    const outcome = await runHandler(worker, job)
    await settling
    if (outcome.ok && running(worker)) {
      const ridden = await ackRidingNextClaim(worker, job)
      if (ridden !== undefined) {
        next = ridden
        continue
      }
    }
    settling = finish(worker, job, outcome)
  }
  await settling
  // Claimed by the statement that acked the last job, after the worker began to stop: its
  // claim goes back to the store rather than waiting out its visibility timeout.
  if (next !== null) await releaseUnrun(worker, next)
}

async function releaseUnrun(worker: WorkerState, job: JobHandle): Promise<void> {
  const { runtime } = worker
  try {
    await runtime.jobStore.release({ claims: [ackHookOf(job).ref], nowMs: runtime.now() })
    runtime.announceDue(worker.queue, runtime.now(), true)
  } catch (error) {
    // The claim lapses at its deadline and the job is delivered again.
    report(worker, error, job, runtime.now())
  }
}

// A loop acks a job in the statement that claims its next one (shared with the turn's other
// loops), when that claim goes straight to the store: one round trip a job instead of two.
// Undefined when it does not (the loop acks and claims apart); a store failure fails both,
// reported as the ack's (the job lapses and is delivered again).
async function ackRidingNextClaim(worker: WorkerState, job: JobHandle): Promise<JobHandle | null | undefined> {
  const { runtime } = worker
  const startedMs = runtime.now()
  try {
    const answer = await ackAndClaimNext(runtime, worker.queue, job)
    if (answer === undefined) return undefined
    worker.outage.succeeded()
    return answer.next === null ? null : makeJobHandle(runtime, answer.next)
  } catch (error) {
    report(worker, error, job, startedMs)
    return null
  }
}

// Resolves true once `graceMs` has passed on `clock` with `ended` still unsettled.
function outlasts(clock: Clock, ended: Promise<unknown>, graceMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const cancel = clock.setTimer(graceMs, () => resolve(true))
    void ended.then(() => {
      cancel()
      resolve(false)
    })
  })
}

// `stop` of the worker whose loops (or local queue) are `loops`: see `StopOptions`.
async function stopWorker(worker: WorkerState, stop: StopWork, loops: ReadonlyArray<Promise<void>>, local: { wake(): void } | null, stopOptions: StopOptions = {}): Promise<void> {
  const { runtime, queue } = worker
  if (typeof stopOptions !== 'object' || stopOptions === null) throw new InvalidInput({ field: 'options', reason: 'must be an object' })
  const graceMs = stopOptions.graceS === undefined ? null : secondsToMs('options.graceS', stopOptions.graceS, false)
  worker.stopping = true
  // Ends the loops' waits, and with them the queue's line polls.
  worker.stopped.abort()
  const dispatch = runtime.dispatch.of(queue)
  dispatch.workerStopping()
  // Jobs kept for the next claim go back to the store: no loop of this worker will take them.
  dispatch.expireKept()
  runtime.driver.wake(queue)
  runtime.forwarding?.wake(queue)
  local?.wake()
  const ended = Promise.all(loops)
  if (graceMs === null) await ended
  else if (await outlasts(runtime.clock, ended, graceMs)) {
    for (const job of worker.handling) abortStopped(job, `the worker's stop gave up waiting for its handler after ${graceMs} ms`)
  }
  // No loop waits any more: its registrations as a waiter go, so no enqueue elsewhere hands it a job.
  await runtime.handOvers?.takeBackIdle(queue)
  worker.heartbeats.close()
  runtime.workers.delete(stop)
}
