/**
 * Several engines on one PostgreSQL database: two workers and a producer-only engine, on one
 * ManualClock. Membership gives the queue's one partition to one worker; the producer owns
 * nothing; enqueues anywhere reach the owner through the due signal; the other worker's claims
 * are forwarded to the owner, which claims on its behalf and hands the job over; in steady
 * state no queue changes owner (its range id stays put).
 *
 * Real I/O (LISTEN/NOTIFY, statements) is waited on by conditions; time only moves when the
 * test advances the clock.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makePartitionKey } from '../src/domain/QueueKey.ts'
import { ownerOf } from '../src/domain/Rendezvous.ts'
import { ManualClock, type Matchbox, open } from '../src/index.ts'
import { freshDatabase } from './harness/database.ts'

const start = 1_700_000_000_000
let pool: pg.Pool
let clock: ManualClock
let url: string
const engines: Matchbox[] = []

// Waits for real I/O: yields to the event loop until `condition` holds, bounded by turns, not
// time. An idle turn takes microseconds (200,000 of them can pass in about a second), so the
// bound is set for a loaded machine; a stall still fails, with what it waited for.
async function eventually(condition: () => boolean | Promise<boolean>, what: string, turnsMax = 5_000_000): Promise<void> {
  for (let turn = 0; turn < turnsMax; turn++) {
    if (await condition()) return
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  throw new Error(`condition never held: ${what}`)
}

// A zero-wait claim still ends on a timer due now (a Matching poll's deadline): fire due timers
// until it settles, without moving time.
async function withTimersDue<T>(pending: Promise<T>): Promise<T> {
  let settled = false
  void pending.then(
    () => (settled = true),
    () => (settled = true),
  )
  await eventually(() => {
    clock.advance(0)
    return settled
  }, 'the claim settles')
  return pending
}

async function openEngine(hostId: string, role?: 'worker' | 'producer'): Promise<Matchbox> {
  const mb = await open({ store: { databaseUrl: url }, clock, seed: 7, hostId, ...(role === undefined ? {} : { role }) })
  engines.push(mb)
  return mb
}

async function rangeOf(queue: string): Promise<number | null> {
  const result = await pool.query<{ range_id: string }>("SELECT range_id FROM matchbox.task_queues WHERE queue_key LIKE $1 ORDER BY queue_key", [`jobs/${queue}/%`])
  return result.rows[0] === undefined ? null : Number(result.rows[0].range_id)
}

beforeAll(async () => {
  url = await freshDatabase('jobs_group')
  pool = new pg.Pool({ connectionString: url })
  clock = new ManualClock(start)
})
afterAll(async () => {
  for (const mb of engines) await mb.close()
  await pool.end()
})

describe('engines sharing one PostgreSQL database', () => {
  let w1: Matchbox
  let w2: Matchbox
  let producer: Matchbox
  const queue = 'group-emails'
  let owner: Matchbox
  let other: Matchbox

  it('two workers and a producer agree on the members; the producer is not one', async () => {
    w1 = await openEngine('w1')
    w2 = await openEngine('w2')
    producer = await openEngine('p', 'producer')
    // The next heartbeat makes every view whole.
    clock.advance(1_000)
    await eventually(() => [w1, w2, producer].every((mb) => mb.hosts().join() === 'w1,w2'), 'every engine sees w1 and w2')
    const partition = makePartitionKey({ namespace: 'jobs', family: queue, type: 'activity', partition: 0 })
    owner = ownerOf(partition, ['w1', 'w2']) === 'w1' ? w1 : w2
    other = owner === w1 ? w2 : w1
  })

  it('a job enqueued on the producer is claimed through the non-owner: forwarded to the owner, claimed there, handed over', async () => {
    const id = await producer.queue(queue).enqueue({ to: 'a@example.com' })
    const claimed = await other.queue(queue).claim({ waitMs: 3_000 })
    expect(claimed?.id).toBe(id)
    expect(claimed?.attempts).toBe(1)
    expect(await claimed?.ack()).toBe(true)
    expect(await producer.queue(queue).getJob(id)).toBeNull()
  })

  it('work on both workers handles every job once, and the queue keeps its owner (range id constant)', async () => {
    // The owner loads its Matching queue only for polls forwarded to it that find no due row: it
    // may not be loaded yet, and then a first acquire (range 1) is all that may happen.
    const rangeBefore = await rangeOf(queue)
    const handled = new Map<string, string[]>()
    // The owner's handlers hold their jobs until the non-owner has started one, so the rest must
    // reach the non-owner through forwarding (idle, the owner's loops would take every job the
    // producer hands over at its enqueue, however the machine's load times them).
    let nonOwnerStarted!: () => void
    const nonOwnerHasOne = new Promise<void>((resolve) => (nonOwnerStarted = resolve))
    const stops = [w1, w2].map((mb) =>
      mb.queue(queue).work(
        async (job) => {
          handled.set(job.id, [...(handled.get(job.id) ?? []), mb.hostId])
          if (mb === other) nonOwnerStarted()
          else await nonOwnerHasOne
        },
        { concurrency: 4 },
      ),
    )
    const ids: string[] = []
    for (let i = 0; i < 60; i++) ids.push(await producer.queue(queue).enqueue({ n: i }))
    await eventually(() => ids.every((id) => handled.has(id)), `every job handled (${handled.size} of ${ids.length})`)
    await Promise.all(stops.map((stop) => stop()))
    expect(ids.filter((id) => (handled.get(id)?.length ?? 0) !== 1)).toEqual([])
    // The non-owner's loops got jobs through forwarding.
    const byHost = new Map<string, number>()
    for (const hosts of handled.values()) for (const host of hosts) byHost.set(host, (byHost.get(host) ?? 0) + 1)
    expect(byHost.get(other.hostId) ?? 0).toBeGreaterThan(0)
    const rangeAfter = await rangeOf(queue)
    if (rangeBefore === null) expect([null, 1]).toContain(rangeAfter)
    else expect(rangeAfter).toBe(rangeBefore)
    const left = await pool.query("SELECT count(*)::int AS n FROM matchbox.jobs WHERE queue = $1", [queue])
    expect(left.rows[0].n).toBe(0)
  })

  it('the producer owns no physical queue and delivers nothing', async () => {
    const ownedByProducer = await pool.query('SELECT count(*)::int AS n FROM matchbox.membership_hosts WHERE host_id = $1', ['p'])
    expect(ownedByProducer.rows[0].n).toBe(0)
  })

  it('a queue stores its partition count once; every engine then routes with it, and a different count is refused', async () => {
    const wide = 'group-wide'
    await w1.queue(wide, { partitions: 4 }).enqueue({ n: 1 })
    await expect(w2.queue(wide, { partitions: 2 }).enqueue({ n: 2 })).rejects.toMatchObject({ _tag: 'InvalidInput' })
    const ids = [await producer.queue(wide).enqueue({ n: 3 }), await w2.queue(wide).enqueue({ n: 4 })]
    const seen = new Set<string>()
    for (let round = 0; round < 20 && seen.size < 3; round++) {
      for (const mb of [w1, w2]) {
        const job = await withTimersDue(mb.queue(wide).claim({ waitMs: 0 }))
        if (job !== null) {
          seen.add(job.id)
          await job.ack()
        }
      }
    }
    expect(seen.size).toBe(3)
    for (const id of ids) expect(seen.has(id)).toBe(true)
  })
})
