import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { cappedExponentialMs, equalJitterDelayMs, retryDelayCapMs } from './Backoff.ts'

describe('Backoff', () => {
  it('equal jitter stays in the lower half of the doubling, capped at one hour', () => {
    const seed = Number(process.env.SIM_SEED ?? Date.now() % 2 ** 31)
    console.log(`Backoff property seed=${seed}`)
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 60_000 }), fc.integer({ min: 1, max: 80 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (base, attempt, unit) => {
        const ceiling = Math.min(retryDelayCapMs, base * 2 ** (attempt - 1))
        const delay = equalJitterDelayMs(base, attempt, unit)
        expect(delay).toBeGreaterThanOrEqual(Math.floor(ceiling / 2))
        expect(delay).toBeLessThanOrEqual(Math.ceil(ceiling))
        expect(delay).toBeLessThanOrEqual(retryDelayCapMs)
      }),
      { seed },
    )
  })

  it('matches the curve at its ends: base 5 s, attempt 1 → [2.5 s, 5 s]; attempt 3 → [10 s, 20 s]', () => {
    expect(equalJitterDelayMs(5_000, 1, 0)).toBe(2_500)
    expect(equalJitterDelayMs(5_000, 1, 0.999999)).toBe(5_000)
    expect(equalJitterDelayMs(5_000, 3, 0)).toBe(10_000)
    expect(equalJitterDelayMs(5_000, 30, 0)).toBe(retryDelayCapMs / 2)
  })

  it('acquire retries double from 1 s to 10 s', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => cappedExponentialMs(1_000, 10_000, n))).toEqual([1_000, 2_000, 4_000, 8_000, 10_000, 10_000])
  })
})
