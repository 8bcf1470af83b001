/**
 * QueueBacklog — pure operations on a loaded queue's backlog: its subqueues (one per priority),
 * their buffers of read tasks, their AckWindows, and the deliveries with History. The physical
 * queue machine's named actions call these to compute the next context; none of them asks for
 * I/O. Every function returns new values and leaves its arguments alone.
 *
 * Order kept here: a subqueue's buffer is sorted by task id; a higher priority is served first,
 * and a lower one never jumps ahead while the higher one may still have unread rows.
 */
import { makeAckWindow, markHandled, markRead } from '../domain/AckWindow.ts'
import { isExpired, type Task } from '../domain/Task.ts'
import { priorityMax } from '../kernel/Limits.ts'
import { bookGet, bookPut, bookRemove } from './Book.ts'
import type { PollResult, QueueCommand, QueueEvent } from './PhysicalQueueProtocol.ts'
import { type BufferedTask, type Delivery, deliveryIdOf, type PendingAdd, type Poller, type QueueContext, type SubqueueState } from './QueueContext.ts'

type EventOf<T extends QueueEvent['type']> = Extract<QueueEvent, { type: T }>

/** A subqueue resuming above `ackLevel`, with possibly more rows stored. */
export function makeSubqueue(ackLevel: number): SubqueueState {
  return { window: makeAckWindow(ackLevel), buffer: [], bufferHead: 0, readInFlight: false, mayHaveMore: true, grewDuringRead: false, readRetryAtMs: 0 }
}

/** The tasks a subqueue holds read and not yet delivered, in task-id order. */
export function buffered(state: SubqueueState): ReadonlyArray<BufferedTask> {
  return state.bufferHead === 0 ? state.buffer : state.buffer.slice(state.bufferHead)
}

/** True when a buffered task is eligible at `nowMs` (ready to hand to a poller); stops at the first. */
export function hasEligible(state: SubqueueState, nowMs: number): boolean {
  return firstEligible(state, nowMs) >= 0
}

// The index of the first buffered task eligible at `nowMs`, or -1.
function firstEligible(state: SubqueueState, nowMs: number): number {
  for (let index = state.bufferHead; index < state.buffer.length; index++) if ((state.buffer[index] as BufferedTask).eligibleAtMs <= nowMs) return index
  return -1
}

// The subqueue without the buffered task at `index`: moves the head when it is the first one.
function withoutBuffered(state: SubqueueState, index: number): SubqueueState {
  if (index === state.bufferHead) return { ...state, bufferHead: index + 1 }
  return { ...state, buffer: [...state.buffer.slice(state.bufferHead, index), ...state.buffer.slice(index + 1)], bufferHead: 0 }
}

/** The subqueues of a queue just acquired: each saved one above its ack level, and subqueue 0 always. */
export function resumeSubqueues(ackLevels: Readonly<Record<number, number>>): Record<number, SubqueueState> {
  const subqueues: Record<number, SubqueueState> = { 0: makeSubqueue(ackLevels[0] ?? 0) }
  for (const [subqueue, ackLevel] of Object.entries(ackLevels)) subqueues[Number(subqueue)] = makeSubqueue(ackLevel)
  return subqueues
}

/**
 * Subqueue numbers present, highest priority first. A subqueue is a task priority (0…priorityMax),
 * so walking the priorities downwards finds them in order without listing the keys.
 */
export function subqueueOrder(context: QueueContext): number[] {
  const order: number[] = []
  for (let subqueue = priorityMax; subqueue >= 0; subqueue--) if (context.subqueues[subqueue] !== undefined) order.push(subqueue)
  return order
}

/** The subqueue, created at its saved ack level if this queue has not seen it yet. */
export function subqueueOf(context: QueueContext, subqueue: number): SubqueueState {
  return context.subqueues[subqueue] ?? makeSubqueue(context.savedAckLevels[subqueue] ?? 0)
}

/** `context` with one subqueue replaced. */
export function withSubqueue(context: QueueContext, subqueue: number, state: SubqueueState): QueueContext {
  return { ...context, subqueues: { ...context.subqueues, [subqueue]: state } }
}

/** The subqueue with `entry` buffered, keeping task-id order. */
export function insertBuffered(state: SubqueueState, entry: BufferedTask): SubqueueState {
  const buffer = buffered(state)
  let at = buffer.length
  while (at > 0 && (buffer[at - 1] as BufferedTask).taskId > entry.taskId) at--
  return { ...state, buffer: [...buffer.slice(0, at), entry, ...buffer.slice(at)], bufferHead: 0 }
}

/** Marks subqueues as possibly holding unread rows (an append or relocation landed). */
export function markGrown(context: QueueContext, subqueues: ReadonlyArray<number>): QueueContext {
  let next = context
  for (const subqueue of new Set(subqueues)) {
    const state = subqueueOf(next, subqueue)
    next = withSubqueue(next, subqueue, { ...state, mayHaveMore: true, grewDuringRead: state.readInFlight })
  }
  return next
}

/**
 * The next task to hand to a poller: the lowest eligible id of the highest subqueue, unless a
 * higher subqueue may still hold unread rows (then a lower one waits for that read rather than
 * jump ahead of them).
 */
function takeEligible(context: QueueContext): { readonly subqueue: number; readonly index: number } | undefined {
  for (let subqueue = priorityMax; subqueue >= 0; subqueue--) {
    const state = context.subqueues[subqueue]
    if (state === undefined) continue
    const index = firstEligible(state, context.nowMs)
    if (index >= 0) return { subqueue, index }
    if (state.readInFlight || state.mayHaveMore) return undefined
  }
  return undefined
}

/** True when something stored could be ahead of a new add, so it may not jump the backlog. */
function backlogMayBeAhead(context: QueueContext): boolean {
  if (context.appending !== null) return true
  return Object.values(context.subqueues).some((state) => state.mayHaveMore || state.readInFlight)
}

/**
 * The first waiting poller's next delivery — an eligible backlog task, else the first pending add
 * when nothing stored could be ahead of it and History has not refused it before — with its new
 * id and the context that holds it as a delivery in flight (and the poller and the task nowhere
 * else). Undefined when nothing can go.
 */
export function startDelivery(context: QueueContext): { deliveryId: string; delivery: Delivery; context: QueueContext } | undefined {
  const poller = context.pollers[0]
  if (poller === undefined) return undefined
  const eligible = takeEligible(context)
  const add = context.pendingAdds[0]
  if (eligible === undefined && (add === undefined || add.spoolOnly === true || backlogMayBeAhead(context))) return undefined
  const sequence = context.sequence + 1
  const deliveryId = deliveryIdOf(context, sequence)
  const pollers = context.pollers.slice(1)
  if (eligible !== undefined) {
    const { subqueue, index } = eligible
    const state = context.subqueues[subqueue] as SubqueueState
    const entry = state.buffer[index] as BufferedTask
    const delivery: Delivery = { task: entry.task, source: { kind: 'backlog', subqueue, taskId: entry.taskId }, poller }
    const subqueues = { ...context.subqueues, [subqueue]: withoutBuffered(state, index) }
    return { deliveryId, delivery, context: { ...context, sequence, pollers, subqueues, deliveries: bookPut(context.deliveries, deliveryId, delivery) } }
  }
  const { requestId, task } = add as PendingAdd
  const delivery: Delivery = { task, source: { kind: 'sync', requestId }, poller }
  return { deliveryId, delivery, context: { ...context, sequence, pollers, pendingAdds: context.pendingAdds.slice(1), deliveries: bookPut(context.deliveries, deliveryId, delivery) } }
}

/** The page reads to start now — every subqueue with nothing ready, room in its buffer and maybe more rows — and the context with them in flight. */
export function startReads(context: QueueContext): [Array<Extract<QueueCommand, { type: 'store.read' }>['params']>, QueueContext] {
  const reads: Array<Extract<QueueCommand, { type: 'store.read' }>['params']> = []
  let next = context
  for (let subqueue = priorityMax; subqueue >= 0; subqueue--) {
    const state = context.subqueues[subqueue]
    if (state === undefined) continue
    const room = context.limits.readPageSizeMax - (state.buffer.length - state.bufferHead)
    const ready = firstEligible(state, context.nowMs) >= 0
    if (state.readInFlight || !state.mayHaveMore || ready || room <= 0 || state.readRetryAtMs > context.nowMs) continue
    next = withSubqueue(next, subqueue, { ...state, readInFlight: true })
    reads.push({ subqueue, afterTaskId: state.window.readLevel, limit: room })
  }
  return [reads, next]
}

/** A page arrived: live tasks join the buffer, expired ones are dropped but still advance the read level. */
export function bufferPage(context: QueueContext, event: EventOf<'read.completed'>): QueueContext {
  const state = subqueueOf(context, event.subqueue)
  let window = markRead(state.window, event.tasks.map((stored) => stored.taskId))
  const buffer = [...buffered(state)]
  let dropped = 0
  for (const stored of event.tasks) {
    if (isExpired(stored.task, event.nowMs)) {
      window = markHandled(window, stored.taskId)
      dropped++
    } else {
      buffer.push({ taskId: stored.taskId, task: stored.task, eligibleAtMs: event.nowMs })
    }
  }
  const mayHaveMore = event.tasks.length >= event.limit || state.grewDuringRead
  return withSubqueue({ ...context, checkpoint: { ...context.checkpoint, acksSince: context.checkpoint.acksSince + dropped } }, event.subqueue, {
    ...state,
    window,
    buffer,
    bufferHead: 0,
    readInFlight: false,
    mayHaveMore,
    grewDuringRead: false,
  })
}

/** What History's answer to one delivery settled, and what it left for the state to decide. */
export interface SettledDelivery {
  /** The context without the delivery; a backlog task is handled or back in its buffer (with backoff). */
  readonly context: QueueContext
  /** A sync-matched add: `handled` when History took it, else it still needs a home. */
  readonly add: { readonly requestId: string; readonly task: Task; readonly handled: boolean } | null
  /** The poll's answer, or null when nothing started and the poll still waits. */
  readonly pollReply: PollResult | null
  readonly poller: Poller
}

/**
 * History answered a delivery: started / already-started / obsolete handle its task; a
 * retryable failure keeps a backlog task pending, eligible again after the backoff. A poll whose
 * deadline passed while History had its task gets an empty answer rather than waiting again.
 * Returns null for a delivery this queue does not hold.
 */
export function settledDelivery(context: QueueContext, event: EventOf<'dispatch.completed'>): SettledDelivery | null {
  const delivery = bookGet(context.deliveries, event.deliveryId)
  if (delivery === undefined) return null
  let next: QueueContext = { ...context, deliveries: bookRemove(context.deliveries, event.deliveryId) }
  const { outcome } = event
  const handled = outcome.kind !== 'retryable'
  const { source } = delivery
  if (source.kind === 'backlog') {
    const state = subqueueOf(next, source.subqueue)
    next = handled
      ? withSubqueue({ ...next, checkpoint: { ...next.checkpoint, acksSince: next.checkpoint.acksSince + 1 } }, source.subqueue, { ...state, window: markHandled(state.window, source.taskId) })
      : withSubqueue(next, source.subqueue, insertBuffered(state, { taskId: source.taskId, task: delivery.task, eligibleAtMs: event.nowMs + outcome.retryDelayMs }))
  }
  const add = source.kind === 'sync' ? { requestId: source.requestId, task: delivery.task, handled } : null
  const taskId = source.kind === 'backlog' ? source.taskId : null
  const pollReply: PollResult | null =
    outcome.kind === 'started' ? { kind: 'task', task: delivery.task, taskId, response: outcome.response } : delivery.pollCancelled === true ? { kind: 'none' } : null
  return { context: next, add, pollReply, poller: delivery.poller }
}

/** Subqueues whose in-memory ack level is ahead of the saved one, with that level (highest priority first). */
export function unsavedAckLevels(context: QueueContext): Array<{ subqueue: number; ackLevel: number }> {
  const unsaved: Array<{ subqueue: number; ackLevel: number }> = []
  for (let subqueue = priorityMax; subqueue >= 0; subqueue--) {
    const state = context.subqueues[subqueue]
    if (state === undefined) continue
    const ackLevel = state.window.ackLevel
    if (ackLevel > (context.savedAckLevels[subqueue] ?? 0)) unsaved.push({ subqueue, ackLevel })
  }
  return unsaved
}

/** Every subqueue's in-memory ack level, for the final checkpoint (subqueue 0 at least). */
export function finalAckLevels(context: QueueContext): Array<{ subqueue: number; ackLevel: number }> {
  const levels = subqueueOrder(context).map((subqueue) => ({ subqueue, ackLevel: subqueueOf(context, subqueue).window.ackLevel }))
  return levels.length > 0 ? levels : [{ subqueue: 0, ackLevel: context.savedAckLevels[0] ?? 0 }]
}
