/**
 * OwnershipLossChecker on hand-written attempt logs: a write after the instance heard
 * OwnershipLost, a re-acquire inside the restart back-off, and the cases the runtime allows
 * (the loading state's own retry, an answer to an instance already drained, a retirement, a new
 * process); a sibling's clean unload does not clear the delay).
 */
import { describe, expect, it } from 'vitest'
import type { AttemptCall, BoundaryRecord, CallerTag } from './Boundary.ts'
import { OwnershipLossChecker } from './OwnershipLossChecker.ts'

const queue = 'default/emails/activity/0'
const versioned = 'default/emails/activity/0@v1'
const caller = (n: number, incarnation = 0, q = queue): CallerTag => ({ hostId: 'host-1', incarnation, instance: `host-1.${incarnation} ${q}#${n}` })
const attempt = (by: CallerTag, call: AttemptCall, q = queue, retry = false): BoundaryRecord => ({ op: 'attempt', caller: by, call, queue: q, rangeId: call === 'acquire' ? null : 3, retry })
const lost = (by: CallerTag, call: AttemptCall, q = queue, afterUnload: boolean | null = false): BoundaryRecord => ({ op: 'answered', caller: by, call, queue: q, rangeId: 3, answer: 'OwnershipLost', lostQueue: q, afterUnload })

// Feeds records at the given world times; returns the violations.
function judge(records: ReadonlyArray<readonly [number, BoundaryRecord]>, setup?: (checker: OwnershipLossChecker) => void): string[] {
  const violations: string[] = []
  const checker = new OwnershipLossChecker((message) => violations.push(message))
  setup?.(checker)
  for (const [nowMs, record] of records) checker.observe(record, nowMs)
  return violations
}

describe('OwnershipLossChecker', () => {
  it('flags an instance that writes after its write was answered OwnershipLost, once', () => {
    const violations = judge([[0, lost(caller(1), 'append')], [5, attempt(caller(1), 'checkpoint')], [6, attempt(caller(1), 'append')]])
    expect(violations).toEqual([`host-1.0 ${queue}#1: instance attempted checkpoint under range 3 5 ms after its append was answered OwnershipLost`])
  })

  it('lets another instance of the queue write', () => {
    expect(judge([[0, lost(caller(1), 'append')], [5, attempt(caller(2), 'append')]])).toEqual([])
  })

  it('flags a new acquire inside the back-off and accepts one at its end', () => {
    expect(judge([[0, lost(caller(1), 'checkpoint')], [999, attempt(caller(2), 'acquire')]])).toEqual([`host-1.0 ${queue}: re-acquired 999 ms after it heard OwnershipLost, skipping the restart back-off (at least 1000 ms)`])
    expect(judge([[0, lost(caller(1), 'checkpoint')], [1_000, attempt(caller(2), 'acquire')]])).toEqual([])
  })

  it('allows the loading retry, an answer to a drained instance, a call tied to no actor, and a new process', () => {
    expect(judge([[0, lost(caller(1), 'append')], [1, attempt(caller(2), 'acquire', queue, true)]])).toEqual([])
    expect(judge([[0, lost(caller(1), 'append', queue, true)], [1, attempt(caller(2), 'acquire')]])).toEqual([])
    expect(judge([[0, lost(caller(1), 'append', queue, null)], [1, attempt(caller(2), 'acquire')]])).toEqual([])
    expect(judge([[0, lost(caller(1), 'append')], [1, attempt(caller(1, 1), 'acquire')]])).toEqual([])
  })

  it('exempts a versioned queue acquired while a retirement runs on the host', () => {
    const records = [[0, lost(caller(1, 0, versioned), 'append', versioned)], [1, attempt(caller(2, 0, versioned), 'acquire', versioned)]] as const
    expect(judge(records, (checker) => checker.retiring('host-1', 0, 1))).toEqual([])
    expect(judge(records)).toHaveLength(1)
  })

  it('keeps the delay when a sibling instance unloads cleanly', () => {
    const records = [[0, lost(caller(1), 'append')], [1, { op: 'unloaded', caller: caller(2), queue, reason: 'drained' }], [2, attempt(caller(3), 'acquire')]] as const
    expect(judge(records)).toHaveLength(1)
  })
})
