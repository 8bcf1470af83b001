/**
 * claimDirect on its own, over a stub runtime: a claim in line that waits for a due-time pass in
 * progress returns as soon as a job is handed to it (`offered`), without waiting for the rest of
 * the pass, which may take long (a statement held by a lock, a Matching add waiting out a
 * partition's restart) while the handed job's visibility timeout runs.
 */
import { describe, expect, it } from 'vitest'
import type { QueueDispatch } from './Dispatch.ts'
import type { JobsRuntime } from './Runtime.ts'
import { claimDirect } from './StoreClaims.ts'

// A runtime whose due-time pass never settles, owning every queue.
function busyRuntime(): JobsRuntime {
  return {
    routing: { owns: () => true },
    driver: { isQuiet: () => false, settled: () => new Promise<void>(() => {}) },
  } as unknown as JobsRuntime
}

const dispatch = { queue: 'q', isDrained: () => false } as unknown as QueueDispatch

describe('claimDirect', () => {
  it('a claim handed a job while it waits for a pass returns at once, claiming nothing', async () => {
    let handed = false
    let hand: () => void = () => {}
    const offered = new Promise<void>((resolve) => (hand = resolve))
    const claim = claimDirect(busyRuntime(), dispatch, () => handed, offered)
    const still = Symbol('still waiting')
    expect(await Promise.race([claim, Promise.resolve().then(() => still)])).toBe(still)
    handed = true
    hand()
    expect(await Promise.race([claim, new Promise((resolve) => setImmediate(() => resolve(still)))])).toBeNull()
  })
})
