/**
 * DueDriver, when the store fails in the middle of a pass: a reservation whose Matching add
 * failed, and whose give-back failed too, is given back by the next pass once the store
 * answers, so the job is delivered within a couple of back-off steps instead of waiting out the
 * whole reservation (`jobDeliveryRetryMs`, 30 s). And a pass for due signals that said when
 * their rows are due reads no next due time (the signals armed those times), while a pass for a
 * signal that did not say reads it. And a queue nobody waits on any more keeps no waiter list.
 * And an add Matching refused with nothing written gives its job back due at once (claims take
 * it from the store) while the driver holds off that queue's adds until the refusal ends.
 * ManualClock, a fake Matching, the memory job store behind a wrapper that fails chosen
 * operations or counts them.
 */
import { expect, it } from 'vitest'
import type { MatchingHost } from '../actors/MatchingHost.ts'
import { Unavailable } from '../domain/errors.ts'
import { ManualClock } from '../kernel/Clock.ts'
import { jobDeliveryRetryMs } from '../kernel/Limits.ts'
import { Random } from '../kernel/Random.ts'
import { sizesOf } from '../kernel/Sizes.ts'
import type { JobStore } from '../persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../persistence/jobs/MemoryJobStore.ts'
import { makeDueDriver } from './DueDriver.ts'
import type { QueueRouting } from './QueueRouting.ts'
import { resolveQueueOptions } from './QueueOptions.ts'

const start = 1_700_000_000_000

async function turns(count = 20): Promise<void> {
  for (let turn = 0; turn < count; turn++) await new Promise<void>((resolve) => setImmediate(resolve))
}

it('gives back a reservation whose release failed once the store answers again', async () => {
  const clock = new ManualClock(start)
  const failing = new Set<string>()
  const inner = makeMemoryJobStore()
  const jobStore = new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown
      if (typeof value !== 'function') return value
      return (...args: unknown[]) =>
        failing.has(String(property))
          ? Promise.reject(new Unavailable({ operation: String(property), detail: 'server restarting', maybeCommitted: false }))
          : (value as (...a: unknown[]) => unknown).apply(target, args)
    },
  }) as JobStore
  let matchingDown = true
  const added: Array<{ jobId: string; at: number }> = []
  const matching = {
    addTask: (request: { task: { jobId: string } }) => {
      if (matchingDown) return Promise.reject(new Unavailable({ operation: 'append', detail: 'server restarting', maybeCommitted: true }))
      added.push({ jobId: request.task.jobId, at: clock.now() })
      return Promise.resolve({ taskId: 1 })
    },
  } as unknown as MatchingHost
  await jobStore.enqueue({ job: { id: 'j1', queue: 'q', payload: null, priority: 0, runAtMs: start, expiresAtMs: null, ...resolveQueueOptions(undefined) }, nowMs: start })

  // One claim waits in Matching for the queue's job.
  const driver = makeDueDriver({ jobStore, matching, clock, random: Random.make(1), deliveryDemand: () => new Map([['q', 1]]) })
  // The pass reserves the job; the add fails, and so does giving the reservation back.
  failing.add('releaseDelivered')
  await driver.run()
  expect(added).toEqual([])

  // The store and Matching answer again.
  failing.clear()
  matchingDown = false
  for (let step = 0; step < 300 && added.length === 0; step++) {
    clock.advance(10)
    await turns()
  }
  expect(added.map((add) => add.jobId)).toEqual(['j1'])
  expect((added[0]?.at as number) - start).toBeLessThan(3_000)
  expect((added[0]?.at as number) - start).toBeLessThan(jobDeliveryRetryMs)
  await driver.close()
})

it('reads the next due time after a due signal that did not say it, and not after one that did', async () => {
  const clock = new ManualClock(start)
  const inner = makeMemoryJobStore()
  const calls: string[] = []
  const jobStore = new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        calls.push(String(property))
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  }) as JobStore
  // One engine alone on its store: a signal's pass covers the signalled queues only.
  const routing = { membership: undefined, load: () => Promise.resolve(1), owns: () => true } as unknown as QueueRouting
  const matching = { addTask: () => Promise.resolve({ taskId: 1 }) } as unknown as MatchingHost
  const driver = makeDueDriver({ jobStore, matching, clock, random: Random.make(1), routing, deliveryDemand: () => new Map() })
  // The first pass is a scan, which reads it.
  await driver.run()
  expect(calls.filter((call) => call === 'nextDueMs')).toHaveLength(1)

  calls.length = 0
  driver.notifyDue(clock.now(), 'q')
  await driver.idle()
  expect(calls).not.toContain('nextDueMs')

  driver.kick('q')
  await driver.idle()
  expect(calls.filter((call) => call === 'nextDueMs')).toHaveLength(1)
  await driver.close()
})

it('keeps no entry for a queue once its last claim waiting for a delivery has timed out or been woken', async () => {
  const clock = new ManualClock(start)
  const driver = makeDueDriver({ jobStore: makeMemoryJobStore(), matching: {} as MatchingHost, clock, random: Random.make(3), deliveryDemand: () => new Map() })
  const timedOut = driver.waitForDelivery('a', start + 100)
  const woken = driver.waitForDelivery('b', start + 10_000)
  expect(sizesOf(driver).dueWaiterQueues).toBe(2)
  clock.advance(100)
  expect(await timedOut).toBe('timeout')
  driver.wake('b')
  expect(await woken).toBe('woken')
  expect(sizesOf(driver).dueWaiterQueues).toBe(0)
  await driver.close()
})

// A partition waiting out its restart delay for 100 ms more refuses adds until then; a fake
// Matching that counts them, one claim waiting in Matching for the queue's jobs.
async function refusingUntilRestart() {
  const clock = new ManualClock(start)
  const jobStore = makeMemoryJobStore()
  const attempts: Array<{ jobId: string; at: number }> = []
  const added: Array<{ jobId: string; at: number }> = []
  const restartsAtMs = start + 100
  const matching = {
    addTask: (request: { task: { jobId: string } }) => {
      attempts.push({ jobId: request.task.jobId, at: clock.now() })
      if (clock.now() < restartsAtMs) return Promise.reject(new Unavailable({ operation: 'load', detail: `q restarts at ${restartsAtMs}`, maybeCommitted: false, retryAtMs: restartsAtMs }))
      added.push({ jobId: request.task.jobId, at: clock.now() })
      return Promise.resolve({ taskId: 1 })
    },
  } as unknown as MatchingHost
  await jobStore.enqueue({ job: { id: 'j1', queue: 'q', payload: null, priority: 0, runAtMs: start, expiresAtMs: null, ...resolveQueueOptions(undefined) }, nowMs: start })
  const givenBack: string[] = []
  const driver = makeDueDriver({ jobStore, matching, clock, random: Random.make(1), deliveryDemand: () => new Map([['q', 1]]), onGivenBack: (queue) => givenBack.push(queue) })
  await driver.run()
  await turns()
  return { clock, jobStore, driver, attempts, added, givenBack, restartsAtMs }
}

it('gives a job whose add was refused cleanly back due at once, so a claim anywhere takes it straight from the store', async () => {
  const { jobStore, driver, attempts, givenBack } = await refusingUntilRestart()
  expect(attempts.map((attempt) => attempt.jobId)).toEqual(['j1'])
  // The other engines hear of it, and the job is claimable now, not a refusal retry later.
  expect(givenBack).toEqual(['q'])
  const claimed = await jobStore.claimDue({ queue: 'q', nowMs: start, claimTokens: ['t1'] })
  expect(claimed.map((job) => job.id)).toEqual(['j1'])
  await driver.close()
})

it('adds none of a refusing queue again until its partition ends the restart delay, then adds it at once', async () => {
  const { clock, driver, attempts, added, restartsAtMs } = await refusingUntilRestart()
  for (let step = 0; step < 100 && added.length === 0; step++) {
    clock.advance(10)
    await turns()
  }
  expect(added.map((add) => add.jobId)).toEqual(['j1'])
  expect(added[0]?.at).toBe(restartsAtMs)
  // One refused attempt, then the one at the restart: the partition was not hammered meanwhile.
  expect(attempts.map((attempt) => attempt.at)).toEqual([start, restartsAtMs])
  await driver.close()
})
