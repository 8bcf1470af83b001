/**
 * Random — seeded, reproducible randomness (xoroshiro128+ from `pure-rand`).
 *
 * Owns: every random choice in Matchbox (backoff jitter, simulator decisions). The same seed
 * gives the same sequence on every machine. `fork` derives an independent stream, so adding a
 * random draw in one component does not shift every other component's sequence.
 *
 * Does not: read `Math.random`. A production runtime seeds from the real clock in `kernel/`
 * (`seedFromEntropy`), nowhere else.
 */
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64'
import { uniformInt } from 'pure-rand/distribution/uniformInt'
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus'
import type { RandomGenerator } from 'pure-rand/types/RandomGenerator'
import { assert } from './assert.ts'

/** A seeded pseudo-random stream. */
export class Random {
  readonly #generator: RandomGenerator

  private constructor(generator: RandomGenerator) {
    this.#generator = generator
  }

  /** A stream determined entirely by `seed` (a 32-bit integer; larger values are folded). */
  static make(seed: number): Random {
    assert(Number.isInteger(seed), `Random seed must be an integer, got ${seed}`)
    return new Random(xoroshiro128plus(seed | 0))
  }

  /** An integer in [from, to], both inclusive. */
  int(from: number, to: number): number {
    assert(Number.isInteger(from) && Number.isInteger(to) && from <= to, () => `bad int range [${from}, ${to}]`)
    return uniformInt(this.#generator, from, to)
  }

  /**
   * Fills `into` with integers in [from, to]: the draws `into.length` calls of `int` would make,
   * in order, for a caller that draws many at once (a job id's characters) without a call each.
   */
  fillInts(into: number[], from: number, to: number): void {
    assert(Number.isInteger(from) && Number.isInteger(to) && from <= to, () => `bad int range [${from}, ${to}]`)
    for (let i = 0; i < into.length; i++) into[i] = uniformInt(this.#generator, from, to)
  }

  /** A float in [0, 1). */
  float(): number {
    return uniformFloat64(this.#generator)
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return p > 0 && this.float() < p
  }

  /** One element of a non-empty array. */
  pick<T>(items: ReadonlyArray<T>): T {
    assert(items.length > 0, 'Random.pick needs a non-empty array')
    return items[this.int(0, items.length - 1)] as T
  }

  /** An independent stream derived from this one (consumes one draw here). */
  fork(): Random {
    return Random.make(this.int(-0x8000_0000, 0x7fff_ffff))
  }
}

/** A seed from the real clock, for production runs that did not ask for one. */
export function seedFromEntropy(): number {
  return (Date.now() ^ Math.floor(Math.random() * 0x7fff_ffff)) | 0
}
