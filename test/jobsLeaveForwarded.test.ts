/**
 * An engine leaving the group gracefully answers the polls other engines forward to it until it
 * has left: a worker whose claim waits forwarded at the leaving owner is refused, looks again once
 * the view without that engine arrives, and gets the next job from the new owner at once — not
 * after its forwarded poll's own timeout, as it would if the leaving engine stopped listening
 * before its membership row went. And a worker that stops while the owner's answer to its
 * forwarded poll is on its way: its cancel reaches the owner after the owner answered, and the
 * owner gives the job back at once, so it runs elsewhere without waiting out its claim.
 *
 * Two engines on shared memory stores and bus; a ManualClock that never moves, no sleeps.
 */
import { afterEach, expect, it } from 'vitest'
import type { JsonValue } from '../src/domain/Json.ts'
import { heldByKey, releaseEveryHeld } from './harness/heldByKey.ts'
import { settle, until } from './harness/settle.ts'
import { closeEngines, twoEngines } from './harness/twoEngines.ts'

afterEach(async () => {
  releaseEveryHeld()
  await closeEngines()
})

it('a claim forwarded to an engine that leaves gets the next job through the new owner, with the clock standing still', async () => {
  let owner = 'h1'
  const engines = twoEngines(() => owner, {
    // Leaving deletes h1's membership row: every view then gives its partitions to h2.
    leave: async (hostId) => {
      if (hostId !== 'h1') return
      owner = 'h2'
      engines.membershipChanged()
    },
  })
  const { handler, gates } = heldByKey<string>(() => 'all')
  // h2's worker forwards its claim to h1, the queue's owner, and waits there.
  const stop = engines.h2.queue<string>('leaving').work(handler)
  await settle(50)
  await engines.h1.close()
  await settle(50)
  await engines.h2.queue<string>('leaving').enqueue('after the leave')
  await until(() => gates.length === 1, 'the job starts on h2’s worker')
  expect(gates).toHaveLength(1)
  void stop()
  releaseEveryHeld()
})

it('a forwarded poll cancelled while its answer is on the bus: the owner gives the job back at once, and it runs once', async () => {
  const { h1, h2, bus } = twoEngines()
  // The owner's answer (`claimed`) is held back, as one still on its way when the worker stops.
  let held: JsonValue | null = null
  bus.setTap((message) => {
    if (message.kind !== 'host' || message.to !== 'h2' || (message.message as { kind?: string }).kind !== 'claimed') return 'deliver'
    held = message.message
    return 'drop'
  })
  const started: Array<{ readonly host: string; readonly attempts: number }> = []
  const stopH2 = h2.queue('crossed').work(async (job) => {
    started.push({ host: 'h2', attempts: job.attempts })
  })
  await settle(50)
  const id = await h1.queue('crossed').enqueue('crossed')
  await until(() => held !== null, 'h1 answered the forwarded poll')
  expect((await h1.queue('crossed').getJob(id))?.state).toBe('processing')
  // The stop cancels the poll; h1 hears the cancel after its answer and gives the job back.
  await stopH2()
  await settle(50)
  expect(await h1.queue('crossed').getJob(id)).toMatchObject({ state: 'pending', attempts: 0 })
  bus.setTap(null)
  const stopH1 = h1.queue('crossed').work(async (job) => {
    started.push({ host: 'h1', attempts: job.attempts })
  })
  await until(() => started.length === 1, 'the job given back ran on h1')
  // The answer, delivered late to h2 (which gave its poll up), starts nothing more.
  await bus.send('h2', held as unknown as JsonValue)
  await settle(50)
  expect(started).toEqual([{ host: 'h1', attempts: 1 }])
  await stopH1()
})
