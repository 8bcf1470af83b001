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

describe('a queue whose partition moves to another engine', () => {
  it('the old owner’s idle worker is routed to the new owner when its partition instance unloads, and gets the next job there at once', async () => {
    let owner = 'h1'
    const { h1, h2, clock, membershipChanged } = twoEngines(() => owner)
    const { handler, gates } = heldByKey<string>(() => 'all')
    // The worker's claim joins h1's line, finds nothing due and parks there.
    const stop = h1.queue<string>('moving').work(handler)
    await settle(50)
    const parkedAt = clock.now()
    owner = 'h2'
    membershipChanged()
    await settle(20)
    // The instance unloads after the host's delay, well before the parked claim's own wait ends.
    clock.advance(membershipUnloadDelayMs)
    await settle(50)
    expect(clock.now() - parkedAt).toBeLessThan(workerClaimWaitMs)
    await h2.queue<string>('moving').enqueue('after the move')
    // The clock stands still: only a claim already forwarded to h2 can take the job now.
    await until(() => gates.length === 1, 'the job starts on h1’s worker, through h2')
    expect(clock.now() - parkedAt).toBeLessThan(workerClaimWaitMs)
    void stop()
    releaseEveryHeld()
  })

  it('a worker whose poll waits at the old owner, forwarded there, is routed to the new owner (itself) once the partition left', async () => {
    let owner = 'h1'
    const { h2, clock, membershipChanged } = twoEngines(() => owner)
    const { handler, gates } = heldByKey<string>(() => 'all')
    // h2's worker forwards its claim to h1, the owner, where it waits in h1's Matching partition.
    const stop = h2.queue<string>('moving').work(handler)
    await settle(50)
    const forwardedAt = clock.now()
    owner = 'h2'
    membershipChanged()
    await settle(20)
    clock.advance(membershipUnloadDelayMs)
    await settle(50)
    await h2.queue<string>('moving').enqueue('after the move')
    await until(() => gates.length === 1, 'the job starts on h2’s worker, now the owner')
    expect(clock.now() - forwardedAt).toBeLessThan(workerClaimWaitMs)
    void stop()
    releaseEveryHeld()
  })
})
