/**
 * A seed's stream is the same however its draws are asked for: `fillInts` draws what as many
 * calls of `int` would, in order, and leaves the stream where they would.
 */
import { describe, expect, it } from 'vitest'
import { Random } from './Random.ts'

describe('Random.fillInts', () => {
  it('draws what as many calls of int would, and leaves the stream where they would', () => {
    const one = Random.make(11)
    const many = Random.make(11)
    const byCall = Array.from({ length: 40 }, () => one.int(3, 38))
    const filled = Array.from({ length: 40 }, () => -1)
    many.fillInts(filled, 3, 38)
    expect(filled).toEqual(byCall)
    expect(many.int(0, 1_000_000)).toBe(one.int(0, 1_000_000))
  })

  it('refuses an empty range', () => {
    expect(() => Random.make(1).fillInts([0], 2, 1)).toThrow(/bad int range/)
  })
})
