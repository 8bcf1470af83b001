/**
 * Every job a worker runs is dispatched by its queue's dispatch machine, in every deployment:
 * one engine, a producer beside a worker engine, and several workers on two engines. A job
 * enters a dispatch in one of four steps: a claim statement straight from the store that the
 * machine is told of (`store.answered`: the jobs a claim or a due-time pass claimed), an eager
 * enqueue's job inserted claimed for the claim set aside for it (`job.handed` naming that
 * claim), a line poll's task (`linePoll.matched`), or a job that came through Matching to a poll
 * forwarded here or a lazy claim (`matching.reached`). Counting those over every engine's steps
 * gives each job exactly once. The machine's cost is counted too: steps per job stay small.
 *
 * Memory stores and bus, a ManualClock, no sleeps.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { DispatchStepListener } from '../src/jobs/Dispatch.ts'
import { ManualClock, Random } from '../src/index.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { settle, until } from './harness/settle.ts'
import { closeEngines, twoEngines } from './harness/twoEngines.ts'

afterEach(async () => {
  await closeEngines()
})

// Counts the steps of every engine's dispatch machines, and the jobs those steps gave to claims.
function dispatchCounter(): { readonly listener: (hostId: string) => DispatchStepListener; readonly steps: () => number; readonly jobs: () => number; readonly byHost: Map<string, number> } {
  let steps = 0
  let jobs = 0
  const byHost = new Map<string, number>()
  return {
    listener: (hostId) => (_queue, event) => {
      steps++
      let carried = 0
      if (event.type === 'store.answered') carried = event.claimed
      else if (event.type === 'job.handed' && event.claimId !== null) carried = 1
      else if (event.type === 'linePoll.matched' || event.type === 'matching.reached') carried = 1
      jobs += carried
      byHost.set(hostId, (byHost.get(hostId) ?? 0) + carried)
    },
    steps: () => steps,
    jobs: () => jobs,
    byHost,
  }
}

describe('every job goes through its queue’s dispatch machine', () => {
  it('one engine: enqueues with a worker waiting and a backlog drained by four loops', async () => {
    const counter = dispatchCounter()
    const store = makeMemoryStore()
    const mb = makeMatchbox({
      hostId: 'solo',
      store,
      jobStore: makeMemoryJobStore({ queueRanges: store }),
      clock: new ManualClock(1_700_000_000_000),
      random: Random.make(3),
      closeStores: () => store.close(),
      onDispatchStep: counter.listener('solo'),
    })
    try {
      const started: number[] = []
      const queue = mb.queue<number>('solo')
      await queue.enqueueMany(Array.from({ length: 40 }, (_, n) => ({ payload: n })))
      const stop = queue.work(
        async (job) => {
          started.push(job.payload)
        },
        { concurrency: 4 },
      )
      await until(() => started.length === 40, 'the backlog drained')
      await settle(20)
      // Now one at a time, each reaching a worker waiting in line.
      for (let n = 40; n < 60; n++) {
        await queue.enqueue(n)
        await until(() => started.length === n + 1, `job ${n} started`)
      }
      await stop()
      expect(counter.jobs()).toBe(60)
      console.log(`one engine: ${(counter.steps() / 60).toFixed(2)} dispatch steps per job`)
      expect(counter.steps() / 60).toBeLessThan(8)
    } finally {
      await mb.close()
    }
  })

  it('a producer engine beside a worker engine: the owner’s dispatch hands each job over', async () => {
    const counter = dispatchCounter()
    let queueSteps = 0
    const { h1, h2 } = twoEngines(undefined, { onDispatchStep: counter.listener, onQueueStep: () => void queueSteps++ })
    const started: number[] = []
    const stop = h1.queue<number>('produced').work(async (job) => {
      started.push(job.payload)
    })
    await settle(50)
    for (let n = 0; n < 20; n++) {
      await h2.queue<number>('produced').enqueue(n)
      await until(() => started.length === n + 1, `job ${n} started`)
    }
    await stop()
    expect(counter.jobs()).toBe(20)
    expect(counter.byHost.get('h2') ?? 0).toBe(0)
    console.log(`producer and worker: ${(counter.steps() / 20).toFixed(2)} dispatch steps and ${(queueSteps / 20).toFixed(2)} queue machine steps per job`)
    // The worker's line poll stays parked in Matching between jobs: no queue machine steps per job.
    expect(queueSteps).toBeLessThan(20)
    expect(counter.steps() / 20).toBeLessThan(8)
  })

  it('workers on two engines, one owning the queue: jobs reach both, each through the owner’s dispatch or the worker engine’s', async () => {
    const counter = dispatchCounter()
    const { h1, h2 } = twoEngines(undefined, { onDispatchStep: counter.listener })
    const startedOn = { h1: 0, h2: 0 }
    const stops = [
      h1.queue<number>('shared').work(async () => void startedOn.h1++, { concurrency: 2 }),
      h2.queue<number>('shared').work(async () => void startedOn.h2++, { concurrency: 2 }),
    ]
    await settle(50)
    await h1.queue<number>('shared').enqueueMany(Array.from({ length: 40 }, (_, n) => ({ payload: n })))
    await until(() => startedOn.h1 + startedOn.h2 === 40, 'every job started')
    for (const stop of stops) await stop()
    expect(startedOn.h2).toBeGreaterThan(0)
    expect(counter.jobs()).toBe(40)
    console.log(`two worker engines: ${(counter.steps() / 40).toFixed(2)} dispatch steps per job`)
    expect(counter.steps() / 40).toBeLessThan(8)
  })
})
