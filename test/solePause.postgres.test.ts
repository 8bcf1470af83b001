/**
 * A sole engine survives a pause, on PostgreSQL with an injected ManualClock: the only worker
 * of its queue, its clock advanced far past the membership TTL (a GC pause, a stopped
 * container, a hypervisor stall, or a user's deterministic test moving time), still claims the
 * due job with `claim({ waitMs: 0 })` — after every pause, not only the first — and a `work`
 * loop started before the pause runs a job enqueued after it.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock, type Matchbox, open } from '../src/index.ts'
import { membershipHostTtlMs } from '../src/kernel/Limits.ts'
import { freshDatabase } from './harness/database.ts'
import { until } from './harness/settle.ts'

let pool: pg.Pool
let mb: Matchbox
const clock = new ManualClock(1_700_000_000_000)

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await freshDatabase('sole_pause') })
  mb = await open({ store: { pool }, clock, seed: 9, hostId: 'sole' })
})
afterAll(async () => {
  await mb.close()
  await pool.end()
})

describe('a sole engine on PostgreSQL that paused', () => {
  it('claims the due job right after each pause past the membership TTL', async () => {
    const q = mb.queue('paused')
    for (const pauseMs of [membershipHostTtlMs + 1, 60_000, 3_600_000]) {
      const id = await q.enqueue({ pauseMs })
      clock.advance(pauseMs)
      const job = await q.claim({ waitMs: 0 })
      expect(job?.id).toBe(id)
      expect(await job?.ack()).toBe(true)
      expect(mb.hosts()).toEqual(['sole'])
    }
  })

  it('a work loop started before the pause runs a job enqueued after it', async () => {
    const q = mb.queue('paused-worker')
    const seen: unknown[] = []
    const stop = q.work(async (job) => {
      seen.push(job.payload)
    })
    clock.advance(2 * membershipHostTtlMs)
    await q.enqueue('after the pause')
    await until(() => seen.length === 1, 'the worker ran the job enqueued after the pause', 100_000)
    await stop()
    expect(seen).toEqual(['after the pause'])
  })
})
