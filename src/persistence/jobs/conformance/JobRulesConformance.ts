/**
 * JobRulesConformance — the job rules of domain/JobRules.ts at their edges, on a job store: claims
 * at exactly `runAt == now`, `deadline == now` and `expiresAt == now` (through `claim` and
 * `claimMany`), every handle operation one millisecond before and at its deadline, the sweep's
 * verdict when a job expires at or just after its deadline, and the due-time reads at the same
 * edges.
 *
 * Every case states its expected outcome twice: as a literal, and as what the domain functions
 * predict for the stored record. A store passes when it agrees with both, so the memory store
 * (which calls the functions) and the SQL statements (which spell them in WHERE clauses) are
 * held to one definition.
 *
 * Setup shared by the cases: jobs are enqueued at 1 000 ms; a held job is claimed there with a
 * 1 s visibility, so its deadline is 2 000 ms. A property then draws jobs whose runAt, deadline
 * and expiresAt lie a few milliseconds apart and a time among them (the seed is printed first),
 * and checks a claim and then a sweep against the domain's prediction.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  claimRefusal,
  type DeadReason,
  deadReasonExhausted,
  deadReasonExpired,
  isClaimable,
  isExhausted,
  isExpired,
  isValidClaim,
  sweptDeath,
} from '../../../domain/JobRules.ts'
import type { ClaimOutcome, JobRecord, NewJob } from '../JobStore.ts'
import type { JobFixture } from './JobFixture.ts'

type ClaimVerdict = 'claimed' | 'exhausted' | 'already-started' | 'expired' | 'not-due'

interface JobCase {
  readonly name: string
  /** Claimed at 1 000 ms by 'holder' (deadline 2 000 ms unless the job says otherwise). */
  readonly held: boolean
  readonly job: Partial<NewJob>
  readonly nowMs: number
}

// What the domain says a claim at `nowMs` does to `job`.
const predictedClaim = (job: JobRecord, nowMs: number): ClaimVerdict =>
  isClaimable(job, nowMs) ? 'claimed' : isExhausted(job, nowMs) ? 'exhausted' : claimRefusal(job, nowMs)

const verdictOf = (outcome: ClaimOutcome | undefined): string | undefined => (outcome?.kind === 'obsolete' ? outcome.reason : outcome?.kind)

const claimCases: ReadonlyArray<JobCase & { readonly expected: ClaimVerdict }> = [
  { name: 'pending 1 ms before runAt', held: false, job: { runAtMs: 2_000 }, nowMs: 1_999, expected: 'not-due' },
  { name: 'pending at runAt', held: false, job: { runAtMs: 2_000 }, nowMs: 2_000, expected: 'claimed' },
  { name: 'pending at runAt, expiring then', held: false, job: { runAtMs: 2_000, expiresAtMs: 2_000 }, nowMs: 2_000, expected: 'expired' },
  { name: 'pending at runAt, expiring 1 ms later', held: false, job: { runAtMs: 2_000, expiresAtMs: 2_001 }, nowMs: 2_000, expected: 'claimed' },
  { name: 'held, 1 ms before the deadline', held: true, job: {}, nowMs: 1_999, expected: 'already-started' },
  { name: 'held, at the deadline', held: true, job: {}, nowMs: 2_000, expected: 'claimed' },
  { name: 'held at the budget, 1 ms before the deadline', held: true, job: { maxAttempts: 1 }, nowMs: 1_999, expected: 'already-started' },
  { name: 'held at the budget, at the deadline', held: true, job: { maxAttempts: 1 }, nowMs: 2_000, expected: 'exhausted' },
  { name: 'held at the budget, expiring at the deadline', held: true, job: { maxAttempts: 1, expiresAtMs: 2_000 }, nowMs: 2_000, expected: 'expired' },
  { name: 'held at the budget, expiring 1 ms after the deadline', held: true, job: { maxAttempts: 1, expiresAtMs: 2_001 }, nowMs: 2_000, expected: 'exhausted' },
  { name: 'held within the budget, expiring at the deadline', held: true, job: { expiresAtMs: 2_000 }, nowMs: 2_000, expected: 'expired' },
  { name: 'held, expired before the deadline', held: true, job: { expiresAtMs: 1_500 }, nowMs: 1_999, expected: 'already-started' },
]

const sweepCases: ReadonlyArray<JobCase & { readonly expected: { readonly lastError: DeadReason; readonly diedAtMs: number } | null }> = [
  { name: 'pending 1 ms before its expiry', held: false, job: { expiresAtMs: 2_000 }, nowMs: 1_999, expected: null },
  { name: 'pending at its expiry', held: false, job: { expiresAtMs: 2_000 }, nowMs: 2_000, expected: { lastError: deadReasonExpired, diedAtMs: 2_000 } },
  { name: 'held under a live claim at its expiry', held: true, job: { visibilityTimeoutMs: 5_000, expiresAtMs: 2_000 }, nowMs: 2_000, expected: { lastError: deadReasonExpired, diedAtMs: 2_000 } },
  { name: 'exhausted, expiring at its deadline', held: true, job: { maxAttempts: 1, expiresAtMs: 2_000 }, nowMs: 2_000, expected: { lastError: deadReasonExpired, diedAtMs: 2_000 } },
  { name: 'exhausted, expiring 1 ms after its deadline', held: true, job: { maxAttempts: 1, expiresAtMs: 2_001 }, nowMs: 2_001, expected: { lastError: deadReasonExhausted, diedAtMs: 2_000 } },
]

// Generated jobs: every edge within a few ms of 1 000 ms, so equal and adjacent times are common.
const generatedJob = fc.record({
  held: fc.boolean(),
  maxAttempts: fc.integer({ min: 1, max: 2 }),
  runAtMs: fc.integer({ min: 1_000, max: 1_003 }),
  visibilityTimeoutMs: fc.integer({ min: 1, max: 3 }),
  expiresAtMs: fc.option(fc.integer({ min: 1_001, max: 1_005 }), { nil: null }),
  nowMs: fc.integer({ min: 999, max: 1_006 }),
})

// Runs of the generated property per binding: each is a handful of statements on a SQL store.
const generatedRuns = 60

/** Registers the edge tests of the job rules. */
export function describeJobRulesConformance(fixture: JobFixture): void {
  const helpers = rulesHelpers(fixture)
  describe('job rules at their edges (domain/JobRules.ts)', () => {
    claimAndHandleEdges(helpers)
    sweepAndDueEdges(helpers)
  })
}

// What every group of these tests uses.
function rulesHelpers(fixture: JobFixture) {
  const store = () => fixture.store()
  const arrange = (queue: string, c: JobCase): Promise<JobRecord> =>
    c.held ? fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 1_000, ...c.job }, 'holder') : store().enqueue({ job: fixture.job(queue, c.job), nowMs: 1_000 })
  const take = (queue: string, nowMs: number) => store().takeDue({ nowMs, reserveUntilMs: nowMs + 30_000, limit: 100, queues: [queue] })
  const deliver = async (queue: string, nowMs: number) => {
    const due = await take(queue, nowMs)
    await store().confirmDelivered({ deliveries: due.map((job) => ({ id: job.id, revision: job.revision })) })
  }
  return { fixture, store, arrange, take, deliver }
}

type RulesHelpers = ReturnType<typeof rulesHelpers>

// Claims and handle operations at their edges, and the generated property.
function claimAndHandleEdges({ fixture, store, arrange }: RulesHelpers): void {
  for (const via of ['claim', 'claimMany'] as const) {
    it(`${via} at runAt, deadline and expiresAt exactly`, async () => {
      const queue = fixture.queue(`edges-${via}`)
      for (const c of claimCases) {
        const job = await arrange(queue, c)
        expect(predictedClaim(job, c.nowMs), c.name).toBe(c.expected)
        const claim = { id: job.id, claimToken: 'next' }
        const outcome = via === 'claim' ? await store().claim({ ...claim, nowMs: c.nowMs }) : (await store().claimMany({ claims: [claim], nowMs: c.nowMs }))[0]
        expect(verdictOf(outcome), c.name).toBe(c.expected)
        const after = await store().getJob({ queue, id: job.id })
        if (c.expected === 'claimed') expect(after, c.name).toMatchObject({ state: 'processing', claimToken: 'next', attempts: job.attempts + 1, deadlineMs: c.nowMs + job.visibilityTimeoutMs })
        else if (c.expected === 'exhausted') expect(after, c.name).toMatchObject({ state: 'dead', lastError: deadReasonExhausted, diedAtMs: job.deadlineMs })
        else expect(after, c.name).toEqual(job)
      }
    })
  }

  it('claim, then sweep, agree with the domain for generated jobs and times around their edges', async () => {
    console.log(`JobStore conformance ${fixture.name}: rules property seed ${fixture.seed} (replay with SIM_SEED=${fixture.seed}), ${generatedRuns} runs`)
    await fc.assert(
      fc.asyncProperty(generatedJob, async ({ held, nowMs, ...shape }) => {
        const queue = fixture.queue('edges-generated')
        const job = await arrange(queue, { name: 'generated', held, job: held ? { ...shape, runAtMs: 1_000 } : shape, nowMs })
        const verdict = predictedClaim(job, nowMs)
        expect(verdictOf(await store().claim({ id: job.id, claimToken: 'next', nowMs }))).toBe(verdict)
        const claimed = await store().getJob({ queue, id: job.id })
        if (verdict === 'claimed') expect(claimed).toMatchObject({ state: 'processing', claimToken: 'next', attempts: job.attempts + 1, deadlineMs: nowMs + job.visibilityTimeoutMs })
        else if (verdict === 'exhausted') expect(claimed).toMatchObject({ state: 'dead', lastError: deadReasonExhausted, diedAtMs: job.deadlineMs })
        else expect(claimed).toEqual(job)
        if (claimed === null || claimed.state === 'dead') return
        const death = isExpired(claimed, nowMs) ? sweptDeath(claimed, nowMs) : null
        expect(await store().sweepExpired({ queue, nowMs })).toEqual({ dead: death === null ? 0 : 1, purged: 0 })
        const swept = await store().getJob({ queue, id: job.id })
        if (death === null) expect(swept).toEqual(claimed)
        else expect(swept).toMatchObject({ state: 'dead', lastError: death.reason, diedAtMs: death.diedAtMs })
      }),
      { seed: fixture.seed, numRuns: generatedRuns },
    )
  })

  it('every handle operation is valid 1 ms before the deadline with the current token, and not at the deadline', async () => {
    const queue = fixture.queue('edges-handle')
    const ops: Record<string, (ref: { id: string; claimToken: string }, nowMs: number) => Promise<boolean>> = {
      ack: (ref, nowMs) => store().ack({ ...ref, nowMs }),
      ackBatch: async (ref, nowMs) => (await store().ackBatch({ claims: [ref], nowMs })) === 1,
      ackMany: async (ref, nowMs) => (await store().ackMany({ claims: [ref], nowMs })).length === 1,
      heartbeat: async (ref, nowMs) => (await store().heartbeat({ ...ref, extendMs: null, nowMs })) !== null,
      retry: async (ref, nowMs) => (await store().retry({ ...ref, error: 'e', delayMs: 0, nowMs })) !== null,
      fail: (ref, nowMs) => store().fail({ ...ref, error: 'e', nowMs }),
    }
    for (const [name, op] of Object.entries(ops)) {
      for (const [nowMs, claimToken] of [[1_999, 'holder'], [2_000, 'holder'], [1_999, 'stranger']] as const) {
        const job = await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 1_000 }, 'holder')
        const valid = isValidClaim(job, claimToken, nowMs)
        expect(valid, `${name} at ${nowMs} as ${claimToken}`).toBe(nowMs === 1_999 && claimToken === 'holder')
        expect(await op({ id: job.id, claimToken }, nowMs), `${name} at ${nowMs} as ${claimToken}`).toBe(valid)
        if (!valid) expect(await store().getJob({ queue, id: job.id })).toEqual(job)
      }
    }
  })
}

// The sweep and the due-time reads at their edges.
function sweepAndDueEdges({ fixture, store, arrange, take, deliver }: RulesHelpers): void {
  it('the sweep takes jobs from expiresAt on, with the exhaustion rule’s verdict at the deadline edges', async () => {
    for (const c of sweepCases) {
      const queue = fixture.queue('edges-sweep')
      const job = await arrange(queue, c)
      const predicted = isExpired(job, c.nowMs) ? sweptDeath(job, c.nowMs) : null
      expect(predicted && { lastError: predicted.reason, diedAtMs: predicted.diedAtMs }, c.name).toEqual(c.expected)
      expect(await store().sweepExpired({ queue, nowMs: c.nowMs }), c.name).toEqual({ dead: c.expected === null ? 0 : 1, purged: 0 })
      const after = await store().getJob({ queue, id: job.id })
      if (c.expected === null) expect(after, c.name).toEqual(job)
      else expect(after, c.name).toMatchObject({ state: 'dead', ...c.expected })
    }
  })

  it('takeDue hands out at runAt and deadline, buries the exhausted there, and skips what expires then', async () => {
    const queue = fixture.queue('edges-due')
    const runnable = await store().enqueue({ job: fixture.job(queue, { runAtMs: 2_000 }), nowMs: 1_000 })
    const expiring = await store().enqueue({ job: fixture.job(queue, { runAtMs: 2_000, expiresAtMs: 2_000 }), nowMs: 1_000 })
    const exhausted = await fixture.claimed(queue, 1_000, { maxAttempts: 1, visibilityTimeoutMs: 1_000 })
    const lapsed = await fixture.claimed(queue, 1_000, { maxAttempts: 2, visibilityTimeoutMs: 1_000 })
    expect(await take(queue, 1_999)).toEqual([])
    expect((await store().getJob({ queue, id: exhausted.id }))?.state).toBe('processing')
    const handedOut = (await take(queue, 2_000)).map((due) => due.id)
    expect(handedOut).toEqual([runnable.id, lapsed.id])
    const predicted = [runnable, expiring, exhausted, lapsed].filter((job) => !isExpired(job, 2_000) && !isExhausted(job, 2_000)).map((job) => job.id)
    expect(predicted).toEqual(handedOut)
    expect(await store().getJob({ queue, id: exhausted.id })).toMatchObject({ state: 'dead', lastError: deadReasonExhausted, diedAtMs: 2_000 })
    expect((await store().getJob({ queue, id: expiring.id }))?.state).toBe('pending')
  })

  it('nextDueMs and dueQueues count a row until its expiresAt, not at it', async () => {
    const queue = fixture.queue('edges-next-due')
    await store().enqueue({ job: fixture.job(queue, { runAtMs: 3_000, expiresAtMs: 3_000 }), nowMs: 1_000 })
    expect(await store().nextDueMs({ nowMs: 2_999, queues: [queue] })).toBe(3_000)
    expect(await store().nextDueMs({ nowMs: 3_000, queues: [queue] })).toBeNull()
    const ours = async (nowMs: number) => (await store().dueQueues({ nowMs, limit: 10_000 })).filter((entry) => entry.queue === queue)
    expect(await ours(2_999)).toEqual([{ queue, nextDueMs: 3_000 }])
    expect(await ours(3_000)).toEqual([])
  })

  it('deliverableCount counts what is claimable: not what expires now, and a lapsed claim from its deadline', async () => {
    const queue = fixture.queue('edges-deliverable')
    const jobs = [
      await store().enqueue({ job: fixture.job(queue), nowMs: 1_000 }),
      await store().enqueue({ job: fixture.job(queue, { expiresAtMs: 2_000 }), nowMs: 1_000 }),
      await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 1_000 }),
      await fixture.claimed(queue, 1_000, { visibilityTimeoutMs: 1_000 }),
    ]
    await deliver(queue, 1_000)
    await deliver(queue, 2_000)
    for (const [nowMs, expected] of [[1_999, 2], [2_000, 3]] as const) {
      expect(jobs.filter((job) => isClaimable(job, nowMs)).length, `at ${nowMs}`).toBe(expected)
      expect(await store().deliverableCount({ queue, nowMs, limit: 10 }), `at ${nowMs}`).toBe(expected)
    }
  })
}
