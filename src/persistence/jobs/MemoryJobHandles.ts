/**
 * MemoryJobHandles — the operations of a claim's holder on the memory job store
 * (MemoryJobStore.ts): `heartbeat`, `ack`, `ackMany`, `ackBatch`, `setProgress`, `release`,
 * `releaseHandedOver`, `retry` and `fail`, the mirror of SqlJobHandles.ts. Each finds its row by
 * JobStore.ts's validity predicate (processing, deadline not passed, the caller's claim token
 * current) and changes it in the same synchronous step, so a reclaim racing one of them has
 * exactly one winner.
 *
 * Invariants: inputs validated (JobInput.ts) before any change; a retry or failure keeps the
 * handler's error in the attempt history, the oldest dropped past `jobAttemptErrorsKept`.
 * Does not: claim (MemoryJobClaims.ts), fence (a holder's operation is judged by its claim
 * token, not by a range), or read a clock.
 */
import { deadReasonExhausted, isOutOfAttempts } from '../../domain/JobRules.ts'
import { jobAttemptErrorsKept } from '../../kernel/Limits.ts'
import { checkClaimRef, checkClaims, checkDurationMs, checkHandedOver, checkError, checkProgress, checkStack, checkTime } from './JobInput.ts'
import type { AttemptError, ClaimRef, JobRecord, JobStore } from './JobStore.ts'
import { bury, copy, type MemoryJobState, validRow } from './MemoryJobRows.ts'

// `job`'s attempt history with this attempt's error appended, the oldest dropped past the bound.
const withAttemptError = (job: JobRecord, error: string, stack: string | null, atMs: number, retryAtMs?: number): ReadonlyArray<AttemptError> =>
  [...job.attemptErrors, retryAtMs === undefined ? { attempt: job.attempts, error, stack, atMs } : { attempt: job.attempts, error, stack, atMs, retryAtMs }].slice(-jobAttemptErrorsKept)

/** `ackMany` after validation: the ids whose claim was valid, deleted. */
export function ackValid(state: MemoryJobState, claims: ReadonlyArray<ClaimRef>, nowMs: number): string[] {
  const acked: string[] = []
  for (const claim of claims) if (validRow(state, claim.id, claim.claimToken, nowMs) !== undefined && state.live.delete(claim.id)) acked.push(claim.id)
  return acked
}

// `release` after validation: back to pending in the place the claim displaced, due by now.
function releaseValid(state: MemoryJobState, claims: ReadonlyArray<ClaimRef>, nowMs: number): string[] {
  const judged = new Set<string>()
  const released: string[] = []
  for (const claim of claims) {
    if (judged.has(claim.id)) continue
    judged.add(claim.id)
    const row = validRow(state, claim.id, claim.claimToken, nowMs)
    if (row === undefined) continue
    const unclaimedDueMs = row.unclaimed?.dueMs ?? null
    // The claim given back is taken off the job's claims: it never reached a handler.
    const claims = (row.job.claims ?? []).slice(0, -1)
    row.job = { ...row.job, state: 'pending', attempts: Math.max(0, row.job.attempts - 1), claimedAtMs: null, claimToken: null, deadlineMs: null, claims }
    row.dueMs = unclaimedDueMs === null ? nowMs : Math.min(unclaimedDueMs, nowMs)
    row.readySeq = row.unclaimed?.readySeq ?? row.readySeq
    delete row.unclaimed
    row.revision++
    released.push(claim.id)
  }
  return released
}

// Makes the job due again after `delayMs`, or buries it when its attempts are spent.
async function retry(state: MemoryJobState, params: Parameters<JobStore['retry']>[0]): ReturnType<JobStore['retry']> {
  const { id, claimToken } = checkClaimRef(params)
  // lastError stays dead-only (a budget death says why); the handler's error is kept apart.
  const error = checkError('error', params.error)
  const stack = checkStack('stack', params.stack)
  const delayMs = checkDurationMs('delayMs', params.delayMs, 0)
  const nowMs = checkTime('nowMs', params.nowMs)
  const row = validRow(state, id, claimToken, nowMs)
  if (row === undefined) return null
  const runAtMs = nowMs + delayMs
  // A death at the budget has no next attempt to be due.
  const retryAtMs = isOutOfAttempts(row.job) ? undefined : runAtMs
  row.job = { ...row.job, lastHandlerError: error, lastHandlerStack: stack, attemptErrors: withAttemptError(row.job, error, stack, nowMs, retryAtMs) }
  if (retryAtMs === undefined) {
    bury(state, row, deadReasonExhausted, nowMs)
    return { kind: 'dead' }
  }
  row.job = { ...row.job, state: 'pending', runAtMs, claimToken: null, deadlineMs: null }
  row.dueMs = runAtMs
  row.readySeq = ++state.readySeq
  row.revision++
  return { kind: 'retried', runAtMs }
}

type Handles = Pick<JobStore, 'heartbeat' | 'ack' | 'setProgress' | 'ackMany' | 'ackBatch' | 'release' | 'releaseHandedOver' | 'retry' | 'fail'>

/** The holder's operations over `state`. */
export function makeMemoryJobHandles(state: MemoryJobState): Handles {
  const handles: Handles = {
    async heartbeat(params) {
      const { id, claimToken } = checkClaimRef(params)
      const nowMs = checkTime('nowMs', params.nowMs)
      const extendMs = params.extendMs === null ? null : checkDurationMs('extendMs', params.extendMs, 1)
      const row = validRow(state, id, claimToken, nowMs)
      if (row === undefined) return null
      const deadlineMs = nowMs + (extendMs ?? row.job.visibilityTimeoutMs)
      row.job = { ...row.job, deadlineMs }
      row.dueMs = deadlineMs
      row.readySeq = ++state.readySeq
      row.revision++
      return copy(row.job)
    },

    async ack(params) {
      const { id, claimToken } = checkClaimRef(params)
      const nowMs = checkTime('nowMs', params.nowMs)
      return validRow(state, id, claimToken, nowMs) !== undefined && state.live.delete(id)
    },

    async ackMany(params) {
      return ackValid(state, checkClaims(params.claims), checkTime('nowMs', params.nowMs))
    },

    async ackBatch(params) {
      return (await handles.ackMany(params)).length
    },

    async release(params) {
      return releaseValid(state, checkClaims(params.claims), checkTime('nowMs', params.nowMs))
    },

    async releaseHandedOver(params) {
      const { queue, claimTokens, nowMs } = checkHandedOver(params)
      if (claimTokens.length === 0) return []
      // The claims these tokens hold, found by a walk of the live rows: a give-back of hand-overs
      // lost on their way is rare (an engine stopped waiting as an enqueue took its waiter).
      const byToken = new Map<string, ClaimRef>()
      for (const [id, row] of state.live) {
        const token = row.job.claimToken
        if (row.job.queue === queue && row.job.state === 'processing' && token !== null) byToken.set(token, { id, claimToken: token })
      }
      const claims = [...new Set(claimTokens)].flatMap((token) => byToken.get(token) ?? [])
      const released = new Set(releaseValid(state, claims, nowMs))
      return claims.filter((claim) => released.has(claim.id))
    },

    retry: (params) => retry(state, params),

    async setProgress(params) {
      const { id, claimToken } = checkClaimRef(params)
      const nowMs = checkTime('nowMs', params.nowMs)
      const progress = checkProgress('progress', params.progress)
      const row = validRow(state, id, claimToken, nowMs)
      if (row === undefined) return false
      row.job = { ...row.job, progress: copy(progress), progressAtMs: nowMs }
      return true
    },

    async fail(params) {
      const { id, claimToken } = checkClaimRef(params)
      const error = checkError('error', params.error)
      const stack = checkStack('stack', params.stack)
      const nowMs = checkTime('nowMs', params.nowMs)
      const row = validRow(state, id, claimToken, nowMs)
      if (row === undefined) return false
      row.job = { ...row.job, lastHandlerError: error, lastHandlerStack: stack, attemptErrors: withAttemptError(row.job, error, stack, nowMs) }
      bury(state, row, error, nowMs)
      return true
    },
  }
  return handles
}
