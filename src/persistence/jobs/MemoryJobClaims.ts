/**
 * MemoryJobClaims — the claim operations of the memory job store (MemoryJobStore.ts): `claim`
 * by id, `claimMany`, and the head claims `claimDue` and `ackAndClaimDue`, the mirror of
 * SqlJobClaims.ts. A claim is admitted by the paused queues, then the concurrency slots
 * (MemoryConcurrencySlots.ts), then the rate buckets (MemoryRateBuckets.ts), and the head claims
 * pass over the rows other transactions hold (MemoryRowLocks.ts); a claim by id
 * refused by a guard parks its row (due again later, its revision moved on), and one of a job
 * whose claim lapsed with its attempts spent buries it.
 *
 * Invariants: a fenced call checks its fence (MemoryClaimFence.ts) and writes in one synchronous
 * step, awaiting nothing between the check and its last write, so no acquire falls between
 * them; a claim stamps an attempt, the deadline from the job's visibility timeout, and the claim
 * order key it displaced (which `release` restores).
 *
 * Does not: ack on its own (`ackAndClaimDue` acks through MemoryJobHandles.ts's `ackValid`),
 * reserve deliveries (MemoryJobDueTimes.ts), or read a clock.
 */
import { claimRefusal, deadReasonExhausted, isClaimable, isExhausted } from '../../domain/JobRules.ts'
import { jobClaimsKept } from '../../kernel/Limits.ts'
import { checkClaims, checkFence, checkName, checkTime, checkTokens } from './JobInput.ts'
import type { ClaimOutcome, JobRecord, JobStore } from './JobStore.ts'
import { claimOrder } from './MemoryClaimOrder.ts'
import { ackValid } from './MemoryJobHandles.ts'
import { bury, copy, type LiveRow, type MemoryJobState } from './MemoryJobRows.ts'
import { rowsHeldBy } from './MemoryRowLocks.ts'

/** Claims a claimable row for `claimToken`: an attempt, the deadline from its visibility stamp, due then. Answers the stored record (not a copy). */
export function claimRow(state: MemoryJobState, row: LiveRow, claimToken: string, nowMs: number): JobRecord {
  const deadlineMs = nowMs + row.job.visibilityTimeoutMs
  const attempts = row.job.attempts + 1
  const claims = [...(row.job.claims ?? []), { attempt: attempts, atMs: nowMs }].slice(-jobClaimsKept)
  row.job = { ...row.job, state: 'processing', attempts, claimedAtMs: nowMs, claimToken, deadlineMs, claims }
  // A due time still ahead is a reservation (the task is with Matching), not a place to keep.
  row.unclaimed = { dueMs: row.dueMs !== null && row.dueMs <= nowMs ? row.dueMs : null, readySeq: row.readySeq }
  row.dueMs = deadlineMs
  row.readySeq = ++state.readySeq
  row.revision++
  return row.job
}

// `claim` after validation, synchronously, so a fenced batch writes in the step it was checked in.
function claimOne(state: MemoryJobState, id: string, claimToken: string, nowMs: number): ClaimOutcome {
  const row = state.live.get(id)
  if (row === undefined) return { kind: 'obsolete', reason: state.dead.has(id) ? 'dead' : 'missing' }
  const job = row.job
  const isPaused = state.paused.has(job.queue)
  if (isClaimable(job, nowMs)) {
    if (isPaused) return { kind: 'obsolete', reason: 'paused' }
    if (!state.slots.hasRoom(row, state.slots.held())) {
      state.slots.park(row, nowMs)
      return { kind: 'obsolete', reason: 'limited' }
    }
    if (!state.buckets.take(row, nowMs)) {
      // Due again at its next token, as rateSql.ts's `parkRatedSql` makes it.
      row.dueMs = state.buckets.parkUntil(row, nowMs)
      row.revision++
      return { kind: 'obsolete', reason: 'limited' }
    }
    return { kind: 'claimed', job: copy(claimRow(state, row, claimToken, nowMs)) }
  }
  if (isExhausted(job, nowMs)) {
    bury(state, row, deadReasonExhausted, job.deadlineMs as number)
    return { kind: 'obsolete', reason: 'exhausted' }
  }
  const refusal = claimRefusal(job, nowMs)
  if (refusal === 'not-due' && isPaused) return { kind: 'obsolete', reason: 'paused' }
  return refusal === 'already-started' ? { kind: refusal } : { kind: 'obsolete', reason: refusal }
}

// `claimDue` after validation. As the SQL statement does, the head leaves out keys already full,
// then admits each key's rows while its limit leaves room (so a batch may come back short).
function claimDueRows(state: MemoryJobState, queue: string, nowMs: number, tokens: ReadonlyArray<string>): JobRecord[] {
  if (state.paused.has(queue)) return []
  const { slots, buckets } = state
  // A row whose task is with Matching is claimed here too, in its place: its task, delivered
  // later, finds the job started (or gone) and ends.
  const held = slots.held()
  // Rows another transaction holds are passed over (FOR UPDATE SKIP LOCKED, MemoryRowLocks.ts).
  const locked = rowsHeldBy(state, state.heldHeads(), nowMs)
  const head = [...state.live.values()]
    .filter((row) => row.job.queue === queue && !locked.has(row.job.id) && (row.dueMs === null || row.dueMs <= nowMs) && isClaimable(row.job, nowMs) && slots.hasRoom(row, held) && buckets.hasToken(row, nowMs))
    .sort(claimOrder)
    .slice(0, tokens.length)
  const admitted = head.filter((row) => {
    if (!slots.hasRoom(row, held)) return false
    slots.take(row, held)
    return true
  })
  // Then the rate guard over what the concurrency guard admitted, in claim order (rateSql.ts).
  const started = admitted.filter((row) => buckets.take(row, nowMs))
  return started.map((row, index) => copy(claimRow(state, row, tokens[index] as string, nowMs)))
}

/** The claim operations over `state`. */
export function makeMemoryJobClaims(state: MemoryJobState): Pick<JobStore, 'claim' | 'claimMany' | 'claimDue' | 'ackAndClaimDue'> {
  return {
    async claim(params) {
      const id = checkName('id', params.id)
      const claimToken = checkName('claimToken', params.claimToken)
      const nowMs = checkTime('nowMs', params.nowMs)
      state.holdFence(checkFence(params.fence))
      return claimOne(state, id, claimToken, nowMs)
    },

    async claimMany(params) {
      const claims = checkClaims(params.claims)
      const nowMs = checkTime('nowMs', params.nowMs)
      const fence = checkFence(params.fence)
      if (claims.length === 0) return []
      state.holdFence(fence)
      return claims.map((claim) => claimOne(state, claim.id, claim.claimToken, nowMs))
    },

    async claimDue(params) {
      const queue = checkName('queue', params.queue)
      const nowMs = checkTime('nowMs', params.nowMs)
      const tokens = checkTokens(params.claimTokens)
      const fence = checkFence(params.fence)
      if (tokens.length === 0) return []
      state.holdFence(fence)
      return claimDueRows(state, queue, nowMs, tokens)
    },

    async ackAndClaimDue(params) {
      const claims = checkClaims(params.acks)
      const queue = checkName('queue', params.queue)
      const nowMs = checkTime('nowMs', params.nowMs)
      const tokens = checkTokens(params.claimTokens)
      const fence = checkFence(params.fence)
      // The fence guards the claim and the acks riding on it; acks alone are `ackMany`'s.
      if (tokens.length > 0) state.holdFence(fence)
      const acked = ackValid(state, claims, nowMs)
      return { acked, claimed: tokens.length === 0 ? [] : claimDueRows(state, queue, nowMs, tokens) }
    },
  }
}
