/**
 * Per-key concurrency limits through the jobs API with three engines on one PostgreSQL database
 * (one ManualClock): each engine runs `work` with six loops on a queue of `concurrencyPerKey: 2`
 * whose jobs share two keys, beside unkeyed jobs; the handlers hold their jobs until the test
 * lets them finish, one at a time. At no moment do more than two handlers across the three
 * engines run jobs of one key, and every job finishes (time moves one due-time scan at a time
 * when no handler runs, which is when a freed slot can wait for the next pass).
 *
 * Real I/O is waited on by bounded idle turns; time only moves when the test advances the clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock, type Matchbox, open } from '../src/index.ts'
import { heldByKey, releaseEveryHeld } from './harness/heldByKey.ts'
import { freshDatabase } from './harness/database.ts'

const start = 1_700_000_000_000
let clock: ManualClock
let url: string
const engines: Matchbox[] = []

beforeAll(async () => {
  url = await freshDatabase('jobs_concurrency')
  clock = new ManualClock(start)
})

afterAll(async () => {
  releaseEveryHeld()
  for (const engine of engines) await engine.close()
})

describe('per-key concurrency limits across three engines (PostgreSQL)', () => {
  it('no more than two jobs of a key run at once across the engines, and every job finishes', async () => {
    for (const hostId of ['a', 'b', 'c']) engines.push(await open({ store: { databaseUrl: url }, clock, seed: 11, hostId }))
    const [producer] = engines as [Matchbox]
    const q = producer.queue<{ key: string | null }>('tenants', { concurrencyPerKey: 2 })
    for (let n = 0; n < 8; n++) await q.enqueue({ key: 'x' }, { concurrencyKey: 'x' })
    for (let n = 0; n < 6; n++) await q.enqueue({ key: 'y' }, { concurrencyKey: 'y' })
    for (let n = 0; n < 4; n++) await q.enqueue({ key: null })
    const total = 18
    const { handler, gates, most, done } = heldByKey<{ key: string | null }>((payload) => payload.key ?? 'none')
    const stops = engines.map((engine) => engine.queue<{ key: string | null }>('tenants', { concurrencyPerKey: 2 }).work(handler, { concurrency: 6 }))
    for (let turn = 0; turn < 400 && done() < total; turn++) {
      // Let claims and handovers land (a bounded number of idle turns) before deciding whether anything runs.
      const before = gates.length
      for (let idle = 0; idle < 2_000 && gates.length === before; idle++) await new Promise<void>((resolve) => setImmediate(resolve))
      const next = gates.shift()
      if (next === undefined) clock.advance(1_000)
      else next()
    }
    expect(done()).toBe(total)
    expect(most.get('x')).toBeLessThanOrEqual(2)
    expect(most.get('y')).toBeLessThanOrEqual(2)
    expect(most.get('x')).toBe(2)
    await Promise.all(stops.map((stop) => stop()))
  })
})
