/**
 * MemoryConcurrencySlots — the per-key concurrency guard of the memory job store
 * (MemoryJobStore.ts), the mirror of the SQL store's `concurrency_slots` (concurrencySql.ts).
 *
 * A key's limit is kept per (queue, key), set by the key's enqueues (the latest limit given
 * wins, as the slot row's is). A key's count is not kept but counted: the live rows of its queue
 * with that key that are processing (lapsed claims included, as in SQL), read from the store's
 * map at the moment of a claim. The memory store runs each operation synchronously, so a count
 * and the claim that follows it are one atomic step, as one SQL statement under the key's row
 * lock is.
 *
 * Does not: change a row's state (the store's claims do); forget a key (nor does SQL).
 */
import { jobDueScanIntervalMs } from '../../kernel/Limits.ts'
import type { JobRecord } from './JobStore.ts'

/** What the guard reads and writes of a live row. */
export interface LimitedRow {
  readonly job: JobRecord
  dueMs: number | null
  revision: number
  /** The job's concurrency key; absent without one. */
  readonly concurrencyKey?: string
}

/** Held counts by slot, as `held()` answers them. */
export type HeldCounts = Map<string, number>

/** The guard over a store's live rows. */
export interface MemorySlots {
  /** Records the limit an enqueue of `key` in `queue` gave. */
  setLimit(queue: string, key: string, limit: number): void
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
  const limits = new Map<string, number>()
  // Queue names and keys are validated names, which hold no NUL: the pair joined by one is unique,
  // and cheaper to build than JSON on a path every claim walks per row.
  const slotOf = (queue: string, key: string): string => `${queue}\u0000${key}`
  const slotOfPending = (row: LimitedRow): string | undefined =>
    row.concurrencyKey === undefined || row.job.state !== 'pending' ? undefined : slotOf(row.job.queue, row.concurrencyKey)
  return {
    setLimit(queue, key, limit) {
      limits.set(slotOf(queue, key), limit)
    },
    held() {
      const held: HeldCounts = new Map()
      for (const row of live.values()) {
        if (row.concurrencyKey === undefined || row.job.state !== 'processing') continue
        const slot = slotOf(row.job.queue, row.concurrencyKey)
        held.set(slot, (held.get(slot) ?? 0) + 1)
      }
      return held
    },
    hasRoom(row, held) {
      const slot = slotOfPending(row)
      return slot === undefined || (held.get(slot) ?? 0) < (limits.get(slot) ?? 0)
    },
    take(row, held) {
      const slot = slotOfPending(row)
      if (slot !== undefined) held.set(slot, (held.get(slot) ?? 0) + 1)
    },
    park(row, nowMs) {
      row.dueMs = nowMs + jobDueScanIntervalMs
      row.revision++
    },
  }
}
