/**
 * Backoff — the retry delay curves, pure: callers pass the random draw, so the same draw gives
 * the same delay everywhere (engines, simulator, replay).
 *
 * - `equalJitterDelayMs`: the job contract's curve. For attempt a ≥ 1 and base b, the delay lies in
 *   [b·2^(a−1)/2, b·2^(a−1)], uniform over that lower half of the doubling, capped at the cap.
 * - `cappedExponentialMs`: deterministic doubling from an initial delay to a maximum (a physical
 *   queue's acquire retries, upstream 1 s → 10 s). A partition's restart delays follow the same
 *   curve as an Effect Schedule (`partitionRestartSchedule` in actors/RestartBooks.ts).
 */
import { assert } from '../kernel/assert.ts'

/** One hour, the job contract's pinned cap on retry delays. */
export const retryDelayCapMs = 60 * 60_000

/**
 * Equal-jitter exponential delay: `ceiling = min(cap, base·2^(attempt−1))`, result uniform in
 * [ceiling/2, ceiling] as `unit` goes over [0, 1).
 */
export function equalJitterDelayMs(baseMs: number, attempt: number, unit: number, capMs = retryDelayCapMs): number {
  assert(baseMs >= 0 && Number.isFinite(baseMs), `bad backoff base ${baseMs}`)
  assert(Number.isInteger(attempt) && attempt >= 1, `bad attempt ${attempt}`)
  assert(unit >= 0 && unit < 1, `bad unit draw ${unit}`)
  // Past 2^40 the product exceeds any cap we allow; clamp the exponent to keep it finite.
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt - 1, 40))
  const half = ceiling / 2
  return Math.round(half + unit * half)
}

/** Doubling delays `initial, 2·initial, …` capped at `max`, for attempt ≥ 1. */
export function cappedExponentialMs(initialMs: number, maxMs: number, attempt: number): number {
  assert(Number.isInteger(attempt) && attempt >= 1, `bad attempt ${attempt}`)
  return Math.min(maxMs, initialMs * 2 ** Math.min(attempt - 1, 40))
}
