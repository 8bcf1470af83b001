/**
 * Bus — the messages engines sharing one database send each other, with PostgreSQL itself as
 * the transport (LISTEN/NOTIFY): no other server, no broker of our own (DESIGN.md §6).
 *
 * Two kinds of message:
 * - a **due signal** names a job queue whose rows became due or will (an enqueue, a retry, a
 *   fired schedule), and when, if all those rows are due at one time. Every engine hears it; the
 *   owner of the queue's partitions delivers. On SQL stores an enqueue raises it inside its own
 *   INSERT statement, so a transactional enqueue signals exactly when the caller commits.
 * - a **host message** is addressed to one engine: a forwarded poll, the hand-over of a job
 *   claimed on the poller's behalf, or the refusal of a poll.
 *
 * Delivery is at most once and unordered across senders: a message may be lost (a listener's
 * connection dropped, the receiver died). Every use is built so that a lost message costs time
 * — a poll that times out, a claim that lapses and is delivered again — and never a job.
 *
 * Does not: retry, persist or acknowledge messages; interpret them (the jobs layer does).
 */
import type { JsonValue } from '../../domain/Json.ts'

/** Which transport a bus is. */
export type BusKind = 'memory' | 'postgres'

/** What a subscriber hears. */
export interface BusHandlers {
  /** The queue named in a due signal, and when its rows are due (null: the signal does not say). */
  readonly onDue: (queue: string, dueMs: number | null) => void
  /** A message addressed to this host. */
  readonly onMessage: (message: JsonValue) => void
  /** The subscription lost messages (its connection broke and was re-established): re-scan. */
  readonly onGap?: () => void
}

/** The messaging seam between engines sharing one database. */
export interface Bus {
  readonly kind: BusKind
  /** Raises a due signal for `queue`'s rows due at `dueMs` (null: unsaid) to every subscribed engine (the sender's own included). */
  signalDue(queue: string, dueMs: number | null): Promise<void>
  /** Sends `message` to host `hostId`; resolves once handed to the transport (not when received). */
  send(hostId: string, message: JsonValue): Promise<void>
  /** Starts hearing due signals and messages addressed to `hostId`; resolves with the stop function. */
  subscribe(hostId: string, handlers: BusHandlers): Promise<() => Promise<void>>
  /** Stops every subscription this bus opened. Idempotent. */
  close(): Promise<void>
}

/** Largest message a bus carries, in UTF-8 bytes (PostgreSQL's NOTIFY payload limit is 8000). */
export const busMessageBytesMax = 7_900
