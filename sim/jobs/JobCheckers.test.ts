/**
 * The job checkers on a released claim: a release the store accepted ends the claim and gives
 * its attempt back, so the next claim — within the released claim's old deadline — is the one
 * valid claim and counts that attempt again; a release accepted for a claim that was not the
 * job's current one is a violation, as any handle operation's would be; a released job is due
 * again from its release.
 */
import { describe, expect, it } from 'vitest'
import type { JobRecord } from '../../src/persistence/jobs/JobStore.ts'
import type { JobBoundaryRecord } from './JobBoundary.ts'
import { JobCheckers } from './JobCheckers.ts'

const job: JobRecord = {
  id: 'job-1', queue: 'q', state: 'pending', payload: null, priority: 0, attempts: 0, maxAttempts: 3, visibilityTimeoutMs: 1_000, backoffBaseMs: 0,
  deadLetterRetentionMs: null, createdAtMs: 0, runAtMs: 0, claimedAtMs: null, expiresAtMs: null, claimToken: null, deadlineMs: null, key: null,
  lastError: null, diedAtMs: null, lastHandlerError: null, lastHandlerStack: null, attemptErrors: [], progress: null,
}
const at = (nowMs: number) => ({ hostId: 'host-1', nowMs, committedAtMs: nowMs })
const claim = (claimToken: string, nowMs: number, attempts: number): JobBoundaryRecord => ({
  op: 'claim', ...at(nowMs), id: job.id, claimToken, ownership: null,
  outcome: { kind: 'claimed', job: { ...job, state: 'processing', attempts, claimToken, claimedAtMs: nowMs, deadlineMs: nowMs + job.visibilityTimeoutMs } },
})
const release = (claimToken: string, nowMs: number): JobBoundaryRecord => ({ op: 'release', ...at(nowMs), claims: [{ id: job.id, claimToken }], releasedIds: [job.id] })

describe('JobCheckers on release', () => {
  it('a released claim has ended: the next claim within its old deadline is valid and counts the attempt again', () => {
    const checkers = new JobCheckers()
    checkers.observe({ op: 'enqueue', ...at(0), job })
    checkers.observe(claim('first', 100, 1))
    checkers.observe(release('first', 200))
    checkers.observe(claim('second', 300, 1))
    checkers.observe({ op: 'ack', ...at(400), id: job.id, claimToken: 'second', ok: true })
    expect(checkers.violations).toEqual([])
  })

  it('a released job is due from its release, not from when it was first ready', () => {
    const checkers = new JobCheckers()
    checkers.observe({ op: 'enqueue', ...at(0), job })
    checkers.observe(claim('first', 100, 1))
    expect(checkers.dueJobs(150)).toEqual([])
    checkers.observe(release('first', 200))
    expect(checkers.dueJobs(250)).toEqual([{ id: job.id, queue: job.queue, dueSinceMs: 200 }])
  })

  it('a release accepted for a claim that is not the current one is a violation', () => {
    const checkers = new JobCheckers()
    checkers.observe({ op: 'enqueue', ...at(0), job })
    checkers.observe(claim('first', 100, 1))
    checkers.observe(release('other', 200))
    // A settle from a token that is not the holder's is the holder-settles checker's.
    expect(checkers.counts['holder settles']).toBe(1)
  })
})

describe('JobCheckers on a concurrency key', () => {
  // Two jobs of key k (limit 1, one attempt each); `first` claimed at 100 (deadline 1,100).
  const limited = (id: string): JobRecord => ({ ...job, id, maxAttempts: 1 })
  const claimOf = (id: string, claimToken: string, nowMs: number, committedAtMs: number): JobBoundaryRecord => ({
    op: 'claim', hostId: 'host-1', nowMs, committedAtMs, id, claimToken, ownership: null,
    outcome: { kind: 'claimed', job: { ...limited(id), state: 'processing', attempts: 1, claimToken, claimedAtMs: nowMs, deadlineMs: nowMs + job.visibilityTimeoutMs } },
  })
  const world = (): JobCheckers => {
    const checkers = new JobCheckers()
    for (const id of ['a', 'b']) checkers.observe({ op: 'enqueue', ...at(0), job: limited(id), slot: { key: 'k', limit: 1 } })
    checkers.observe(claimOf('a', 'first', 100, 100))
    return checkers
  }

  it('a second claim of the key within the first one’s deadline is a violation', () => {
    const checkers = world()
    checkers.observe(claimOf('b', 'second', 500, 500))
    expect(checkers.counts['concurrency per key']).toBe(1)
  })

  it('a claim stamped before the first one’s deadline but committed after a statement stamped past it is not: that statement may have buried the first job at its budget', () => {
    const checkers = world()
    // A due-time pass stamped past a's deadline (the exhaustion rule buries a there), then b's
    // claim, stamped earlier and delayed, commits.
    checkers.observe({ op: 'reserve', ...at(1_200), ids: [], untilMs: 31_200 })
    checkers.observe(claimOf('b', 'second', 500, 1_200))
    expect(checkers.counts['concurrency per key']).toBe(0)
  })
})

