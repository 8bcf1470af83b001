/**
 * `queue.pause()` across engines on one PostgreSQL database: two worker engines with work loops
 * (one with a local queue) and a producer engine, on one ManualClock. The bound the README
 * states: once `pause()` has resolved on any engine, no claim statement that starts after it
 * claims a job of the queue, on any engine — so a job enqueued after the pause is never started
 * while paused, however long the engines run (here 20 s of engine time: due-time scans,
 * membership heartbeats, claim waits, forwarded polls), while another queue on the same engines
 * keeps running at every step. Every engine sees the pause (`isPaused`); a resume from another
 * engine delivers every held job once.
 *
 * Real I/O is waited on by conditions (event-loop turns); time moves only when the test advances it,
 * a heartbeat at a time, and each advance waits for the membership beats it started: otherwise a
 * busy machine lets virtual time run a TTL ahead of a beat's read, a live worker drops out of a
 * view, its queues move, and a job waits out the restart back-off on a clock that stands still.
 * Without a server `freshDatabase` throws: the file fails, never skips.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { internalsOf } from '../src/jobs/EngineInternals.ts'
import { ManualClock, type Matchbox, type MatchboxEvent, open } from '../src/index.ts'
import { freshDatabase } from './harness/database.ts'

const start = 1_700_000_000_000
let clock: ManualClock
let url: string
const engines: Matchbox[] = []
// Every job start on a worker engine: its queue, id and when.
const started: Array<{ readonly queue: string; readonly id: string; readonly at: number }> = []

// Yields to the event loop until `condition` holds, bounded by turns (a loaded machine needs many).
async function eventually(condition: () => boolean | Promise<boolean>, what: string, turnsMax = 5_000_000): Promise<void> {
  for (let turn = 0; turn < turnsMax; turn++) {
    if (await condition()) return
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  throw new Error(`condition never held: ${what}`)
}

// Moves the clock by `ms` (at most one heartbeat interval) and waits until every engine's
// membership beat that the move started has finished: each engine then holds rows read at the
// new time, so the next advance cannot lapse a worker whose beats are current.
async function advance(ms: number): Promise<void> {
  clock.advance(ms)
  await Promise.all(engines.map((mb) => internalsOf(mb)?.membership?.settled()))
}

async function openEngine(hostId: string, role?: 'producer'): Promise<Matchbox> {
  const onEvent = (event: MatchboxEvent): void => {
    if (event.type === 'job.started') started.push({ queue: event.queue, id: event.id, at: event.at })
  }
  const mb = await open({ store: { databaseUrl: url }, clock, seed: 11, hostId, onEvent, ...(role === undefined ? {} : { role }) })
  engines.push(mb)
  return mb
}

beforeAll(async () => {
  url = await freshDatabase('jobs_pause')
  clock = new ManualClock(start)
})
afterAll(async () => {
  for (const mb of engines) await mb.close()
})

describe('a paused queue on PostgreSQL with two worker engines', () => {
  it('no engine starts a job of it after pause() resolved; another queue runs on; a resume elsewhere delivers all', async () => {
    const w1 = await openEngine('w1')
    const w2 = await openEngine('w2')
    const producer = await openEngine('p', 'producer')
    await advance(1_000)
    await eventually(() => [w1, w2, producer].every((mb) => mb.hosts().join() === 'w1,w2'), 'every engine sees w1 and w2')

    const queue = 'pause-reports'
    const control = 'pause-control'
    const handled = new Set<string>()
    const stops = [
      w1.queue(queue).work(async (job) => void handled.add(job.id), { concurrency: 2 }),
      w2.queue(queue).work(async (job) => void handled.add(job.id), { concurrency: 2, batch: 4 }),
      w1.queue(control).work(async (job) => void handled.add(job.id)),
      w2.queue(control).work(async (job) => void handled.add(job.id)),
    ]
    // Before the pause the queue runs.
    const before = [await producer.queue(queue).enqueue({ n: 0 }), await producer.queue(queue).enqueue({ n: 1 })]
    await eventually(() => before.every((id) => handled.has(id)), 'the jobs enqueued before the pause run')

    expect(await producer.queue(queue).pause()).toBe(true)
    for (const mb of [w1, w2, producer]) expect(await mb.queue(queue).isPaused()).toBe(true)
    const held: string[] = []
    for (let n = 0; n < 8; n++) held.push(await producer.queue(queue).enqueue({ n: 10 + n }))
    // 20 s of engine time, a second at a time; at every step the control queue's job runs,
    // so the engines were live while the paused queue's jobs waited.
    for (let step = 0; step < 20; step++) {
      const id = await producer.queue(control).enqueue({ step })
      await advance(1_000)
      // The beats kept every view whole, so no queue changed owner.
      expect([w1, w2, producer].map((mb) => mb.hosts().join())).toEqual(['w1,w2', 'w1,w2', 'w1,w2'])
      await eventually(() => handled.has(id), `the control job of step ${step} runs`)
    }
    const startedBeforeResume = started.length
    expect(started.filter((entry) => held.includes(entry.id))).toEqual([])
    expect(held.filter((id) => handled.has(id))).toEqual([])
    expect(await producer.queue(queue).counts()).toMatchObject({ pending: 8, processing: 0 })
    expect((await producer.queue(queue).claim())?.id).toBeUndefined()

    // Resumed from a worker engine: every held job runs once, on either worker.
    expect(await w2.queue(queue).resume()).toBe(true)
    for (const mb of [w1, w2, producer]) expect(await mb.queue(queue).isPaused()).toBe(false)
    await eventually(() => {
      clock.advance(0)
      return held.every((id) => handled.has(id))
    }, 'the resumed queue runs every held job')
    await Promise.all(stops.map((stop) => stop()))
    const startsOfHeld = started.slice(startedBeforeResume).filter((entry) => held.includes(entry.id))
    expect(startsOfHeld).toHaveLength(held.length)
  })
})
