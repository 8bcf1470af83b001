/**
 * Job ids sort by their creation millisecond and stay apart within one: 24 base-36 characters,
 * the time first.
 */
import { describe, expect, it } from 'vitest'
import { jobId, jobIdOf, jobIdTime } from './Ids.ts'
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

  it('draws the same ids from a seed, whether the time part is made once for many or per id', () => {
    const random = Random.make(42)
    // Ids are answers: a seed's ids stay what they were, so the simulator's seeds replay.
    expect([jobId(random, 1_700_000_000_000), jobId(random, 1_700_000_000_001)]).toEqual(['0loyw3v28dlzse0433hzlh1m', '0loyw3v294uk8s9jxrhnr96t'])
    const again = Random.make(42)
    const time = jobIdTime(1_700_000_000_000)
    expect(jobIdOf(again, time)).toBe('0loyw3v28dlzse0433hzlh1m')
    expect(jobIdOf(again, jobIdTime(1_700_000_000_001))).toBe('0loyw3v294uk8s9jxrhnr96t')
  })
})
