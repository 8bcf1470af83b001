/**
 * A queue's dispatch is bound to the instances of its partitions loaded on the engine: when
 * membership moves the queue to another engine, the old owner's partition instance unloads (after
 * the host's unload delay) and the workers parked in the queue's line there are routed again at
 * once, to the new owner, instead of waiting out their claim on an engine that no longer
 * delivers the queue.
 *
 * Two engines on shared memory stores and bus; a ManualClock, no sleeps.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { membershipUnloadDelayMs, workerClaimWaitMs } from '../src/kernel/Limits.ts'
import { heldByKey, releaseEveryHeld } from './harness/heldByKey.ts'
import { settle, until } from './harness/settle.ts'
import { closeEngines, twoEngines } from './harness/twoEngines.ts'

afterEach(async () => {
  releaseEveryHeld()
  await closeEngines()
})

// h1 owns queue `moving` until the test moves it to h2; `worker` names the engine whose worker
// waits (on h1's line, or forwarded to h1). Once the worker waits, membership gives the queue to
// h2 and the clock moves on by the host's unload delay (h1's instance unloads then), well before
// the worker's own claim wait ends; then h2 enqueues one job with the clock standing still.
async function moveThenEnqueue(worker: 'h1' | 'h2'): Promise<{ readonly startedAfterMs: number }> {
  let owner = 'h1'
  const engines = twoEngines(() => owner)
  const { clock, membershipChanged } = engines
  const { handler, gates } = heldByKey<string>(() => 'all')
  const stop = engines[worker].queue<string>('moving').work(handler)
  await settle(50)
  const waitingSince = clock.now()
  owner = 'h2'
  membershipChanged()
  await settle(20)
  clock.advance(membershipUnloadDelayMs)
  await settle(50)
  await engines.h2.queue<string>('moving').enqueue('after the move')
  await until(() => gates.length === 1, `the job starts on ${worker}’s worker`)
  const startedAfterMs = clock.now() - waitingSince
  void stop()
  releaseEveryHeld()
  return { startedAfterMs }
}

describe('a queue whose partition moves to another engine', () => {
  it('the old owner’s idle worker is routed to the new owner when its partition instance unloads, and gets the next job there at once', async () => {
    // Its claim parked in h1's line; only a claim already forwarded to h2 can take the job now.
    const { startedAfterMs } = await moveThenEnqueue('h1')
    expect(startedAfterMs).toBeLessThan(workerClaimWaitMs)
  })

  it('a worker whose poll waits at the old owner, forwarded there, is routed to the new owner (itself) once the partition left', async () => {
    // h2's worker forwarded its claim to h1, where it waited in h1's Matching partition.
    const { startedAfterMs } = await moveThenEnqueue('h2')
    expect(startedAfterMs).toBeLessThan(workerClaimWaitMs)
  })
})
