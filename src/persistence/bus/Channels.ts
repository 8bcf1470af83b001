/**
 * Channels — the LISTEN/NOTIFY channel names of one schema: a due channel every engine hears,
 * and one channel per host. Names are short hashes (PostgreSQL caps identifiers at 63 bytes,
 * and host ids and schema names may be long); a host channel shared by two hosts through a
 * hash collision only costs a filtered message, since every host message names its receiver.
 *
 * A due signal's payload is the queue name, then — when the signal says when its rows are due —
 * a tab and that epoch ms. Queue names cannot hold a tab (control characters are refused), so
 * the split is unambiguous. The job store's SQL raises the same payloads (jobSql.ts).
 */
import { fnv1a64 } from '../../domain/Rendezvous.ts'

const hashed = (text: string): string => `matchbox_${fnv1a64(text).toString(16).padStart(16, '0')}`

/** The channel of due signals for the tables in `schema`. */
export function dueChannelOf(schema: string): string {
  return hashed(`${schema}\u0000due`)
}

/** The channel of messages addressed to `hostId` among the engines on `schema`. */
export function hostChannelOf(schema: string, hostId: string): string {
  return hashed(`${schema}\u0000host\u0000${hostId}`)
}

/** The payload of a due signal for `queue`'s rows due at `dueMs` (null: unsaid). */
export function dueSignalPayload(queue: string, dueMs: number | null): string {
  return dueMs === null ? queue : `${queue}\t${dueMs}`
}

/** The queue and due time a due signal's payload names; an unreadable time reads as unsaid. */
export function dueSignalOf(payload: string): [queue: string, dueMs: number | null] {
  const tab = payload.indexOf('\t')
  if (tab < 0) return [payload, null]
  const dueMs = Number(payload.slice(tab + 1))
  return [payload.slice(0, tab), Number.isSafeInteger(dueMs) ? dueMs : null]
}
