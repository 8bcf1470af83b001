/**
 * Jobs in the History role claim a job for Matching's delivery under the fence of the partition
 * the delivery comes from: once another engine has acquired that partition (its range moved), a
 * claim with the old range writes nothing and answers `retryable`, while a claim of the same turn
 * from a partition still held commits. A delivery Matching kept retrying while the job store was
 * unreachable would otherwise claim the job long after its engine lost the queue. A delivery
 * whose job was taken first or is gone is reported stale, so the engine can serve the poll again.
 */
import { describe, expect, it } from 'vitest'
import type { PollerInfo } from '../actors/History.ts'
import { makeTask } from '../domain/Task.ts'
import { ManualClock } from '../kernel/Clock.ts'
import { Random } from '../kernel/Random.ts'
import type { NewJob } from '../persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../persistence/queues/MemoryStore.ts'
import { makeJobsHistory } from './JobsHistory.ts'

const nowMs = 1_700_000_000_000
const poller: PollerInfo = { identity: 'worker', version: null }
const partition = (n: number) => ({ namespace: 'jobs', family: 'q', type: 'activity', partition: n, version: null }) as const

function job(id: string): NewJob {
  return { id, queue: 'q', payload: id, priority: 0, runAtMs: nowMs, expiresAtMs: null, maxAttempts: 3, visibilityTimeoutMs: 30_000, backoffBaseMs: 1_000, deadLetterRetentionMs: null }
}

describe('JobsHistory', () => {
  it('a claim fenced by a partition another engine took writes nothing; one of the same turn from a held partition commits', async () => {
    const store = makeMemoryStore()
    const jobStore = makeMemoryJobStore({ queueRanges: store })
    const history = makeJobsHistory({ jobStore, clock: new ManualClock(nowMs), random: Random.make(3) })
    const lost = (await store.acquire({ key: partition(0), nowMs })).rangeId
    const held = (await store.acquire({ key: partition(1), nowMs })).rangeId
    await jobStore.enqueue({ job: job('stale'), nowMs })
    await jobStore.enqueue({ job: job('fresh'), nowMs })
    // Another engine takes partition 0: its range moves past `lost`.
    await store.acquire({ key: partition(0), nowMs })

    const [stale, fresh] = await Promise.all([
      history.recordTaskStarted(makeTask({ jobId: 'stale', createdAtMs: nowMs }), poller, { key: partition(0), rangeId: lost }),
      history.recordTaskStarted(makeTask({ jobId: 'fresh', createdAtMs: nowMs }), poller, { key: partition(1), rangeId: held }),
    ])
    console.log(`stale range: ${stale.kind}; held range: ${fresh.kind}`)
    expect(stale.kind).toBe('retryable')
    expect((await jobStore.getJob({ queue: 'q', id: 'stale' }))?.state).toBe('pending')
    expect(fresh.kind).toBe('started')
    expect((await jobStore.getJob({ queue: 'q', id: 'fresh' }))?.state).toBe('processing')
  })

  it('a delivery whose job was claimed first, or is gone, is reported stale for its queue; a claim of a paused queue is not', async () => {
    const store = makeMemoryStore()
    const jobStore = makeMemoryJobStore({ queueRanges: store })
    const stale: string[] = []
    const history = makeJobsHistory({ jobStore, clock: new ManualClock(nowMs), random: Random.make(3), onStale: (queue) => stale.push(queue) })
    const { rangeId } = await store.acquire({ key: partition(0), nowMs })
    const origin = { key: partition(0), rangeId }
    await jobStore.enqueue({ job: job('taken'), nowMs })
    // A claim straight from the store takes the row the task was added for.
    await jobStore.claimDue({ queue: 'q', nowMs, claimTokens: ['direct'] })
    expect((await history.recordTaskStarted(makeTask({ jobId: 'taken', createdAtMs: nowMs }), poller, origin)).kind).toBe('already-started')
    expect((await history.recordTaskStarted(makeTask({ jobId: 'missing', createdAtMs: nowMs }), poller, origin)).kind).toBe('obsolete')
    expect(stale).toEqual(['q', 'q'])
    await jobStore.enqueue({ job: job('paused'), nowMs })
    await jobStore.pauseQueue({ queue: 'q', nowMs })
    expect((await history.recordTaskStarted(makeTask({ jobId: 'paused', createdAtMs: nowMs }), poller, origin)).kind).toBe('obsolete')
    expect(stale).toEqual(['q', 'q'])
  })
})
