import { describe, expect, it } from 'vitest'
import { settle } from '../../test/harness/settle.ts'
import { makeTask } from '../domain/Task.ts'
import { ManualClock } from '../kernel/Clock.ts'
import { historyRetryInitialMs, historyRetryMaxMs } from '../kernel/Limits.ts'
import { Random } from '../kernel/Random.ts'
import { makeMemoryStore } from '../persistence/queues/MemoryStore.ts'
import type { Store } from '../persistence/queues/Store.ts'
import type { History, RecordStartResult } from './History.ts'
import { PhysicalQueueActor } from './PhysicalQueueActor.ts'

const key = { namespace: 'default', family: 'emails', type: 'activity', partition: 0, version: null } as const
const task = (jobId: string) => makeTask({ jobId, createdAtMs: 0 })

function recordingHistory(script: (jobId: string, calls: number) => RecordStartResult = () => ({ kind: 'started', response: null })) {
  const calls = new Map<string, number>()
  const history: History = {
    recordTaskStarted: async (started) => {
      const n = (calls.get(started.jobId) ?? 0) + 1
      calls.set(started.jobId, n)
      return script(started.jobId, n)
    },
  }
  return { history, calls }
}

function makeQueue(store: Store, clock: ManualClock, history: History, generation = 1) {
  const queue = new PhysicalQueueActor({ key, store, history, clock, random: Random.make(7), generation })
  queue.start()
  return queue
}

describe('PhysicalQueueActor on the memory store', () => {
  it('spools adds, delivers them in order, checkpoints on its interval and deletes the prefix', async () => {
    const store = makeMemoryStore()
    const clock = new ManualClock(1_000)
    const queue = makeQueue(store, clock, recordingHistory().history)
    await settle()
    expect(queue.state).toBe('owned')
    const adds = await Promise.all(['a', 'b', 'c'].map((id) => queue.addTask(task(id))))
    expect(adds.map((add) => add.kind)).toEqual(['spooled', 'spooled', 'spooled'])
    const got: string[] = []
    for (let i = 0; i < 3; i++) {
      const result = await queue.poll({ identity: 'w1', version: null }, clock.now() + 60_000)
      if (result.kind === 'task') got.push(result.task.jobId)
    }
    expect(got).toEqual(['a', 'b', 'c'])
    clock.advance(1_000)
    await settle()
    const inspection = await store.inspect(key)
    expect(inspection?.metadata.ackLevels[0]).toBe(3)
    expect(inspection?.storedRows).toBe(0)
  })

  it('a retryable start failure re-dispatches the task after its backoff', async () => {
    const store = makeMemoryStore()
    const clock = new ManualClock(0)
    const { history, calls } = recordingHistory((_, n) => (n === 1 ? { kind: 'retryable', reason: 'busy' } : { kind: 'started', response: 'ok' }))
    const queue = makeQueue(store, clock, history)
    await settle()
    await queue.addTask(task('x'))
    const polled = queue.poll({ identity: 'w1', version: null }, 60_000)
    await settle()
    expect(calls.get('x')).toBe(1)
    clock.advance(10_000)
    await settle()
    expect(await polled).toMatchObject({ kind: 'task', task: { jobId: 'x' }, response: 'ok' })
    expect(calls.get('x')).toBe(2)
  })

  it('a History that keeps answering retryable for a sync-matched task is called on the back-off curve, not in a loop', async () => {
    const store = makeMemoryStore()
    const clock = new ManualClock(0)
    let calls = 0
    const history: History = {
      recordTaskStarted: async () => {
        calls++
        // Answer on a later turn, so a loop without back-off shows as many calls rather than a hang.
        await new Promise<void>((resolve) => setImmediate(resolve))
        return { kind: 'retryable', reason: 'busy' }
      },
    }
    const queue = makeQueue(store, clock, history)
    await settle()
    const polled = queue.poll({ identity: 'w1', version: null }, 60_000)
    await settle()
    const added = queue.addTask(task('x'))
    const spanMs = 30_000
    for (let elapsedMs = 0; elapsedMs < spanMs; elapsedMs += 50) {
      clock.advance(50)
      await settle()
    }
    // The sync match, the first dispatch from the backlog, then at most one call per shortest
    // delay of each attempt (equal jitter: half the capped exponential) within the span.
    let bound = 2
    for (let attempt = 1, spentMs = 0; ; attempt++, bound++) {
      spentMs += Math.min(historyRetryMaxMs, historyRetryInitialMs * 2 ** (attempt - 1)) / 2
      if (spentMs > spanMs) break
    }
    expect(calls).toBeGreaterThanOrEqual(3)
    expect(calls).toBeLessThanOrEqual(bound)
    // Refused by History, the sync match falls back to the append path.
    expect(await added).toMatchObject({ kind: 'spooled' })
    await queue.drain('test over')
    expect(await polled).toMatchObject({ kind: 'failed', error: { _tag: 'ShuttingDown' } })
  })

  it('two owners stealing the queue back and forth deliver every task and leave 0 rows', async () => {
    const store = makeMemoryStore()
    const clock = new ManualClock(0)
    const started = new Set<string>()
    const history: History = {
      recordTaskStarted: async (t) => {
        if (started.has(t.jobId)) return { kind: 'already-started' }
        started.add(t.jobId)
        return { kind: 'started', response: null }
      },
    }
    const accepted: string[] = []
    let generation = 0
    for (let round = 0; round < 6; round++) {
      // A new owner takes over; the old one only learns on its next write.
      const queue = makeQueue(store, clock, history, ++generation)
      await settle()
      for (let i = 0; i < 5; i++) {
        const id = `r${round}-${i}`
        const result = await queue.addTask(task(id))
        if (result.kind !== 'failed') accepted.push(id)
      }
      const polls = [0, 1, 2].map(() => queue.poll({ identity: `w${round}`, version: null }, clock.now() + 100))
      await settle()
      clock.advance(100)
      await settle()
      await Promise.all(polls)
    }
    const last = makeQueue(store, clock, history, ++generation)
    await settle()
    for (let i = 0; i < accepted.length; i++) {
      const polled = last.poll({ identity: 'final', version: null }, clock.now() + 50)
      await settle()
      clock.advance(50)
      await polled
    }
    await last.drain('test over')
    expect(accepted.filter((id) => !started.has(id))).toEqual([])
    expect((await store.inspect(key))?.storedRows).toBe(0)
  })

  it('a range bump made directly in the store makes the owner unload on its next write', async () => {
    const store = makeMemoryStore()
    const clock = new ManualClock(0)
    const queue = makeQueue(store, clock, recordingHistory().history)
    await settle()
    await store.acquire({ key, nowMs: 0 })
    const result = await queue.addTask(task('late'))
    expect(result).toMatchObject({ kind: 'failed', error: { _tag: 'OwnershipLost' } })
    const progress = await queue.unloaded
    expect(progress.reason.kind).toBe('ownership-lost')
    expect(queue.state).toBe('unloaded')
  })

  it('a defect inside a machine step goes to onDefect and leaves the queue as it was', async () => {
    const memory = makeMemoryStore()
    // A store that breaks its contract: rows at or below the read level.
    const store: Store = { ...memory, read: async () => [{ taskId: 0, task: task('bogus') }] }
    const clock = new ManualClock(0)
    const defects: unknown[] = []
    const queue = new PhysicalQueueActor({ key, store, history: recordingHistory().history, clock, random: Random.make(7), generation: 1, onDefect: (defect) => defects.push(defect) })
    queue.start()
    await settle()
    expect(defects).toHaveLength(1)
    expect(String(defects[0])).toContain('read id 0 not above 0')
    expect(queue.state).toBe('owned')
    expect(queue.progress().windows[0]?.readLevel).toBe(0)
  })
})
