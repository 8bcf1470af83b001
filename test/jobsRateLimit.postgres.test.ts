/**
 * Rate limits through the jobs API with three engines on one PostgreSQL database (one
 * ManualClock): each engine runs `work` with six loops on a queue of `rateLimit` 10 a second
 * (burst 2) and `rateLimitPerKey` 4 a second (burst 1), whose jobs have two fairness keys and
 * none; handlers finish at once. Time moves in 50 ms steps. At no virtual time have the three
 * engines together started more jobs than burst + perSecond × elapsed allows, for the queue or
 * for a key; every job finishes; and the last starts within two scan intervals (2 s) of the time
 * the buckets allow it (measured: 2.2 s, the buckets' own time). Here the engines come
 * back at the next tokens through the due times the store answers (a refused delivery is parked
 * at its token, and nextDueMs names the buckets' next token) even without this engine's wake
 * hooks (StoreClaims.ts's `armNextToken`; 3.05 s with them disabled, once): the hooks are what
 * a lone engine's parked work loop needs (jobsRateLimit.test.ts).
 *
 * Real I/O is waited on by each engine's idle() and bounded idle turns; time only moves when the
 * test advances the clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock, type Matchbox, open } from '../src/index.ts'
import { freshDatabase } from './harness/database.ts'

const start = 1_700_000_000_000
const stepMs = 50
const rateLimit = { perSecond: 10, burst: 2 }
const rateLimitPerKey = { perSecond: 4, burst: 1 }
const keys = ['x', 'y', null] as const
const perKey = 8
let clock: ManualClock
let url: string
const engines: Matchbox[] = []

beforeAll(async () => {
  url = await freshDatabase('jobs_rate_limits')
  clock = new ManualClock(start)
})

afterAll(async () => {
  for (const engine of engines) await engine.close()
})

const boundOf = (limit: { readonly perSecond: number; readonly burst: number }, atMs: number): number => Math.floor(limit.burst + (limit.perSecond * (atMs - start)) / 1000 + 1e-9)

describe('rate limits across three engines (PostgreSQL)', () => {
  it('the engines together never start more than the buckets allow, and come back at each token', async () => {
    for (const hostId of ['a', 'b', 'c']) engines.push(await open({ store: { databaseUrl: url }, clock, seed: 13, hostId }))
    const [producer] = engines as [Matchbox]
    const q = producer.queue<{ key: string | null }>('paced', { rateLimit, rateLimitPerKey })
    for (const key of keys) for (let n = 0; n < perKey; n++) await q.enqueue({ key }, key === null ? {} : { fairnessKey: key })
    const total = keys.length * perKey
    const starts: Array<{ atMs: number; key: string }> = []
    const stops = engines.map((engine) =>
      engine.queue<{ key: string | null }>('paced', { rateLimit, rateLimitPerKey }).work(async (job) => {
        starts.push({ atMs: clock.now(), key: job.payload.key ?? '' })
      }, { concurrency: 6 }),
    )
    const violations: string[] = []
    for (let step = 0; step < 200 && starts.length < total; step++) {
      // Let claims land: each engine's due-time passes finish (idle()), then idle turns until the
      // starts settle, so time moves no faster than PostgreSQL answers on a loaded machine.
      await Promise.all(engines.map((engine) => engine.idle()))
      let seen = -1
      for (let idle = 0; idle < 60_000 && (seen !== starts.length || idle % 5_000 !== 0); idle++) {
        if (idle % 5_000 === 0) seen = starts.length
        await new Promise<void>((resolve) => setImmediate(resolve))
      }
      const now = clock.now()
      if (starts.length > boundOf(rateLimit, now)) violations.push(`${starts.length} started by +${now - start} ms, bound ${boundOf(rateLimit, now)}`)
      for (const key of ['x', 'y', '']) {
        const count = starts.filter((started) => started.key === key).length
        if (count > boundOf(rateLimitPerKey, now)) violations.push(`key '${key}': ${count} started by +${now - start} ms, bound ${boundOf(rateLimitPerKey, now)}`)
      }
      clock.advance(stepMs)
    }
    expect(violations).toEqual([])
    expect(starts).toHaveLength(total)
    // The queue-wide bucket allows the last start at (total − burst) / perSecond; keys allow it at (perKey − 1) / 4 s.
    const lastMs = Math.max(...starts.map((started) => started.atMs)) - start
    const allowedMs = Math.max(((total - rateLimit.burst) / rateLimit.perSecond) * 1000, ((perKey - 1) / rateLimitPerKey.perSecond) * 1000)
    console.log(`rate limits across three engines: last of ${total} starts at +${lastMs} ms, the buckets allow it at +${allowedMs} ms`)
    // Within two scan intervals of it: a Matching delivery refused for a key's token is parked and
    // served again at that token, which costs some steps more than the ideal pacing (measured
    // up to a scan more; the slack keeps a loaded machine from failing a safe run).
    expect(lastMs).toBeLessThanOrEqual(allowedMs + 2_000)
    await Promise.all(stops.map((stop) => stop()))
  })
})
