/**
 * The claim order model on hand-made boundary records: a claim remembers the place it took its job
 * from — the enqueue's (due time, then enqueue order), Matching's (first) once a reservation is
 * confirmed, the place a release gave back, a retry's — and nothing where the model cannot know it
 * (a lapsed claim's, a reservation still on its way to Matching, a job with a fair pass or a
 * concurrency slot); a delivery's confirmation counts only while nothing touched the row since its
 * reservation.
 */
import { describe, expect, it } from 'vitest'
import type { JobRecord } from '../../src/persistence/jobs/JobStore.ts'
import { ClaimOrderModel, placedBefore } from './ClaimOrderModel.ts'
import type { JobBoundaryRecord } from './JobBoundary.ts'

const at = (nowMs: number) => ({ hostId: 'host-1', nowMs, committedAtMs: nowMs })
const record = (id: string, fields: Partial<JobRecord> = {}): JobRecord =>
  ({ id, queue: 'q', priority: 0, runAtMs: 0, state: 'pending', attempts: 0, claimToken: null, deadlineMs: null, visibilityTimeoutMs: 1_000, ...fields }) as JobRecord
const enqueue = (id: string, nowMs: number, fields: Partial<JobRecord> = {}): JobBoundaryRecord => ({ op: 'enqueue', ...at(nowMs), job: record(id, fields) })
const claim = (id: string, nowMs: number): JobBoundaryRecord => ({
  op: 'claim',
  ...at(nowMs),
  id,
  claimToken: `t-${id}-${nowMs}`,
  outcome: { kind: 'claimed', job: record(id, { state: 'processing', deadlineMs: nowMs + 1_000 }) },
  ownership: null,
})

describe('ClaimOrderModel', () => {
  it('a claim remembers the enqueue’s place: due time, then enqueue order', () => {
    const model = new ClaimOrderModel()
    for (const r of [enqueue('a', 100), enqueue('b', 100), enqueue('later', 50, { runAtMs: 500 }), claim('b', 600), claim('a', 600), claim('later', 600)]) model.observe(r)
    const [a, b, later] = ['a', 'b', 'later'].map((id) => model.claimedFrom(id)?.place)
    expect(a).toEqual({ dueMs: 100, seq: 1 })
    expect(placedBefore(a!, b!)).toBe(true)
    expect(placedBefore(b!, later!)).toBe(true)
    expect(model.claimedFrom('nobody')).toBeUndefined()
  })

  it('a confirmed reservation puts a job first; a release gives back the place, a retry a new one; a lapsed claim’s place is unknown', () => {
    const model = new ClaimOrderModel()
    for (const r of [enqueue('a', 100), enqueue('b', 100)]) model.observe(r)
    model.observe({ op: 'reserve', ...at(200), ids: ['b'], untilMs: 5_000 })
    model.observe({ op: 'confirm', ...at(200), ids: ['b'], untilMs: null })
    model.observe(claim('b', 300))
    expect(model.claimedFrom('b')?.place).toEqual({ dueMs: Number.NEGATIVE_INFINITY, seq: 2 })
    model.observe(claim('a', 300))
    model.observe({ op: 'release', ...at(400), claims: [{ id: 'a', claimToken: 't-a-300' }], releasedIds: ['a'] })
    model.observe(claim('a', 500))
    expect(model.claimedFrom('a')?.place).toEqual({ dueMs: 100, seq: 1 })
    // Its claim lapsed at 1,500: claimed again from the lapsed claim's place, which the model does not know.
    model.observe(claim('a', 2_000))
    expect(model.claimedFrom('a')?.place).toBeNull()
    model.observe({ op: 'retry', ...at(2_100), id: 'a', claimToken: 't-a-2000', outcome: { kind: 'retried', runAtMs: 2_600 } })
    model.observe(claim('a', 2_700))
    expect(model.claimedFrom('a')?.place?.dueMs).toBe(2_600)
  })

  it('a confirmation after the row was touched changes nothing; a claim of a reservation still on its way to Matching has no place', () => {
    const model = new ClaimOrderModel()
    model.observe(enqueue('a', 100))
    model.observe({ op: 'reserve', ...at(200), ids: ['a'], untilMs: 5_000 })
    model.observe(claim('a', 300))
    expect(model.claimedFrom('a')?.place).toBeNull()
    model.observe({ op: 'release', ...at(400), claims: [{ id: 'a', claimToken: 't-a-300' }], releasedIds: ['a'] })
    model.observe({ op: 'confirm', ...at(400), ids: ['a'], untilMs: null })
    model.observe(claim('a', 500))
    // Given back due at the release (its reservation was no place), not put first by the stale confirmation.
    expect(model.claimedFrom('a')?.place).toEqual({ dueMs: 400, seq: 1 })
  })

  it('a job whose order a fair pass or a concurrency slot decides has no place', () => {
    const model = new ClaimOrderModel()
    model.observe({ ...enqueue('fair', 100), fairPass: 100 } as JobBoundaryRecord)
    model.observe({ ...enqueue('slotted', 100), slot: { key: 'k', limit: 1 } } as JobBoundaryRecord)
    model.observe(claim('fair', 200))
    model.observe(claim('slotted', 200))
    expect(model.claimedFrom('fair')).toEqual({ priority: 0, place: null })
    expect(model.claimedFrom('slotted')).toEqual({ priority: 0, place: null })
  })
})
