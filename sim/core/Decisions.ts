/**
 * Decisions — every choice the world makes, drawn first from an explicit list (a schedule that
 * fast-check generates and shrinks) and then from the seeded PRNG. Replaying the same seed and
 * list replays the same run.
 */
import { Random } from '../../src/kernel/Random.ts'

/** A source of choices. */
export class Decisions {
  readonly #random: Random
  readonly #script: ReadonlyArray<number>
  #next = 0

  constructor(seed: number, script: ReadonlyArray<number> = []) {
    this.#random = Random.make(seed ^ 0x5eed)
    this.#script = script
  }

  /** An integer in [from, to]. */
  int(from: number, to: number): number {
    if (this.#next < this.#script.length) {
      const raw = this.#script[this.#next++] as number
      return from + (Math.abs(Math.trunc(raw)) % (to - from + 1))
    }
    return this.#random.int(from, to)
  }

  /** True with probability p (resolution 1/10000). */
  chance(p: number): boolean {
    if (p <= 0) return false
    return this.int(0, 9_999) < p * 10_000
  }

  /** One element of a non-empty list. */
  pick<T>(items: ReadonlyArray<T>): T {
    return items[this.int(0, items.length - 1)] as T
  }

  /** An index chosen by weight (weights ≥ 0, not all 0). */
  weighted(weights: ReadonlyArray<number>): number {
    const total = weights.reduce((sum, weight) => sum + weight, 0)
    let point = this.int(0, Math.max(0, Math.ceil(total) - 1))
    for (let index = 0; index < weights.length; index++) {
      point -= weights[index] as number
      if (point < 0) return index
    }
    return weights.length - 1
  }

  /** A random stream for components that draw on their own (History's script, hosts). */
  fork(): Random {
    return this.#random.fork()
  }
}
