import { describe, expect, it } from 'vitest'
import { ManualClock } from './Clock.ts'

describe('ManualClock', () => {
  it('fires due timers in due order, ties in scheduling order, each at its due time', () => {
    const clock = new ManualClock(100)
    const fired: string[] = []
    clock.setTimer(30, () => fired.push(`a@${clock.now()}`))
    clock.setTimer(10, () => fired.push(`b@${clock.now()}`))
    clock.setTimer(30, () => fired.push(`c@${clock.now()}`))
    clock.setTimer(10, () => fired.push(`d@${clock.now()}`))
    expect(clock.nextDueMs()).toBe(110)
    clock.advance(50)
    expect(fired).toEqual(['b@110', 'd@110', 'a@130', 'c@130'])
    expect(clock.now()).toBe(150)
    expect(clock.pendingTimerCount()).toBe(0)
  })

  it('fires a timer armed by a firing timer in the same advance when it is due', () => {
    const clock = new ManualClock()
    const fired: string[] = []
    clock.setTimer(5, () => {
      fired.push('first')
      clock.setTimer(0, () => fired.push(`armed@${clock.now()}`))
    })
    clock.setTimer(5, () => fired.push('second'))
    clock.advance(5)
    expect(fired).toEqual(['first', 'second', 'armed@5'])
  })

  it('never fires a cancelled timer; cancelling twice or after firing does nothing', () => {
    const clock = new ManualClock()
    const fired: number[] = []
    const cancels = Array.from({ length: 1_000 }, (_, index) => clock.setTimer(index, () => fired.push(index)))
    // Cancel all but every hundredth: enough marked timers that the heap is rebuilt.
    cancels.forEach((cancel, index) => {
      if (index % 100 !== 0) cancel()
    })
    cancels[1]?.()
    expect(clock.pendingTimerCount()).toBe(10)
    clock.advance(500)
    cancels[0]?.()
    expect(fired).toEqual([0, 100, 200, 300, 400, 500])
    expect(clock.pendingTimerCount()).toBe(4)
    expect(clock.nextDueMs()).toBe(600)
  })

  it('leaves timers a forward set skipped for the next advance, at the current time', () => {
    const clock = new ManualClock()
    const fired: number[] = []
    clock.setTimer(10, () => fired.push(clock.now()))
    clock.set(50)
    expect(fired).toEqual([])
    clock.advance(0)
    expect(fired).toEqual([50])
  })
})
