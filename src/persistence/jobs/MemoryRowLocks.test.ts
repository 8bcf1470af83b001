/**
 * The memory job store's row-lock windows (MemoryRowLocks.ts): while the head statements its
 * owner names are in flight, `claimDue`, `ackAndClaimDue` and `takeDue` pass over the rows those
 * hold, as `FOR UPDATE SKIP LOCKED` does on PostgreSQL, so a claim may answer short while a
 * claimable row exists; once nothing is in flight, every row is claimable again. A claim whose
 * fence no longer holds, and a reservation's keys to skip, hold nothing, as their SQL reads nothing there.
 */
import { describe, expect, it } from 'vitest'
import type { QueueKey } from '../../domain/QueueKey.ts'
import { makeMemoryStore } from '../queues/MemoryStore.ts'
import { newJobOf } from './conformance/JobFixture.ts'
import { makeMemoryJobStore } from './MemoryJobStore.ts'
import type { HeldHead } from './MemoryRowLocks.ts'

const job = newJobOf

// A store whose in-flight head statements are whatever `held.heads` says at the moment, fenced by `queues`' ranges.
function storeWithLocks() {
  const held: { heads: ReadonlyArray<HeldHead> } = { heads: [] }
  const queues = makeMemoryStore()
  return { held, queues, store: makeMemoryJobStore({ queueRanges: queues, heldHeads: () => held.heads }) }
}

describe('row-lock windows of the memory job store', () => {
  it('a claim of the head skips the rows a claim in flight holds, and finds them once it ended', async () => {
    const { held, store } = storeWithLocks()
    for (const id of ['a', 'b', 'c']) await store.enqueue({ job: job(id, 'q'), nowMs: 1_000 })
    held.heads = [{ queues: ['q'], rows: 2, kind: 'claim' }]
    const beside = await store.claimDue({ queue: 'q', nowMs: 2_000, claimTokens: ['t1', 't2'] })
    expect(beside.map((row) => row.id)).toEqual(['c'])
    held.heads = []
    const after = await store.claimDue({ queue: 'q', nowMs: 2_000, claimTokens: ['t3', 't4'] })
    expect(after.map((row) => row.id)).toEqual(['a', 'b'])
  })

  it('a claim in flight holds the head of each branch, so one beside it answers short though a pending row is claimable', async () => {
    const { held, store } = storeWithLocks()
    await store.enqueue({ job: job('with-matching', 'q'), nowMs: 1_000 })
    const [reserved] = await store.takeDue({ nowMs: 1_000, reserveUntilMs: 9_000, limit: 1, queues: ['q'] })
    await store.confirmDelivered({ deliveries: [{ id: 'with-matching', revision: reserved?.revision as number }] })
    await store.enqueue({ job: job('pending', 'q'), nowMs: 1_000 })
    // A claim of one job locks the first row with Matching and the first pending row, and claims only one of them.
    held.heads = [{ queues: ['q'], rows: 1, kind: 'claim' }]
    expect(await store.claimDue({ queue: 'q', nowMs: 2_000, claimTokens: ['t1'] })).toEqual([])
    const riding = await store.ackAndClaimDue({ queue: 'q', nowMs: 2_000, acks: [], claimTokens: ['t2'] })
    expect(riding.claimed).toEqual([])
    held.heads = []
    expect((await store.claimDue({ queue: 'q', nowMs: 2_000, claimTokens: ['t3', 't4'] })).map((row) => row.id)).toEqual(['with-matching', 'pending'])
  })

  it('a reservation skips the rows a reservation in flight holds; a statement on another queue holds none of this one', async () => {
    const { held, store } = storeWithLocks()
    for (const id of ['a', 'b']) await store.enqueue({ job: job(id, 'q'), nowMs: 1_000 })
    held.heads = [
      { queues: ['other'], rows: 5, kind: 'claim' },
      { queues: null, rows: 1, kind: 'reserve' },
    ]
    const beside = await store.takeDue({ nowMs: 2_000, reserveUntilMs: 9_000, limit: 5, queues: ['q'] })
    expect(beside.map((row) => row.id)).toEqual(['b'])
    held.heads = [{ queues: ['other'], rows: 5, kind: 'claim' }]
    expect((await store.claimDue({ queue: 'q', nowMs: 2_000, claimTokens: ['t1'] })).map((row) => row.id)).toEqual(['a'])
  })

  it('a claim whose fence no longer holds holds nothing; a reservation holds no pending row of a key it skips', async () => {
    const { held, queues, store } = storeWithLocks()
    const queueKey: QueueKey = { namespace: 'jobs', family: 'q', type: 'activity', partition: 0, version: null }
    const stale = { queueKey, rangeId: (await queues.acquire({ key: queueKey, nowMs: 500 })).rangeId }
    await queues.acquire({ key: queueKey, nowMs: 600 })
    await store.enqueue({ job: job('keyed', 'q', { concurrencyKey: 'k', concurrencyLimit: 5 }), nowMs: 1_000 })
    held.heads = [{ queues: ['q'], rows: 1, kind: 'claim', fence: stale }]
    expect((await store.takeDue({ nowMs: 2_000, reserveUntilMs: 2_000, limit: 1, queues: ['q'] })).map((row) => row.id)).toEqual(['keyed'])
    held.heads = [{ queues: ['q'], rows: 1, kind: 'reserve', skipKeys: ['k'] }]
    expect((await store.claimDue({ queue: 'q', nowMs: 2_000, claimTokens: ['t1'] })).map((row) => row.id)).toEqual(['keyed'])
  })
})
