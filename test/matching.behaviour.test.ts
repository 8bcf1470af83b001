/**
 * Upstream-equivalent behavioural tests of the Matching runtime, at the
 * level of a whole MatchingHost over a real store — the machine and actor tests beside the
 * code step the same behaviours in isolation. Bound to the memory store and PGlite (a fresh
 * schema per test on one PGlite instance); the range-bump tests also run on PostgreSQL, where
 * the bump is an UPDATE on task_queues from an independent pg client.
 *
 * Every store call goes through a recorder (harness/recordingStore.ts), so "one read", "one
 * final write" and "no write after ownership loss" are counted at the store boundary; queue
 * lifecycle is observed through the host's `onStep`. Time is a ManualClock; between clock steps
 * the test waits for store calls to settle. No sleeps.
 */
import { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import type { RecordStartResult } from '../src/actors/History.ts'
import { makeMatchingHost } from '../src/actors/MatchingHost.ts'
import { encodeQueueKey, type QueueKey } from '../src/domain/QueueKey.ts'
import { ManualClock } from '../src/kernel/Clock.ts'
import { idleUnloadMs, ownershipCheckIntervalMs } from '../src/kernel/Limits.ts'
import { Random } from '../src/kernel/Random.ts'
import type { QueueCommand, UnloadReason } from '../src/machines/PhysicalQueueProtocol.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { openEmbeddedStore, openPostgresStore } from '../src/persistence/queues/sql/openSqlStore.ts'
import type { Store } from '../src/persistence/queues/Store.ts'
import { freshDatabase } from './harness/database.ts'
import { driveUntil, Pending } from './harness/drive.ts'
import { makeStoreRecorder, type StoreRecorder } from './harness/recordingStore.ts'
import { makeStartLedger, type StartLedger } from './harness/startLedger.ts'

const family = { namespace: 'default', family: 'orders', type: 'workflow' } as const
const key: QueueKey = { ...family, partition: 0, version: null }

/** A store under test plus a way to bump a queue's range behind the owner's back. */
interface Fixture {
  readonly store: Store
  bumpRange(key: QueueKey): Promise<void>
  close(): Promise<void>
}
type FixtureFactory = () => Promise<Fixture>

let schemaCounter = 0
const nextSchema = () => `behaviour_${process.pid}_${++schemaCounter}`

const memory: FixtureFactory = async () => {
  const store = makeMemoryStore()
  // The memory store has no SQL; an acquire by nobody is the same bump.
  return { store, bumpRange: async (bumped) => void (await store.acquire({ key: bumped, nowMs: 0 })), close: () => store.close() }
}

let pglite: PGlite | undefined
const embedded: FixtureFactory = async () => {
  pglite ??= await PGlite.create()
  const schema = nextSchema()
  const store = await openEmbeddedStore({ pglite, schema })
  const db = pglite
  return {
    store,
    bumpRange: async (bumped) => void (await db.query(`UPDATE "${schema}".task_queues SET range_id = range_id + 1 WHERE queue_key = $1`, [encodeQueueKey(bumped)])),
    close: () => store.close(),
  }
}

let postgresUrl: string | undefined
const postgres: FixtureFactory = async () => {
  postgresUrl ??= await freshDatabase('behaviour')
  const schema = nextSchema()
  const store = await openPostgresStore({ connectionString: postgresUrl, schema })
  const client = new pg.Client({ connectionString: postgresUrl })
  await client.connect()
  return {
    store,
    bumpRange: async (bumped) => void (await client.query(`UPDATE "${schema}".task_queues SET range_id = range_id + 1 WHERE queue_key = $1`, [encodeQueueKey(bumped)])),
    close: async () => {
      await client.end()
      await store.close()
    },
  }
}

afterAll(async () => {
  await pglite?.close()
})

/** One test's world: a clock, a recorder, a History, hosts on the fixture's store. */
function makeWorld(fixture: Fixture, script?: Parameters<typeof makeStartLedger>[0]) {
  const clock = new ManualClock(1_000_000)
  const recorder: StoreRecorder = makeStoreRecorder(() => clock.now())
  const history: StartLedger = makeStartLedger(script)
  const unloads: Array<{ host: string; atMs: number; reason: UnloadReason }> = []
  const checkpoints: Array<{ host: string; final: boolean }> = []
  const pollsArrived = { count: 0 }
  const pending = new Pending()
  let seed = 0
  const host = (hostId: string) =>
    makeMatchingHost({
      hostId,
      store: recorder.wrap(fixture.store, hostId),
      history,
      clock,
      random: Random.make(++seed),
      partitionCount: 1,
      onStep: (_queue, event, commands: ReadonlyArray<QueueCommand>) => {
        if (event.type === 'poll.arrived') pollsArrived.count++
        for (const command of commands) {
          if (command.type === 'queue.unloaded') unloads.push({ host: hostId, atMs: clock.now(), reason: command.params.reason })
          if (command.type === 'store.checkpoint') checkpoints.push({ host: hostId, final: command.params.final })
        }
      },
    })
  const drive = (condition: () => boolean, what: string, stepMs = 50) => driveUntil(clock, recorder, condition, what, stepMs)
  // Polls once and drives time until it answers.
  const pollOnce = async (target: ReturnType<typeof host>, waitMs = 100) => {
    const polled = pending.track(target.poll({ ...family, identity: 'worker', waitMs }))
    await drive(() => pending.open === 0, 'the poll to answer')
    return polled
  }
  const writesBy = (hostId: string, afterSequence = 0) =>
    recorder.calls.filter((call) => call.host === hostId && call.issued > afterSequence && (call.operation === 'append' || call.operation === 'checkpoint' || call.operation === 'relocate'))
  return { fixture, clock, recorder, history, unloads, checkpoints, pollsArrived, pending, host, drive, pollOnce, writesBy }
}

const bindings: ReadonlyArray<readonly [string, FixtureFactory]> = [
  ['memory', memory],
  ['embedded (PGlite)', embedded],
]

describe.each(bindings)('Matching behaviour on the %s store', (_name, open) => {
  let fixture: Fixture
  afterAll(async () => {
    await fixture?.close()
  })
  const fresh = async () => {
    await fixture?.close()
    fixture = await open()
    return fixture
  }

  it('two hosts stealing a queue back and forth deliver every task and leave 0 rows', async () => {
    const world = makeWorld(await fresh())
    const hosts = [world.host('host-a'), world.host('host-b')]
    const accepted: string[] = []
    for (let round = 0; round < 8; round++) {
      const active = hosts[round % 2] as ReturnType<typeof world.host>
      // Adds as a client makes them: a refusal that says "not here, not now" is retried.
      for (let i = 0; i < 5; i++) {
        const jobId = `r${round}-${i}`
        for (let attempt = 0; ; attempt++) {
          const added = world.pending.track(active.addTask({ ...family, task: { jobId } }))
          await world.drive(() => world.pending.open === 0, `add ${jobId}`)
          const error = await added.then(() => null, (failure: { _tag?: string }) => failure)
          if (error === null) break
          expect(['OwnershipLost', 'Unavailable', 'ShuttingDown']).toContain(error._tag)
          expect(attempt).toBeLessThan(20)
          world.clock.advance(1_000)
        }
        accepted.push(jobId)
      }
      for (let i = 0; i < 2; i++) void world.pending.track(active.poll({ ...family, identity: 'worker', waitMs: 100 }))
      await world.drive(() => world.pending.open === 0, `round ${round} polls`)
      // Past the checkpoint interval (an owner with acks pending learns at its checkpoint that
      // it lost the queue) and past any restart delay.
      world.clock.advance(11_000)
      await world.recorder.quiesce()
    }
    await Promise.all(hosts.map((host) => host.close()))
    // Every round the active host had to take the queue back from the other.
    const acquirers = world.recorder.calls.filter((call) => call.operation === 'acquire' && call.ok).map((call) => call.host)
    expect(acquirers.length).toBeGreaterThanOrEqual(8)
    expect(acquirers.filter((hostId, index) => index > 0 && hostId !== acquirers[index - 1]).length).toBeGreaterThanOrEqual(7)
    expect(world.unloads.filter((unload) => unload.reason.kind === 'ownership-lost').length).toBeGreaterThanOrEqual(6)

    const drainer = world.host('host-c')
    await world.drive(() => {
      if (world.pending.open === 0) void world.pending.track(drainer.poll({ ...family, identity: 'drainer', waitMs: 100 }))
      return accepted.every((jobId) => world.history.started.has(jobId))
    }, 'every accepted task to start')
    await world.drive(() => world.pending.open === 0, 'the last drain poll')
    await drainer.close()
    expect(accepted.filter((jobId) => !world.history.started.has(jobId))).toEqual([])
    expect((await fixture.store.inspect(key))?.storedRows).toBe(0)
  })

  it('a retryable start failure re-dispatches the task (from the backlog and from a sync match)', async () => {
    const retryOnce = (jobId: string, call: number): RecordStartResult | undefined => (call === 1 ? { kind: 'retryable', reason: `busy ${jobId}` } : undefined)
    const world = makeWorld(await fresh(), retryOnce)
    const host = world.host('host-a')
    expect(await host.addTask({ ...family, task: { jobId: 'spooled' } })).toMatchObject({ kind: 'spooled' })
    const first = await world.pollOnce(host, 60_000)
    expect(first).toMatchObject({ task: { jobId: 'spooled' }, response: { jobId: 'spooled' } })
    expect(world.history.calls.get('spooled')).toBe(2)

    // A poller is waiting: the add is sync-matched, refused retryably, then spooled and re-dispatched.
    const arrived = world.pollsArrived.count
    const waiting = world.pending.track(host.poll({ ...family, identity: 'worker', waitMs: 60_000 }))
    await world.drive(() => world.pollsArrived.count > arrived, 'the poll to wait')
    const added = world.pending.track(host.addTask({ ...family, task: { jobId: 'matched' } }))
    await world.drive(() => world.pending.open === 0, 'add and poll to finish')
    expect(await waiting).toMatchObject({ task: { jobId: 'matched' } })
    expect(world.history.calls.get('matched')).toBe(2)
    expect((await added).kind).toMatch(/matched|spooled/)
    await host.close()
    expect((await fixture.store.inspect(key))?.storedRows).toBe(0)
  })

  it('an empty queue: one backlog read per load/unload cycle, and exactly one write — the final one — on idle unload', async () => {
    const world = makeWorld(await fresh())
    const host = world.host('host-a')
    for (let cycle = 1; cycle <= 3; cycle++) {
      expect(await world.pollOnce(host, 1_000)).toBeNull()
      expect(world.writesBy('host-a')).toHaveLength(cycle - 1)
      await world.drive(() => world.unloads.length === cycle, `idle unload #${cycle}`, 10_000)
      expect(world.unloads[cycle - 1]?.reason).toEqual({ kind: 'drained', cause: 'idle' })
      expect(world.recorder.count({ operation: 'acquire' })).toBe(cycle)
      expect(world.recorder.count({ operation: 'read' })).toBe(cycle)
      expect(world.recorder.count({ operation: 'append' })).toBe(0)
      expect(world.recorder.count({ operation: 'checkpoint' })).toBe(cycle)
      expect(world.checkpoints).toEqual(Array.from({ length: cycle }, () => ({ host: 'host-a', final: true })))
    }
    // The idle unloads came after the idle time, not before: a cycle spans at least idleUnloadMs.
    expect(world.clock.now() - 1_000_000).toBeGreaterThanOrEqual(3 * idleUnloadMs)
    await host.close()
  })

  // Regression: the restart delay used to live in the partition instance, which a default
  // queue's death unloads, so the next instance re-acquired at once. The host now keeps it.
  it('a default queue that lost ownership waits out the restart delay before it acquires again', async () => {
    const world = makeWorld(await fresh())
    const host = world.host('host-a')
    await host.addTask({ ...family, task: { jobId: 'first' } })
    await fixture.bumpRange(key)
    // The refused add is retried once by the host, which finds the queue waiting out its restart delay.
    await expect(host.addTask({ ...family, task: { jobId: 'refused' } })).rejects.toMatchObject({ _tag: 'Unavailable', maybeCommitted: false })
    await world.recorder.quiesce()
    const acquires = world.recorder.count({ operation: 'acquire' })
    // Within a second of losing the queue, a new add must not take it back.
    await expect(host.addTask({ ...family, task: { jobId: 'too-soon' } })).rejects.toMatchObject({ _tag: 'Unavailable' })
    expect(world.recorder.count({ operation: 'acquire' })).toBe(acquires)
    world.clock.advance(1_000)
    await expect(host.addTask({ ...family, task: { jobId: 'later' } })).resolves.toMatchObject({ kind: 'spooled' })
    await host.close()
  })

})

describe('Matching behaviour on the memory store: partition mailbox', () => {
  // Regression: requests already in the mailbox when the default queue died reached `queueFor`
  // before the `queue.unloaded` message and resurrected the queue (taking it back from its
  // rightful owner). `queueFor` now settles a death it finds first.
  it('requests queued behind a lost default queue do not re-acquire it', async () => {
    const world = makeWorld(await memory())
    const host = world.host('host-a')
    await host.addTask({ ...family, task: { jobId: 'first' } })
    await world.fixture.bumpRange(key)
    const late = world.pending.track(host.addTask({ ...family, task: { jobId: 'late' } }))
    const polls = Array.from({ length: 3 }, () => world.pending.track(host.poll({ ...family, identity: 'worker', waitMs: 100 })))
    await world.drive(() => world.pending.open === 0, 'the add and the polls')
    await expect(late).rejects.toMatchObject({ _tag: 'Unavailable', maybeCommitted: false })
    await Promise.allSettled(polls)
    expect(world.recorder.count({ operation: 'acquire' })).toBe(1)
    expect(world.checkpoints).toEqual([])
    await host.close()
  })
})

const bumpBindings: ReadonlyArray<readonly [string, FixtureFactory]> = [...bindings, ['postgres', postgres]]

describe.each(bumpBindings)('a range bump made directly in the %s database', (_name, open) => {
  let fixture: Fixture | undefined
  afterAll(async () => {
    await fixture?.close()
  })
  const fresh = async () => {
    await fixture?.close()
    fixture = await open()
    return fixture
  }

  it('makes the owner unload on its next write, with no write after the refused one (no final checkpoint)', async () => {
    const current = await fresh()
    const world = makeWorld(current)
    const host = world.host('host-a')
    for (const jobId of ['a', 'b', 'c']) await host.addTask({ ...family, task: { jobId } })
    // Three acks held in memory, not yet checkpointed: a final write would have something to say.
    for (let i = 0; i < 3; i++) expect(await world.pollOnce(host, 10)).not.toBeNull()
    expect(world.recorder.count({ operation: 'checkpoint' })).toBe(0)
    await current.bumpRange(key)
    await expect(host.addTask({ ...family, task: { jobId: 'late' } })).rejects.toMatchObject({ _tag: 'Unavailable', maybeCommitted: false })
    await world.drive(() => world.unloads.length === 1, 'the owner to unload')
    expect(world.unloads[0]?.reason.kind).toBe('ownership-lost')
    const refused = world.recorder.calls.find((call) => call.operation === 'append' && !call.ok)
    expect(refused?.errorTag).toBe('OwnershipLost')
    world.clock.advance(30_000)
    await world.recorder.quiesce()
    await host.close()
    expect(world.writesBy('host-a', refused?.returned)).toEqual([])
    expect((await current.store.inspect(key))?.metadata.ackLevels[0] ?? 0).toBe(0)
  })

  it('makes an owner that never writes unload at its periodic ownership check', async () => {
    const current = await fresh()
    const world = makeWorld(current)
    const host = world.host('host-a')
    // A long poll keeps the queue loaded and busy without any write.
    const polled = world.pending.track(host.poll({ ...family, identity: 'worker', waitMs: 5 * 60_000 }))
    await world.drive(() => world.recorder.count({ operation: 'read' }) === 1, 'the queue to load')
    const bumpedAtMs = world.clock.now()
    await current.bumpRange(key)
    await world.drive(() => world.unloads.length === 1, 'the owner to notice the bump', 1_000)
    expect(world.unloads[0]?.reason.kind).toBe('ownership-lost')
    expect(world.unloads[0]?.atMs ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(bumpedAtMs + ownershipCheckIntervalMs + 1_000)
    // The waiting poll is answered, empty: nothing was started for it.
    expect(await polled).toBeNull()
    expect(world.recorder.count({ operation: 'inspect' })).toBeGreaterThanOrEqual(1)
    expect(world.writesBy('host-a')).toEqual([])
    await host.close()
  })
})
