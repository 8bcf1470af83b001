/**
 * QueuePump — what an owned physical queue does after every event: hand tasks to waiting
 * pollers, spool what could not be matched, read the next pages, checkpoint when due, check
 * ownership when it has gone unconfirmed for long, and re-arm its timers. Each step is a pure
 * function that takes the context, asks for its commands through `enqueue` and returns the
 * context it leaves (the same object when it changed nothing); the machine's `pump` action runs
 * them in order and assigns once (PhysicalQueueMachine.ts).
 */
import type { QueueCommand, TimerName } from './PhysicalQueueProtocol.ts'
import { startDelivery, startReads, unsavedAckLevels } from './QueueBacklog.ts'
import { nextId, type QueueContext, timerDueTimes } from './QueueContext.ts'

/** Asks for a command (a step's `enqueue`, seen as a sink for commands). */
export type Emit = (command: QueueCommand) => void

/** Asks for the timer changes that bring `managed` in line with `desired`; the new timer map, or null if none changed. */
export function retime(enqueue: Emit, context: QueueContext, desired: Partial<Record<TimerName, number>>, managed: ReadonlyArray<TimerName>): QueueContext['timers'] | null {
  let timers: Partial<Record<TimerName, number>> | null = null
  for (const name of managed) {
    const want = desired[name]
    if (want === context.timers[name]) continue
    enqueue({ type: 'timer.set', params: { name, atMs: want ?? null } })
    timers ??= { ...context.timers }
    if (want === undefined) delete timers[name]
    else timers[name] = want
  }
  return timers
}

/** Hands tasks to waiting pollers, each as a delivery that History is asked to start. */
function matchPollers(context: QueueContext, enqueue: Emit): QueueContext {
  let next = context
  for (let started = startDelivery(next); started !== undefined; started = startDelivery(next)) {
    const { deliveryId, delivery } = started
    next = started.context
    const { task, source, poller } = delivery
    enqueue({ type: 'history.recordStart', params: { deliveryId, task, taskId: source.kind === 'backlog' ? source.taskId : null, pollId: poller.pollId, identity: poller.identity } })
  }
  return next
}

/**
 * Spools what could not be matched, one batch at a time. Reads cannot pass an append whose
 * outcome is unknown: the store serialises this owner's appends on the queue's row, and an
 * ambiguous append marks its subqueues grown, so the next read looks again.
 */
function appendNextBatch(context: QueueContext, enqueue: Emit): QueueContext {
  if (context.appending !== null || context.pendingAdds.length === 0) return context
  const adds = context.pendingAdds.slice(0, context.limits.appendBatchSizeMax)
  const [batchId, next] = nextId(context, 'append')
  enqueue({ type: 'store.append', params: { batchId, tasks: adds.map((add) => add.task) } })
  return { ...next, pendingAdds: context.pendingAdds.slice(adds.length), appending: { batchId, adds } }
}

/** Reads the next page of every subqueue that has nothing ready and may hold more rows. */
function readNextPages(context: QueueContext, enqueue: Emit): QueueContext {
  const [reads, next] = startReads(context)
  for (const read of reads) enqueue({ type: 'store.read', params: read })
  return reads.length > 0 ? next : context
}

/** Saves the ack levels that moved, after enough acks or enough time. */
function checkpointIfDue(context: QueueContext, enqueue: Emit): QueueContext {
  const { checkpoint } = context
  if (checkpoint.writing !== null) return context
  const ackLevels = unsavedAckLevels(context)
  if (ackLevels.length === 0) return context
  const due = checkpoint.dueMs !== null && context.nowMs >= checkpoint.dueMs
  if (due || checkpoint.acksSince >= context.limits.checkpointAckCountMax) {
    enqueue({ type: 'store.checkpoint', params: { ackLevels, final: false } })
    return { ...context, checkpoint: { writing: { final: false }, dueMs: null, acksSince: 0 } }
  }
  return checkpoint.dueMs === null ? { ...context, checkpoint: { ...checkpoint, dueMs: context.nowMs + context.limits.checkpointIntervalMs } } : context
}

/** A queue that has not confirmed its range for a while reads it (see ownershipCheckIntervalMs). */
function checkOwnershipIfDue(context: QueueContext, enqueue: Emit): QueueContext {
  if (context.ownership.checkInFlight || context.nowMs - context.ownership.confirmedMs < context.limits.ownershipCheckIntervalMs) return context
  enqueue({ type: 'store.checkOwnership', params: {} })
  return { ...context, ownership: { ...context.ownership, checkInFlight: true } }
}

const pumpTimers: ReadonlyArray<TimerName> = ['retry', 'checkpoint', 'idle', 'ownership']

/** Brings the pump's timers in line with what is due. */
function armTimers(context: QueueContext, enqueue: Emit): QueueContext {
  const timers = retime(enqueue, context, timerDueTimes(context), pumpTimers)
  return timers === null ? context : { ...context, timers }
}

const pumpSteps: ReadonlyArray<(context: QueueContext, enqueue: Emit) => QueueContext> = [matchPollers, appendNextBatch, readNextPages, checkpointIfDue, checkOwnershipIfDue, armTimers]

/** Runs every pump step in order; the context they leave (the same object when nothing moved). */
export function pumpOwned(context: QueueContext, enqueue: Emit): QueueContext {
  let next = context
  for (const pumpStep of pumpSteps) next = pumpStep(next, enqueue)
  return next
}
