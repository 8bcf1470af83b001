/**
 * PhysicalQueueLogic — the physical queue machine's handlers: pure functions from a context and
 * an event to a new context and the commands to run. The machine (PhysicalQueueMachine.ts)
 * decides which handler runs in which state; this file decides what each one does. Most
 * handlers end by calling `pump` (QueuePump.ts), which moves everything forward that can move.
 */
import { markHandled, markRead } from '../domain/AckWindow.ts'
import { Overloaded, ShuttingDown, Unavailable } from '../domain/errors.ts'
import type { MatchboxError } from '../domain/errors.ts'
import { cappedExponentialMs } from '../domain/Backoff.ts'
import { isExpired } from '../domain/Task.ts'
import type { QueueMetadata } from '../persistence/queues/Store.ts'
import type { AddResult, PollResult, QueueCommand, QueueEvent, StartOutcome, TimerName } from './PhysicalQueueProtocol.ts'
import { insertBuffered, makeSubqueue, type QueueContext, type SubqueueState, subqueueOf, subqueueOrder, syncTimers, withSubqueue } from './QueueContext.ts'
import { markGrown, pump, type Step } from './QueuePump.ts'

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
