/**
 * Channels — the LISTEN/NOTIFY channel names of one schema: a due channel every engine hears,
 * and one channel per host. Names are short hashes (PostgreSQL caps identifiers at 63 bytes,
 * and host ids and schema names may be long); a host channel shared by two hosts through a
 * hash collision only costs a filtered message, since every host message names its receiver.
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
