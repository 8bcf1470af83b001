/**
 * A queue's per-key fairness state stays as large as its recently active keys: `sweepExpired`
 * forgets a key whose last pass is a longest stride (`fairnessStrideMax`) behind the queue's
 * virtual now — the head of its pending rows, or now when there is none — since its next job
 * would enter at the head anyway. Shown on the memory store (its sizes) and on the SQL store on
 * PGlite (its fairness_passes rows); what the next job of a forgotten key gets is the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sizesOf } from '../src/kernel/Sizes.ts'
import { fairnessStrideMax, type JobStore, type NewJob } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { makePgliteDriver } from '../src/persistence/sql/PgliteDriver.ts'
import type { Driver } from '../src/persistence/sql/Driver.ts'

const job = (queue: string, id: string, fairnessKey: string | null, runAtMs: number): NewJob => ({
  id, queue, payload: null, priority: 0, runAtMs, expiresAtMs: null, maxAttempts: 3, visibilityTimeoutMs: 30_000, backoffBaseMs: 1_000, deadLetterRetentionMs: null, ...(fairnessKey === null ? {} : { fairnessKey, fairnessWeight: 1 }),
})

interface Bound {
  store: JobStore
  /** The fairness keys the store remembers for `queue`. */
  keys(queue: string): Promise<number>
}

const bindings: ReadonlyArray<readonly [string, () => Promise<Bound & { close(): Promise<void> }>]> = [
  ['memory', async () => {
    const store = makeMemoryJobStore()
    // The memory store counts every queue's keys; each case uses one queue.
    return { store, keys: async () => sizesOf(store).fairnessKeys ?? Number.NaN, close: async () => store.close() }
  }],
  ['embedded (PGlite)', async () => {
    const driver: Driver = await makePgliteDriver()
    const store = await openSqlJobStore(driver)
    const keys = async (queue: string) => Number((await driver.query<{ n: string }>('SELECT count(*) AS n FROM matchbox.fairness_passes WHERE queue = $1', [queue])).rows[0]?.n)
    return { store, keys, close: async () => { await store.close(); await driver.close() } }
  }],
]

for (const [name, bind] of bindings) {
  describe(`fairness keys forgotten by the sweep: ${name}`, () => {
    let bound: Bound & { close(): Promise<void> }
    beforeAll(async () => {
      bound = await bind()
    })
    afterAll(async () => bound.close())

    it('keeps a key while a pending row holds the head back, forgets it once the head passed it by the longest stride, and its next job enters at the head either way', async () => {
      const { store } = bound
      const queue = 'forget'
      const t0 = 1_000
      // 'idle' runs and is done; 'busy' keeps a job pending at t0, so the head stays at t0.
      await store.enqueue({ job: job(queue, 'idle-1', 'idle', t0), nowMs: t0 })
      const [idle] = await store.claimDue({ queue, nowMs: t0, claimTokens: ['t-idle'] })
      expect(await store.ack({ id: idle?.id as string, claimToken: 't-idle', nowMs: t0 })).toBe(true)
      await store.enqueue({ job: job(queue, 'busy-1', 'busy', t0), nowMs: t0 })
      const later = t0 + fairnessStrideMax
      await store.sweepExpired({ queue, nowMs: later })
      expect(await bound.keys(queue)).toBe(2)
      // busy's job is claimed, so the head is now: 'recent' enters a longest stride after t0.
      expect((await store.claimDue({ queue, nowMs: later - 1, claimTokens: ['t-busy'] })).map((row) => row.id)).toEqual(['busy-1'])
      await store.enqueue({ job: job(queue, 'recent-1', 'recent', later - 1), nowMs: later - 1 })
      expect((await store.claimDue({ queue, nowMs: later, claimTokens: ['t-recent'] })).map((row) => row.id)).toEqual(['recent-1'])
      await store.sweepExpired({ queue, nowMs: later })
      // idle's and busy's passes (t0) are a longest stride behind now; recent's (later - 1) is not.
      expect(await bound.keys(queue)).toBe(1)
      await store.enqueue({ job: job(queue, 'idle-2', 'idle', later), nowMs: later })
      expect((await store.getJob({ queue, id: 'idle-2' }))?.fairPass).toBe(later)
    })

    it("forgets the implicit key's row by the same rule; once no real key is left, an unkeyed job writes no key state", async () => {
      const { store } = bound
      const queue = 'forget-implicit'
      const t0 = 1_000
      // The memory store counts the other case's queue too: count from what it holds.
      const others = await bound.keys(queue)
      const keys = async () => (await bound.keys(queue)) - others
      // A keyed job gives the queue keys, so the unkeyed job after it takes the implicit key's turn.
      await store.enqueue({ job: job(queue, 'keyed-1', 'a', t0), nowMs: t0 })
      await store.enqueue({ job: job(queue, 'plain-1', null, t0), nowMs: t0 })
      expect(await keys()).toBe(2)
      for (const claimed of await store.claimDue({ queue, nowMs: t0, claimTokens: ['t-1', 't-2'] })) {
        expect(await store.ack({ id: claimed.id, claimToken: claimed.claimToken as string, nowMs: t0 })).toBe(true)
      }
      await store.sweepExpired({ queue, nowMs: t0 + fairnessStrideMax - 1 })
      expect(await keys()).toBe(2)
      const later = t0 + fairnessStrideMax
      await store.sweepExpired({ queue, nowMs: later })
      expect(await keys()).toBe(0)
      await store.enqueue({ job: job(queue, 'plain-2', null, later), nowMs: later })
      expect((await store.getJob({ queue, id: 'plain-2' }))?.fairPass).toBeUndefined()
      expect(await keys()).toBe(0)
    })
  })
}
