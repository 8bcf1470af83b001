/**
 * The dispatch runner over a stub runtime: a job kept for nobody that goes back to the store is
 * announced as due through the runtime's `announceDue` — which tells this engine's driver and,
 * when this engine owns only some of the queue's partitions, the owners of the others, where a
 * claim (their own, or one forwarded to them) may wait for it — not only to this engine's driver;
 * and so is a job handed to an engine that began closing, which goes back at once.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../kernel/Clock.ts'
import { dispatchMachine } from '../machines/DispatchMachine.ts'
import type { JobRecord } from '../persistence/jobs/JobStore.ts'
import type { DispatchRuntime } from './Dispatch.ts'
import { makeDispatches } from './DispatchRunner.ts'

// A stub runtime that records the releases and the due announcements.
function stubRuntime() {
  const clock = new ManualClock(1_000)
  const announced: Array<[string, number]> = []
  const released: string[] = []
  const runtime = {
    hostId: 'h',
    clock,
    now: () => clock.now(),
    jobStore: { release: async ({ claims }: { claims: ReadonlyArray<{ id: string }> }) => void released.push(...claims.map((claim) => claim.id)) },
    driver: { notifyDue: () => {} },
    announceDue: (queue: string, dueMs: number) => void announced.push([queue, dueMs]),
    announceSlotFreed: () => {},
  } as unknown as DispatchRuntime
  return { runtime, announced, released }
}

const job = { id: 'j', queue: 'q', state: 'processing', claimToken: 't', deadlineMs: 60_000 } as unknown as JobRecord

describe('DispatchRunner', () => {
  it('a job handed to an engine that began closing goes back to the store at once and is announced due to the queue’s owners', async () => {
    const { runtime, announced, released } = stubRuntime()
    const dispatches = makeDispatches(() => runtime, dispatchMachine)
    dispatches.engineClosing()
    const dispatch = dispatches.of('q')
    dispatch.handOver(job)
    expect(dispatch.hasSpare()).toBe(false)
    await new Promise((resolve) => setImmediate(resolve))
    expect(released).toEqual(['j'])
    expect(announced).toEqual([['q', 1_000]])
  })

  it('a kept job given back to the store is announced due to the queue’s owners', async () => {
    const { runtime, announced, released } = stubRuntime()
    const dispatch = makeDispatches(() => runtime, dispatchMachine).of('q')
    dispatch.handOver(job)
    expect(dispatch.hasSpare()).toBe(true)
    dispatch.expireKept()
    // The release goes out in a batch of the turn's releases: one turn later.
    await new Promise((resolve) => setImmediate(resolve))
    expect(released).toEqual(['j'])
    expect(announced).toEqual([['q', 1_000]])
  })
})
