/**
 * MemoryConcurrencySlots — the per-key concurrency guard of the memory job store
 * (MemoryJobStore.ts), the mirror of the SQL store's `concurrency_slots` (concurrencySql.ts).
 *
 * A key's count is not kept but counted: the live rows of its queue with that key that are
 * processing (lapsed claims included, as in SQL), read from the store's map at the moment of a
 * claim. The memory store runs each operation synchronously, so a count and the claim that
 * follows it are one atomic step, as one SQL statement under the key's row lock is.
 *
 * Does not: change a row's state (the store's claims do); keep anything of its own.
 */
import { jobDueScanIntervalMs } from '../../kernel/Limits.ts'
import type { JobRecord } from './JobStore.ts'

/** A limited job's concurrency key and the limit it was enqueued with. */
export interface ConcurrencyLimit {
  readonly key: string
  readonly limit: number
}

/** What the guard reads and writes of a live row. */
export interface LimitedRow {
  readonly job: JobRecord
  dueMs: number | null
  revision: number
  readonly limit?: ConcurrencyLimit
}

/** Held counts by slot (`slotOf`). */
export type HeldCounts = Map<string, number>

/** The guard over a store's live rows. */
export interface MemorySlots {
  /** Every slot's count now: processing rows per (queue, key). */
  held(): HeldCounts
  /** Whether claiming `row` keeps its key within its limit under `held`: unkeyed and lapsed rows always do. */
  hasRoom(row: LimitedRow, held: ReadonlyMap<string, number>): boolean
  /** Counts a claim of pending `row` into `held` (nothing for an unkeyed or lapsed row). */
  take(row: LimitedRow, held: HeldCounts): void
  /** A claim of `row` refused for its key's limit: due again (its revision moved on) one scan interval from now. */
  park(row: LimitedRow, nowMs: number): void
}

/** Makes the guard over `live`. */
export function makeMemorySlots(live: ReadonlyMap<string, LimitedRow>): MemorySlots {
  const slotOf = (queue: string, key: string): string => JSON.stringify([queue, key])
  const limitedPending = (row: LimitedRow): row is LimitedRow & { readonly limit: ConcurrencyLimit } => row.limit !== undefined && row.job.state === 'pending'
  return {
    held() {
      const held: HeldCounts = new Map()
      for (const row of live.values()) {
        if (row.limit === undefined || row.job.state !== 'processing') continue
        const slot = slotOf(row.job.queue, row.limit.key)
        held.set(slot, (held.get(slot) ?? 0) + 1)
      }
      return held
    },
    hasRoom(row, held) {
      return !limitedPending(row) || (held.get(slotOf(row.job.queue, row.limit.key)) ?? 0) < row.limit.limit
    },
    take(row, held) {
      if (!limitedPending(row)) return
      const slot = slotOf(row.job.queue, row.limit.key)
      held.set(slot, (held.get(slot) ?? 0) + 1)
    },
    park(row, nowMs) {
      row.dueMs = nowMs + jobDueScanIntervalMs
      row.revision++
    },
  }
}
