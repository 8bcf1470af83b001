/**
 * Two hosts racing `runSchedules` for 1,000 virtual minutes produce every occurrence exactly
 * once: on the memory stores (two engines sharing them) and on PostgreSQL (two
 * engines, each with its own Pool, on one database).
 *
 * Each virtual minute is three 20 s steps; in each step the live hosts call `runSchedules` at
 * once, in an order drawn from the seed. Hosts crash (stop calling, so the lease lapses and the
 * other takes over with a larger fence) and restart (a new engine under the same host id) at
 * seeded moments. At the end the occurrences are read back — through claims on memory, with
 * plain SQL on PostgreSQL — and compared with the occurrences the specs define.
 */
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import { Cron } from 'croner'
import { ManualClock, type Matchbox, open, Random } from '../src/index.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { jobDeliveryRefusedRetryMs, scheduleLeaseTtlMs } from '../src/kernel/Limits.ts'
import { freshDatabase } from './harness/database.ts'

const start = 1_700_000_000_000
const minutes = 1_000
const schedules = [
  { name: 'tick', spec: '@every 60s' },
  { name: 'odd', spec: '@every 90s' },
  { name: 'five', spec: '*/5 * * * *' },
] as const

/** The occurrences each schedule must have produced by `endMs`, registered at `anchorMs`. */
function expectedOccurrences(anchorMs: number, endMs: number): Record<string, number[]> {
  const every = (intervalMs: number) => Array.from({ length: Math.floor((endMs - anchorMs) / intervalMs) }, (_, k) => anchorMs + (k + 1) * intervalMs)
  const cron = new Cron('*/5 * * * *', { mode: '5-part', timezone: 'UTC' })
  const five: number[] = []
  for (let at = cron.nextRun(new Date(anchorMs)); at !== null && at.getTime() <= endMs; at = cron.nextRun(at)) five.push(at.getTime())
  return { tick: every(60_000), odd: every(90_000), five }
}

interface Host {
  id: string
  engine: Matchbox | null
  downUntilMinute: number
}

/** Runs the race; `openHost` opens (or reopens) a host's engine. Returns the end time. */
async function race(clock: ManualClock, seed: number, openHost: (hostId: string) => Promise<Matchbox>): Promise<number> {
  const random = Random.make(seed)
  const hosts: Host[] = [
    { id: 'host-a', engine: await openHost('host-a'), downUntilMinute: 0 },
    { id: 'host-b', engine: await openHost('host-b'), downUntilMinute: 0 },
  ]
  for (const host of hosts) for (const schedule of schedules) await host.engine?.schedule(schedule.name, schedule.spec, 'ticks', { kind: schedule.name })
  for (let minute = 1; minute <= minutes; minute++) {
    for (const host of hosts) {
      if (host.engine !== null && random.chance(0.02)) {
        // Crash: the engine stops calling; its lease lapses after the TTL.
        await host.engine.close()
        host.engine = null
        host.downUntilMinute = minute + random.int(1, 30)
      } else if (host.engine === null && minute >= host.downUntilMinute) {
        host.engine = await openHost(host.id)
      }
    }
    for (let step = 0; step < 3; step++) {
      clock.advance(20_000)
      const live = hosts.filter((host) => host.engine !== null)
      if (random.chance(0.5)) live.reverse()
      await Promise.all(live.map((host) => host.engine?.runSchedules()))
    }
  }
  for (const host of hosts) host.engine ??= await openHost(host.id)
  // Catch up what crashes left behind. A host that crashed holding the lease keeps it for the
  // TTL, so let it lapse first, then let every host call until a round enqueues nothing, a
  // bounded batch per call.
  clock.advance(scheduleLeaseTtlMs + 1)
  for (let round = 0; round < 100; round++) {
    let enqueued = 0
    for (const host of hosts) enqueued += (await host.engine?.runSchedules()) ?? 0
    if (enqueued === 0) break
  }
  for (const host of hosts) await host.engine?.close()
  return clock.now()
}

function tally(rows: ReadonlyArray<{ kind: string; runAt: number }>): Record<string, number[]> {
  const seen: Record<string, number[]> = { tick: [], odd: [], five: [] }
  for (const row of rows) seen[row.kind]?.push(row.runAt)
  for (const times of Object.values(seen)) times.sort((a, b) => a - b)
  return seen
}

const seed = process.env.SIM_SEED ? Number(process.env.SIM_SEED) : Math.floor(Math.random() * 2 ** 31)
console.log(`schedules race: seed ${seed} (replay with SIM_SEED=${seed})`)

describe('runSchedules: two hosts for 1,000 virtual minutes', () => {
  it(`memory: every occurrence exactly once (seed ${seed})`, async () => {
    const clock = new ManualClock(start)
    const store = makeMemoryStore()
    const jobStore = makeMemoryJobStore({ queueRanges: store })
    let incarnation = 0
    const end = await race(clock, seed, async (hostId) =>
      makeMatchbox({ hostId, store, jobStore, clock, random: Random.make(seed + ++incarnation), closeStores: async () => {} }),
    )
    // The engines steal the one Matching queue from each other (no membership), so a delivery
    // may have been refused by a queue waiting out its restart delay: its reservation was given
    // back, due again after the refused-delivery retry.
    clock.advance(jobDeliveryRefusedRetryMs + 1)
    const reader = makeMatchbox({ hostId: 'reader', store, jobStore, clock, random: Random.make(seed - 1), closeStores: async () => {} })
    const queue = reader.queue('ticks')
    const rows: Array<{ kind: string; runAt: number }> = []
    for (let job = await queue.claim(); job !== null; job = await queue.claim()) {
      rows.push({ kind: (job.payload as { kind: string }).kind, runAt: (await queue.getJob(job.id))?.runAt ?? 0 })
      await job.ack()
    }
    await reader.close()
    const expected = expectedOccurrences(start, end)
    expect(tally(rows)).toEqual(expected)
    expect(rows.length).toBe(Object.values(expected).reduce((total, times) => total + times.length, 0))
  })

  it(`postgres: every occurrence exactly once (seed ${seed})`, async () => {
    const databaseUrl = await freshDatabase('schedules_race')
    const clock = new ManualClock(start)
    let incarnation = 0
    const end = await race(clock, seed, (hostId) => open({ store: { databaseUrl }, clock, seed: seed + ++incarnation, hostId }))
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    try {
      const { rows } = await client.query<{ kind: string; run_at_ms: string }>(
        `SELECT payload->>'kind' AS kind, run_at_ms FROM matchbox.jobs WHERE queue = 'ticks'
         UNION ALL SELECT payload->>'kind', run_at_ms FROM matchbox.dead_jobs WHERE queue = 'ticks'`,
      )
      const expected = expectedOccurrences(start, end)
      expect(tally(rows.map((row) => ({ kind: row.kind, runAt: Number(row.run_at_ms) })))).toEqual(expected)
      const { rows: leases } = await client.query<{ fence: string }>(`SELECT fence FROM matchbox.job_leases WHERE name = 'schedules'`)
      // Crashes forced takeovers: the fence grew.
      expect(Number(leases[0]?.fence)).toBeGreaterThan(1)
    } finally {
      await client.end()
    }
  })
})
