/**
 * PhysicalQueueLogic — the physical queue machine's handlers: pure functions from a context and
 * an event to a new context and the commands to run. The machine (PhysicalQueueMachine.ts)
 * decides which handler runs in which state; this file decides what each one does.
 *
 * `pump` is the heart: after every event in `owned` it hands eligible backlog tasks to waiting
 * pollers (highest subqueue first, lowest id first), sync-matches new adds when nothing is
 * queued ahead of them, starts the next append batch, reads the next page of any subqueue
 * that ran dry, requests a checkpoint when enough acks or time accumulated, and re-arms the
 * timers it needs — one timer per purpose, never one per task.
 *
 * Why reads cannot pass an append whose outcome is unknown: every append of this owner goes
 * through the store's row lock on the queue, so a later committed id implies every earlier
 * append finished; and an ambiguous append marks every subqueue as possibly grown, so the next
 * read looks again.
 */
import { markHandled, markRead } from '../domain/AckWindow.ts'
import { Overloaded, ShuttingDown, Unavailable } from '../domain/errors.ts'
import type { MatchboxError } from '../domain/errors.ts'
import { cappedExponentialMs } from '../domain/Backoff.ts'
import { isExpired } from '../domain/Task.ts'
import type { QueueMetadata } from '../persistence/Store.ts'
import type { AddResult, PollResult, QueueCommand, QueueEvent, StartOutcome, TimerName } from './PhysicalQueueProtocol.ts'
import {
  type BufferedTask,
  type Delivery,
  insertBuffered,
  makeSubqueue,
  nextId,
  type Poller,
  type QueueContext,
  type SubqueueState,
  subqueueOf,
  subqueueOrder,
  syncTimers,
  withSubqueue,
} from './QueueContext.ts'

/** A handler's result: the next context and the commands to run, in order. */
export type Step = readonly [QueueContext, ReadonlyArray<QueueCommand>]

type EventOf<T extends QueueEvent['type']> = Extract<QueueEvent, { type: T }>

const addReply = (requestId: string, result: AddResult): QueueCommand => ({ type: 'add.reply', params: { requestId, result } })
const pollReply = (pollId: string, result: PollResult): QueueCommand => ({ type: 'poll.reply', params: { pollId, result } })
const shuttingDown = (context: QueueContext) => new ShuttingDown({ component: `physical queue ${context.queue}` })

/** Records the event's time (and activity, for events a client caused). */
export function observe(context: QueueContext, event: QueueEvent): QueueContext {
  const active = event.type === 'task.added' || event.type === 'poll.arrived' || event.type === 'dispatch.completed'
  return { ...context, nowMs: event.nowMs, lastActivityMs: active ? event.nowMs : context.lastActivityMs }
}

// ---------------------------------------------------------------- loading

/** Acquire succeeded: resume every known subqueue above its saved ack level (subqueue 0 always). */
export function onAcquired(context: QueueContext, event: EventOf<'queue.acquired'>): Step {
  const metadata: QueueMetadata = event.metadata
  const subqueues: Record<number, SubqueueState> = { 0: makeSubqueue(metadata.ackLevels[0] ?? 0) }
  for (const [subqueue, ackLevel] of Object.entries(metadata.ackLevels)) subqueues[Number(subqueue)] = makeSubqueue(ackLevel)
  const owned: QueueContext = { ...context, rangeId: metadata.rangeId, acquireAttempts: 0, subqueues, savedAckLevels: metadata.ackLevels, ownershipConfirmedMs: event.nowMs }
  const [cleared, timerCommands] = syncTimers(owned, {}, ['acquire'])
  const [next, commands] = pump(cleared)
  return [next, [...timerCommands, ...commands]]
}

/** A transient acquire failure: try again after a doubling delay. */
export function onAcquireRetry(context: QueueContext): Step {
  const attempts = context.acquireAttempts + 1
  const delay = cappedExponentialMs(context.limits.acquireRetryInitialMs, context.limits.acquireRetryMaxMs, attempts)
  const [next, commands] = syncTimers({ ...context, acquireAttempts: attempts }, { acquire: context.nowMs + delay }, ['acquire'])
  return [next, commands]
}

/** The acquire retry timer fired. */
export function onAcquireTimer(context: QueueContext): Step {
  const timers = { ...context.timers }
  delete timers.acquire
  return [{ ...context, timers }, [{ type: 'store.acquire', params: {} }]]
}

// ---------------------------------------------------------------- client requests

/** An add arrived: queue it for a sync match or the next append, unless the queue is full. */
export function onTaskAdded(context: QueueContext, event: EventOf<'task.added'>, owned: boolean): Step {
  if (context.pendingAdds.length >= context.limits.appendQueueSizeMax) {
    const error = new Overloaded({ limit: 'appendQueueSizeMax', size: context.limits.appendQueueSizeMax })
    return [context, [addReply(event.requestId, { kind: 'failed', error })]]
  }
  const queued = { ...context, pendingAdds: [...context.pendingAdds, { requestId: event.requestId, task: event.task }] }
  return owned ? pump(queued) : [queued, []]
}

/** A poll arrived: wait for a task, unless too many already wait. */
export function onPollArrived(context: QueueContext, event: EventOf<'poll.arrived'>, owned: boolean): Step {
  if (context.pollers.length >= context.limits.pollersMax) {
    const error = new Overloaded({ limit: 'pollersMax', size: context.limits.pollersMax })
    return [context, [pollReply(event.pollId, { kind: 'failed', error })]]
  }
  const waiting = { ...context, pollers: [...context.pollers, { pollId: event.pollId, identity: event.identity }] }
  return owned ? pump(waiting) : [waiting, []]
}

/** A poll reached its deadline. If its task is already with History, the answer still goes to it. */
export function onPollCancelled(context: QueueContext, event: EventOf<'poll.cancelled'>): Step {
  if (!context.pollers.some((poller) => poller.pollId === event.pollId)) {
    // With History now: remember, so a non-start answer ends the poll instead of re-queuing it.
    const entry = Object.entries(context.deliveries).find(([, delivery]) => delivery.poller.pollId === event.pollId)
    if (entry === undefined) return [context, []]
    const [deliveryId, delivery] = entry
    return [{ ...context, deliveries: { ...context.deliveries, [deliveryId]: { ...delivery, pollCancelled: true } } }, []]
  }
  const pollers = context.pollers.filter((poller) => poller.pollId !== event.pollId)
  return [{ ...context, pollers }, [pollReply(event.pollId, { kind: 'none' })]]
}

/** Refuses an add or a poll that arrived while draining. */
export function onRefused(context: QueueContext, event: EventOf<'task.added'> | EventOf<'poll.arrived'>): Step {
  const failed = { kind: 'failed', error: shuttingDown(context) } as const
  return [context, [event.type === 'task.added' ? addReply(event.requestId, failed) : pollReply(event.pollId, failed)]]
}

// ---------------------------------------------------------------- store outcomes

/** An append committed: the adds are spooled with consecutive ids; the backlog grew. */
export function onAppendCompleted(context: QueueContext, event: EventOf<'append.completed'>, owned: boolean): Step {
  const batch = context.appending
  if (batch === null || batch.batchId !== event.batchId) return [context, []]
  const commands = batch.adds.map((add, index) => addReply(add.requestId, { kind: 'spooled', taskId: event.firstTaskId + index }))
  const grown = markGrown({ ...context, appending: null, ownershipConfirmedMs: event.nowMs }, batch.adds.map((add) => add.task.priority))
  const [next, more] = owned ? pump(grown) : [grown, []]
  return [next, [...commands, ...more]]
}

/** An append failed without losing ownership: its adds fail; if it may have committed, the backlog may have grown. */
export function onAppendFailed(context: QueueContext, event: EventOf<'append.failed'>, owned: boolean): Step {
  const batch = context.appending
  if (batch === null || batch.batchId !== event.batchId) return [context, []]
  const commands = batch.adds.map((add) => addReply(add.requestId, { kind: 'failed', error: event.error }))
  const grown = markGrown({ ...context, appending: null }, batch.adds.map((add) => add.task.priority))
  const [next, more] = owned ? pump(grown) : [grown, []]
  return [next, [...commands, ...more]]
}

/** A page arrived: live tasks join the buffer, expired ones are dropped but still advance the read level. */
export function onReadCompleted(context: QueueContext, event: EventOf<'read.completed'>): Step {
  const state = subqueueOf(context, event.subqueue)
  let window = markRead(state.window, event.tasks.map((stored) => stored.taskId))
  let buffer = state.buffer
  let dropped = 0
  for (const stored of event.tasks) {
    if (isExpired(stored.task, event.nowMs)) {
      window = markHandled(window, stored.taskId)
      dropped++
    } else {
      buffer = [...buffer, { taskId: stored.taskId, task: stored.task, eligibleAtMs: event.nowMs }]
    }
  }
  const mayHaveMore = event.tasks.length >= event.limit || state.grewDuringRead
  const next = withSubqueue(
    { ...context, acksSinceCheckpoint: context.acksSinceCheckpoint + dropped },
    event.subqueue,
    { ...state, window, buffer, readInFlight: false, mayHaveMore, grewDuringRead: false },
  )
  return pump(next)
}

/** A read failed transiently: try that subqueue again after the acquire retry delay. */
export function onReadFailed(context: QueueContext, event: EventOf<'read.failed'>): Step {
  const state = subqueueOf(context, event.subqueue)
  const readRetryAtMs = event.nowMs + context.limits.acquireRetryInitialMs
  return pump(withSubqueue(context, event.subqueue, { ...state, readInFlight: false, readRetryAtMs }))
}

/** A checkpoint committed: remember what is durable. */
export function onCheckpointCompleted(context: QueueContext, event: EventOf<'checkpoint.completed'>, owned: boolean): Step {
  const next = { ...context, checkpointing: null, savedAckLevels: event.metadata.ackLevels, ownershipConfirmedMs: event.nowMs }
  return owned ? pump(next) : [next, []]
}

/** A checkpoint failed transiently: try again after the checkpoint interval. */
export function onCheckpointFailed(context: QueueContext): Step {
  const next = { ...context, checkpointing: null, checkpointDueMs: context.nowMs + context.limits.checkpointIntervalMs }
  return pump(next)
}

/** Rows were moved into this queue (a retired version's backlog): look again. */
export function onBacklogGrew(context: QueueContext, event: EventOf<'backlog.grew'>): Step {
  return pump(markGrown(context, event.subqueues))
}

/** The periodic ownership check read the queue's range and it is still ours (the machine unloads otherwise). */
export function onOwnershipConfirmed(context: QueueContext): Step {
  return pump({ ...context, ownershipCheckInFlight: false, ownershipConfirmedMs: context.nowMs })
}

/** The ownership check could not read the store: try again one interval later. */
export function onOwnershipCheckFailed(context: QueueContext): Step {
  return pump({ ...context, ownershipCheckInFlight: false, ownershipConfirmedMs: context.nowMs })
}

/** A pump timer fired (retry, checkpoint, idle re-check): forget it and pump. */
export function onTimer(context: QueueContext, name: TimerName): Step {
  const timers = { ...context.timers }
  delete timers[name]
  return pump({ ...context, timers })
}

// ---------------------------------------------------------------- dispatch outcomes

/**
 * History answered a delivery. started / already-started / obsolete handle it; a retryable
 * failure keeps it pending with backoff (a sync-matched add falls back to the append path).
 * The poller gets the task, or goes back to waiting (draining: is told to go elsewhere).
 */
export function onDispatchCompleted(context: QueueContext, event: EventOf<'dispatch.completed'>, owned: boolean): Step {
  const delivery = context.deliveries[event.deliveryId]
  if (delivery === undefined) return [context, []]
  const deliveries = { ...context.deliveries }
  delete deliveries[event.deliveryId]
  let next: QueueContext = { ...context, deliveries }
  const commands: QueueCommand[] = []
  const outcome: StartOutcome = event.outcome
  const handled = outcome.kind !== 'retryable'
  const { source } = delivery
  if (source.kind === 'backlog') {
    const state = subqueueOf(next, source.subqueue)
    next = handled
      ? withSubqueue({ ...next, acksSinceCheckpoint: next.acksSinceCheckpoint + 1 }, source.subqueue, {
          ...state,
          window: markHandled(state.window, source.taskId),
        })
      : withSubqueue(next, source.subqueue, {
          ...state,
          buffer: insertBuffered(state.buffer, { taskId: source.taskId, task: delivery.task, eligibleAtMs: event.nowMs + outcome.retryDelayMs }),
        })
  } else if (handled) {
    commands.push(addReply(source.requestId, { kind: 'matched' }))
  } else if (owned) {
    next = { ...next, pendingAdds: [{ requestId: source.requestId, task: delivery.task }, ...next.pendingAdds] }
  } else {
    commands.push(addReply(source.requestId, { kind: 'failed', error: shuttingDown(context) }))
  }
  if (outcome.kind === 'started') {
    commands.push(pollReply(delivery.poller.pollId, { kind: 'task', task: delivery.task, taskId: source.kind === 'backlog' ? source.taskId : null, response: outcome.response }))
  } else if (delivery.pollCancelled === true) {
    commands.push(pollReply(delivery.poller.pollId, { kind: 'none' }))
  } else if (owned) {
    next = { ...next, pollers: [delivery.poller, ...next.pollers] }
  } else {
    commands.push(pollReply(delivery.poller.pollId, { kind: 'failed', error: shuttingDown(context) }))
  }
  const [pumped, more] = owned ? pump(next) : [next, []]
  return [pumped, [...commands, ...more]]
}

// ---------------------------------------------------------------- draining and unloading

/** Entering draining: refuse everything waiting, then finish in-flight work within the deadline. */
export function onDrainStarted(context: QueueContext): Step {
  const error = shuttingDown(context)
  const commands: QueueCommand[] = [
    ...context.pendingAdds.map((add) => addReply(add.requestId, { kind: 'failed', error })),
    ...context.pollers.map((poller) => pollReply(poller.pollId, { kind: 'failed', error })),
  ]
  const deadline = context.nowMs + context.limits.drainDeadlineMs
  const [timed, timerCommands] = syncTimers({ ...context, pendingAdds: [], pollers: [], drainDeadlineMs: deadline }, { drain: deadline }, ['retry', 'checkpoint', 'idle', 'ownership', 'drain'])
  const [next, final] = maybeFinalCheckpoint(timed)
  return [next, [...commands, ...timerCommands, ...final]]
}

/**
 * Writes the one final checkpoint once no append or checkpoint is in flight and either every
 * delivery was answered or the drain deadline passed (unanswered deliveries stay stored above
 * the ack level and are delivered again by the next owner).
 */
export function maybeFinalCheckpoint(context: QueueContext): Step {
  if (context.finalCheckpointRequested || context.appending !== null || context.checkpointing !== null) return [context, []]
  const deadlinePassed = context.drainDeadlineMs !== null && context.nowMs >= context.drainDeadlineMs
  if (Object.keys(context.deliveries).length > 0 && !deadlinePassed) return [context, []]
  const levels = subqueueOrder(context).map((subqueue) => ({ subqueue, ackLevel: subqueueOf(context, subqueue).window.ackLevel }))
  const ackLevels = levels.length > 0 ? levels : [{ subqueue: 0, ackLevel: context.savedAckLevels[0] ?? 0 }]
  return [
    { ...context, finalCheckpointRequested: true, checkpointing: { final: true } },
    [{ type: 'store.checkpoint', params: { ackLevels, final: true } }],
  ]
}

/** Replies owed when the queue unloads without draining (ownership lost, acquire failed). */
export function abandonAll(context: QueueContext, error: MatchboxError): ReadonlyArray<QueueCommand> {
  const commands: QueueCommand[] = []
  for (const add of context.pendingAdds) commands.push(addReply(add.requestId, { kind: 'failed', error }))
  // An append in flight may still have committed before the takeover: its outcome is unknown.
  const unknown = new Unavailable({ operation: 'append', detail: `queue ${context.queue} unloaded with the append in flight`, maybeCommitted: true })
  for (const add of context.appending?.adds ?? []) commands.push(addReply(add.requestId, { kind: 'failed', error: unknown }))
  for (const poller of context.pollers) commands.push(pollReply(poller.pollId, { kind: 'failed', error }))
  return commands
}

// ---------------------------------------------------------------- pump

function markGrown(context: QueueContext, subqueues: ReadonlyArray<number>): QueueContext {
  let next = context
  for (const subqueue of new Set(subqueues)) {
    const state = subqueueOf(next, subqueue)
    next = withSubqueue(next, subqueue, { ...state, mayHaveMore: true, grewDuringRead: state.readInFlight })
  }
  return next
}

function takeEligible(context: QueueContext): [BufferedTask, number] | undefined {
  for (const subqueue of subqueueOrder(context)) {
    const state = context.subqueues[subqueue] as SubqueueState
    const found = state.buffer.find((entry) => entry.eligibleAtMs <= context.nowMs)
    if (found !== undefined) return [found, subqueue]
    // Rows of this priority may be stored but not read yet (after a load, an append, a
    // relocation): a lower priority waits for that read rather than jump ahead of them.
    if (state.readInFlight || state.mayHaveMore) return undefined
  }
  return undefined
}

// A new add may jump the backlog only when nothing stored could be ahead of it.
function backlogMayBeAhead(context: QueueContext): boolean {
  if (context.appending !== null) return true
  return Object.values(context.subqueues).some((state) => state.mayHaveMore || state.readInFlight)
}

function dispatch(context: QueueContext, poller: Poller, delivery: Omit<Delivery, 'poller'>): Step {
  const [deliveryId, next] = nextId(context, 'delivery')
  const taskId = delivery.source.kind === 'backlog' ? delivery.source.taskId : null
  return [
    { ...next, deliveries: { ...next.deliveries, [deliveryId]: { ...delivery, poller } } },
    [{ type: 'history.recordStart', params: { deliveryId, task: delivery.task, taskId, pollId: poller.pollId, identity: poller.identity } }],
  ]
}

/** Moves everything forward that can move; see the file header. */
export function pump(start: QueueContext): Step {
  let context = start
  const commands: QueueCommand[] = []
  // 1. Hand tasks to waiting pollers: backlog first, then sync matches.
  while (context.pollers.length > 0) {
    const [poller, ...rest] = context.pollers as [Poller, ...Poller[]]
    const eligible = takeEligible(context)
    let step: Step
    if (eligible !== undefined) {
      const [entry, subqueue] = eligible
      const state = context.subqueues[subqueue] as SubqueueState
      const waiting = withSubqueue({ ...context, pollers: rest }, subqueue, { ...state, buffer: state.buffer.filter((b) => b !== entry) })
      step = dispatch(waiting, poller, { task: entry.task, source: { kind: 'backlog', subqueue, taskId: entry.taskId } })
    } else if (context.pendingAdds.length > 0 && !backlogMayBeAhead(context)) {
      const [add, ...adds] = context.pendingAdds as [(typeof context.pendingAdds)[number], ...typeof context.pendingAdds]
      step = dispatch({ ...context, pollers: rest, pendingAdds: adds }, poller, { task: add.task, source: { kind: 'sync', requestId: add.requestId } })
    } else {
      break
    }
    context = step[0]
    commands.push(...step[1])
  }
  // 2. Spool what could not be matched, one batch at a time.
  if (context.appending === null && context.pendingAdds.length > 0) {
    const adds = context.pendingAdds.slice(0, context.limits.appendBatchSizeMax)
    const [batchId, next] = nextId(context, 'append')
    context = { ...next, pendingAdds: context.pendingAdds.slice(adds.length), appending: { batchId, adds } }
    commands.push({ type: 'store.append', params: { batchId, tasks: adds.map((add) => add.task) } })
  }
  // 3. Read the next page of every subqueue that has nothing ready.
  for (const subqueue of subqueueOrder(context)) {
    const state = context.subqueues[subqueue] as SubqueueState
    const room = context.limits.readPageSizeMax - state.buffer.length
    const ready = state.buffer.some((entry) => entry.eligibleAtMs <= context.nowMs)
    if (state.readInFlight || !state.mayHaveMore || ready || room <= 0 || state.readRetryAtMs > context.nowMs) continue
    context = withSubqueue(context, subqueue, { ...state, readInFlight: true })
    commands.push({ type: 'store.read', params: { subqueue, afterTaskId: state.window.readLevel, limit: room } })
  }
  // 4. Checkpoint after enough acks or enough time.
  const changed = subqueueOrder(context).filter((subqueue) => (context.subqueues[subqueue] as SubqueueState).window.ackLevel > (context.savedAckLevels[subqueue] ?? 0))
  if (context.checkpointing === null && changed.length > 0) {
    const due = context.checkpointDueMs !== null && context.nowMs >= context.checkpointDueMs
    if (due || context.acksSinceCheckpoint >= context.limits.checkpointAckCountMax) {
      const ackLevels = changed.map((subqueue) => ({ subqueue, ackLevel: (context.subqueues[subqueue] as SubqueueState).window.ackLevel }))
      context = { ...context, checkpointing: { final: false }, acksSinceCheckpoint: 0, checkpointDueMs: null }
      commands.push({ type: 'store.checkpoint', params: { ackLevels, final: false } })
    } else if (context.checkpointDueMs === null) {
      context = { ...context, checkpointDueMs: context.nowMs + context.limits.checkpointIntervalMs }
    }
  }
  // 5. A queue that has not confirmed its range for a while reads it (see ownershipCheckIntervalMs).
  if (!context.ownershipCheckInFlight && context.nowMs - context.ownershipConfirmedMs >= context.limits.ownershipCheckIntervalMs) {
    context = { ...context, ownershipCheckInFlight: true }
    commands.push({ type: 'store.checkOwnership', params: {} })
  }
  // 6. Keep one timer per purpose armed at the earliest moment it matters.
  const [timed, timerCommands] = syncTimers(context, desiredTimers(context), ['retry', 'checkpoint', 'idle', 'ownership'])
  return [timed, [...commands, ...timerCommands]]
}

function desiredTimers(context: QueueContext): Partial<Record<TimerName, number>> {
  const desired: Partial<Record<TimerName, number>> = {}
  let retryAt = Number.POSITIVE_INFINITY
  for (const state of Object.values(context.subqueues)) {
    if (state.readRetryAtMs > context.nowMs) retryAt = Math.min(retryAt, state.readRetryAtMs)
    if (context.pollers.length === 0) continue
    for (const entry of state.buffer) if (entry.eligibleAtMs > context.nowMs) retryAt = Math.min(retryAt, entry.eligibleAtMs)
  }
  if (retryAt !== Number.POSITIVE_INFINITY) desired.retry = retryAt
  if (context.checkpointDueMs !== null && context.checkpointing === null) desired.checkpoint = context.checkpointDueMs
  // A queue kept busy past its idle time (a poller waiting) looks again one idle period later;
  // re-arming in the past would fire forever at the same instant.
  const idleAt = context.lastActivityMs + context.limits.idleUnloadMs
  desired.idle = idleAt > context.nowMs ? idleAt : context.nowMs + context.limits.idleUnloadMs
  if (!context.ownershipCheckInFlight) desired.ownership = context.ownershipConfirmedMs + context.limits.ownershipCheckIntervalMs
  return desired
}

/** True when the queue has had nothing to do for the idle time: no waiting or in-flight work. */
export function isIdle(context: QueueContext): boolean {
  return (
    context.nowMs - context.lastActivityMs >= context.limits.idleUnloadMs &&
    context.pollers.length === 0 &&
    context.pendingAdds.length === 0 &&
    context.appending === null &&
    Object.keys(context.deliveries).length === 0
  )
}
