/**
 * Worker — `queue.work(handler, { concurrency })`: `concurrency` loops that claim a job, run the
 * handler, and settle it — return → ack, throw → retry(err) on the curve — heartbeating on the
 * handler's behalf every visibility timeout / `workerHeartbeatDivisor` with the injected clock's
 * timers. A heartbeat refused (the claim lapsed or the job was cancelled) stops the beats; the
 * handler runs on and its ack is then refused, the honest at-least-once window of the job contract.
 *
 * `stop()` stops claiming, wakes idle loops at once, and resolves when every handler in flight
 * has finished and been settled. A job a loop had already claimed when stop was asked still
 * runs (its attempt is spent).
 *
 * Errors: a failed ack/retry/heartbeat (store unavailable) goes to `onError` and the job lapses
 * to be delivered again; non-catalogue errors (defects) default to being rethrown asynchronously.
 * While the store keeps failing the loops back off together (OutageBackoff.ts: 50 ms doubling
 * to 1 s, with jitter) and `onError` hears at most one store error per step, with a count of
 * those it did not hear; the first successful claim ends the outage.
 */
import { InvalidInput, isMatchboxError } from '../domain/errors.ts'
import type { CancelTimer } from '../kernel/Clock.ts'
import { workerClaimWaitMs, workerConcurrencyMax, workerHeartbeatDivisor } from '../kernel/Limits.ts'
import type { JobHandle } from './JobHandle.ts'
import { claimNext } from './Claimer.ts'
import { makeOutageBackoff } from './OutageBackoff.ts'
import type { JobsRuntime } from './Runtime.ts'

/** Options of `work`. */
export interface WorkOptions {
  /** Handlers running at once (default 1, at most 1000). */
  readonly concurrency?: number
  /**
   * Store failures (claiming, or settling a job: it lapses and is redelivered) and defects;
   * default: catalogue errors ignored, others rethrown. While the store keeps failing, at most
   * one catalogue error is reported per back-off step; `suppressed` counts those left unreported
   * since the previous report (defects are always reported).
   */
  readonly onError?: (error: unknown, job: JobHandle | null, details: { readonly suppressed: number }) => void
}

/** Starts the loops; returns `stop`. */
export function startWorkers(runtime: JobsRuntime, queue: string, handler: (job: JobHandle) => Promise<unknown>, options: WorkOptions = {}): () => Promise<void> {
  if (typeof handler !== 'function') throw new InvalidInput({ field: 'handler', reason: 'must be a function' })
  const concurrency = options.concurrency ?? 1
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > workerConcurrencyMax) {
    throw new InvalidInput({ field: 'options.concurrency', reason: `must be an integer in 1…${workerConcurrencyMax}` })
  }
  let stopping = false
  // Shared by the loops: while the store fails they wait out one back-off and report once per step.
  const outage = makeOutageBackoff(runtime.random)
  const report = (error: unknown, job: JobHandle | null, startedMs: number): void => {
    let suppressed = 0
    if (isMatchboxError(error)) {
      const step = outage.failed(startedMs, runtime.now())
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

  const settle = async (job: JobHandle): Promise<void> => {
    let cancelBeat: CancelTimer = () => {}
    let beating = true
    const beat = (): void => {
      cancelBeat = runtime.clock.setTimer(Math.max(1, Math.floor((job.deadline - runtime.now()) / workerHeartbeatDivisor)), () => {
        if (!beating) return
        const beatStartedMs = runtime.now()
        job.heartbeat().then(
          (renewed) => {
            if (renewed && beating) beat()
          },
          (error: unknown) => {
            report(error, job, beatStartedMs)
            if (beating) beat()
          },
        )
      })
    }
    beat()
    let outcome: { ok: true } | { ok: false; error: unknown }
    try {
      await handler(job)
      outcome = { ok: true }
    } catch (error) {
      outcome = { ok: false, error }
    } finally {
      beating = false
      cancelBeat()
    }
    const settleStartedMs = runtime.now()
    try {
      if (outcome.ok) await job.ack()
      else await job.retry(outcome.error)
    } catch (error) {
      report(error, job, settleStartedMs)
    }
  }

  const stopped = new AbortController()
  const loop = async (): Promise<void> => {
    while (!stopping && !runtime.isClosed()) {
      // While the store is failing, wait out the back-off step (a stop wakes the wait).
      if (outage.retryAtMs() > runtime.now()) {
        await runtime.driver.waitForDelivery(queue, outage.retryAtMs())
        continue
      }
      const startedMs = runtime.now()
      let job: JobHandle | null
      try {
        job = await claimNext(runtime, queue, workerClaimWaitMs, false, () => stopping, stopped.signal)
        outage.succeeded()
      } catch (error) {
        if (runtime.isClosed()) return
        report(error, null, startedMs)
        // A defect paces the loops like a store failure (and is reported every time).
        if (!isMatchboxError(error)) outage.failed(startedMs, runtime.now())
        continue
      }
      if (job !== null) await settle(job)
    }
  }

  const loops = Array.from({ length: concurrency }, () => loop())
  const stop = async (): Promise<void> => {
    stopping = true
    // Ends the loops' polls parked in Matching, and their waits.
    stopped.abort()
    runtime.driver.wake(queue)
    runtime.forwarding?.wake(queue)
    await Promise.all(loops)
    runtime.workers.delete(stop)
  }
  runtime.workers.add(stop)
  return stop
}
