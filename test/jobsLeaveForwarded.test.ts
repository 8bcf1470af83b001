/**
 * An engine leaving the group gracefully answers the polls other engines forward to it until it
 * has left: a worker whose claim waits forwarded at the leaving owner is refused, looks again once
 * the view without that engine arrives, and gets the next job from the new owner at once — not
 * after its forwarded poll's own timeout, as it would if the leaving engine stopped listening
 * before its membership row went.
 *
 * Two engines on shared memory stores and bus; a ManualClock that never moves, no sleeps.
 */
import { afterEach, expect, it } from 'vitest'
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
