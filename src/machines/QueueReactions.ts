/**
 * QueueReactions — what a physical queue does with an event before anything else moves: adopt
 * the range it acquired, queue an add or a poll, settle an append, a read, a checkpoint, an
 * ownership check or History's answer. Each reaction is a pure function that takes the context
 * and the event, asks for its commands through `enqueue` and returns the context it leaves.
 *
 * The machine (PhysicalQueueMachine.ts) runs them as named actions where nothing follows, and,
 * while owned, runs an event's reactions and then the pump (QueuePump.ts) in one action that
 * assigns once: every assign copies the context and the snapshot, the largest part of a step.
 * A reaction reads the time from the event, never from the context, so it may run before the
 * pump records that time.
 */
import { assertEvent } from 'xstate'
import type { AddResult, PollResult, QueueEvent } from './PhysicalQueueProtocol.ts'
import { bufferPage, markGrown, resumeSubqueues, settledDelivery, subqueueOf, withSubqueue } from './QueueBacklog.ts'
import type { QueueContext } from './QueueContext.ts'
import { type Emit, retime } from './QueuePump.ts'

/** The command that answers an add. */
export const addReply = (requestId: string, result: AddResult) => ({ type: 'add.reply', params: { requestId, result } }) as const

/** The command that answers a poll. */
export const pollReply = (pollId: string, result: PollResult) => ({ type: 'poll.reply', params: { pollId, result } }) as const

/** A reaction: the context an event leaves, with its commands asked for through `enqueue`. */
export type Reaction = (context: QueueContext, event: QueueEvent, enqueue: Emit) => QueueContext

/** Every reaction, by the name the machine's transitions use. */
export const reactions = {
  /** Acquired: resume every known subqueue above its saved ack level (subqueue 0 always). */
  adoptRange(context, event, enqueue) {
    assertEvent(event, 'queue.acquired')
    const { rangeId, ackLevels } = event.metadata
    const timers = retime(enqueue, context, {}, ['acquire']) ?? context.timers
    return { ...context, rangeId, acquireAttempts: 0, subqueues: resumeSubqueues(ackLevels), savedAckLevels: ackLevels, ownership: { ...context.ownership, confirmedMs: event.nowMs }, timers }
  },

  /** The timer that fired is no longer armed. */
  forgetTimer(context, event) {
    assertEvent(event, 'timer.fired')
    const timers = { ...context.timers }
    delete timers[event.name]
    return { ...context, timers }
  },

  queueAdd(context, event) {
    assertEvent(event, 'task.added')
    return { ...context, pendingAdds: [...context.pendingAdds, { requestId: event.requestId, task: event.task }] }
  },

  queuePoll(context, event) {
    assertEvent(event, 'poll.arrived')
    return { ...context, pollers: [...context.pollers, { pollId: event.pollId, identity: event.identity }] }
  },

  /** An append that committed, or may have, grew its subqueues: the next read looks again. */
  markBatchGrown(context, event) {
    assertEvent(event, ['append.completed', 'append.failed'])
    const batch = context.appending
    return batch?.batchId === event.batchId ? markGrown(context, batch.adds.map((add) => add.task.priority)) : context
  },

  /** The append committed: its adds are spooled with consecutive ids, and the range is still ours. */
  spoolBatch(context, event, enqueue) {
    assertEvent(event, 'append.completed')
    const batch = context.appending
    if (batch?.batchId !== event.batchId) return context
    batch.adds.forEach((add, index) => enqueue(addReply(add.requestId, { kind: 'spooled', taskId: event.firstTaskId + index })))
    return { ...context, appending: null, ownership: { ...context.ownership, confirmedMs: event.nowMs } }
  },

  /** The append failed: its adds get the error itself (a refused append did not commit; an ambiguous error says it may have). */
  failBatch(context, event, enqueue) {
    assertEvent(event, 'append.failed')
    const batch = context.appending
    if (batch?.batchId !== event.batchId) return context
    for (const add of batch.adds) enqueue(addReply(add.requestId, { kind: 'failed', error: event.error }))
    return { ...context, appending: null }
  },

  bufferPage(context, event) {
    assertEvent(event, 'read.completed')
    return bufferPage(context, event)
  },

  /** A read failed transiently: read that subqueue again after the acquire retry delay. */
  retryReadLater(context, event) {
    assertEvent(event, 'read.failed')
    const state = subqueueOf(context, event.subqueue)
    return withSubqueue(context, event.subqueue, { ...state, readInFlight: false, readRetryAtMs: event.nowMs + context.limits.acquireRetryInitialMs })
  },

  /** A checkpoint committed: remember what is durable; the range is still ours. */
  confirmCheckpoint(context, event) {
    assertEvent(event, 'checkpoint.completed')
    return { ...context, checkpoint: { ...context.checkpoint, writing: null }, savedAckLevels: event.metadata.ackLevels, ownership: { ...context.ownership, confirmedMs: event.nowMs } }
  },

  /** A checkpoint failed transiently: try again after the checkpoint interval. */
  retryCheckpointLater(context, event) {
    return { ...context, checkpoint: { ...context.checkpoint, writing: null, dueMs: event.nowMs + context.limits.checkpointIntervalMs } }
  },

  /** Rows were moved into this queue (a retired version's backlog): look again. */
  noteBacklogGrew(context, event) {
    assertEvent(event, 'backlog.grew')
    return markGrown(context, event.subqueues)
  },

  /**
   * The ownership check ended without seeing another owner — it read our range, or could not
   * read at all — so the next check is due one interval from now.
   */
  endOwnershipCheck(context, event) {
    return { ...context, ownership: { confirmedMs: event.nowMs, checkInFlight: false } }
  },

  /**
   * Owned: History answered. A sync add History did not take goes back to the front of the
   * adds, to be appended (matching it again at once would call History in a loop); a poll that
   * got nothing waits again.
   */
  settleDelivery(context, event, enqueue) {
    assertEvent(event, 'dispatch.completed')
    const settled = settledDelivery(context, event)
    if (settled === null) return context
    const { add, pollReply: reply, poller } = settled
    let next = settled.context
    if (add?.handled === true) enqueue(addReply(add.requestId, { kind: 'matched' }))
    else if (add !== null) next = { ...next, pendingAdds: [{ requestId: add.requestId, task: add.task, spoolOnly: true }, ...next.pendingAdds] }
    if (reply !== null) enqueue(pollReply(poller.pollId, reply))
    else next = { ...next, pollers: [poller, ...next.pollers] }
    return next
  },
} satisfies Record<string, Reaction>

/** The name of a reaction. */
export type ReactionName = keyof typeof reactions
