/**
 * The handler checkers on a crash: a handler that started in the instant of the heal on a host
 * that crashed before the heal stopped running with its host, so its claim lapsing is no
 * heartbeat's failure; the same handler on a live host is one.
 */
import { describe, expect, it } from 'vitest'
import type { JobCheckerName } from './JobCheckers.ts'
import { HandlerCheckers } from './HandlerCheckers.ts'

// One job whose claim `c1` (deadline 1,000) a handler on host-2 (incarnation 1) runs from 0.
function world(): { checkers: HandlerCheckers; failures: Array<{ checker: JobCheckerName; sentence: string }> } {
  const failures: Array<{ checker: JobCheckerName; sentence: string }> = []
  const checkers = new HandlerCheckers({ fail: (checker, sentence) => failures.push({ checker, sentence }), claimOf: () => ({ token: 'c1', deadlineMs: 1_000 }) })
  checkers.handler({ hostId: 'host-2', incarnation: 1, queue: 'q', id: 'job-1', claimToken: 'c1', started: true, signal: new AbortController().signal, batched: false }, 0)
  return { checkers, failures }
}

describe('HandlerCheckers on a crash', () => {
  it('a running handler whose claim lapses after the heal fails heartbeat keeps claim', () => {
    const { checkers, failures } = world()
    checkers.healed(0)
    checkers.tick(1_000)
    expect(failures.map((failure) => failure.checker)).toEqual(['heartbeat keeps claim'])
  })

  it('a handler of a host that crashed before the heal is not running: its claim may lapse', () => {
    const { checkers, failures } = world()
    checkers.crashed('host-2', 1)
    checkers.healed(0)
    checkers.tick(1_000)
    expect(failures).toEqual([])
  })

  it('a crash of another incarnation of the host leaves the handler running', () => {
    const { checkers, failures } = world()
    checkers.crashed('host-2', 0)
    checkers.healed(0)
    checkers.tick(1_000)
    expect(failures.map((failure) => failure.checker)).toEqual(['heartbeat keeps claim'])
  })
})
