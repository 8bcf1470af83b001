/**
 * The hand-over at enqueue across engines (HandOvers.ts) on the memory stores, two engines of
 * one group on one ManualClock: h1 owns the queue and its worker waits idle; h2 enqueues. The
 * enqueue inserts the job claimed for h1's registered claim and h1's handler starts with the
 * clock standing still. A `handed` message lost on the bus costs the job one claim lapse — it is
 * delivered again once its visibility timeout passes — never the job; one still on its way when
 * the worker stops costs nothing: the stop gives the job back. An idle worker loop keeps
 * one registration across its claims; its stop, or its partition leaving the engine, takes it back.
 *
 * No sleeps: waits are on conditions, bounded by event-loop turns; time moves only when advanced.
 */
import { afterEach, expect, it } from 'vitest'
import type { JsonValue } from '../src/domain/Json.ts'
import { membershipUnloadDelayMs } from '../src/kernel/Limits.ts'
import { handedJobOf } from '../src/persistence/jobs/HandOver.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { closeEngines, twoEngines } from './harness/twoEngines.ts'
import { settle, until } from './harness/settle.ts'

afterEach(closeEngines)

// A job store wrapper that counts the waiter statements into `calls`.
const countingWaiters =
  (calls: { added: number; removed: number }) =>
  (store: JobStore): JobStore => ({
    ...store,
    addWaiters: (params) => (calls.added++, store.addWaiters(params)),
    removeWaiters: (params) => (calls.removed++, store.removeWaiters(params)),
  })

it("an enqueue on another engine is claimed for the owner's waiting worker and reaches its handler with the clock standing still", async () => {
  const { h1, h2 } = twoEngines(undefined, { handOverAcrossEngines: true })
  const started: Array<{ readonly id: string; readonly attempts: number }> = []
  const stop = h1.queue('q').work(async (job) => {
    started.push({ id: job.id, attempts: job.attempts })
  })
  await settle()
  const id = await h2.queue('q').enqueue({ n: 1 })
  // Claimed by the enqueue itself: the job is processing as soon as the enqueue answers.
  expect((await h2.queue('q').getJob(id))?.state).toBe('processing')
  await until(() => started.length === 1, 'the handler started')
  expect(started).toEqual([{ id, attempts: 1 }])
  await stop()
})

it('a handed message lost on the bus costs the job one claim lapse, never the job', async () => {
  const { h1, h2, clock, bus } = twoEngines(undefined, { handOverAcrossEngines: true })
  let dropped = 0
  bus.setTap((message) => (message.kind === 'host' && handedJobOf(message.message) !== null && ++dropped > 0 ? 'drop' : 'deliver'))
  const started: Array<{ readonly id: string; readonly attempts: number }> = []
  const stop = h1.queue('q').work(async (job) => {
    started.push({ id: job.id, attempts: job.attempts })
  })
  await settle()
  const id = await h2.queue('q', { visibilityTimeoutS: 5 }).enqueue({ n: 1 })
  await settle()
  expect(dropped).toBe(1)
  expect(started).toEqual([])
  expect((await h2.queue('q').getJob(id))?.state).toBe('processing')
  bus.setTap(null)
  // Its claim lapses at the visibility timeout; the owner delivers it again, as attempt 2.
  clock.advance(5_000)
  await until(() => started.length === 1, 'the job was delivered again after its claim lapsed')
  expect(started).toEqual([{ id, attempts: 2 }])
  await stop()
})

it('a worker that stops while the handed message of its job is on its way gives the job back at once, and the late message is dropped', async () => {
  const { h1, h2, bus } = twoEngines(undefined, { handOverAcrossEngines: true })
  // The message is held back, as one still on its way when the worker stops.
  let held: JsonValue | null = null
  bus.setTap((message) => {
    if (message.kind !== 'host' || handedJobOf(message.message) === null) return 'deliver'
    held = message.message
    return 'drop'
  })
  const started: Array<{ readonly id: string; readonly attempts: number }> = []
  const handler = async (job: { readonly id: string; readonly attempts: number }) => {
    started.push({ id: job.id, attempts: job.attempts })
  }
  const stop = h1.queue('q').work(handler)
  await settle()
  const id = await h2.queue('q').enqueue({ n: 1 })
  await settle()
  expect(held).not.toBeNull()
  expect((await h2.queue('q').getJob(id))?.state).toBe('processing')
  // The stop takes the registration back, finds it taken, and gives the job back: pending, its attempt undone.
  await stop()
  expect(await h2.queue('q').getJob(id)).toMatchObject({ state: 'pending', attempts: 0 })
  bus.setTap(null)
  // The next worker runs it with the clock standing still; the message, arriving now, starts nothing more.
  const again = h1.queue('q').work(handler)
  await until(() => started.length === 1, 'the job given back was delivered')
  await bus.send('h1', held as unknown as JsonValue)
  await settle(50)
  expect(started).toEqual([{ id, attempts: 1 }])
  await again()
})

it('an idle worker loop keeps one registration across its claims, and its stop takes it back', async () => {
  const calls = { added: 0, removed: 0 }
  const { h1, clock } = twoEngines(undefined, { handOverAcrossEngines: true, wrapJobStore: countingWaiters(calls) })
  const stop = h1.queue('q').work(async () => {})
  await settle()
  // Ten claim waits of one second each, idle: one registration serves them all.
  for (let second = 0; second < 10; second++) {
    clock.advance(1_000)
    await settle()
  }
  expect(calls).toEqual({ added: 1, removed: 0 })
  await stop()
  expect(calls).toEqual({ added: 1, removed: 1 })
})

it("an engine whose partition of the queue left takes its idle registrations back (they carry that partition's fence)", async () => {
  let owner = 'h1'
  const calls = { added: 0, removed: 0 }
  const { h1, clock, membershipChanged } = twoEngines(() => owner, { handOverAcrossEngines: true, wrapJobStore: countingWaiters(calls) })
  const stop = h1.queue('q').work(async () => {})
  await settle(50)
  expect(calls).toEqual({ added: 1, removed: 0 })
  owner = 'h2'
  membershipChanged()
  await settle(20)
  clock.advance(membershipUnloadDelayMs)
  await settle(50)
  expect(calls.removed).toBe(1)
  await stop()
})
