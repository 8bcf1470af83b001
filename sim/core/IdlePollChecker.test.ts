/**
 * The idle-poll checker on hand-made physical queues: a poll left idle on one partition of a
 * family while another partition of the host has a task ready passes when a step within the
 * bound moves it, and fails when it is still so past the bound (once per episode); other hosts,
 * other families, the other task type and versioned queues do not count, and an unloaded queue
 * is forgotten.
 */
import { describe, expect, it } from 'vitest'
import type { QueueKey } from '../../src/domain/QueueKey.ts'
import { IdlePollChecker, idlePollBoundMs, type QueueView } from './IdlePollChecker.ts'

// A queue whose pollers and ready tasks the test sets.
interface FakeQueue extends QueueView {
  pollers: boolean
  ready: boolean
  state: QueueView['state']
}

function queue(family: string, partition: number, version: string | null = null, type: QueueKey['type'] = 'activity'): FakeQueue {
  const key = { namespace: 'jobs', family, type, partition, version } as QueueKey
  const fake: FakeQueue = { key, state: 'owned', pollers: false, ready: false, pollerCount: () => (fake.pollers ? 1 : 0), hasReady: () => fake.ready }
  return fake
}

function checker(): { readonly failed: string[]; readonly step: (hostId: string, q: FakeQueue, nowMs: number) => void } {
  const failed: string[] = []
  const c = new IdlePollChecker({ fail: (name, sentence) => failed.push(`${name}: ${sentence}`), owns: () => true, judgedFrom: () => 0 })
  return { failed, step: (hostId, q, nowMs) => c.step(hostId, 0, q, nowMs) }
}

describe('IdlePollChecker', () => {
  it('a poll idle beside a ready task moved within the bound passes; one left past it fails once', () => {
    const { failed, step } = checker()
    const p0 = queue('q', 0)
    const p1 = queue('q', 1)
    step('host-1', p0, 0)
    p1.ready = true
    step('host-1', p1, 10)
    p0.pollers = true
    step('host-1', p0, 20)
    // Moved: the poll leaves partition 0 and takes the task on partition 1.
    p0.pollers = false
    p1.ready = false
    step('host-1', p0, 20 + idlePollBoundMs)
    expect(failed).toEqual([])
    p1.ready = true
    step('host-1', p1, 500)
    p0.pollers = true
    step('host-1', p0, 600)
    step('host-1', p1, 600 + idlePollBoundMs + 1)
    step('host-1', p1, 1_600)
    expect(failed).toHaveLength(1)
    expect(failed[0]).toMatch(/^idle poll moves: a poll waited on partition 0 of q on host-1 with no task ready from 600 still at 701, while its partition 1 had a task ready/)
  })

  it('other hosts, other families, the other task type, versioned queues and unloaded queues do not count', () => {
    const { failed, step } = checker()
    const idle = queue('q', 0)
    idle.pollers = true
    step('host-1', idle, 0)
    const elsewhere = queue('q', 1)
    elsewhere.ready = true
    step('host-2', elsewhere, 0)
    const otherFamily = queue('r', 1)
    otherFamily.ready = true
    step('host-1', otherFamily, 0)
    // A workflow task is no task for an activity poll: the two types are separate queues.
    const otherType = queue('q', 1, null, 'workflow')
    otherType.ready = true
    step('host-1', otherType, 0)
    const versioned = queue('q', 1, 'v1')
    versioned.ready = true
    step('host-1', versioned, 0)
    const unloaded = queue('q', 2)
    unloaded.ready = true
    step('host-1', unloaded, 0)
    unloaded.state = 'unloaded'
    step('host-1', unloaded, 1)
    step('host-1', idle, 5_000)
    expect(failed).toEqual([])
  })
})
