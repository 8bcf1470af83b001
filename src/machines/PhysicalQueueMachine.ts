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
 * Each transition lists its named actions: what the event means in that state, then — only
 * while owned — the `pump` steps that move forward everything that can move. The context records
 * the event's time once per step: `observe` comes first where no pump follows; the pump records
 * it itself, and the actions before it read the time from the event (an assign is a copy of the
 * context and of the snapshot, the largest part of a step). The state decides what runs; no
 * action is told which state it is in.
 *
 * An event reads from its transition to the commands it asks for in this file; the steps of the
 * pump are plain functions in QueuePump.ts, the arithmetic on subqueues, buffers and deliveries
 * is pure and lives in QueueBacklog.ts, the context's shape and timers in QueueContext.ts.
 */
import { assertEvent, setup, type SnapshotFrom } from 'xstate'
import { cappedExponentialMs } from '../domain/Backoff.ts'
import { type MatchboxError, OwnershipLost, Overloaded, refusal, ShuttingDown, Unavailable } from '../domain/errors.ts'
import { assert } from '../kernel/assert.ts'
import { bookEntries, bookPut } from './Book.ts'
import { type AddResult, isOwnershipLost, isTransient, type PollResult, type QueueEvent, type QueueProgress, queueCommandActions, type TimerName } from './PhysicalQueueProtocol.ts'
import { bufferPage, finalAckLevels, markGrown, resumeSubqueues, settledDelivery, subqueueOf, withSubqueue } from './QueueBacklog.ts'
import { isIdle, makeQueueContext, progressOf, type QueueContext, type QueueInput } from './QueueContext.ts'
import { pumpOwned, retime } from './QueuePump.ts'

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

const addReply = (requestId: string, result: AddResult) => ({ type: 'add.reply', params: { requestId, result } }) as const
const pollReply = (pollId: string, result: PollResult) => ({ type: 'poll.reply', params: { pollId, result } }) as const
/** The event's time, and the time of the last event a client caused (an add, a poll, History's answer to one). */
const observed = (context: QueueContext, event: QueueEvent): { nowMs: number; lastActivityMs: number } => ({
  nowMs: event.nowMs,
  lastActivityMs: event.type === 'task.added' || event.type === 'poll.arrived' || event.type === 'dispatch.completed' ? event.nowMs : context.lastActivityMs,
})
const shuttingDown = (context: QueueContext): MatchboxError => refusal(() => new ShuttingDown({ component: `physical queue ${context.queue}` }))

const machineSetup = withCommands.extend({
  actions: {
    /** Records the event's time, and activity for the events a client caused. */
    observe: assign(({ context, event }) => observed(context, event)),

    // ------------------------------------------------------------ loading
    /** Acquired: resume every known subqueue above its saved ack level (subqueue 0 always). */
    adoptRange: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'queue.acquired')
      const { rangeId, ackLevels } = event.metadata
      const timers = retime(enqueue, context, {}, ['acquire']) ?? context.timers
      enqueue.assign(() => ({ rangeId, acquireAttempts: 0, subqueues: resumeSubqueues(ackLevels), savedAckLevels: ackLevels, ownership: { ...context.ownership, confirmedMs: event.nowMs }, timers }))
    }),
    /** A transient acquire failure: try again after a doubling delay. */
    scheduleAcquireRetry: enqueueActions(({ context, enqueue }) => {
      const attempts = context.acquireAttempts + 1
      const delayMs = cappedExponentialMs(context.limits.acquireRetryInitialMs, context.limits.acquireRetryMaxMs, attempts)
      const timers = retime(enqueue, context, { acquire: context.nowMs + delayMs }, ['acquire']) ?? context.timers
      enqueue.assign(() => ({ acquireAttempts: attempts, timers }))
    }),
    /** The timer that fired is no longer armed. */
    forgetTimer: assign(({ context, event }) => {
      assertEvent(event, 'timer.fired')
      const timers = { ...context.timers }
      delete timers[event.name]
      return { timers }
    }),

    // ------------------------------------------------------------ client requests
    queueAdd: assign(({ context, event }) => {
      assertEvent(event, 'task.added')
      return { pendingAdds: [...context.pendingAdds, { requestId: event.requestId, task: event.task }] }
    }),
    queuePoll: assign(({ context, event }) => {
      assertEvent(event, 'poll.arrived')
      return { pollers: [...context.pollers, { pollId: event.pollId, identity: event.identity }] }
    }),
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
    /** An append that committed, or may have, grew its subqueues: the next read looks again. */
    markBatchGrown: assign(({ context, event }) => {
      assertEvent(event, ['append.completed', 'append.failed'])
      const batch = context.appending
      return batch?.batchId === event.batchId ? markGrown(context, batch.adds.map((add) => add.task.priority)) : {}
    }),
    /** The append committed: its adds are spooled with consecutive ids, and the range is still ours. */
    spoolBatch: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'append.completed')
      const batch = context.appending
      if (batch?.batchId !== event.batchId) return
      batch.adds.forEach((add, index) => enqueue(addReply(add.requestId, { kind: 'spooled', taskId: event.firstTaskId + index })))
      enqueue.assign(() => ({ appending: null, ownership: { ...context.ownership, confirmedMs: event.nowMs } }))
    }),
    /** The append failed: its adds get the error itself (a refused append did not commit; an ambiguous error says it may have). */
    failBatch: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'append.failed')
      const batch = context.appending
      if (batch?.batchId !== event.batchId) return
      for (const add of batch.adds) enqueue(addReply(add.requestId, { kind: 'failed', error: event.error }))
      enqueue.assign(() => ({ appending: null }))
    }),
    bufferPage: assign(({ context, event }) => {
      assertEvent(event, 'read.completed')
      return bufferPage(context, event)
    }),
    /** A read failed transiently: read that subqueue again after the acquire retry delay. */
    retryReadLater: assign(({ context, event }) => {
      assertEvent(event, 'read.failed')
      const state = subqueueOf(context, event.subqueue)
      return withSubqueue(context, event.subqueue, { ...state, readInFlight: false, readRetryAtMs: event.nowMs + context.limits.acquireRetryInitialMs })
    }),
    /** A checkpoint committed: remember what is durable; the range is still ours. */
    confirmCheckpoint: assign(({ context, event }) => {
      assertEvent(event, 'checkpoint.completed')
      return { checkpoint: { ...context.checkpoint, writing: null }, savedAckLevels: event.metadata.ackLevels, ownership: { ...context.ownership, confirmedMs: event.nowMs } }
    }),
    /** A checkpoint failed transiently: try again after the checkpoint interval. */
    retryCheckpointLater: assign(({ context, event }) => ({ checkpoint: { ...context.checkpoint, writing: null, dueMs: event.nowMs + context.limits.checkpointIntervalMs } })),
    /** A routine checkpoint failed while draining: the final one will save the ack levels. */
    dropCheckpoint: assign(({ context }) => ({ checkpoint: { ...context.checkpoint, writing: null } })),
    /** Rows were moved into this queue (a retired version's backlog): look again. */
    noteBacklogGrew: assign(({ context, event }) => {
      assertEvent(event, 'backlog.grew')
      return markGrown(context, event.subqueues)
    }),
    /**
     * The ownership check ended without seeing another owner — it read our range, or could not
     * read at all — so the next check is due one interval from now.
     */
    endOwnershipCheck: assign(({ event }) => ({ ownership: { confirmedMs: event.nowMs, checkInFlight: false } })),

    // ------------------------------------------------------------ History's answers
    /**
     * Owned: History answered. A sync add History did not take goes back to the front of the
     * adds, to be appended (matching it again at once would call History in a loop); a poll that
     * got nothing waits again.
     */
    settleDelivery: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'dispatch.completed')
      const settled = settledDelivery(context, event)
      if (settled === null) return
      const { add, pollReply: reply, poller } = settled
      let next = settled.context
      if (add?.handled === true) enqueue(addReply(add.requestId, { kind: 'matched' }))
      else if (add !== null) next = { ...next, pendingAdds: [{ requestId: add.requestId, task: add.task, spoolOnly: true }, ...next.pendingAdds] }
      if (reply !== null) enqueue(pollReply(poller.pollId, reply))
      else next = { ...next, pollers: [poller, ...next.pollers] }
      enqueue.assign(() => next)
    }),
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
     * Records the event's time (as `observe` does), moves forward everything that can move
     * (QueuePump.ts), then saves the context once.
     */
    pump: enqueueActions(({ context, event, enqueue }) => {
      const time = observed(context, event)
      const now = time.nowMs === context.nowMs && time.lastActivityMs === context.lastActivityMs ? context : { ...context, ...time }
      const next = pumpOwned(now, enqueue)
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

// After every owned event: move forward everything that can move, then re-arm the timers.
const pump = ['pump'] as const

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
        'queue.acquired': { target: 'owned', actions: ['adoptRange', ...pump] },
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
        'task.added': [{ guard: 'isAppendQueueFull', actions: ['observe', 'refuseOverloaded'] }, { actions: ['queueAdd', ...pump] }],
        'poll.arrived': [{ guard: 'isPollersFull', actions: ['observe', 'refuseOverloaded'] }, { actions: ['queuePoll', ...pump] }],
        'poll.cancelled': { actions: ['observe', 'cancelPoll'] },
        'append.completed': { actions: ['markBatchGrown', 'spoolBatch', ...pump] },
        'append.failed': [
          { guard: 'isOwnershipLost', target: 'unloaded', actions: ['observe', 'failBatch', 'noteOwnershipLost'] },
          { actions: ['markBatchGrown', 'failBatch', ...pump] },
        ],
        'read.completed': { actions: ['bufferPage', ...pump] },
        'read.failed': { actions: ['retryReadLater', ...pump] },
        'dispatch.completed': { actions: ['settleDelivery', ...pump] },
        'checkpoint.completed': { actions: ['confirmCheckpoint', ...pump] },
        'checkpoint.failed': [
          { guard: 'isOwnershipLost', target: 'unloaded', actions: ['observe', 'noteOwnershipLost'] },
          { actions: ['retryCheckpointLater', ...pump] },
        ],
        'backlog.grew': { actions: ['noteBacklogGrew', ...pump] },
        'ownership.checked': [
          { guard: 'isRangeMoved', target: 'unloaded', actions: ['observe', 'noteRangeMoved'] },
          { actions: ['endOwnershipCheck', ...pump] },
        ],
        'ownership.check.failed': { actions: ['endOwnershipCheck', ...pump] },
        'timer.fired': [
          { guard: 'isIdleTimeout', target: 'draining', actions: ['observe', 'noteIdle'] },
          { actions: ['forgetTimer', ...pump] },
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
