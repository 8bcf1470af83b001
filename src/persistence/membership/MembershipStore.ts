/**
 * MembershipStore — the contract for dynamic membership's host rows (DESIGN.md §6): each live
 * Matching host keeps a row in the shared database alive with heartbeats, and every host reads
 * the set of rows that have not expired.
 *
 * A row is `(hostId, lastSeenMs, expiresAtMs)`. `heartbeat` upserts it with
 * `expiresAtMs = nowMs + ttlMs`; `leave` deletes it; `liveHosts` returns the rows whose expiry is
 * strictly after the caller's `nowMs`, sorted by `compareHostIds`: Unicode code-point order,
 * which is UTF-8 byte order and so exactly what the SQL column's "C" collation gives.
 *
 * Invariants: the last heartbeat of a host wins, even when its `nowMs` is earlier than the one
 * before (a clock jump on that host moves its own expiry, never anyone else's); times are
 * whole milliseconds (floored), as the SQL store's bigint columns are; every store refuses the
 * same bad input with the same `InvalidInput` before writing anything (the `check…` functions
 * below); no store reads a clock.
 *
 * Does not: decide who owns what (domain/Rendezvous.ts), fence anything (ranges do that, and a
 * host that wrongly thinks it is a member is safe because of them), or prune long-expired rows
 * (they are skipped by `liveHosts` and overwritten when their host returns).
 */
import { InvalidInput } from '../../domain/errors.ts'
import { validateName } from '../../domain/QueueKey.ts'
import type { StoreKind } from '../queues/Store.ts'

/** One host's membership row. */
export interface HostRow {
  readonly hostId: string
  /** `nowMs` of the host's last heartbeat, floored to whole milliseconds. */
  readonly lastSeenMs: number
  /** `lastSeenMs + ttlMs`: the host counts as live while `nowMs < expiresAtMs`. */
  readonly expiresAtMs: number
}

/** Host rows with heartbeats in the shared database. */
export interface MembershipStore {
  readonly kind: StoreKind
  /** Upserts the row of `hostId`: last seen now, expiring `ttlMs` from now. Returns the stored row. */
  heartbeat(params: { readonly hostId: string; readonly nowMs: number; readonly ttlMs: number }): Promise<HostRow>
  /** Deletes the row of `hostId`; true when there was one. */
  leave(params: { readonly hostId: string }): Promise<boolean>
  /** Rows whose expiry is after `nowMs`, sorted by host id. */
  liveHosts(params: { readonly nowMs: number }): Promise<ReadonlyArray<HostRow>>
  /** Releases what the store opened. */
  close(): Promise<void>
}

function time(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidInput({ field, reason: 'must be a finite epoch-ms number ≥ 0' })
  }
  return Math.floor(value)
}

/**
 * The order of `liveHosts`: code-point order of the ids (UTF-8 byte order). Not JavaScript's
 * `<`, which compares UTF-16 code units and puts '🚀' before '\uff01'; PostgreSQL would not.
 */
export function compareHostIds(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
}

/** Validates a host id: a name (non-empty, ≤ nameBytesMax UTF-8 bytes, no control characters). */
export function checkHostId(value: unknown): string {
  return validateName('hostId', value)
}

/** Validates `heartbeat` parameters; times floored to whole milliseconds. */
export function checkHeartbeat(params: { readonly hostId: string; readonly nowMs: number; readonly ttlMs: number }): {
  hostId: string
  nowMs: number
  ttlMs: number
} {
  const hostId = checkHostId(params.hostId)
  const nowMs = time('nowMs', params.nowMs)
  const ttlMs = params.ttlMs
  if (typeof ttlMs !== 'number' || !Number.isSafeInteger(ttlMs) || ttlMs < 1) throw new InvalidInput({ field: 'ttlMs', reason: 'must be an integer ≥ 1' })
  if (!Number.isSafeInteger(nowMs + ttlMs)) throw new InvalidInput({ field: 'ttlMs', reason: 'nowMs + ttlMs must be a safe integer' })
  return { hostId, nowMs, ttlMs }
}

/** Validates `liveHosts` parameters; `nowMs` floored to whole milliseconds. */
export function checkLiveHosts(params: { readonly nowMs: number }): { nowMs: number } {
  return { nowMs: time('nowMs', params.nowMs) }
}
