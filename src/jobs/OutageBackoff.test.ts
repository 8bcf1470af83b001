/**
 * OutageBackoff, stepped by hand: delays double from 50 ms to the 1 s cap within equal jitter;
 * failures of attempts that began before the current step share it; one report per step
 * carrying the failures left unreported; the first success resets everything.
 */
import { describe, expect, it } from 'vitest'
import { outageRetryInitialMs, outageRetryMaxMs } from '../kernel/Limits.ts'
import { Random } from '../kernel/Random.ts'
import { makeOutageBackoff } from './OutageBackoff.ts'

describe('OutageBackoff', () => {
  it('doubles each step from the initial delay to the cap, within equal jitter', () => {
    const backoff = makeOutageBackoff(Random.make(1))
    let nowMs = 1_000
    for (let step = 1; step <= 10; step++) {
      const ceiling = Math.min(outageRetryMaxMs, outageRetryInitialMs * 2 ** (step - 1))
      const { retryAtMs } = backoff.failed(nowMs, nowMs)
      expect(retryAtMs - nowMs).toBeGreaterThanOrEqual(ceiling / 2)
      expect(retryAtMs - nowMs).toBeLessThanOrEqual(ceiling)
      nowMs = retryAtMs
    }
    expect(backoff.inOutage()).toBe(true)
  })

  it('lets failures of attempts begun before the step share it, and reports once per step', () => {
    const backoff = makeOutageBackoff(Random.make(2))
    const first = backoff.failed(0, 0)
    expect(first.report).toEqual({ suppressed: 0 })
    // Three more loops whose attempts began with the first one: same step, not reported.
    for (let loop = 0; loop < 3; loop++) expect(backoff.failed(0, 1)).toEqual({ retryAtMs: first.retryAtMs, report: null })
    // The next round, begun after the step started: a new, longer step, reported with the three.
    const second = backoff.failed(first.retryAtMs, first.retryAtMs)
    expect(second.report).toEqual({ suppressed: 3 })
    expect(second.retryAtMs - first.retryAtMs).toBeGreaterThanOrEqual(outageRetryInitialMs)
  })

  it('resets on the first success', () => {
    const backoff = makeOutageBackoff(Random.make(3))
    for (let step = 0; step < 8; step++) backoff.failed(step * 2_000, step * 2_000)
    backoff.succeeded()
    expect(backoff.inOutage()).toBe(false)
    expect(backoff.retryAtMs()).toBeLessThan(0)
    const again = backoff.failed(100_000, 100_000)
    expect(again.retryAtMs - 100_000).toBeLessThanOrEqual(outageRetryInitialMs)
    expect(again.report).toEqual({ suppressed: 0 })
  })
})
