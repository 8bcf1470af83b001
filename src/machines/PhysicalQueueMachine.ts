/**
 * PhysicalQueueMachine — one physical queue's lifecycle, as a pure XState 5 machine (upstream
 * Matching, DESIGN.md §5). It does no I/O: store calls, History calls, replies and timers are
 * commands — named actions with no implementation (PhysicalQueueProtocol.ts), so `transition()`
 * returns them as data for a runner (actors/PhysicalQueueActor.ts) to carry out and answer with
 * events.
 *
 * States:
 * - **loading** — asks the store to acquire the queue (range +1). Adds and polls that arrive
 *   wait. A transient failure retries after 1 s, doubling to 10 s; any other failure unloads.
 * - **owned** — the queue accepts adds and polls. An add is sync-matched to a waiting poller
 *   when nothing stored could be ahead of it (no insert at all), otherwise appended in batches.
 *   The backlog is read per subqueue in id order, in pages; deliveries complete in any order;
 *   each subqueue's AckWindow advances through the handled prefix; checkpoints save it every
 *   N acks or T ms. After the idle time with nothing waiting, the queue drains itself.
 * - **draining** — refuses new adds and polls (callers retry elsewhere), lets the append and
 *   History calls in flight finish (History within the drain deadline), then writes exactly one
 *   final checkpoint.
 * - **unloaded** — final; answers whatever still waits, disarms its timers and reports its
 *   progress. `OwnershipLost` from any write comes straight here with no final write: a stale
 *   owner must not write again.
 *
 * Each transition lists what the event means in that state, by name. Where the queue stays
 * owned, that is the event's reactions (QueueReactions.ts) handed to `pump`, which runs them,
 * records the event's time and moves forward everything that can move, then assigns once (an
 * assign copies the context and the snapshot, the largest part of a step). Elsewhere the
 * actions are named one by one, `observe` (the event's time) first. The state decides what
 * runs; no action is told which state it is in.
 *
 * An event reads from its transition to the commands it asks for in this file and in
 * QueueReactions.ts; the steps of the pump are plain functions in QueuePump.ts, the arithmetic on
 * subqueues, buffers and deliveries is pure and lives in QueueBacklog.ts, the context's shape and
 * timers in QueueContext.ts.
 */
import { assertEvent, enqueueActions as enqueueActionsWith, setup, type SnapshotFrom } from 'xstate'
import { cappedExponentialMs } from '../domain/Backoff.ts'
import { type MatchboxError, OwnershipLost, Overloaded, refusal, ShuttingDown, Unavailable } from '../domain/errors.ts'
import { assert } from '../kernel/assert.ts'
import { bookEntries, bookPut } from './Book.ts'
import { isOwnershipLost, isTransient, type QueueCommand, type QueueEvent, type QueueProgress, queueCommandActions, type TimerName } from './PhysicalQueueProtocol.ts'
import { finalAckLevels, settledDelivery } from './QueueBacklog.ts'
import { isIdle, makeQueueContext, progressOf, type QueueContext, type QueueInput } from './QueueContext.ts'
import { pumpOwned, retime } from './QueuePump.ts'
import { addReply, pollReply, type ReactionName, reactions } from './QueueReactions.ts'

const withCommands = setup({
  types: { context: {} as QueueContext, events: {} as QueueEvent, input: {} as QueueInput, output: {} as QueueProgress },
  actions: queueCommandActions,
  guards: {
    isOwnershipLost: ({ event }) => 'error' in event && isOwnershipLost(event.error),
    isTransient: ({ event }) => 'error' in event && isTransient(event.error),
    isAcquireTimer: ({ event }) => event.type === 'timer.fired' && event.name === 'acquire',
    isIdleTimeout: ({ context, event }) => event.type === 'timer.fired' && event.name === 'idle' && isIdle(context, event.nowMs),
    isFinalCheckpoint: ({ context }) => context.checkpoint.writing?.final === true,
    isRangeMoved: ({ context, event }) => event.type === 'ownership.checked' && event.rangeId !== context.rangeId,
    isAppendQueueFull: ({ context }) => context.pendingAdds.length >= context.limits.appendQueueSizeMax,
    isPollersFull: ({ context }) => context.pollers.length >= context.limits.pollersMax,
  },
})
const { assign, enqueueActions } = withCommands

/** The event's time, and the time of the last event a client caused (an add, a poll, History's answer to one). */
const observed = (context: QueueContext, event: QueueEvent): { nowMs: number; lastActivityMs: number } => ({
  nowMs: event.nowMs,
  lastActivityMs: event.type === 'task.added' || event.type === 'poll.arrived' || event.type === 'dispatch.completed' ? event.nowMs : context.lastActivityMs,
})
const shuttingDown = (context: QueueContext): MatchboxError => refusal(() => new ShuttingDown({ component: `physical queue ${context.queue}` }))

/** The reactions an owned event runs before the pump, in order. */
interface PumpParams {
  readonly reactions: ReadonlyArray<ReactionName>
}

// A reaction as an action of its own, where no pump follows it.
const reacting = (name: ReactionName) =>
  enqueueActions(({ context, event, enqueue }) => {
    const next = reactions[name](context, event, enqueue)
    if (next !== context) enqueue.assign(() => next)
  })

const machineSetup = withCommands.extend({
  actions: {
    /** Records the event's time, and activity for the events a client caused. */
    observe: assign(({ context, event }) => observed(context, event)),

    // ------------------------------------------------------------ loading
    /** A transient acquire failure: try again after a doubling delay. */
    scheduleAcquireRetry: enqueueActions(({ context, enqueue }) => {
      const attempts = context.acquireAttempts + 1
      const delayMs = cappedExponentialMs(context.limits.acquireRetryInitialMs, context.limits.acquireRetryMaxMs, attempts)
      const timers = retime(enqueue, context, { acquire: context.nowMs + delayMs }, ['acquire']) ?? context.timers
      enqueue.assign(() => ({ acquireAttempts: attempts, timers }))
    }),
    forgetTimer: reacting('forgetTimer'),

    // ------------------------------------------------------------ client requests
    queueAdd: reacting('queueAdd'),
    queuePoll: reacting('queuePoll'),
    /** Too many adds or polls already wait: refuse this one now. */
    refuseOverloaded: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, ['task.added', 'poll.arrived'])
      const { appendQueueSizeMax, pollersMax } = context.limits
      if (event.type === 'task.added') enqueue(addReply(event.requestId, { kind: 'failed', error: new Overloaded({ limit: 'appendQueueSizeMax', size: appendQueueSizeMax }) }))
      else enqueue(pollReply(event.pollId, { kind: 'failed', error: new Overloaded({ limit: 'pollersMax', size: pollersMax }) }))
    }),
    /** Draining: callers retry elsewhere. */
    refuseShuttingDown: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, ['task.added', 'poll.arrived'])
      const failed = { kind: 'failed', error: shuttingDown(context) } as const
      enqueue(event.type === 'task.added' ? addReply(event.requestId, failed) : pollReply(event.pollId, failed))
    }),
    /** A poll reached its deadline. If its task is already with History, the answer still goes to it. */
    cancelPoll: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'poll.cancelled')
      if (context.pollers.some((poller) => poller.pollId === event.pollId)) {
        enqueue.assign(() => ({ pollers: context.pollers.filter((poller) => poller.pollId !== event.pollId) }))
        enqueue(pollReply(event.pollId, { kind: 'none' }))
        return
      }
      // With History now: remember, so a non-start answer ends the poll instead of re-queuing it.
      const entry = bookEntries(context.deliveries).find(([, delivery]) => delivery.poller.pollId === event.pollId)
      if (entry === undefined) return
      const [deliveryId, delivery] = entry
      enqueue.assign(() => ({ deliveries: bookPut(context.deliveries, deliveryId, { ...delivery, pollCancelled: true }) }))
    }),

    // ------------------------------------------------------------ store outcomes
    markBatchGrown: reacting('markBatchGrown'),
    spoolBatch: reacting('spoolBatch'),
    failBatch: reacting('failBatch'),
    confirmCheckpoint: reacting('confirmCheckpoint'),
    /** A routine checkpoint failed while draining: the final one will save the ack levels. */
    dropCheckpoint: assign(({ context }) => ({ checkpoint: { ...context.checkpoint, writing: null } })),

    // ------------------------------------------------------------ History's answers
    /** Draining: History answered; what it did not start is refused, so callers go elsewhere. */
    settleDeliveryWhileDraining: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'dispatch.completed')
      const settled = settledDelivery(context, event)
      if (settled === null) return
      const refused = { kind: 'failed', error: shuttingDown(context) } as const
      if (settled.add !== null) enqueue(addReply(settled.add.requestId, settled.add.handled ? { kind: 'matched' } : refused))
      enqueue(pollReply(settled.poller.pollId, settled.pollReply ?? refused))
      enqueue.assign(() => settled.context)
    }),

    // ------------------------------------------------------------ pump (owned only)
    /**
     * The event's reactions (QueueReactions.ts), then the event's time (as `observe` records it),
     * then everything that can move (QueuePump.ts); the context is saved once. Built with the
     * standalone `enqueueActions`, which types params (the one `setup` gives types none).
     */
    pump: enqueueActionsWith<QueueContext, QueueEvent, PumpParams, QueueEvent, never, QueueCommand, never>(({ context, event, enqueue }, params) => {
      let next = context
      for (const name of params.reactions) next = reactions[name](next, event, enqueue)
      const time = observed(next, event)
      if (time.nowMs !== next.nowMs || time.lastActivityMs !== next.lastActivityMs) next = { ...next, ...time }
      next = pumpOwned(next, enqueue)
      if (next !== context) enqueue.assign(() => next)
    }),

    // ------------------------------------------------------------ draining and unloading
    noteIdle: assign(({ context }) => ({ drain: { ...context.drain, cause: 'idle' } })),
    noteDrainCause: assign(({ context, event }) => {
      assertEvent(event, 'drain.requested')
      return { drain: { ...context.drain, cause: event.reason } }
    }),
    /** Entering draining: every add and poll still waiting is refused. */
    refuseWaiting: enqueueActions(({ context, enqueue }) => {
      const failed = { kind: 'failed', error: shuttingDown(context) } as const
      for (const add of context.pendingAdds) enqueue(addReply(add.requestId, failed))
      for (const poller of context.pollers) enqueue(pollReply(poller.pollId, failed))
      enqueue.assign(() => ({ pendingAdds: [], pollers: [] }))
    }),
    /** Entering draining: only the drain deadline stays armed. */
    armDrainDeadline: enqueueActions(({ context, enqueue }) => {
      const deadline = context.nowMs + context.limits.drainDeadlineMs
      const timers = retime(enqueue, context, { drain: deadline }, ['retry', 'checkpoint', 'idle', 'ownership', 'drain']) ?? context.timers
      enqueue.assign(() => ({ drain: { ...context.drain, deadlineMs: deadline }, timers }))
    }),
    /**
     * Writes the one final checkpoint once no append or checkpoint is in flight and either every
     * delivery was answered or the drain deadline passed (unanswered deliveries stay stored above
     * the ack level and are delivered again by the next owner).
     */
    writeFinalCheckpointWhenReady: enqueueActions(({ context, enqueue }) => {
      if (context.drain.finalCheckpointRequested || context.appending !== null || context.checkpoint.writing !== null) return
      const deadlinePassed = context.drain.deadlineMs !== null && context.nowMs >= context.drain.deadlineMs
      if (context.deliveries.size > 0 && !deadlinePassed) return
      enqueue.assign(() => ({ drain: { ...context.drain, finalCheckpointRequested: true }, checkpoint: { ...context.checkpoint, writing: { final: true } } }))
      enqueue({ type: 'store.checkpoint', params: { ackLevels: finalAckLevels(context), final: true } })
    }),
    noteDrained: assign(({ context }) => ({ unloadReason: { kind: 'drained', cause: context.drain.cause ?? 'drain' } as const })),
    noteAcquireFailed: assign(({ event }) => {
      assertEvent(event, 'queue.acquire.failed')
      return { unloadReason: { kind: 'acquire-failed', error: event.error } as const }
    }),
    /** A fenced write was refused: another owner holds a higher range. */
    noteOwnershipLost: assign(({ event }) => {
      assertEvent(event, ['append.failed', 'checkpoint.failed'])
      assert(isOwnershipLost(event.error), `${event.type} unloads for ${event.error._tag}, not OwnershipLost`)
      return { unloadReason: { kind: 'ownership-lost', error: event.error } as const }
    }),
    /** The ownership check read a range other than ours. */
    noteRangeMoved: assign(({ context, event }) => {
      assertEvent(event, 'ownership.checked')
      const error = new OwnershipLost({ queue: context.queue, rangeId: context.rangeId, currentRangeId: event.rangeId })
      return { unloadReason: { kind: 'ownership-lost', error } as const }
    }),
    noteFinalCheckpointFailed: assign(({ event }) => {
      assertEvent(event, 'checkpoint.failed')
      return { unloadReason: { kind: 'final-checkpoint-failed', error: event.error } as const }
    }),
    /** Leaves service: answers everything still waiting with the unload's error, and disarms every timer. */
    leave: enqueueActions(({ context, enqueue }) => {
      const reason = context.unloadReason
      assert(reason !== null, `queue ${context.queue} unloads without a reason`)
      const error = 'error' in reason ? reason.error : shuttingDown(context)
      for (const add of context.pendingAdds) enqueue(addReply(add.requestId, { kind: 'failed', error }))
      if (context.appending !== null) {
        // An append in flight may still have committed before the takeover: its outcome is unknown.
        const unknown = new Unavailable({ operation: 'append', detail: `queue ${context.queue} unloaded with the append in flight`, maybeCommitted: true })
        for (const add of context.appending.adds) enqueue(addReply(add.requestId, { kind: 'failed', error: unknown }))
      }
      for (const poller of context.pollers) enqueue(pollReply(poller.pollId, { kind: 'failed', error }))
      for (const name of Object.keys(context.timers) as TimerName[]) enqueue({ type: 'timer.set', params: { name, atMs: null } })
      enqueue.assign(() => ({ pendingAdds: [], pollers: [], appending: null, timers: {} }))
    }),
  },
})

// After every owned event: its reactions, then everything that can move, in one action.
const pumpAfter = (...names: ReactionName[]) => ({ type: 'pump', params: { reactions: names } }) as const

// `transition()` builds a throwaway actor, without input, around every step; a placeholder input
// gives it a context cheaply instead of a thrown error (a stack trace per step).
const placeholderInput: QueueInput = { queue: '', nowMs: 0 }

/** The physical queue machine. Input: `{ queue, nowMs, limits? }`; output: its progress at unload. */
export const physicalQueueMachine = machineSetup.createMachine({
  id: 'physicalQueue',
  context: ({ input }) => makeQueueContext((input as QueueInput | undefined) ?? placeholderInput),
  initial: 'loading',
  states: {
    loading: {
      entry: { type: 'store.acquire', params: {} },
      on: {
        'queue.acquired': { target: 'owned', actions: pumpAfter('adoptRange') },
        'queue.acquire.failed': [
          { guard: 'isTransient', actions: ['observe', 'scheduleAcquireRetry'] },
          { target: 'unloaded', actions: ['observe', 'noteAcquireFailed'] },
        ],
        'timer.fired': { guard: 'isAcquireTimer', actions: ['observe', 'forgetTimer', { type: 'store.acquire', params: {} }] },
        'task.added': [{ guard: 'isAppendQueueFull', actions: ['observe', 'refuseOverloaded'] }, { actions: ['observe', 'queueAdd'] }],
        'poll.arrived': [{ guard: 'isPollersFull', actions: ['observe', 'refuseOverloaded'] }, { actions: ['observe', 'queuePoll'] }],
        'poll.cancelled': { actions: ['observe', 'cancelPoll'] },
        'drain.requested': { target: 'unloaded', actions: ['observe', 'noteDrainCause', 'noteDrained'] },
      },
    },
    owned: {
      on: {
        'task.added': [{ guard: 'isAppendQueueFull', actions: ['observe', 'refuseOverloaded'] }, { actions: pumpAfter('queueAdd') }],
        'poll.arrived': [{ guard: 'isPollersFull', actions: ['observe', 'refuseOverloaded'] }, { actions: pumpAfter('queuePoll') }],
        'poll.cancelled': { actions: ['observe', 'cancelPoll'] },
        'append.completed': { actions: pumpAfter('markBatchGrown', 'spoolBatch') },
        'append.failed': [
          { guard: 'isOwnershipLost', target: 'unloaded', actions: ['observe', 'failBatch', 'noteOwnershipLost'] },
          { actions: pumpAfter('markBatchGrown', 'failBatch') },
        ],
        'read.completed': { actions: pumpAfter('bufferPage') },
        'read.failed': { actions: pumpAfter('retryReadLater') },
        'dispatch.completed': { actions: pumpAfter('settleDelivery') },
        'checkpoint.completed': { actions: pumpAfter('confirmCheckpoint') },
        'checkpoint.failed': [
          { guard: 'isOwnershipLost', target: 'unloaded', actions: ['observe', 'noteOwnershipLost'] },
          { actions: pumpAfter('retryCheckpointLater') },
        ],
        'backlog.grew': { actions: pumpAfter('noteBacklogGrew') },
        'ownership.checked': [
          { guard: 'isRangeMoved', target: 'unloaded', actions: ['observe', 'noteRangeMoved'] },
          { actions: pumpAfter('endOwnershipCheck') },
        ],
        'ownership.check.failed': { actions: pumpAfter('endOwnershipCheck') },
        'timer.fired': [
          { guard: 'isIdleTimeout', target: 'draining', actions: ['observe', 'noteIdle'] },
          { actions: pumpAfter('forgetTimer') },
        ],
        'drain.requested': { target: 'draining', actions: ['observe', 'noteDrainCause'] },
      },
    },
    draining: {
      entry: ['refuseWaiting', 'armDrainDeadline', 'writeFinalCheckpointWhenReady'],
      on: {
        'task.added': { actions: ['observe', 'refuseShuttingDown'] },
        'poll.arrived': { actions: ['observe', 'refuseShuttingDown'] },
        'append.completed': { actions: ['observe', 'markBatchGrown', 'spoolBatch', 'writeFinalCheckpointWhenReady'] },
        'append.failed': [
          { guard: 'isOwnershipLost', target: 'unloaded', actions: ['observe', 'failBatch', 'noteOwnershipLost'] },
          { actions: ['observe', 'markBatchGrown', 'failBatch', 'writeFinalCheckpointWhenReady'] },
        ],
        'dispatch.completed': { actions: ['observe', 'settleDeliveryWhileDraining', 'writeFinalCheckpointWhenReady'] },
        'checkpoint.completed': [
          { guard: 'isFinalCheckpoint', target: 'unloaded', actions: ['observe', 'confirmCheckpoint', 'noteDrained'] },
          { actions: ['observe', 'confirmCheckpoint', 'writeFinalCheckpointWhenReady'] },
        ],
        'checkpoint.failed': [
          { guard: 'isOwnershipLost', target: 'unloaded', actions: ['observe', 'noteOwnershipLost'] },
          { guard: 'isFinalCheckpoint', target: 'unloaded', actions: ['observe', 'noteFinalCheckpointFailed'] },
          { actions: ['observe', 'dropCheckpoint', 'writeFinalCheckpointWhenReady'] },
        ],
        'timer.fired': { actions: ['observe', 'writeFinalCheckpointWhenReady'] },
      },
    },
    unloaded: {
      type: 'final',
      entry: ['leave', { type: 'queue.unloaded', params: ({ context }) => progressOf(context) }],
    },
  },
  output: ({ context }) => progressOf(context),
})

/** A snapshot of the machine, as `initialTransition` / `transition` return it. */
export type QueueSnapshot = SnapshotFrom<typeof physicalQueueMachine>
