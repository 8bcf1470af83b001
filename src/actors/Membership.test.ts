/**
 * Membership tests, on ManualClock and the memory membership store: static views route by
 * rendezvous and may disagree; dynamic hosts see each other, a host that stops heartbeating
 * drops out of others' views after the TTL (and its partitions move), a host cut off from the
 * store drops out of its own view too, leaving is seen at the next beat, listeners hear each
 * change once, a hung store never stacks beats, and a clock advanced only once `settled()`
 * resolves never lapses a live peer however late the store answers.
 */
import { describe, expect, it } from 'vitest'
import { makeGate } from '../../test/harness/gate.ts'
import { settle } from '../../test/harness/settle.ts'
import { InvalidInput, type MatchboxError, Unavailable } from '../domain/errors.ts'
import type { PartitionKey } from '../domain/QueueKey.ts'
import { ownerOf } from '../domain/Rendezvous.ts'
import { ManualClock } from '../kernel/Clock.ts'
import type { MembershipStore } from '../persistence/membership/MembershipStore.ts'
import { makeMemoryMembershipStore } from '../persistence/membership/MemoryMembershipStore.ts'
import { makeDynamicMembership, makeStaticMembership, type Membership } from './Membership.ts'

const intervalMs = 1_000
const ttlMs = 5_000
const partitions: ReadonlyArray<PartitionKey> = Array.from({ length: 64 }, (_, index) => ({
  namespace: 'default',
  family: `family-${index >> 2}`,
  type: 'workflow',
  partition: index & 3,
}))

// Moves time one heartbeat at a time, letting each beat's store calls finish before the next.
async function step(clock: ManualClock, ms: number): Promise<void> {
  for (let done = 0; done < ms; done += intervalMs) {
    clock.advance(Math.min(intervalMs, ms - done))
    await settle()
  }
}

function counter(membership: Membership): { readonly count: () => number; readonly seen: ReadonlyArray<ReadonlyArray<string>> } {
  const seen: Array<ReadonlyArray<string>> = []
  membership.subscribe(() => seen.push(membership.hosts()))
  return { count: () => seen.length, seen }
}

/** Wraps a store; while `down` is true every call fails with `Unavailable` (wrap, don't fork). */
function flaky(store: MembershipStore): MembershipStore & { down: boolean } {
  const wrapper = {
    down: false,
    kind: store.kind,
    heartbeat: (params: Parameters<MembershipStore['heartbeat']>[0]) => (wrapper.down ? refuse('heartbeat') : store.heartbeat(params)),
    leave: (params: Parameters<MembershipStore['leave']>[0]) => (wrapper.down ? refuse('leave') : store.leave(params)),
    liveHosts: (params: Parameters<MembershipStore['liveHosts']>[0]) => (wrapper.down ? refuse('liveHosts') : store.liveHosts(params)),
    close: () => store.close(),
  }
  return wrapper
}
function refuse(operation: string): Promise<never> {
  return Promise.reject(new Unavailable({ operation, detail: 'store down (test)', maybeCommitted: false }))
}

describe('static membership', () => {
  it('routes by rendezvous over a sorted, de-duplicated list', async () => {
    const membership = makeStaticMembership(['c', 'a', 'b', 'a'])
    expect(membership.hosts()).toEqual(['a', 'b', 'c'])
    for (const key of partitions) expect(membership.ownerOf(key)).toBe(ownerOf(key, ['a', 'b', 'c']))
    await membership.close()
    expect(membership.hosts()).toEqual([])
    expect(membership.ownerOf(partitions[0] as PartitionKey)).toBeNull()
  })

  it('two hosts given different lists may disagree about owners', () => {
    const first = makeStaticMembership(['a', 'b'])
    const second = makeStaticMembership(['a', 'b', 'c'])
    const disagreements = partitions.filter((key) => first.ownerOf(key) !== second.ownerOf(key))
    expect(disagreements.length).toBeGreaterThan(0)
    for (const key of disagreements) expect(second.ownerOf(key)).toBe('c')
  })

  it('refuses invalid host ids', () => {
    expect(() => makeStaticMembership(['a', ''])).toThrow(InvalidInput)
    expect(() => makeStaticMembership(['a\nb'])).toThrow(InvalidInput)
  })
})

describe('dynamic membership', () => {
  it('two hosts on one store see each other; listeners hear each change once', async () => {
    const clock = new ManualClock(10_000)
    const store = makeMemoryMembershipStore()
    const a = makeDynamicMembership({ hostId: 'host-a', store, clock, heartbeatIntervalMs: intervalMs, ttlMs })
    const heardA = counter(a)
    expect(a.hosts()).toEqual([])
    await a.ready
    expect(a.hosts()).toEqual(['host-a'])
    const b = makeDynamicMembership({ hostId: 'host-b', store, clock, heartbeatIntervalMs: intervalMs, ttlMs })
    await b.ready
    expect(b.hosts()).toEqual(['host-a', 'host-b'])
    expect(a.hosts()).toEqual(['host-a'])
    await step(clock, intervalMs)
    expect(a.hosts()).toEqual(['host-a', 'host-b'])
    await step(clock, 10 * intervalMs)
    expect(heardA.seen).toEqual([['host-a'], ['host-a', 'host-b']])
    for (const key of partitions) {
      expect(a.ownerOf(key)).toBe(b.ownerOf(key))
      expect(a.ownerOf(key)).toBe(ownerOf(key, ['host-a', 'host-b']))
    }
    await a.close()
    await b.close()
    expect(clock.pendingTimerCount()).toBe(0)
  })

  it('a host that stops heartbeating drops out after the TTL, and its partitions move', async () => {
    const clock = new ManualClock(0)
    // B's clock is never advanced: its timers never fire, as if the process froze or died.
    const frozen = new ManualClock(0)
    const store = makeMemoryMembershipStore()
    const a = makeDynamicMembership({ hostId: 'host-a', store, clock, heartbeatIntervalMs: intervalMs, ttlMs })
    const b = makeDynamicMembership({ hostId: 'host-b', store, clock: frozen, heartbeatIntervalMs: intervalMs, ttlMs })
    await Promise.all([a.ready, b.ready])
    await step(clock, intervalMs)
    expect(a.hosts()).toEqual(['host-a', 'host-b'])
    const ownedByB = partitions.filter((key) => a.ownerOf(key) === 'host-b')
    expect(ownedByB.length).toBeGreaterThan(0)
    const heard = counter(a)

    await step(clock, ttlMs - 2 * intervalMs)
    expect(clock.now()).toBe(ttlMs - intervalMs)
    expect(a.hosts()).toEqual(['host-a', 'host-b'])
    await step(clock, intervalMs)
    expect(clock.now()).toBe(ttlMs)
    expect(a.hosts()).toEqual(['host-a'])
    expect(heard.seen).toEqual([['host-a']])
    for (const key of ownedByB) expect(a.ownerOf(key)).toBe('host-a')
    await a.close()
  })

  it('a host cut off from the store drops out of every view, its own included, and rejoins', async () => {
    const clock = new ManualClock(0)
    const shared = makeMemoryMembershipStore()
    const cut = flaky(shared)
    const errors: MatchboxError[] = []
    const a = makeDynamicMembership({ hostId: 'host-a', store: shared, clock, heartbeatIntervalMs: intervalMs, ttlMs })
    const c = makeDynamicMembership({ hostId: 'host-c', store: cut, clock, heartbeatIntervalMs: intervalMs, ttlMs, onStoreError: (error) => errors.push(error) })
    await Promise.all([a.ready, c.ready])
    await step(clock, intervalMs)
    expect(c.hosts()).toEqual(['host-a', 'host-c'])
    cut.down = true
    await step(clock, ttlMs - intervalMs)
    expect(a.hosts()).toEqual(['host-a', 'host-c'])
    expect(c.hosts()).toEqual(['host-a', 'host-c'])
    await step(clock, intervalMs)
    expect(a.hosts()).toEqual(['host-a'])
    // C's cached rows lapse by its own clock: it owns nothing while it cannot prove it is a member.
    expect(c.hosts()).toEqual([])
    expect(c.ownerOf(partitions[0] as PartitionKey)).toBeNull()
    expect(errors.length).toBeGreaterThan(0)
    expect(errors.every((error) => error._tag === 'Unavailable')).toBe(true)
    cut.down = false
    await step(clock, intervalMs)
    expect(c.hosts()).toEqual(['host-a', 'host-c'])
    await step(clock, intervalMs)
    expect(a.hosts()).toEqual(['host-a', 'host-c'])
    await a.close()
    await c.close()
  })

  it('close leaves the store: others drop the host at their next beat, and its own view empties silently', async () => {
    const clock = new ManualClock(0)
    const store = makeMemoryMembershipStore()
    const a = makeDynamicMembership({ hostId: 'host-a', store, clock, heartbeatIntervalMs: intervalMs, ttlMs })
    const b = makeDynamicMembership({ hostId: 'host-b', store, clock, heartbeatIntervalMs: intervalMs, ttlMs })
    await Promise.all([a.ready, b.ready])
    await step(clock, intervalMs)
    const heardA = counter(a)
    await a.close()
    await a.close()
    expect(a.hosts()).toEqual([])
    expect(await store.liveHosts({ nowMs: clock.now() })).toEqual([expect.objectContaining({ hostId: 'host-b' })])
    await step(clock, intervalMs)
    expect(b.hosts()).toEqual(['host-b'])
    expect(heardA.count()).toBe(0)
    await b.close()
    expect(await store.liveHosts({ nowMs: clock.now() })).toEqual([])
  })

  it('a host that paused past the TTL renews before it publishes: it never drops out of its own view', async () => {
    const clock = new ManualClock(0)
    const store = makeMemoryMembershipStore()
    const a = makeDynamicMembership({ hostId: 'host-a', store, clock, heartbeatIntervalMs: intervalMs, ttlMs })
    await a.ready
    const heard = counter(a)
    // One synchronous stretch far past the TTL, as timers fire after a stall.
    clock.advance(10 * ttlMs)
    const renewal = a.current()
    expect(renewal).not.toBeNull()
    await renewal
    expect(a.current()).toBeNull()
    expect(a.hosts()).toEqual(['host-a'])
    expect(heard.seen).toEqual([])
    expect((await store.liveHosts({ nowMs: clock.now() })).map((row) => row.hostId)).toEqual(['host-a'])
    await a.close()
  })

  it('a hung store never stacks beats, and rows still lapse on time', async () => {
    const clock = new ManualClock(0)
    const inner = makeMemoryMembershipStore()
    let hang = false
    let calls = 0
    const hanging: MembershipStore = {
      kind: 'memory',
      heartbeat: (params) => {
        calls++
        return hang ? new Promise(() => {}) : inner.heartbeat(params)
      },
      leave: (params) => inner.leave(params),
      liveHosts: (params) => inner.liveHosts(params),
      close: () => inner.close(),
    }
    const a = makeDynamicMembership({ hostId: 'host-a', store: hanging, clock, heartbeatIntervalMs: intervalMs, ttlMs })
    await a.ready
    expect(a.hosts()).toEqual(['host-a'])
    hang = true
    const before = calls
    await step(clock, ttlMs - intervalMs)
    expect(calls).toBe(before + 1)
    expect(a.hosts()).toEqual(['host-a'])
    await step(clock, intervalMs)
    expect(a.hosts()).toEqual([])
    expect(calls).toBe(before + 1)
  })

  it('a clock advanced past beats that lag drops live peers; advanced only once settled() resolves, it never does', async () => {
    // Every store call answers `lagTurns` event-loop turns late, as a busy database would.
    const lagTurns = 5
    const lagging = (inner: MembershipStore): MembershipStore => {
      const late = async <T>(call: () => Promise<T>): Promise<T> => {
        await settle(lagTurns)
        return call()
      }
      return {
        kind: inner.kind,
        heartbeat: (params) => late(() => inner.heartbeat(params)),
        leave: (params) => late(() => inner.leave(params)),
        liveHosts: (params) => late(() => inner.liveHosts(params)),
        close: () => inner.close(),
      }
    }
    const run = async (paced: boolean): Promise<ReadonlyArray<ReadonlyArray<string>>> => {
      const clock = new ManualClock(0)
      const store = lagging(makeMemoryMembershipStore())
      const a = makeDynamicMembership({ hostId: 'host-a', store, clock, heartbeatIntervalMs: intervalMs, ttlMs })
      const b = makeDynamicMembership({ hostId: 'host-b', store, clock, heartbeatIntervalMs: intervalMs, ttlMs })
      await Promise.all([a.ready, b.ready])
      clock.advance(intervalMs)
      await Promise.all([a.settled(), b.settled()])
      expect([a.hosts(), b.hosts()]).toEqual([['host-a', 'host-b'], ['host-a', 'host-b']])
      const heard = counter(b)
      for (let beat = 0; beat < 4 * (ttlMs / intervalMs); beat++) {
        clock.advance(intervalMs)
        // Unpaced, the next advance comes after a few turns, as a test that waits only for its
        // own work would: both beats are still reading.
        await (paced ? Promise.all([a.settled(), b.settled()]) : settle())
      }
      await a.close()
      await b.close()
      return heard.seen
    }
    // Both hosts keep beating, yet B's cached rows lapse by the advanced clock: A drops out of
    // B's view (B too, at times) and comes back at B's next read — ownership flaps each time.
    const unpaced = await run(false)
    const dropped = unpaced.findIndex((view) => !view.includes('host-a'))
    expect(dropped).toBeGreaterThanOrEqual(0)
    expect(unpaced.slice(dropped)).toContainEqual(['host-a', 'host-b'])
    expect(await run(true)).toEqual([])
  })

  it('settled() resolves at once with no beat in flight, and waits for a beat started meanwhile', async () => {
    const clock = new ManualClock(0)
    const inner = makeMemoryMembershipStore()
    const gate = makeGate()
    const gated: MembershipStore = {
      kind: inner.kind,
      heartbeat: async (params) => {
        await gate.pass()
        return inner.heartbeat(params)
      },
      leave: (params) => inner.leave(params),
      liveHosts: (params) => inner.liveHosts(params),
      close: () => inner.close(),
    }
    const a = makeDynamicMembership({ hostId: 'host-a', store: gated, clock, heartbeatIntervalMs: intervalMs, ttlMs })
    await a.ready
    let settledNow = false
    await a.settled().then(() => (settledNow = true))
    expect(settledNow).toBe(true)
    gate.close()
    clock.advance(intervalMs)
    let settledLater = false
    const waiting = a.settled().then(() => (settledLater = true))
    await settle()
    expect(gate.held()).toBe(1)
    expect(settledLater).toBe(false)
    gate.open()
    await waiting
    expect(settledLater).toBe(true)
    expect((await inner.liveHosts({ nowMs: clock.now() }))[0]?.lastSeenMs).toBe(intervalMs)
    await a.close()
  })

  it('refuses bad options', () => {
    const clock = new ManualClock(0)
    const store = makeMemoryMembershipStore()
    expect(() => makeDynamicMembership({ hostId: '', store, clock })).toThrow(InvalidInput)
    expect(() => makeDynamicMembership({ hostId: 'a', store, clock, heartbeatIntervalMs: 0 })).toThrow(InvalidInput)
    expect(() => makeDynamicMembership({ hostId: 'a', store, clock, heartbeatIntervalMs: 1_000, ttlMs: 1_000 })).toThrow(InvalidInput)
    expect(clock.pendingTimerCount()).toBe(0)
  })
})
