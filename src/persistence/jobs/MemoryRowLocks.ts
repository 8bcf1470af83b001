/**
 * MemoryRowLocks — the rows of a memory job store (MemoryJobStore.ts) that statements of other
 * transactions hold locked, for the statements that skip such rows as their SQL twins do
 * (`FOR UPDATE SKIP LOCKED`: `claimDue`'s and `ackAndClaimDue`'s head, `takeDue`'s reservations;
 * jobs/sql/jobSql.ts). The memory store runs each statement alone, so no row is ever held unless
 * its owner says which statements are in flight beside the one running (`heldHeads` of
 * MemoryJobStoreOptions: the simulator does, sim/jobs/SimRowLocks.ts); without that, nothing is held.
 *
 * What a head statement in flight holds, as its SQL text locks it: a claim of `rows` jobs (whose
 * fence holds: a fenced claim reads nothing otherwise, claimFenceSql.ts) locks
 * the first `rows` of each of its branches in claim order — due pending rows whose key has room
 * and whose buckets a token, rows whose task is with Matching, lapsed claims due — of which it
 * claims only the first `rows` of the merge, so the rest stay locked to its end
 * (jobSql.ts's `claimHeadCtes`); a reservation of `rows` locks the first `rows` of its due pending
 * and due processing rows, unexpired and not exhausted, its pending ones passing over the keys it
 * was told to skip, and one queue's no more than its queue-wide bucket's whole tokens
 * (jobSql.ts's `takeDueSql`).
 *
 * Does not: hold anything across statements, or make a statement wait (a statement that waits
 * for a lock runs after its holder in the memory store's one-at-a-time order anyway).
 */
import { isClaimable, isExhausted, isExpired } from '../../domain/JobRules.ts'
import type { ClaimFence } from './JobStore.ts'
import { claimOrder } from './MemoryClaimOrder.ts'
import type { HeldHead, LiveRow, MemoryJobState } from './MemoryJobRows.ts'

export type { HeldHead } from './MemoryJobRows.ts'

/** The ids of the live rows the in-flight statements `heads` hold locked at `nowMs` (see the file header). */
export function rowsHeldBy(state: MemoryJobState, heads: ReadonlyArray<HeldHead>, nowMs: number): ReadonlySet<string> {
  const held = new Set<string>()
  if (heads.length === 0) return held
  const slotsHeld = state.slots.held()
  const due = (row: LiveRow) => row.dueMs !== null && row.dueMs <= nowMs
  const guarded = (row: LiveRow) => !state.paused.has(row.job.queue) && state.buckets.hasToken(row, nowMs)
  const roomy = (row: LiveRow) => state.slots.hasRoom(row, slotsHeld)
  for (const head of heads) {
    if (head.rows <= 0 || !fenceHolds(state, head.fence ?? null)) continue
    const inScope = (row: LiveRow) => head.queues === null || head.queues.includes(row.job.queue)
    const rows = [...state.live.values()].filter((row) => inScope(row) && guarded(row))
    const skipped = (row: LiveRow) => row.concurrencyKey !== undefined && head.skipKeys?.includes(row.concurrencyKey) === true
    const live = (row: LiveRow) => !isExpired(row.job, nowMs) && !isExhausted(row.job, nowMs)
    const branches =
      head.kind === 'claim'
        ? [
            rows.filter((row) => row.job.state === 'pending' && due(row) && isClaimable(row.job, nowMs) && roomy(row)),
            rows.filter((row) => row.dueMs === null && isClaimable(row.job, nowMs) && (row.job.state === 'processing' || roomy(row))),
            rows.filter((row) => row.job.state === 'processing' && due(row) && isClaimable(row.job, nowMs)),
          ]
        : [rows.filter((row) => row.job.state === 'pending' && due(row) && live(row) && roomy(row) && !skipped(row)), rows.filter((row) => row.job.state === 'processing' && due(row) && live(row))]
    // One queue's reservation reads no more rows than its queue-wide bucket holds whole tokens (takeDueSql's LIMIT).
    const only = head.kind === 'reserve' && head.queues?.length === 1 ? (head.queues[0] as string) : null
    const limit = only === null ? head.rows : Math.min(head.rows, state.buckets.queueTokens(only, nowMs) ?? head.rows)
    for (const branch of branches) for (const row of branch.sort(claimOrder).slice(0, limit)) held.add(row.job.id)
  }
  return held
}

// Whether `fence` holds now (the SQL claim checks it first, before it reads a row).
function fenceHolds(state: MemoryJobState, fence: ClaimFence | null): boolean {
  try {
    state.holdFence(fence)
    return true
  } catch {
    return false
  }
}
