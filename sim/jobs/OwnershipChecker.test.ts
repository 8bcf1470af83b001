/**
 * The ownership checker's rule on hand-made claims: a hand-over by a host whose view gave it no
 * partition passes only within the unload delay, or while that unload was overdue because the
 * host's timers had not run since the clock jumped past it (two jumps in a row with no time
 * moved between them included), or when the engine stamped the claim while it still owned the
 * queue; otherwise it is a violation.
 */
import { describe, expect, it } from 'vitest'
import { membershipUnloadDelayMs } from '../../src/kernel/Limits.ts'
import type { ClaimOutcome, JobRecord } from '../../src/persistence/jobs/JobStore.ts'
import type { ClaimOwnership, JobBoundaryRecord } from './JobBoundary.ts'
import { OwnershipChecker } from './OwnershipChecker.ts'

const lostAtMs = 10_000
const unloadDueMs = lostAtMs + membershipUnloadDelayMs

// A claim issued (and stamped, unless `stampedAtMs` says otherwise) at `atMs`, under `view`.
function claimAt(atMs: number, view: Partial<ClaimOwnership>, stampedAtMs = atMs): Extract<JobBoundaryRecord, { op: 'claim' }> {
  const ownership: ClaimOwnership = { atMs, timersOverdueSinceMs: null, queue: 'q', partitions: 1, owned: [], lostAtMs, member: true, seesNobody: false, ...view }
  const outcome: ClaimOutcome = { kind: 'claimed', job: {} as JobRecord }
  return { op: 'claim', hostId: 'host-1', nowMs: stampedAtMs, committedAtMs: atMs, id: 'job-1', claimToken: 'token-1', outcome, ownership }
}

describe('OwnershipChecker', () => {
  it('passes an owner, and a non-owner within the unload delay', () => {
    const checker = new OwnershipChecker()
    expect(checker.observe(claimAt(lostAtMs + 100_000, { owned: [0] }))).toBeNull()
    expect(checker.observe(claimAt(unloadDueMs, {}))).toBeNull()
    expect(checker.counts()).toEqual({ byOwner: 1, inUnloadDelay: 1, unloadOverdue: 0, stampedAsOwner: 0 })
  })

  it('passes a claim stamped while the host owned the queue, however late it was issued (the claim fence guards it)', () => {
    const checker = new OwnershipChecker()
    expect(checker.observe(claimAt(80_000, {}, lostAtMs - 5_000))).toBeNull()
    expect(checker.observe(claimAt(80_000, {}, unloadDueMs))).toBeNull()
    expect(checker.counts().stampedAsOwner).toBe(2)
    // Stamped past the unload delay: the engine decided as a non-owner.
    expect(checker.observe(claimAt(80_000, {}, unloadDueMs + 1))).toMatch(/owned none of its 1 partition/)
  })

  it('passes a hand-over long after the loss while the unload timer is still overdue', () => {
    // Two jumps: 10 000 → 30 000 → 80 000, no time moved between them; the unload (due 10 500)
    // and every later timer of the host are still waiting to fire at 80 000.
    const checker = new OwnershipChecker()
    expect(checker.observe(claimAt(80_000, { timersOverdueSinceMs: unloadDueMs }))).toBeNull()
    expect(checker.observe(claimAt(80_000, { timersOverdueSinceMs: lostAtMs + 200 }))).toBeNull()
    expect(checker.counts().unloadOverdue).toBe(2)
  })

  it('flags a non-owner past the delay whose unload had its chance to run', () => {
    const checker = new OwnershipChecker()
    // No timer overdue: the unload ran (or should have).
    expect(checker.observe(claimAt(80_000, {}))).toMatch(/handed out by host-1 at 80000 .*owned none of its 1 partition/)
    // Timers overdue only since after the unload was due: the unload itself had fired.
    expect(checker.observe(claimAt(80_000, { timersOverdueSinceMs: unloadDueMs + 1 }))).toMatch(/70000 ms earlier/)
    // A producer never delivers.
    expect(checker.observe(claimAt(lostAtMs, { member: false, owned: [0] }))).toMatch(/a producer that owns no partition/)
  })
})
