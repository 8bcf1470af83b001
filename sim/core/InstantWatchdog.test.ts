/**
 * The livelock watchdog: steps at one virtual instant up to the bound pass, the one past it is
 * reported once and throws naming the world; a new instant starts the count again.
 */
import { describe, expect, it } from 'vitest'
import { makeInstantWatchdog } from './InstantWatchdog.ts'

describe('InstantWatchdog', () => {
  it('throws past the bound at one instant, reports once, and counts each instant on its own', () => {
    let nowMs = 1_000
    const reported: string[] = []
    const watchdog = makeInstantWatchdog(() => nowMs, 'world seed 7', (detail) => reported.push(detail), 3)
    for (let i = 0; i < 3; i++) watchdog.step(() => 'poll.arrived')
    nowMs = 1_001
    for (let i = 0; i < 3; i++) watchdog.step(() => 'poll.arrived')
    expect(reported).toEqual([])
    expect(() => watchdog.step(() => 'poll.arrived')).toThrow('livelock in world seed 7: more than 3 machine steps at t=1001 (the last: poll.arrived)')
    expect(() => watchdog.step(() => 'poll.arrived')).toThrow(/livelock/)
    expect(reported).toHaveLength(1)
  })
})
