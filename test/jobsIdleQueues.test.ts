/**
 * A long-running engine keeps per queue only what its queues in use need: once queues it served
 * went idle — no job, no claim, no poll, nothing in flight — their dispatches, Matching partition
 * instances, restart books, cached fences and due-time waiters go, after a bounded time on the
 * injected clock, and a queue used again is rebuilt transparently. The counts come from the
 * engine's sizes (kernel/Sizes.ts), not from members of its public face.
 *
 * The caches bounded by a count rather than by use (partition counts, routed families, poll
 * rotations) are not expected to shrink here: their bound is their size limit.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock, Random } from '../src/index.ts'
import { dispatchIdleUnloadMs, idleUnloadMs } from '../src/kernel/Limits.ts'
import { sizesOf } from '../src/kernel/Sizes.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { settle } from './harness/settle.ts'

// Caches whose bound is a count (routedFamiliesMax), kept past a queue's use by design.
const boundedByCount = new Set(['routingCounts', 'routedFamilies', 'pollRotations'])

function perQueue(sizes: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(Object.entries(sizes).filter(([name]) => !boundedByCount.has(name)))
}

function engine(onPassStarted: (queue: string) => void = () => {}) {
  const store = makeMemoryStore()
  const clock = new ManualClock(1_700_000_000_000)
  const mb = makeMatchbox({
    hostId: 'idle',
    store,
    jobStore: makeMemoryJobStore({ queueRanges: store }),
    clock,
    random: Random.make(27),
    closeStores: () => store.close(),
    onDispatchStep: (queue, event) => event.type === 'pass.started' && onPassStarted(queue),
  })
  return { mb, clock }
}

// Moves the clock by `totalMs` in steps of `stepMs`, letting each step's timers and passes run.
async function advance(mb: ReturnType<typeof engine>['mb'], clock: ManualClock, totalMs: number, stepMs = 1_000): Promise<void> {
  for (let passed = 0; passed < totalMs; passed += stepMs) {
    clock.advance(stepMs)
    await settle()
    await mb.idle()
  }
}

describe('idle queues', () => {
  it('an engine that served queues which then went idle keeps per queue what it kept before them', async () => {
    const { mb, clock } = engine()
    await mb.idle()
    const before = perQueue(sizesOf(mb))
    console.log('before', before)
    const queues = 24
    for (let n = 0; n < queues; n++) {
      const queue = mb.queue(`brief-${n}`)
      await queue.enqueue({ n })
      if (n % 2 === 0) {
        const job = await queue.claim({ waitMs: 0 })
        expect(job?.payload).toEqual({ n })
        await job?.ack()
      } else {
        // A work loop that handles the job, then stops: its line polls and claims leave with it.
        let handled = 0
        const stop = queue.work(async () => void handled++, { concurrency: 2 })
        for (let turn = 0; turn < 50 && handled === 0; turn++) {
          clock.advance(100)
          await settle()
        }
        expect(handled).toBe(1)
        await stop()
      }
      // A claim that waits and gets nothing leaves nothing behind either.
      expect(await queue.claim({ waitMs: 0 })).toBeNull()
    }
    const busy = sizesOf(mb)
    console.log('busy', busy)
    expect(busy.dispatches).toBeGreaterThanOrEqual(queues)
    expect(busy.partitionsLoaded).toBeGreaterThanOrEqual(queues)
    // Idle queues' physical queues unload after idleUnloadMs, their partitions with them; dispatches
    // go after dispatchIdleUnloadMs.
    await advance(mb, clock, idleUnloadMs + dispatchIdleUnloadMs + 10_000, 5_000)
    const after = perQueue(sizesOf(mb))
    console.log('after', after)
    expect(after).toEqual(before)
    // A queue used again is rebuilt, and serves its stored jobs.
    const again = mb.queue('brief-3')
    await again.enqueue({ n: 'again' })
    const job = await again.claim({ waitMs: 0 })
    expect(job?.payload).toEqual({ n: 'again' })
    await job?.ack()
    expect(sizesOf(mb).dispatches).toBe(1)
    await mb.close()
  })

  it('a due-time pass steps the dispatches of queues in use, not of every queue the engine served', async () => {
    const passes: string[] = []
    const { mb, clock } = engine((queue) => passes.push(queue))
    // Fifty queues each claimed from once, then left alone past the bound.
    for (let n = 0; n < 50; n++) expect(await mb.queue(`gone-${n}`).claim({ waitMs: 0 })).toBeNull()
    await advance(mb, clock, dispatchIdleUnloadMs + 2_000)
    passes.length = 0
    // A lazy claim runs a full pass: it steps the dispatches still kept, not fifty idle ones.
    expect(await mb.queue('active').claim({ waitMs: 0 })).toBeNull()
    await mb.idle()
    expect(passes.filter((queue) => queue.startsWith('gone-'))).toEqual([])
    expect(passes).toContain('active')
    await mb.close()
  })

  it('a dispatch goes only once it has held nothing for its bound: a queue in use keeps its dispatch', async () => {
    const { mb, clock } = engine()
    const queue = mb.queue('steady')
    await queue.enqueue({ n: 1 })
    const job = await queue.claim({ waitMs: 0 })
    await job?.ack()
    expect(sizesOf(mb).dispatches).toBe(1)
    // Within the bound, passes keep it.
    await advance(mb, clock, dispatchIdleUnloadMs - 1_000)
    expect(sizesOf(mb).dispatches).toBe(1)
    // A claim waiting on the queue holds it past the bound.
    const waiting = queue.claim({ waitMs: 3 * dispatchIdleUnloadMs })
    await advance(mb, clock, 2 * dispatchIdleUnloadMs)
    expect(sizesOf(mb).dispatches).toBe(1)
    // A job enqueued then reaches that claim, through the dispatch that held it.
    await queue.enqueue({ n: 2 })
    await advance(mb, clock, 1_000, 100)
    const got = await waiting
    expect(got?.payload).toEqual({ n: 2 })
    await got?.ack()
    await advance(mb, clock, dispatchIdleUnloadMs + 2_000)
    expect(sizesOf(mb).dispatches).toBe(0)
    await mb.close()
  })
})
