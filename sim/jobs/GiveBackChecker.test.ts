/**
 * The give-back checker on hand-made records and due signals: a release of kept jobs by an engine
 * that owns only some of the queue's partitions passes once a due signal of the queue from it
 * reaches the bus (or the world lost one, or it crashed) and fails at the end otherwise, while
 * one by an engine that owns every partition asks for nothing; the signal sent right after a
 * give-back of refused adds passes when the jobs are due by its time and fails when they are due later,
 * and is not taken for the signal of an enqueue that committed after it.
 */
import { describe, expect, it } from 'vitest'
import type { JobBoundaryRecord } from './JobBoundary.ts'
import { GiveBackChecker } from './GiveBackChecker.ts'

const release = (hostId: string, ids: ReadonlyArray<string>, atMs: number): JobBoundaryRecord => ({
  op: 'release',
  hostId,
  nowMs: atMs,
  committedAtMs: atMs,
  claims: ids.map((id) => ({ id, claimToken: 't' })),
  releasedIds: ids,
})
const unreserve = (hostId: string, ids: ReadonlyArray<string>, atMs: number, untilMs: number): JobBoundaryRecord => ({ op: 'unreserve', hostId, nowMs: atMs, committedAtMs: atMs, ids, untilMs })

function checker(soleOwner = 'host-9'): { readonly checker: GiveBackChecker; readonly failed: string[] } {
  const failed: string[] = []
  const c = new GiveBackChecker({ fail: (name, sentence) => failed.push(`${name}: ${sentence}`), queueOf: () => 'q', ownsEvery: (hostId) => hostId === soleOwner, epochMs: 0 })
  return { checker: c, failed }
}

describe('GiveBackChecker', () => {
  it('a release announced on the bus passes; one whose signal never reaches it fails at the end', () => {
    const { checker: c, failed } = checker()
    c.observe(release('host-1', ['job-1'], 1_000), 1_000)
    c.sent('host-1', 'q', 1_000, 1_000)
    c.reached('host-1', 'q', 1_000)
    c.observe(release('host-2', ['job-2'], 2_000), 2_000)
    // Sent, but lost below the gate: nobody hears it.
    c.sent('host-2', 'q', 2_000, 2_000)
    // An older signal of the queue reaching the bus now does not announce the release.
    c.reached('host-2', 'q', 1_500)
    c.finish()
    expect(failed).toHaveLength(1)
    expect(failed[0]).toMatch(/^release announced: host-2 gave job job-2 of q back to the store at 2000/)
  })

  it('a signal the world lost, a crash, or an engine that owns every partition asks for nothing more', () => {
    const { checker: c, failed } = checker('host-3')
    c.observe(release('host-1', ['job-1'], 1_000), 1_000)
    c.lost('host-1', 'q')
    c.observe(release('host-2', ['job-2'], 1_000), 1_000)
    c.crashed('host-2')
    c.observe(release('host-3', ['job-3'], 1_000), 1_000)
    c.finish()
    expect(failed).toEqual([])
  })

  it('the signal after a give-back of refused adds passes when they are due by its time, and fails when they are due later', () => {
    const { checker: c, failed } = checker()
    c.observe(unreserve('host-1', ['job-1'], 1_000, 990), 1_000)
    c.sent('host-1', 'q', 1_000, 1_000)
    // A give-back a refusal retry later, followed by another store call: no signal announces it.
    c.observe(unreserve('host-1', ['job-2'], 1_100, 2_100), 1_100)
    c.observe(release('host-9', ['job-9'], 1_100), 1_100)
    c.observe({ op: 'confirm', hostId: 'host-1', nowMs: 1_100, committedAtMs: 1_100, ids: ['job-3'], untilMs: null }, 1_100)
    c.sent('host-1', 'q', 1_100, 1_100)
    expect(failed).toEqual([])
    c.observe(unreserve('host-1', ['job-4'], 1_200, 2_190), 1_200)
    c.sent('host-1', 'q', 1_200, 1_200)
    expect(failed).toHaveLength(1)
    expect(failed[0]).toMatch(/^give-back as announced: host-1 gave job job-4 of q back to the store at 1200, due at 2190, and announced it due at 1200/)
  })

  it('an enqueue answered by its key\'s holder after a give-back is the engine\'s last store call: the signal it sends is its own', () => {
    const { checker: c, failed } = checker()
    // Issued at 500, the enqueue committed after the give-back, at the same instant, and announces its job due at 500.
    c.observe(unreserve('host-1', ['job-1'], 1_000, 900), 1_000)
    c.observe({ op: 'enqueueAnswered', hostId: 'host-1', nowMs: 500, committedAtMs: 1_000, queue: 'q', id: 'job-0' }, 1_000)
    c.sent('host-1', 'q', 500, 1_000)
    expect(failed).toEqual([])
  })
})
