/**
 * OutageBackoff — how a worker's loops and the due-time driver pace themselves while the store
 * keeps failing (`Unavailable`, a closed pool, a restarting server), and which of those
 * failures reach the user's `onError`.
 *
 * Pacing: after the k-th back-off step the next attempt waits an equal-jitter delay in
 * [d/2, d], d = min(`outageRetryMaxMs`, `outageRetryInitialMs`·2^(k−1)). Failures of attempts
 * that began no later than the current step started (several loops failing together) share it
 * instead of each doubling it, so N loops do not climb N steps at once. The first success resets
 * everything: once the store is back, work resumes within one capped step (≤ 1 s).
 *
 * Reports: at most one per back-off step — the first failure of a step is reported, with the
 * number of failures left unreported since the previous report; the others are only counted.
 *
 * Invariants: pure bookkeeping over times the caller passes (no clock, no timers) and draws from
 * the caller's Random; never throws.
 */
import { equalJitterDelayMs } from '../domain/Backoff.ts'
import { outageRetryInitialMs, outageRetryMaxMs } from '../kernel/Limits.ts'
import type { Random } from '../kernel/Random.ts'

/** What to do after a failure: wait until `retryAtMs`; report it when `report` is set. */
export interface OutageStep {
  readonly retryAtMs: number
  /** Present when this failure should be reported: how many were left unreported before it. */
  readonly report: { readonly suppressed: number } | null
}

/** The back-off state of one worker or driver. */
export interface OutageBackoff {
  /** An attempt that began at `startedMs` failed at `nowMs`. */
  failed(startedMs: number, nowMs: number): OutageStep
  /** An attempt succeeded: the outage is over. */
  succeeded(): void
  /** When the next attempt may start (≤ now outside an outage). */
  retryAtMs(): number
  /** Whether the last attempt failed. */
  inOutage(): boolean
}

/** A fresh back-off, drawing its jitter from `random`. */
export function makeOutageBackoff(random: Random): OutageBackoff {
  let step = 0
  let stepStartedMs = Number.NEGATIVE_INFINITY
  let retryAtMs = Number.NEGATIVE_INFINITY
  let reportedStep = 0
  let suppressed = 0
  return {
    failed(startedMs, nowMs) {
      // An attempt that began no later than this step started failed for the same outage: it
      // waits out the current step rather than doubling it again.
      if (step === 0 || startedMs > stepStartedMs) {
        step++
        stepStartedMs = nowMs
        retryAtMs = nowMs + equalJitterDelayMs(outageRetryInitialMs, step, random.float(), outageRetryMaxMs)
      }
      if (reportedStep === step) {
        suppressed++
        return { retryAtMs, report: null }
      }
      reportedStep = step
      const report = { suppressed }
      suppressed = 0
      return { retryAtMs, report }
    },
    succeeded() {
      step = 0
      reportedStep = 0
      stepStartedMs = Number.NEGATIVE_INFINITY
      retryAtMs = Number.NEGATIVE_INFINITY
    },
    retryAtMs: () => retryAtMs,
    inOutage: () => step > 0,
  }
}
