/**
 * QueueContext — the memory of one loaded physical queue: its limits, the shape of the machine's
 * context, how a fresh one starts, when its timers are due, whether it is idle, and the progress
 * report it gives at unload. Values are treated as immutable. The pure operations on the backlog (subqueues, buffers, deliveries) live in
 * QueueBacklog.ts; the statechart that changes the context lives in PhysicalQueueMachine.ts.
 *
 * Invariants:
 * - a task is in at most one place: a pending add, the append in flight, a subqueue buffer, or
 *   a delivery in flight;
 * - every buffered or delivering backlog task is unhandled in its subqueue's AckWindow, so the
 *   ack level never passes it;
 * - buffers (from their head) are sorted by task id and hold at most `readPageSizeMax` tasks per
 *   subqueue.
 */
import type { AckWindow } from '../domain/AckWindow.ts'
import type { Task } from '../domain/Task.ts'
import {
  acquireRetryInitialMs,
  acquireRetryMaxMs,
  appendBatchSizeMax,
  appendQueueSizeMax,
  checkpointAckCountMax,
  checkpointIntervalMs,
  idleUnloadMs,
  ownershipCheckIntervalMs,
  readPageSizeMax,
} from '../kernel/Limits.ts'
import { assert } from '../kernel/assert.ts'
import { type Book, emptyBook } from './Book.ts'
import type { QueueProgress, TimerName, UnloadReason } from './PhysicalQueueProtocol.ts'

/** Bounds and intervals of one queue; defaults are the named limits (upstream values). */
export interface QueueLimits {
  readonly appendBatchSizeMax: number
  readonly appendQueueSizeMax: number
  readonly readPageSizeMax: number
  readonly checkpointAckCountMax: number
  readonly checkpointIntervalMs: number
  readonly idleUnloadMs: number
  readonly acquireRetryInitialMs: number
  readonly acquireRetryMaxMs: number
  /** Polls waiting on one queue before new ones are refused as overloaded. */
  readonly pollersMax: number
  /** How long a drain waits for History to answer in-flight deliveries before the final checkpoint. */
  readonly drainDeadlineMs: number
  /** How long an owned queue goes without confirming its range before it checks (ownershipCheckIntervalMs). */
  readonly ownershipCheckIntervalMs: number
}

/** The named limits as a QueueLimits. */
export const defaultQueueLimits: QueueLimits = {
  appendBatchSizeMax,
  appendQueueSizeMax,
  readPageSizeMax,
  checkpointAckCountMax,
  checkpointIntervalMs,
  idleUnloadMs,
  acquireRetryInitialMs,
  acquireRetryMaxMs,
  // One poller per worker slot; a thousand waiting on one partition is far beyond normal fleets.
  pollersMax: 1_000,
  // History calls are quick; five seconds covers a slow one without holding a move for long.
  drainDeadlineMs: 5_000,
  ownershipCheckIntervalMs,
}

/** A task read from the backlog and not yet handed to a poller. */
export interface BufferedTask {
  readonly taskId: number
  readonly task: Task
  /** Not dispatched before this time (retry backoff after a retryable start failure). */
  readonly eligibleAtMs: number
}

/** One priority level's backlog state. */
export interface SubqueueState {
  readonly window: AckWindow
  /**
   * Tasks read and not yet delivered are `buffer` from `bufferHead` on, sorted by task id. Taking
   * the first one only moves the head, so a page is not copied once per delivery; the entries
   * before the head are dropped at the next read or retry.
   */
  readonly buffer: ReadonlyArray<BufferedTask>
  readonly bufferHead: number
  readonly readInFlight: boolean
  /** Rows may exist above the read level (unknown until a short read says otherwise). */
  readonly mayHaveMore: boolean
  /** An append landed while a read was in flight: the read may have missed it. */
  readonly grewDuringRead: boolean
  /** No read before this time (after a failed read). */
  readonly readRetryAtMs: number
}

/** An add waiting to be matched or appended. */
export interface PendingAdd {
  readonly requestId: string
  readonly task: Task
  /**
   * History refused this add's sync match retryably: it is appended, never matched again, so
   * its next tries come from the backlog, on the back-off curve.
   */
  readonly spoolOnly?: boolean
}

/** A poll waiting for a task. */
export interface Poller {
  readonly pollId: string
  readonly identity: string
}

/** A task handed to History for one poller, awaiting the answer. */
export interface Delivery {
  readonly poller: Poller
  /** The poll reached its deadline while History had the task: answer it, never requeue it. */
  readonly pollCancelled?: boolean
  readonly task: Task
  readonly source: { readonly kind: 'backlog'; readonly subqueue: number; readonly taskId: number } | { readonly kind: 'sync'; readonly requestId: string }
}

/** The checkpoint in flight, when the next one is due, and the acks since the last one. */
export interface CheckpointState {
  readonly writing: { readonly final: boolean } | null
  readonly dueMs: number | null
  readonly acksSince: number
}

/** When the range was last confirmed ours (acquire, a fenced write, or an ownership check), and whether a check is reading it. */
export interface OwnershipState {
  readonly confirmedMs: number
  readonly checkInFlight: boolean
}

/** Why the queue drains (a caller's reason, or `idle`), until when History may answer, and whether the final checkpoint was asked for. */
export interface DrainState {
  readonly cause: string | null
  readonly deadlineMs: number | null
  readonly finalCheckpointRequested: boolean
}

/**
 * The machine's context. At most 19 top-level fields, grouped where they change together:
 * XState's `assign` copies the context with `Object.assign`, and V8 turns a copy with more
 * into a slow dictionary object (every later read and copy is a hash lookup).
 */
export interface QueueContext {
  /** Canonical encoding of the physical queue, for ids and errors. */
  readonly queue: string
  readonly limits: QueueLimits
  /** 0 until acquired. */
  readonly rangeId: number
  readonly acquireAttempts: number
  readonly nowMs: number
  readonly lastActivityMs: number
  /** Counter behind explicit batch and delivery ids, so traces are reproducible. */
  readonly sequence: number
  readonly pendingAdds: ReadonlyArray<PendingAdd>
  readonly appending: { readonly batchId: string; readonly adds: ReadonlyArray<PendingAdd> } | null
  readonly pollers: ReadonlyArray<Poller>
  /** Deliveries with History, by delivery id (a Book: one start or answer copies a small part). */
  readonly deliveries: Book<Delivery>
  readonly subqueues: Readonly<Record<number, SubqueueState>>
  readonly savedAckLevels: Readonly<Record<number, number>>
  readonly checkpoint: CheckpointState
  /** When the range was last confirmed ours (acquire, a fenced write, or an ownership check). */
  readonly ownership: OwnershipState
  readonly drain: DrainState
  /** Due time of each armed timer, as last requested. */
  readonly timers: Readonly<Partial<Record<TimerName, number>>>
  readonly unloadReason: UnloadReason | null
}

/** Input of a new machine. */
export interface QueueInput {
  readonly queue: string
  readonly nowMs: number
  readonly limits?: Partial<QueueLimits>
}

/** A fresh context, before acquire. */
export function makeQueueContext(input: QueueInput): QueueContext {
  return {
    queue: input.queue,
    limits: { ...defaultQueueLimits, ...input.limits },
    rangeId: 0,
    acquireAttempts: 0,
    nowMs: input.nowMs,
    lastActivityMs: input.nowMs,
    sequence: 0,
    pendingAdds: [],
    appending: null,
    pollers: [],
    deliveries: emptyBook(),
    subqueues: {},
    savedAckLevels: {},
    checkpoint: { writing: null, dueMs: null, acksSince: 0 },
    ownership: { confirmedMs: input.nowMs, checkInFlight: false },
    drain: { cause: null, deadlineMs: null, finalCheckpointRequested: false },
    timers: {},
    unloadReason: null,
  }
}

/** The next explicit id for `prefix` (`append-3`, `delivery-7`) and the context that consumed it. */
export function nextId(context: QueueContext, prefix: string): [string, QueueContext] {
  const sequence = context.sequence + 1
  return [`${context.queue}#${prefix}-${sequence}`, { ...context, sequence }]
}

/** The id of the delivery numbered `sequence` (the context's next sequence when one starts). */
export function deliveryIdOf(context: QueueContext, sequence: number): string {
  return `${context.queue}#delivery-${sequence}`
}

/** In-memory ack levels per subqueue. */
export function ackLevels(context: QueueContext): Record<number, number> {
  const levels: Record<number, number> = {}
  for (const [subqueue, state] of Object.entries(context.subqueues)) levels[Number(subqueue)] = state.window.ackLevel
  return levels
}

/** What the queue reports when it unloads (its unload reason is recorded by then). */
export function progressOf(context: QueueContext): QueueProgress {
  const reason = context.unloadReason
  assert(reason !== null, `queue ${context.queue} reports progress before it unloaded`)
  const readLevels: Record<number, number> = {}
  let outstanding = 0
  for (const [subqueue, state] of Object.entries(context.subqueues)) {
    readLevels[Number(subqueue)] = state.window.readLevel
    outstanding += state.window.unhandled.length
  }
  return { reason, rangeId: context.rangeId, savedAckLevels: context.savedAckLevels, ackLevels: ackLevels(context), readLevels, outstanding }
}

/** True when the queue has had nothing to do for the idle time at `nowMs`: no waiting or in-flight work. */
export function isIdle(context: QueueContext, nowMs: number): boolean {
  return (
    nowMs - context.lastActivityMs >= context.limits.idleUnloadMs &&
    context.pollers.length === 0 &&
    context.pendingAdds.length === 0 &&
    context.appending === null &&
    context.deliveries.size === 0
  )
}

/**
 * When each pump timer should fire — one timer per purpose, at the earliest moment it matters:
 * `retry` (a read or a backed-off task becomes eligible while a poller waits), `checkpoint`,
 * `idle`, `ownership`.
 */
export function timerDueTimes(context: QueueContext): Partial<Record<TimerName, number>> {
  const desired: Partial<Record<TimerName, number>> = {}
  let retryAt = Number.POSITIVE_INFINITY
  for (const state of Object.values(context.subqueues)) {
    if (state.readRetryAtMs > context.nowMs) retryAt = Math.min(retryAt, state.readRetryAtMs)
    if (context.pollers.length === 0) continue
    for (let index = state.bufferHead; index < state.buffer.length; index++) {
      const { eligibleAtMs } = state.buffer[index] as BufferedTask
      if (eligibleAtMs > context.nowMs) retryAt = Math.min(retryAt, eligibleAtMs)
    }
  }
  if (retryAt !== Number.POSITIVE_INFINITY) desired.retry = retryAt
  if (context.checkpoint.dueMs !== null && context.checkpoint.writing === null) desired.checkpoint = context.checkpoint.dueMs
  // A queue kept busy past its idle time (a poller waiting) looks again one idle period later;
  // re-arming in the past would fire forever at the same instant.
  const idleAt = context.lastActivityMs + context.limits.idleUnloadMs
  desired.idle = idleAt > context.nowMs ? idleAt : context.nowMs + context.limits.idleUnloadMs
  if (!context.ownership.checkInFlight) desired.ownership = context.ownership.confirmedMs + context.limits.ownershipCheckIntervalMs
  return desired
}
