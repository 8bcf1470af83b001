/**
 * MembershipMoves' window rule, on stand-in hosts: prompt delivery is not judged from a move's
 * start until every live view agrees, then from the unload delay after; a range lost meanwhile is
 * waited out only where the loser still owns the partition; a poll sent to an engine that left
 * and stopped listening holds its queue back until the poll's timeout. And a leave races a job
 * enqueued in its instant only on worlds that draw the races.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/kernel/Clock.ts'
import { forwardedPollGraceMs, membershipUnloadDelayMs } from '../../src/kernel/Limits.ts'
import type { JobClients } from './JobClients.ts'
import type { JobsHost } from './JobsHost.ts'
import { MembershipMoves } from './MembershipMoves.ts'

// A stand-in host: its view and the partitions of `queue-0` it owns are set by the test.
function standIn(id: string, view: string[], owned: number[] = []) {
  const host = {
    id,
    role: 'worker' as const,
    alive: true,
    left: false,
    incarnation: 0,
    view: () => view,
    ownedPartitions: () => owned,
    listening: () => !host.left,
    leave: async () => {
      host.alive = false
      host.left = true
    },
    restart: () => {},
    startAllWork: () => {},
    setView(next: string[], nextOwned: number[] = owned) {
      view = next
      owned = nextOwned
    },
  }
  return host
}

function world(seed: number, leaveRaces = false) {
  const clock = new ManualClock(0)
  const h1 = standIn('host-1', ['host-1', 'host-2'], [0])
  const h2 = standIn('host-2', ['host-1', 'host-2'], [1])
  const hosts = [h1, h2] as unknown as JobsHost[]
  // What the clients were asked, in order, beside each leave (`left host-2`).
  const calls: string[] = []
  const leave = h2.leave
  h2.leave = () => {
    calls.push('left host-2')
    return leave()
  }
  const clients = { held: [], forget: () => {}, enqueue: () => true, enqueueDueNow: (host: JobsHost, queue: string) => calls.push(`due now → ${host.id} ${queue}`) } as unknown as JobClients
  const moves = new MembershipMoves({
    seed,
    moves: 1,
    leaveRaces,
    clock,
    queues: { 'queue-0': { visibilityTimeoutS: 1, maxAttempts: 1, backoffBaseS: 1, partitions: 2 } },
    hosts,
    clients,
    makeWorker: (hostId) => standIn(hostId, ['host-1', 'host-2', hostId], [1]) as unknown as JobsHost,
    heldByWorld: () => false,
    log: () => {},
  })
  return { clock, h1, h2, hosts, moves, calls }
}

// Steps time 100 ms at a time until a move has started.
function untilMoving(clock: ManualClock, moves: MembershipMoves): void {
  for (let i = 0; i < 200 && !moves.moving(); i++) {
    clock.advance(100)
    moves.step()
  }
}

describe('MembershipMoves', () => {
  it('judges nothing from a move until the views agree, then from the unload delay after', () => {
    const { clock, hosts, moves } = world(1)
    moves.healed(0)
    expect(moves.judgedFromMs()).toBe(Number.NEGATIVE_INFINITY)
    untilMoving(clock, moves)
    expect(moves.moving()).toBe(true)
    if (moves.judgedFromMs() === Number.POSITIVE_INFINITY) {
      // Views disagree until every live host sees the live workers.
      const live = (hosts as unknown as Array<ReturnType<typeof standIn>>).filter((host) => host.alive)
      const workers = live.map((host) => host.id)
      for (const host of live) host.setView(workers)
      clock.advance(10)
      moves.step()
    }
    const agreedAtMs = clock.now()
    expect(moves.judgedFromMs()).toBe(agreedAtMs + membershipUnloadDelayMs)
  })

  it('waits out a range lost during a move only where the loser owns the partition once the views agree', () => {
    const { clock, hosts, moves } = world(1)
    moves.healed(0)
    untilMoving(clock, moves)
    const live = (hosts as unknown as Array<ReturnType<typeof standIn>>).filter((host) => host.alive)
    // Lost before the views agree: kept for then.
    expect(moves.lost('host-1', 'queue-0', 0, clock.now())).toBe(false)
    expect(moves.lost('host-1', 'queue-0', 1, clock.now())).toBe(false)
    const workers = live.map((host) => host.id)
    for (const host of live) host.setView(workers, host.id === 'host-1' ? [0] : [])
    clock.advance(10)
    const kept = moves.step()
    expect(kept.map((loss) => loss.family)).toEqual(['queue-0'])
    // After the views agree, judged at once by the loser's view.
    expect(moves.lost('host-1', 'queue-0', 0, clock.now())).toBe(true)
    expect(moves.lost('host-1', 'queue-0', 1, clock.now())).toBe(false)
  })

  it('races a leave with an enqueue of a job due now, issued before the leaver begins closing, when the world draws races', () => {
    const leaves: string[][] = []
    for (let seed = 1; seed <= 40; seed++) {
      const { clock, h2, moves, calls } = world(seed, true)
      moves.healed(0)
      untilMoving(clock, moves)
      if (h2.left) leaves.push(calls)
      else expect(calls).toEqual([])
    }
    expect(leaves.length).toBeGreaterThan(0)
    // host-1 stays; host-2 leaves, and a job of the queue it owns a partition of comes first, through it or through host-1.
    for (const calls of leaves) expect(calls).toEqual([expect.stringMatching(/^due now → host-[12] queue-0$/), 'left host-2'])
    expect(new Set(leaves.map((calls) => calls[0])).size).toBe(2)
  })

  it('makes no race without the world drawing races', () => {
    for (let seed = 1; seed <= 10; seed++) {
      const { clock, moves, calls } = world(seed)
      moves.healed(0)
      untilMoving(clock, moves)
      expect(calls.filter((call) => call.startsWith('due now'))).toEqual([])
    }
  })

  it('holds a queue back while a poll sent to an engine that left and stopped listening waits for its timeout', () => {
    const { clock, h2, moves } = world(1)
    moves.pollSent('host-2', 'queue-0', 300)
    expect(moves.judgedFromMs('queue-0')).toBe(Number.NEGATIVE_INFINITY)
    h2.left = true
    moves.pollSent('host-2', 'queue-0', 300)
    expect(moves.judgedFromMs('queue-0')).toBe(clock.now() + 300 + forwardedPollGraceMs)
    expect(moves.judgedFromMs('queue-1')).toBe(Number.NEGATIVE_INFINITY)
  })
})
