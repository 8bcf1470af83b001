/**
 * MemoryClaimOrder — the order in which the memory job store (MemoryJobStore.ts) claims and
 * reserves claimable rows, and the fairness passes that place rows in it: priority first,
 * then the claim order key (the due time, or a row's pass when later), then ready order, as the
 * SQL statements' ORDER BY spells it (jobSql.ts). A job's pass is drawn at insert, in the turn
 * MemoryFairPasses.ts gives it, as enqueueSql draws it, from each key's last pass kept in the
 * store state's `lastPasses`; the sweep forgets the keys that have fallen a longest stride behind.
 *
 * Invariants: a key's pass only grows while it is remembered (each at least a stride past the
 * last); the order is total, ties broken by ready order, which no two rows share.
 *
 * Does not: filter rows (the claims and reservations choose what is claimable and admitted), or
 * change a row (only `lastPasses`).
 */
import { fairnessStrideMax, type NewJob } from './JobStore.ts'
import type { Turn } from './MemoryFairPasses.ts'
import type { LiveRow, MemoryJobState } from './MemoryJobRows.ts'

/**
 * A row's claim order key within its priority. A row whose task is with Matching (due null) was
 * due before any row still in the store: it comes first. A row with a pass sorts by it, or by
 * its due time if later.
 */
export const orderKey = (row: LiveRow): number => (row.dueMs === null ? Number.NEGATIVE_INFINITY : Math.max(row.fairPass ?? Number.NEGATIVE_INFINITY, row.dueMs))

/** Claim order among claimable rows, for `sort`: priority, then claim order key, then ready order. */
export const claimOrder = (a: LiveRow, b: LiveRow): number =>
  b.job.priority - a.job.priority || (orderKey(a) === orderKey(b) ? 0 : orderKey(a) < orderKey(b) ? -1 : 1) || a.readySeq - b.readySeq

/**
 * A job's pass in its turn's key (MemoryFairPasses.ts: its own, or the implicit key), as
 * enqueueSql draws it, remembered as that key's last: V is the claim order key of the head of
 * the queue's pending rows at the job's priority (the job's due time when there is none); a key
 * new to the queue starts at V, a known one at max(V, its last pass + stride).
 */
export function nextPass(state: MemoryJobState, job: NewJob, dueMs: number, turn: Turn): number {
  let virtualNow = Number.POSITIVE_INFINITY
  for (const row of state.live.values()) {
    if (row.job.queue === job.queue && row.job.priority === job.priority && row.job.state === 'pending' && row.dueMs !== null) {
      virtualNow = Math.min(virtualNow, orderKey(row))
    }
  }
  if (virtualNow === Number.POSITIVE_INFINITY) virtualNow = dueMs
  const passes = state.lastPasses.get(job.queue) ?? new Map<string, number>()
  state.lastPasses.set(job.queue, passes)
  const last = passes.get(turn.key)
  const pass = last === undefined ? virtualNow : Math.max(virtualNow, last + turn.stride)
  passes.set(turn.key, pass)
  return pass
}

/**
 * Forgets the keys of `queue` whose last pass is a longest stride behind its virtual now (the
 * head of its pending rows at any priority, or now): they would enter there anyway.
 */
export function forgetIdleKeys(state: MemoryJobState, queue: string, nowMs: number): void {
  const passes = state.lastPasses.get(queue)
  if (passes === undefined) return
  let virtualNow = nowMs
  for (const row of state.live.values()) if (row.job.queue === queue && row.job.state === 'pending' && row.dueMs !== null) virtualNow = Math.min(virtualNow, orderKey(row))
  for (const [key, last] of passes) if (last + fairnessStrideMax <= virtualNow) passes.delete(key)
  if (passes.size === 0) state.lastPasses.delete(queue)
}

/** How many fairness keys `state` remembers, over every queue (the long-soak bench and the sweep's test read it). */
export function fairnessKeyCount(state: MemoryJobState): number {
  let fairnessKeys = 0
  for (const passes of state.lastPasses.values()) fairnessKeys += passes.size
  return fairnessKeys
}
