/**
 * Job ids sort by their creation millisecond and stay apart within one: 24 base-36 characters,
 * the time first.
 */
import { describe, expect, it } from 'vitest'
import { jobId } from './Ids.ts'
import { Random } from './Random.ts'

describe('jobId', () => {
  it('sorts ids of later milliseconds after earlier ones, whatever their random part', () => {
    const random = Random.make(7)
    const start = 1_700_000_000_000
    const ids = Array.from({ length: 200 }, (_, index) => jobId(random, start + index * 37))
    expect([...ids].sort()).toEqual(ids)
    for (const id of ids) expect(id).toMatch(/^[0-9a-z]{24}$/)
  })

  it('keeps the ids of one millisecond distinct', () => {
    const random = Random.make(8)
    const ids = new Set(Array.from({ length: 10_000 }, () => jobId(random, 1_700_000_000_000)))
    expect(ids.size).toBe(10_000)
  })
})
