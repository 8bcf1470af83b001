/**
 * HandOver — the hand-over at enqueue across engines: a claim waiting in one engine's line for
 * a job of a queue is registered in the store as a waiter (its claim token, its engine, until
 * when it waits); an enqueue on another engine — a producer's — inserts its job already claimed
 * with a waiter's token and sends the job to that engine in a host message (`handed`), so the
 * job goes from the producer's statement to a handler with no due signal, no due-time pass and
 * no claim statement in between.
 *
 * On SQL stores the message is raised inside the enqueue's own statement (`pg_notify` on the
 * waiter's host channel, delivered at commit); the memory store has no transport, so the engine
 * that enqueued sends it over its bus. Either way the message may be lost: the job is then
 * claimed by nobody and its claim lapses (one visibility timeout) before it is delivered again —
 * time, never the job.
 *
 * Which jobs: only one claimable now that nothing guards at its claim — no job key, no
 * fairness, concurrency or rate key or limit — whose payload fits one message
 * (`handOverPayloadBytesMax`), and only while no other row of its queue is claimable (an older
 * job comes first) and the queue is not paused. Any other enqueue is an ordinary one.
 *
 * Does not: choose the waiter's claim (the receiving engine hands the job to the claim that
 * registered the token if it still waits, else to its claim waiting longest), or retry.
 */
import type { JsonValue } from '../../domain/Json.ts'
import { type JobRecord, insertedJobRecord, type NewJob } from './JobStore.ts'

/** Largest payload, in UTF-8 bytes of its JSON, that an enqueue hands to a waiter (the rest of the message and the bus envelope fit beside it). */
export const handOverPayloadBytesMax = 4_000

/**
 * Whether an enqueue of `job` at `nowMs` may go to a waiter: claimable now, guarded by nothing at
 * its claim, its payload small enough for one message. `payloadBytes` is its payload's JSON size.
 */
export function isHandOverCandidate(job: NewJob, nowMs: number, payloadBytes: number): boolean {
  return (
    job.runAtMs <= nowMs &&
    (job.expiresAtMs === null || job.expiresAtMs > nowMs) &&
    (job.key ?? null) === null &&
    (job.fairnessKey ?? null) === null &&
    (job.concurrencyKey ?? null) === null &&
    (job.rateLimit ?? null) === null &&
    (job.rateLimitPerKey ?? null) === null &&
    payloadBytes <= handOverPayloadBytesMax
  )
}

/**
 * The `handed` host message for `job` inserted at `nowMs`, without its claim token and payload:
 * the SQL store completes it in its statement with the waiter's token and the payload it inserted
 * (`handOverMessage` does both for the memory path).
 */
export function handOverMessageStem(job: NewJob, nowMs: number): { readonly [key: string]: JsonValue } {
  const { payload: _payload, ...rest } = job
  return { kind: 'handed', nowMs, job: rest as unknown as JsonValue }
}

/** The whole `handed` message: the stem with the waiter's claim token and the payload. */
export function handOverMessage(job: NewJob, nowMs: number, claimToken: string): JsonValue {
  return { ...handOverMessageStem(job, nowMs), claimToken, payload: job.payload }
}

const isRecord = (value: JsonValue | undefined): value is { readonly [key: string]: JsonValue } => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * The claimed job a `handed` message carries, as the store inserted it (`insertedJobRecord`), or
 * null when `message` is not a well-formed hand-over.
 */
export function handedJobOf(message: JsonValue): JobRecord | null {
  if (!isRecord(message) || message.kind !== 'handed' || typeof message.claimToken !== 'string' || typeof message.nowMs !== 'number' || !isRecord(message.job)) return null
  const job = message.job as unknown as NewJob
  if (typeof job.id !== 'string' || typeof job.queue !== 'string' || typeof job.visibilityTimeoutMs !== 'number' || !('payload' in message)) return null
  return insertedJobRecord({ ...job, payload: message.payload as JsonValue }, message.nowMs, message.claimToken, message.payload as JsonValue)
}
