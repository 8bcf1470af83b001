/**
 * Rate limits through the jobs API on the memory stores and a ManualClock: a handle's
 * `rateLimit` starts a burst and then one job per token as the clock moves; `rateLimitPerKey`
 * gives each fairness key (and the unkeyed jobs, together) a bucket of its own; a work loop on a
 * limited queue is woken at the next token by the due-time driver, well inside the 1 s scan;
 * bad limits are a typed InvalidInput. The store's guard itself is held by the JobStore
 * conformance suite (JobRateLimitConformance) and, across two pools, by rateLimits.postgres.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { InvalidInput, ManualClock, type Matchbox, open } from '../src/index.ts'
import { settle } from './harness/settle.ts'

const start = 1_700_000_000_000

async function engine(clock = new ManualClock(start)): Promise<Matchbox> {
  return open({ store: 'memory', clock, seed: 11, hostId: 'rates' })
}

describe('jobs API: rate limits', () => {
  it('a burst, then one claim per token as the clock moves', async () => {
    const clock = new ManualClock(start)
    const mb = await engine(clock)
    const q = mb.queue('burst', { rateLimit: { perSecond: 10, burst: 2 } })
    for (let n = 0; n < 6; n++) await q.enqueue(n)
    const claimedNow = async (): Promise<number> => {
      let claimed = 0
      while ((await q.claim()) !== null) claimed++
      return claimed
    }
    expect(await claimedNow()).toBe(2)
    clock.advance(99)
    expect(await claimedNow()).toBe(0)
    clock.advance(1)
    expect(await claimedNow()).toBe(1)
    clock.advance(250)
    expect(await claimedNow()).toBe(2)
    await mb.close()
  })

  it('each fairness key has its own bucket; unkeyed jobs share one', async () => {
    const mb = await engine()
    const q = mb.queue<string>('keys', { rateLimitPerKey: { perSecond: 1, burst: 1 } })
    for (const key of ['a', 'a', 'b', 'b']) await q.enqueue(key, { fairnessKey: key })
    await q.enqueue('none')
    await q.enqueue('none')
    const claimed: string[] = []
    for (let job = await q.claim(); job !== null; job = await q.claim()) claimed.push(job.payload)
    expect(claimed.sort()).toEqual(['a', 'b', 'none'])
    await mb.close()
  })

  it('a work loop on a limited queue starts a job at each token, woken by the driver before the scan', async () => {
    const clock = new ManualClock(start)
    const mb = await engine(clock)
    const q = mb.queue('paced', { rateLimit: { perSecond: 10, burst: 1 } })
    for (let n = 0; n < 5; n++) await q.enqueue(n)
    const startedAt: number[] = []
    const stop = q.work(async () => {
      startedAt.push(clock.now())
    }, { concurrency: 2 })
    await settle(20)
    // A token every 100 ms: four steps of 100 ms (far inside the 1 s scan) start the other four.
    for (let step = 0; step < 4; step++) {
      clock.advance(100)
      await settle(20)
    }
    expect(startedAt.map((at) => at - start)).toEqual([0, 100, 200, 300, 400])
    await stop()
    await mb.close()
  })

  it('refuses bad limits with InvalidInput', async () => {
    const mb = await engine()
    for (const limit of [{ perSecond: 0, burst: 1 }, { perSecond: Number.POSITIVE_INFINITY, burst: 1 }, { perSecond: 1, burst: 0 }, { perSecond: 1, burst: 2.5 }, { perSecond: 2_000_000, burst: 1 }, 5]) {
      expect(() => mb.queue('refusals', { rateLimit: limit } as never)).toThrow(InvalidInput)
      expect(() => mb.queue('refusals', { rateLimitPerKey: limit } as never)).toThrow(InvalidInput)
    }
    await mb.close()
  })
})
