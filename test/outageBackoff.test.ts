/**
 * Back-off while the store is down, on a ManualClock (no sleeps): wrappers fail every call of the
 * Matching Store and the JobStore while `down`, then recover. Counted per virtual second: the
 * worker's claim attempts (each reads the queue's stored partition count first:
 * `getUserData`), the due-time driver's passes (`takeDue`), and the `onError` reports —
 * at about one back-off step a second once the back-off reaches its 1 s cap — the four loops of
 * one worker share the step, and report once per step with the count of failures left
 * unreported. After the store returns a new job is handled within a second.
 */
import { describe, expect, it } from 'vitest'
import { Unavailable } from '../src/domain/errors.ts'
import { ManualClock, Random } from '../src/index.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { settle } from './harness/settle.ts'

const start = 1_700_000_000_000

interface Outage {
  down: boolean
  /** Failed calls per method, each with the virtual time it failed at. */
  readonly failures: Map<string, number[]>
}

// Fails every call but close while `outage.down`, as a store whose server is gone would.
function failing<S extends object>(inner: S, outage: Outage, clock: ManualClock): S {
  return new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown
      if (typeof value !== 'function' || property === 'close') return value
      return (...args: unknown[]) => {
        if (!outage.down) return (value as (...a: unknown[]) => unknown).apply(target, args)
        const name = String(property)
        outage.failures.set(name, [...(outage.failures.get(name) ?? []), clock.now()])
        return Promise.reject(new Unavailable({ operation: name, detail: 'connection refused', maybeCommitted: false }))
      }
    },
  })
}

// Counts of `times` per whole virtual second since `fromMs`.
function perSecond(times: ReadonlyArray<number>, fromMs: number, seconds: number): number[] {
  const counts = Array.from({ length: seconds }, () => 0)
  for (const at of times) {
    const second = Math.floor((at - fromMs) / 1_000)
    if (second >= 0 && second < seconds) counts[second] = (counts[second] ?? 0) + 1
  }
  return counts
}

describe('back-off while the store is unavailable', () => {
  it('paces claims and delivery at the 1 s cap, rate-limits onError, and recovers within a second', async () => {
    const seed = 20261201
    console.log(`seed ${seed}`)
    const clock = new ManualClock(start)
    const outage: Outage = { down: false, failures: new Map() }
    const memoryStore = makeMemoryStore()
    const store = failing(memoryStore, outage, clock)
    const mb = makeMatchbox({
      hostId: 'outage',
      store,
      jobStore: failing(makeMemoryJobStore({ queueRanges: memoryStore }), outage, clock),
      clock,
      random: Random.make(seed),
      closeStores: () => store.close(),
    })
    // Queue b has a job due in the middle of the outage: the driver keeps trying to deliver it.
    await mb.queue('b').enqueue({ n: 0 }, { runAt: start + 5_000 })
    await settle()

    outage.down = true
    const downAtMs = clock.now()
    // A worker started during the outage: its first claim must read the queue's stored
    // partition count, so every claim attempt meets the store.
    const a = mb.queue('a')
    const handled: number[] = []
    const reports: Array<{ at: number; tag: string; suppressed: number }> = []
    const stop = a.work(
      async () => {
        handled.push(clock.now())
      },
      {
        concurrency: 4,
        onError: (error, _job, details) => reports.push({ at: clock.now(), tag: (error as { _tag: string })._tag, suppressed: details.suppressed }),
      },
    )
    const seconds = 10
    for (let step = 0; step < seconds * 100; step++) {
      clock.advance(10)
      await settle()
    }
    outage.down = false
    const upAtMs = clock.now()

    const claims = perSecond(outage.failures.get('getUserData') ?? [], downAtMs, seconds)
    // The driver meets the outage at its next scan (within a second).
    const passTimes = outage.failures.get('takeDue') ?? []
    expect((passTimes[0] ?? Number.POSITIVE_INFINITY) - downAtMs).toBeLessThanOrEqual(1_000)
    const passes = perSecond(passTimes, passTimes[0] ?? downAtMs, seconds - 1)
    const reported = perSecond(
      reports.map((report) => report.at),
      downAtMs,
      seconds,
    )
    console.log({ claims, passes, reported })
    // Climbing 50 ms → 1 s takes the first second; from then on at most two steps a second
    // (each waits between half the cap and the cap): one claim per loop per step, one pass.
    expect(claims.slice(1).every((count) => count >= 1 && count <= 2 * 4)).toBe(true)
    expect(passes.slice(1).every((count) => count >= 1 && count <= 2)).toBe(true)
    expect(claims[0]).toBeLessThanOrEqual(6 * 4)
    expect(passes[0]).toBeLessThanOrEqual(6)
    // One report per back-off step, whatever the concurrency; with the failures they left
    // unreported they account for every loop's failed claim (the four loops share one read).
    expect(reported[0]).toBeLessThanOrEqual(6)
    expect(reported.slice(1).every((count) => count >= 1 && count <= 2)).toBe(true)
    expect(reports.some((report) => report.suppressed >= 3)).toBe(true)
    expect(reports.every((report) => report.tag === 'Unavailable')).toBe(true)
    const claimFailures = outage.failures.get('getUserData')?.length ?? 0
    const accounted = reports.length + reports.reduce((sum, report) => sum + report.suppressed, 0)
    expect(accounted).toBeGreaterThanOrEqual(claimFailures)
    expect(accounted).toBeLessThanOrEqual(4 * claimFailures)

    // Recovery: a job enqueued as the store returns is handled within a second.
    await a.enqueue({ n: 1 })
    for (let step = 0; step < 150 && handled.length === 0; step++) {
      clock.advance(10)
      await settle()
    }
    expect(handled).toHaveLength(1)
    expect((handled[0] as number) - upAtMs).toBeLessThan(1_000)
    await stop()
    await mb.close()
  })
})
