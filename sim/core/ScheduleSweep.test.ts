/**
 * ScheduleSweep: a master seed draws the same worlds again, and a sweep runs every world and keeps
 * every failure with its replay.
 */
import { describe, expect, it } from 'vitest'
import { describeSweepFailure, runScheduleSweep, sweepSchedules } from './ScheduleSweep.ts'

describe('ScheduleSweep', () => {
  it('draws the same worlds from the same master seed, and others from another', () => {
    const first = sweepSchedules(42, 20, 50)
    expect(first).toHaveLength(20)
    expect(sweepSchedules(42, 20, 50)).toEqual(first)
    expect(sweepSchedules(43, 20, 50)).not.toEqual(first)
    expect(first.every((schedule) => Number.isInteger(schedule.seed) && schedule.script.length <= 50)).toBe(true)
  })

  it('runs every world and keeps each failure with its seed, script and replay', async () => {
    const schedules = [{ seed: 1, script: [] }, { seed: 2, script: [5, 6] }, { seed: 3, script: [] }, { seed: 4, script: [7] }]
    const seen: number[] = []
    const failures = await runScheduleSweep({
      schedules,
      runWorld: async ({ seed }) => ({ ok: seed % 2 === 1, violations: seed % 2 === 1 ? [] : [`broke ${seed}`], events: 0 }),
      replay: ({ seed }) => `replay ${seed}`,
      onWorld: (index) => seen.push(index),
    })
    expect(seen).toEqual([0, 1, 2, 3])
    expect(failures.map((failure) => failure.schedule.seed)).toEqual([2, 4])
    expect(describeSweepFailure(failures[0] as (typeof failures)[number])).toBe('world 1: seed 2 script [5,6]\n  broke 2\n  replay: replay 2')
  })
})
