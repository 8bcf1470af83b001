import { Effect, Layer } from 'effect'
import { describe, expect, it } from 'vitest'
import { makeGate } from '../../test/harness/gate.ts'
import { settle, until } from '../../test/harness/settle.ts'
import { Unavailable } from '../domain/errors.ts'
import { ManualClock } from '../kernel/Clock.ts'
import { idleUnloadMs, membershipUnloadDelayMs } from '../kernel/Limits.ts'
import { Random } from '../kernel/Random.ts'
import { sizesOf } from '../kernel/Sizes.ts'
import { makeMemoryStore } from '../persistence/queues/MemoryStore.ts'
import type { History } from './History.ts'
import { layerMatchingHost, layerMatchingHostWith, makeMatchingHost, MatchingClock, MatchingHistory, MatchingHostService, MatchingStore } from './MatchingHost.ts'

const family = { namespace: 'default', family: 'emails', type: 'activity' } as const
const startedHistory: History = { recordTaskStarted: async (task) => ({ kind: 'started', response: { job: task.jobId } }) }

// A membership view whose single owner the test sets; listeners hear every change.
function viewOf(initial: string) {
  const listeners = new Set<() => void>()
  let owner = initial
  return {
    view: { ownerOf: () => owner, subscribe: (listener: () => void) => (listeners.add(listener), () => listeners.delete(listener)) },
    set(next: string) {
      owner = next
      for (const listener of listeners) listener()
    },
  }
}

function makeHost(store = makeMemoryStore(), clock = new ManualClock(1_000), partitionCount = 4) {
  return { host: makeMatchingHost({ hostId: 'h1', store, history: startedHistory, clock, random: Random.make(1), partitionCount }), store, clock }
}

// Polls while advancing virtual time until the poll answers.
async function pollOnce(host: ReturnType<typeof makeHost>['host'], clock: ManualClock, request: { version?: string | null; waitMs?: number } = {}) {
  const polled = host.poll({ ...family, identity: 'w1', waitMs: request.waitMs ?? 1_000, version: request.version ?? null })
  await settle()
  clock.advance(request.waitMs ?? 1_000)
  await settle()
  return polled
}

describe('MatchingHost', () => {
  it('spreads adds across partitions and delivers every one through polls', async () => {
    const { host, store, clock } = makeHost()
    const added = await Promise.all(Array.from({ length: 40 }, (_, i) => host.addTask({ ...family, task: { jobId: `j${i}` } })))
    expect(new Set(added.map((outcome) => outcome.partition)).size).toBeGreaterThan(1)
    const seen = new Set<string>()
    for (let i = 0; i < 60 && seen.size < 40; i++) {
      const task = await pollOnce(host, clock, { waitMs: 10 })
      if (task !== null) seen.add(task.task.jobId)
    }
    expect(seen.size).toBe(40)
    await host.close()
    const rows = (await store.list()).reduce((sum, queue) => sum + queue.storedRows, 0)
    expect(rows).toBe(0)
  })

  it('a zero-wait poll on a cold family gets the task stored in another partition', async () => {
    const store = makeMemoryStore()
    const clock = new ManualClock(1_000)
    const first = makeHost(store, clock).host
    const added = await first.addTask({ ...family, task: { jobId: 'stored' } })
    // Partition 0 is where an idle poll's rotation starts: the task must sit elsewhere.
    expect(added.kind).toBe('spooled')
    expect(added.partition).not.toBe(0)
    await first.close()
    const fresh = makeHost(store, clock).host
    const polled = fresh.poll({ ...family, identity: 'w1', waitMs: 0 })
    await settle()
    clock.advance(0)
    await settle()
    expect(await polled).toMatchObject({ task: { jobId: 'stored' }, partition: added.partition })
    await fresh.close()
  })

  it('a zero-wait poll that reaches a queue still loading waits for its backlog read before its deadline counts', async () => {
    const inner = makeMemoryStore()
    const clock = new ManualClock(1_000)
    const first = makeHost(inner, clock, 1).host
    expect((await first.addTask({ ...family, task: { jobId: 'stored' } })).kind).toBe('spooled')
    await first.close()
    // The fresh host's acquire waits for the test to let it through.
    let letThrough: () => void = () => {}
    const gated = new Promise<void>((resolve) => (letThrough = resolve))
    const fresh = makeHost({ ...inner, acquire: async (params) => (await gated, inner.acquire(params)) }, clock, 1).host
    let answer: unknown = 'pending'
    void fresh.poll({ ...family, identity: 'w1', waitMs: 0 }).then((polled) => (answer = polled))
    // Time reaches the poll's deadline twice while the queue is loading: the first ends the
    // host's wait for cold partitions, the second would end a wait counted from arrival.
    for (let turn = 0; turn < 2; turn++) {
      await settle()
      clock.advance(0)
    }
    await settle()
    expect(answer).toBe('pending')
    letThrough()
    await settle()
    clock.advance(0)
    await settle()
    expect(answer).toMatchObject({ task: { jobId: 'stored' }, partition: 0 })
    await fresh.close()
  })

  for (const waitMs of [0, 1_000]) {
    it(`a poll (wait ${waitMs} ms) that arrives while an idle queue writes its final checkpoint gets the task left in its backlog`, async () => {
      // The poll waits out the drain, goes to the fresh queue, and its wait counts only once that
      // queue has loaded and read its backlog. The final checkpoint is held open while it arrives.
      const inner = makeMemoryStore()
      const gate = makeGate()
      const clock = new ManualClock(1_000)
      const { host } = makeHost({ ...inner, checkpoint: async (params) => (await gate.pass(), inner.checkpoint(params)) }, clock, 1)
      await host.addTask({ ...family, task: { jobId: 'first' } })
      await host.addTask({ ...family, task: { jobId: 'second' } })
      expect(await host.poll({ ...family, identity: 'w1', waitMs: 0 })).toMatchObject({ task: { jobId: 'first' } })
      // The first task's ack level is saved (ungated); then the queue goes idle with the second
      // task still stored, and its final checkpoint is held.
      await settle()
      clock.advance(idleUnloadMs / 2)
      await settle()
      gate.close()
      clock.advance(idleUnloadMs)
      await until(() => gate.held() > 0, 'the idle drain is writing its final checkpoint')
      const polled = host.poll({ ...family, identity: 'w2', waitMs })
      await settle()
      gate.open()
      expect(await polled).toMatchObject({ task: { jobId: 'second' } })
      await host.close()
    })
  }

  it('an aborted poll stops waiting for cold partitions to load', async () => {
    // Acquire never answers: every queue stays loading.
    const store = { ...makeMemoryStore(), acquire: () => new Promise<never>(() => {}) }
    const { host } = makeHost(store)
    const controller = new AbortController()
    let answered = false
    const polled = host.poll({ ...family, identity: 'w1', waitMs: 60_000, signal: controller.signal }).then((result) => {
      answered = true
      return result
    })
    await settle()
    expect(answered).toBe(false)
    controller.abort()
    await settle()
    expect(answered).toBe(true)
    expect(await polled).toBeNull()
  })

  it('a poll with a signal over a family of many cold partitions warns nothing: one listener per partition is not a leak', async () => {
    const warnings: string[] = []
    const onWarning = (warning: Error) => void warnings.push(warning.name)
    process.on('warning', onWarning)
    try {
      const { host, clock } = makeHost(makeMemoryStore(), new ManualClock(1_000), 32)
      const controller = new AbortController()
      const polled = host.poll({ ...family, identity: 'w1', waitMs: 1_000, signal: controller.signal })
      await settle(10)
      clock.advance(1_000)
      await settle(10)
      expect(await polled).toBeNull()
      await new Promise<void>((resolve) => process.nextTick(resolve))
      expect(warnings).not.toContain('MaxListenersExceededWarning')
    } finally {
      process.off('warning', onWarning)
    }
  })

  it('unloads the partitions of families that went idle, and serves a family used again', async () => {
    const { host, clock } = makeHost(makeMemoryStore(), new ManualClock(1_000), 1)
    const families = Array.from({ length: 20 }, (_, index) => ({ ...family, family: `brief-${index}` }))
    for (const brief of families) {
      await host.addTask({ ...brief, task: { jobId: `${brief.family}-1` } })
      const polled = host.poll({ ...brief, identity: 'w1', waitMs: 0 })
      await settle()
      expect((await polled)?.task.jobId).toBe(`${brief.family}-1`)
    }
    expect(sizesOf(host).partitionsLoaded).toBe(20)
    clock.advance(idleUnloadMs + 1_000)
    await until(() => sizesOf(host).partitionsLoaded === 0, 'every idle partition unloaded')
    // Their restart books and cached fences went with them.
    await until(() => sizesOf(host).restartBooks === 0, 'every restart book forgotten')
    // A family that comes back gets a new instance of its partition, with its stored backlog.
    const again = families[3] as (typeof families)[number]
    await host.addTask({ ...again, task: { jobId: 'again' } })
    const polled = host.poll({ ...again, identity: 'w1', waitMs: 0 })
    await settle()
    expect((await polled)?.task.jobId).toBe('again')
    expect(sizesOf(host).partitionsLoaded).toBe(1)
    await host.close()
  })


  it('sync-matches an add to a waiting poll without touching the backlog', async () => {
    const { host, store, clock } = makeHost(undefined, undefined, 1)
    const polled = host.poll({ ...family, identity: 'w1', waitMs: 5_000 })
    await settle()
    const outcome = await host.addTask({ ...family, task: { jobId: 'fast' } })
    expect(outcome).toEqual({ kind: 'matched', partition: 0 })
    expect(await polled).toMatchObject({ task: { jobId: 'fast' }, taskId: null, response: { job: 'fast' } })
    expect((await store.list())[0]?.metadata.lastTaskId).toBe(0)
    clock.advance(1)
    await host.close()
  })

  it('sync-matches an add to a poll waiting on another of its partitions: the add goes where the poll waits', async () => {
    // Four partitions: a poll waits on one of them, and each add must meet it at once.
    const { host, clock } = makeHost()
    for (let i = 0; i < 8; i++) {
      const polled = host.poll({ ...family, identity: 'w1', waitMs: 5_000 })
      await settle()
      const outcome = await host.addTask({ ...family, task: { jobId: `j${i}` } })
      expect(outcome.kind, `add ${i}`).toBe('matched')
      expect(await polled).toMatchObject({ task: { jobId: `j${i}` } })
    }
    clock.advance(1)
    await host.close()
  })

  it('adds issued together meet the polls waiting on several partitions: each goes where a poll is not yet spoken for', async () => {
    // Polls wait on several of the four partitions; adds issued at once must each meet one (a
    // sync match), not all go to the first partition with a poll and be stored behind it.
    const { host, clock } = makeHost()
    for (const count of [2, 4]) {
      const answers: Array<string | null> = []
      const polls = Array.from({ length: count }, () => host.poll({ ...family, identity: 'w1', waitMs: 5_000 }).then((polled) => void answers.push(polled?.task.jobId ?? null)))
      await settle()
      const jobIds = Array.from({ length: count }, (_, n) => `${count}-${n}`)
      const outcomes = await Promise.all(jobIds.map((jobId) => host.addTask({ ...family, task: { jobId } })))
      expect(outcomes.map((outcome) => outcome.kind), `${count} adds`).toEqual(jobIds.map(() => 'matched'))
      await Promise.all(polls)
      expect(answers.sort()).toEqual(jobIds)
    }
    clock.advance(1)
    await host.close()
  })

  it('a poll and an add issued together meet at once: the add, routed before the poll waits, is stored, and the poll finds it', async () => {
    // The add sees no poll waiting yet, so it is stored; the poll must still get it without
    // waiting out its wait. (A poll moved to a task stored on another partition of its host is
    // MatchingHostWaiting.test.ts's; the jobs simulator plants bugs in that move.)
    const { host, clock } = makeHost()
    const polled = host.poll({ ...family, identity: 'w1', waitMs: 5_000 })
    const outcome = await host.addTask({ ...family, task: { jobId: 'a' } })
    expect(outcome.kind).toBe('spooled')
    await settle()
    // No virtual time passed: the poll answered with the task, it did not wait out its 5 s.
    expect((await polled)?.task.jobId).toBe('a')
    clock.advance(1)
    await host.close()
  })

  it('dispatches higher priorities first', async () => {
    const { host, clock } = makeHost(undefined, undefined, 1)
    for (const [jobId, priority] of [['low', 0], ['high', 9], ['mid', 5]] as const) await host.addTask({ ...family, task: { jobId, priority } })
    const order: string[] = []
    for (let i = 0; i < 3; i++) order.push((await pollOnce(host, clock, { waitMs: 10 }))?.task.jobId ?? 'none')
    expect(order).toEqual(['high', 'mid', 'low'])
    await host.close()
  })

  it('a current-version poll answered from its version queue stops waiting on the default queue, so the next default task reaches the next poll', async () => {
    const { host, clock } = makeHost(undefined, undefined, 1)
    await host.updateUserData('default', 'emails', 0, { currentVersion: 'v1' })
    // The v1 poller waits on the v1 queue and the default queue; its pinned task answers it from the first.
    const first = host.poll({ ...family, identity: 'w1', waitMs: 10_000, version: 'v1' })
    await settle()
    await host.addTask({ ...family, task: { jobId: 'pinned', versionDirective: { kind: 'pinned', version: 'v1' } } })
    await settle()
    expect((await first)?.task.jobId).toBe('pinned')
    // Its wait on the default queue ended with it: the next poll there gets the next default task.
    const second = host.poll({ ...family, identity: 'w2', waitMs: 10_000, version: null })
    await settle()
    await host.addTask({ ...family, task: { jobId: 'plain' } })
    await settle()
    clock.advance(1)
    await settle()
    const got = await Promise.race([second, settle().then(() => 'still waiting' as const)])
    expect(got === 'still waiting' ? got : got?.task.jobId).toBe('plain')
    await host.close()
  })

  it('routes pinned tasks to their version, lets a current-version poller drain the default backlog, and relocates a retired version', async () => {
    const { host, store, clock } = makeHost(undefined, undefined, 1)
    await host.addTask({ ...family, task: { jobId: 'pinned', versionDirective: { kind: 'pinned', version: 'v1' } } })
    await host.addTask({ ...family, task: { jobId: 'plain' } })
    const versioned = await store.inspect({ ...family, partition: 0, version: 'v1' })
    expect(versioned?.storedRows).toBe(1)
    // v1 is not current: a v1 poller sees only its pinned task.
    expect((await pollOnce(host, clock, { version: 'v1', waitMs: 10 }))?.task.jobId).toBe('pinned')
    expect(await pollOnce(host, clock, { version: 'v1', waitMs: 10 })).toBeNull()
    await host.updateUserData('default', 'emails', 0, { currentVersion: 'v1' })
    expect((await pollOnce(host, clock, { version: 'v1', waitMs: 10 }))?.task.jobId).toBe('plain')
    // Retire v2 with a backlog: rows move to the default queue with fresh ids.
    await host.addTask({ ...family, task: { jobId: 'old-1', versionDirective: { kind: 'pinned', version: 'v2' } } })
    await host.addTask({ ...family, task: { jobId: 'old-2', versionDirective: { kind: 'pinned', version: 'v2' } } })
    const defaultBefore = await store.inspect({ ...family, partition: 0, version: null })
    expect(await host.retireVersion({ ...family, version: 'v2' })).toBe(2)
    const defaultAfter = await store.inspect({ ...family, partition: 0, version: null })
    expect(defaultAfter?.metadata.lastTaskId).toBe((defaultBefore?.metadata.lastTaskId ?? 0) + 2)
    expect((await store.inspect({ ...family, partition: 0, version: 'v2' }))?.storedRows).toBe(0)
    const drained = [(await pollOnce(host, clock, { waitMs: 10 }))?.task.jobId, (await pollOnce(host, clock, { waitMs: 10 }))?.task.jobId]
    expect(drained.sort()).toEqual(['old-1', 'old-2'])
    await host.close()
  })

  // A retirement that fails after moving rows: the default queue, loaded and read to the end of
  // the subqueue they went to, must still be told, or it never reads them while it stays loaded.
  type MemoryStore = ReturnType<typeof makeMemoryStore>
  const failedRetirements: ReadonlyArray<{ name: string; fail: (store: MemoryStore, failing: () => boolean) => MemoryStore }> = [
    {
      name: 'its relocation committed but the answer was lost',
      fail: (inner, failing) => ({
        ...inner,
        relocate: async (params) => {
          const moved = await inner.relocate(params)
          if (!failing()) return moved
          throw new Unavailable({ operation: 'relocate', detail: 'connection lost after commit', maybeCommitted: true })
        },
      }),
    },
    {
      name: 'the next page could not be read',
      fail: (inner, failing) => ({
        ...inner,
        read: async (params) => {
          if (failing() && params.key.version === 'v2' && params.afterTaskId > 0) throw new Unavailable({ operation: 'read', detail: 'outage', maybeCommitted: false })
          return inner.read(params)
        },
      }),
    },
  ]
  for (const { name, fail } of failedRetirements) {
    it(`tells the default queue about rows a retirement moved before it failed: ${name}`, async () => {
      const inner = makeMemoryStore()
      let failing = false
      const { host, clock } = makeHost(fail(inner, () => failing), undefined, 1)
      await host.addTask({ ...family, task: { jobId: 'plain' } })
      expect((await pollOnce(host, clock, { waitMs: 10 }))?.task.jobId).toBe('plain')
      await host.addTask({ ...family, task: { jobId: 'old', versionDirective: { kind: 'pinned', version: 'v2' } } })
      await host.addTask({ ...family, task: { jobId: 'urgent', priority: 5, versionDirective: { kind: 'pinned', version: 'v2' } } })
      failing = true
      await expect(host.retireVersion({ ...family, version: 'v2' })).rejects.toMatchObject({ _tag: 'Unavailable' })
      failing = false
      expect((await inner.inspect({ ...family, partition: 0, version: 'v2' }))?.storedRowsBySubqueue[0]).toBeUndefined()
      // `old` moved (subqueue 0 comes first); the retirement stopped before `urgent` did.
      expect((await inner.inspect({ ...family, partition: 0, version: 'v2' }))?.storedRowsBySubqueue[5]).toBe(1)
      expect((await pollOnce(host, clock, { waitMs: 10 }))?.task.jobId).toBe('old')
      await host.close()
    })
  }

  it('two retirements of one version at once run one after the other: both succeed and every row moves once', async () => {
    const { host, clock } = makeHost(undefined, undefined, 1)
    for (const jobId of ['a', 'b', 'c']) await host.addTask({ ...family, task: { jobId, versionDirective: { kind: 'pinned', version: 'v2' } } })
    const moved = await Promise.all([host.retireVersion({ ...family, version: 'v2' }), host.retireVersion({ ...family, version: 'v2' })])
    expect(moved.reduce((sum, count) => sum + count, 0)).toBe(3)
    const delivered: string[] = []
    for (let i = 0; i < 4; i++) delivered.push((await pollOnce(host, clock, { waitMs: 10 }))?.task.jobId ?? 'none')
    expect(delivered.sort()).toEqual(['a', 'b', 'c', 'none'])
    await host.close()
  })

  it('refuses work after close and rejects bad input with a typed error', async () => {
    const { host } = makeHost()
    await expect(host.poll({ ...family, identity: 'w', waitMs: -1 })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'waitMs' })
    await expect(host.addTask({ ...family, task: { jobId: '' } })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'task.jobId' })
    await host.close()
    await expect(host.addTask({ ...family, task: { jobId: 'x' } })).rejects.toMatchObject({ _tag: 'ShuttingDown' })
  })

  it('a task read from the backlog where no poll waits moves a poll with time left, not one whose wait is up', async () => {
    // A forwarded poll of no wait and a poll of a full wait both wait on other partitions while
    // an add's task is still being read back on its own: the move goes to the one that can still
    // poll, which takes the task at once, with the clock standing still.
    const inner = makeMemoryStore()
    const reads = makeGate()
    const clock = new ManualClock(1_000)
    const { host } = makeHost({ ...inner, read: async (params) => (await reads.pass(), inner.read(params)) }, clock, 3)
    // Loads and reads every partition: an idle poll's rotation has taken its first turn.
    expect(await pollOnce(host, clock, { waitMs: 0 })).toBeNull()
    let turns = 1
    reads.close()
    const added = await host.addTask({ ...family, task: { jobId: 'read back' } })
    expect(added.kind).toBe('spooled')
    expect(reads.held()).toBe(1)
    // Empty zero-wait polls take turns of the rotation until the next two land beside the task's partition.
    while (turns % 3 !== (added.partition + 1) % 3) {
      expect(await pollOnce(host, clock, { waitMs: 0 })).toBeNull()
      turns++
    }
    const answers: Record<string, unknown> = { spent: 'waiting', waiting: 'waiting' }
    void host.poll({ ...family, identity: 'spent', waitMs: 0 }).then((polled) => (answers.spent = polled?.task.jobId ?? null))
    await settle()
    void host.poll({ ...family, identity: 'waiting', waitMs: 60_000 }).then((polled) => (answers.waiting = polled?.task.jobId ?? null))
    await settle()
    expect(answers).toEqual({ spent: 'waiting', waiting: 'waiting' })
    reads.open()
    await settle()
    expect(answers.waiting).toBe('read back')
    expect(clock.now()).toBe(1_000)
    clock.advance(0)
    await settle()
    expect(answers.spent).toBeNull()
    await host.close()
  })
})

describe('MatchingHost as an Effect layer', () => {
  it('takes its store, History and clock as services the program provides with layers', async () => {
    const clock = new ManualClock(1_000)
    const store = makeMemoryStore()
    const services = Layer.mergeAll(Layer.succeed(MatchingStore, store), Layer.succeed(MatchingHistory, startedHistory), Layer.succeed(MatchingClock, clock))
    const layer = layerMatchingHostWith({ hostId: 'h1', random: Random.make(1), partitionCount: 1 }).pipe(Layer.provide(services))
    const program = Effect.gen(function* () {
      const host = yield* MatchingHostService
      return yield* host.addTask({ ...family, task: { jobId: 'j1' } })
    })
    const added = await Effect.runPromise(Effect.provide(program, layer))
    expect(added.kind).toBe('spooled')
    // The task went to the store the program provided, stamped by the clock it provided.
    const [queue] = await store.list({ namespace: family.namespace })
    expect(queue?.storedRows).toBe(1)
    expect(queue?.metadata.updatedAtMs).toBe(1_000)
  })

  it('fails in the error channel with tagged errors an Effect user can catchTag', async () => {
    const clock = new ManualClock(1_000)
    const layer = layerMatchingHost({ hostId: 'h1', store: makeMemoryStore(), history: startedHistory, clock, random: Random.make(1), partitionCount: 1 })
    const program = Effect.gen(function* () {
      const host = yield* MatchingHostService
      const badWait = yield* host.poll({ ...family, identity: 'w1', waitMs: -1 }).pipe(
        Effect.map(() => 'no error'),
        Effect.catchTag('InvalidInput', (error) => Effect.succeed(`InvalidInput ${error.field}`)),
      )
      const added = yield* host.addTask({ ...family, task: { jobId: 'j1' } })
      const badTask = yield* host.addTask({ ...family, task: { jobId: '' } }).pipe(
        Effect.map(() => 'no error'),
        Effect.catchTag('InvalidInput', (error) => Effect.succeed(`InvalidInput ${error.field}`)),
      )
      yield* host.close
      const afterClose = yield* host.addTask({ ...family, task: { jobId: 'j2' } }).pipe(
        Effect.map(() => 'no error'),
        Effect.catchTag('ShuttingDown', () => Effect.succeed('ShuttingDown')),
      )
      return { badWait, added: added.kind, badTask, afterClose }
    })
    const result = await Effect.runPromise(Effect.provide(program, layer))
    expect(result).toEqual({ badWait: 'InvalidInput waitMs', added: 'spooled', badTask: expect.stringMatching(/^InvalidInput /), afterClose: 'ShuttingDown' })
  })

  it('the Promise face rejects with the same catalogue errors', async () => {
    const { host } = makeHost()
    await expect(host.poll({ ...family, identity: 'w1', waitMs: -1 })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'waitMs' })
    await host.close()
    await expect(host.addTask({ ...family, task: { jobId: 'j' } })).rejects.toMatchObject({ _tag: 'ShuttingDown' })
    // Closing twice is harmless.
    await host.close()
  })

  it('drops a partition another host took while its membership view flickered away and back', async () => {
    const store = makeMemoryStore()
    const clock = new ManualClock(1_000)
    // Each host has its own view; h1's flickers to h2 and back, h2's says h2 from the flicker on.
    const view1 = viewOf('h1')
    const view2 = viewOf('h1')
    const make = (hostId: string, membership: ReturnType<typeof viewOf>['view']) =>
      makeMatchingHost({ hostId, store, history: startedHistory, clock, random: Random.make(1), partitionCount: 1, membership })
    const h1 = make('h1', view1.view)
    const h2 = make('h2', view2.view)
    await h1.addTask({ ...family, task: { jobId: 'a' } })
    await settle()
    view1.set('h2')
    view2.set('h2')
    await h2.addTask({ ...family, task: { jobId: 'b' } })
    await settle()
    view1.set('h1')
    expect(sizesOf(h1).partitionsLoaded).toBe(1)
    clock.advance(500)
    await settle()
    expect(sizesOf(h1).partitionsLoaded).toBe(0)
    // h2, which took it, keeps it.
    expect(sizesOf(h2).partitionsLoaded).toBe(1)
    await h2.close()
    await h1.close()
  })

  it('an add refused by a partition whose range another host took goes to another owned partition at once', async () => {
    const clock = new ManualClock(1_000)
    const store = makeMemoryStore()
    const subscribe = () => () => {}
    // h1 believes it owns both partitions; h2 owns partition 1 and takes its range.
    const h1 = makeMatchingHost({ hostId: 'h1', store, history: startedHistory, clock, random: Random.make(1), partitionCount: 2, membership: { ownerOf: () => 'h1', subscribe } })
    const h2 = makeMatchingHost({ hostId: 'h2', store, history: startedHistory, clock, random: Random.make(2), partitionCount: 2, membership: { ownerOf: (key) => (key.partition === 1 ? 'h2' : 'h1'), subscribe } })
    // A poll loads both of h1's partitions.
    expect(await pollOnce(h1, clock, { waitMs: 10 })).toBeNull()
    await h2.addTask({ ...family, task: { jobId: 'taken' } })
    await settle()
    // Every add of h1 lands, whichever partition it is routed to first.
    const outcomes = []
    for (let i = 0; i < 6; i++) outcomes.push(await h1.addTask({ ...family, task: { jobId: `j${i}` } }))
    expect(outcomes.map((outcome) => outcome.partition)).toEqual([0, 0, 0, 0, 0, 0])
    await h2.close()
    await h1.close()
  })

  it('a claim fence comes from another owned partition while the first waits out its restart delay', async () => {
    const clock = new ManualClock(1_000)
    const store = makeMemoryStore()
    const host = makeMatchingHost({ hostId: 'h1', store, history: startedHistory, clock, random: Random.make(1), partitionCount: 2, membership: { ownerOf: () => 'h1', subscribe: () => () => {} } })
    const first = await host.claimFence(family.namespace, family.family, family.type)
    expect(first?.queueKey.partition).toBe(0)
    // Another host takes partition 0's range; a claim with the old fence is refused, and the
    // partition unloads and waits out a restart delay before it may acquire again.
    await store.acquire({ key: first?.queueKey as NonNullable<typeof first>['queueKey'], nowMs: 1_000 })
    await host.fenceRefused(first as NonNullable<typeof first>)
    const next = await host.claimFence(family.namespace, family.family, family.type)
    expect(next?.queueKey.partition).toBe(1)
    expect(next?.rangeId).toBe(store.rangeIdOf(next?.queueKey as NonNullable<typeof next>['queueKey']))
    await host.close()
  })

  it('a poll held while its queue waits out a restart delay is answered when membership moves the partition away', async () => {
    const clock = new ManualClock(1_000)
    const store = makeMemoryStore()
    const view = viewOf('h1')
    const host = makeMatchingHost({ hostId: 'h1', store, history: startedHistory, clock, random: Random.make(1), partitionCount: 1, membership: view.view })
    const fence = await host.claimFence(family.namespace, family.family, family.type)
    // Another host takes the partition's range: its queue dies and waits out a restart delay.
    await store.acquire({ key: fence?.queueKey as NonNullable<typeof fence>['queueKey'], nowMs: 1_000 })
    await host.fenceRefused(fence as NonNullable<typeof fence>)
    let answered: unknown = 'waiting'
    void host.poll({ ...family, identity: 'w1', waitMs: 60_000 }).then((polled) => (answered = polled))
    await settle()
    expect(answered).toBe('waiting')
    // Membership gives the partition to the host that took it: once the instance unloads, the
    // held poll answers at once (empty), so its poller looks at the new owner rather than wait.
    view.set('h2')
    clock.advance(membershipUnloadDelayMs)
    await settle()
    expect(answered).toBeNull()
    expect(clock.now()).toBe(1_000 + membershipUnloadDelayMs)
    await host.close()
  })

  it('a poll waiting on the only partition its host owned moves to tasks a partition the host gains later reads from its backlog', async () => {
    const clock = new ManualClock(1_000)
    const store = makeMemoryStore()
    // h0 owned partition 1 and left three tasks in its backlog.
    const h0 = makeMatchingHost({ hostId: 'h0', store, history: startedHistory, clock, random: Random.make(1), partitionCount: 2, membership: { ownerOf: (key) => (key.partition === 1 ? 'h0' : 'h1'), subscribe: () => () => {} } })
    for (const jobId of ['a', 'b', 'c']) expect((await h0.addTask({ ...family, task: { jobId } })).partition).toBe(1)
    await h0.close()
    let gained = false
    const listeners = new Set<() => void>()
    const membership = { ownerOf: (key: { readonly partition: number }) => (key.partition === 0 || gained ? 'h1' : 'h0'), subscribe: (listener: () => void) => (listeners.add(listener), () => listeners.delete(listener)) }
    const h1 = makeMatchingHost({ hostId: 'h1', store, history: startedHistory, clock, random: Random.make(2), partitionCount: 2, membership })
    // A poll waits on partition 0, the only one h1 owns.
    let first: unknown = 'waiting'
    void h1.poll({ ...family, identity: 'w1', waitMs: 60_000 }).then((polled) => (first = polled?.task.jobId))
    await settle()
    expect(first).toBe('waiting')
    // h1 gains partition 1; a second poll loads it, reads its backlog and takes one task: the
    // tasks left ready there draw the first poll, with the clock standing still.
    gained = true
    for (const listener of listeners) listener()
    const second = await h1.poll({ ...family, identity: 'w2', waitMs: 0 })
    expect(second?.partition).toBe(1)
    await settle()
    expect(['a', 'b', 'c']).toContain(first)
    expect(first).not.toBe(second?.task.jobId)
    await h1.close()
  })

  it('keeps a partition whose membership view flickered when nobody took it', async () => {
    const clock = new ManualClock(1_000)
    const view = viewOf('h1')
    const host = makeMatchingHost({ hostId: 'h1', store: makeMemoryStore(), history: startedHistory, clock, random: Random.make(1), partitionCount: 1, membership: view.view })
    await host.addTask({ ...family, task: { jobId: 'a' } })
    await settle()
    view.set('h2')
    view.set('h1')
    clock.advance(500)
    await settle()
    expect(sizesOf(host).partitionsLoaded).toBe(1)
    await host.close()
  })

  it('a defect while a partition handles a request reaches onDefect; the request is refused and the partition serves on', async () => {
    const clock = new ManualClock(1_000)
    const defects: Array<{ queue: string; defect: unknown }> = []
    const host = makeMatchingHost({ hostId: 'h1', store: makeMemoryStore(), history: startedHistory, clock, random: Random.make(1), partitionCount: 1, onDefect: (queue, defect) => defects.push({ queue, defect }) })
    // Loads the partition, so the next poll goes straight to its mailbox.
    expect(await pollOnce(host, clock, { waitMs: 10 })).toBeNull()
    // A signal whose getter throws: the partition's handling of this poll dies.
    const broken = { get aborted(): boolean { throw new Error('broken signal') } } as unknown as AbortSignal
    expect(await host.poll({ ...family, identity: 'w1', waitMs: 10, signal: broken })).toBeNull()
    expect(defects.map(({ queue, defect }) => [queue, (defect as Error).message])).toEqual([['default/emails/activity/0', 'broken signal']])
    await host.addTask({ ...family, task: { jobId: 'after' } })
    expect((await pollOnce(host, clock, { waitMs: 10 }))?.task.jobId).toBe('after')
    await host.close()
  })

  it('a layer host runs its partitions in the layer scope: closing it drains them', async () => {
    const store = makeMemoryStore()
    const program = Effect.gen(function* () {
      const host = yield* MatchingHostService
      yield* host.addTask({ ...family, task: { jobId: 'kept' } })
    })
    await Effect.runPromise(program.pipe(Effect.provide(layerMatchingHost({ hostId: 'h1', store, history: startedHistory, clock: new ManualClock(1_000), random: Random.make(1), partitionCount: 1 }))))
    // The layer's scope closed: the partition drained and let go of its range.
    const [queue] = await store.list()
    expect(queue?.storedRows).toBe(1)
    const after = makeMatchingHost({ hostId: 'h2', store, history: startedHistory, clock: new ManualClock(2_000), random: Random.make(2), partitionCount: 1 })
    expect((await after.poll({ ...family, identity: 'w1', waitMs: 0 }))?.task.jobId).toBe('kept')
    await after.close()
  })
})
