/**
 * Every job a work loop runs is dispatched by its queue's dispatch machine, at a bounded cost in
 * machine steps: a job claimed straight from the store is counted in a `store.answered` step
 * (one per claim statement, so a concurrency-16 drain costs well under a step per job), and a
 * job handed to a waiting claim is a `claim.handOver` command. The claims the owner makes from
 * the store carry its partition's range: once another engine takes the partition, the store
 * refuses them and nothing is claimed with the stale range.
 *
 * The machine is watched through `onDispatchStep`; no sleeps, the clock moves only where a test
 * advances it.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock, Random } from '../src/index.ts'
import { idleUnloadMs } from '../src/kernel/Limits.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import type { DispatchCommand, DispatchEvent } from '../src/machines/DispatchProtocol.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { settle, until } from './harness/settle.ts'

const queueKey = { namespace: 'jobs', family: 'q', type: 'activity', partition: 0, version: null } as const

// An engine with `concurrency` workers on queue `q`, recording its dispatch steps.
function engine(concurrency: number, wrap: (inner: JobStore) => JobStore = (inner) => inner) {
  const store = makeMemoryStore()
  const jobStore = wrap(makeMemoryJobStore({ queueRanges: store }))
  const steps: Array<{ readonly event: DispatchEvent; readonly commands: ReadonlyArray<DispatchCommand> }> = []
  const mb = makeMatchbox({
    hostId: 'dispatch',
    store,
    jobStore,
    clock: new ManualClock(1_700_000_000_000),
    random: Random.make(5),
    closeStores: () => store.close(),
    onDispatchStep: (_queue, event, commands) => steps.push({ event, commands }),
  })
  const q = mb.queue('q')
  const ran: string[] = []
  const work = () => q.work(async (job) => void ran.push(job.payload as string), { concurrency })
  // Jobs the machine saw reach a claim: claimed by a store statement, or handed over.
  const dispatched = (): number =>
    steps.reduce((sum, { event, commands }) => sum + (event.type === 'store.answered' ? event.claimed : 0) + commands.filter((command) => command.type === 'claim.handOver').length, 0)
  return { mb, q, ran, work, steps, dispatched, store }
}

describe('dispatch', () => {
  it('a concurrency-16 drain: every job passes the dispatch machine, at well under one step per job', async () => {
    const { mb, q, ran, work, steps, dispatched } = engine(16)
    const jobs = 320
    await q.enqueueMany(Array.from({ length: jobs }, (_, n) => ({ payload: `job-${n}` })))
    const stop = work()
    await until(() => ran.length === jobs, 'the backlog drained')
    await stop()
    expect(new Set(ran).size).toBe(jobs)
    expect(dispatched()).toBe(jobs)
    // The backlog was in the store before the workers started: none of it goes through Matching.
    expect(steps.filter(({ event }) => event.type === 'linePoll.matched')).toHaveLength(0)
    expect(steps.length / jobs).toBeLessThan(1)
    await mb.close()
  })

  it('jobs enqueued one at a time on the worker’s engine are each handed over by the machine', async () => {
    const { mb, q, ran, work, steps, dispatched } = engine(1)
    const stop = work()
    await settle()
    const before = steps.length
    for (let n = 0; n < 20; n++) {
      await q.enqueue(`job-${n}`)
      await until(() => ran.length === n + 1, `job ${n} ran`)
    }
    await stop()
    expect(steps.filter(({ commands }) => commands.some((command) => command.type === 'claim.handOver'))).toHaveLength(20)
    expect(dispatched()).toBe(20)
    // Join, set aside, hand over, park, unpark, and the store answering: a handful per job.
    expect((steps.length - before) / 20).toBeLessThanOrEqual(8)
    await mb.close()
  })

  it('after another engine takes the partition, the old owner’s claims from the store are refused: nothing is claimed with the stale range', async () => {
    const refused: number[] = []
    const claimedWith: number[] = []
    const watch = (inner: JobStore): JobStore => ({
      ...inner,
      async claimDue(params) {
        try {
          const claimed = await inner.claimDue(params)
          if (claimed.length > 0 && params.fence !== undefined) claimedWith.push(params.fence.rangeId)
          return claimed
        } catch (error) {
          if ((error as { _tag?: string })._tag === 'OwnershipLost') refused.push(params.fence?.rangeId ?? -1)
          throw error
        }
      },
    })
    const { mb, q, ran, store } = engine(1, watch)
    await q.enqueue('first')
    const first = await q.claim({ waitMs: 0 })
    expect(first?.payload).toBe('first')
    await first?.ack()
    const ownRange = store.rangeIdOf(queueKey) as number
    // Another engine acquires the queue: its range moves past this engine's.
    await store.acquire({ key: queueKey, nowMs: 1_700_000_000_000 })
    await q.enqueue('second')
    const second = await q.claim({ waitMs: 0 })
    expect(refused).toContain(ownRange)
    expect(claimedWith.filter((rangeId) => rangeId === ownRange)).toHaveLength(1)
    // The refused claim claimed nothing with the stale range; whatever this engine claims next
    // it claims under a range it acquired again.
    if (second !== null) expect(store.rangeIdOf(queueKey)).toBeGreaterThan(ownRange + 1)
    expect(ran).toEqual([])
    await second?.ack()
    await mb.close()
  })

  it('a claim while the queue partition drains for an idle unload still claims: the draining queue holds its range', async () => {
    const store = makeMemoryStore()
    // The idle unload's final checkpoint waits here, so the queue stays draining.
    const held: Array<() => void> = []
    let holding = false
    const gated = {
      ...store,
      async checkpoint(params: Parameters<typeof store.checkpoint>[0]) {
        if (holding) await new Promise<void>((resume) => held.push(resume))
        return store.checkpoint(params)
      },
    }
    const clock = new ManualClock(1_700_000_000_000)
    const mb = makeMatchbox({ hostId: 'draining', store: gated, jobStore: makeMemoryJobStore({ queueRanges: store }), clock, random: Random.make(6), closeStores: () => store.close() })
    const q = mb.queue('q')
    await q.enqueue('first')
    await (await q.claim({ waitMs: 0 }))?.ack()
    holding = true
    clock.advance(idleUnloadMs + 60_000)
    await until(() => held.length > 0, 'the idle unload is at its final checkpoint')
    await q.enqueue('second')
    const second = await q.claim({ waitMs: 0 })
    expect(second?.payload).toBe('second')
    await second?.ack()
    holding = false
    for (const resume of held.splice(0)) resume()
    await mb.close()
  })
})
