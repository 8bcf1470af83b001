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
 * Each transition lists its named actions: `observe` (the event's time) first, then what the
 * event means in that state, then — only while owned — the `pump` steps that move forward
 * everything that can move. The state decides what runs; no action is told which state it is in.
 *
 * One file on purpose, a little past 400 lines: an event reads from its transition to the
 * commands it asks for without leaving it. The arithmetic on subqueues, buffers and deliveries
 * is pure and lives in QueueBacklog.ts; the context's shape and timers in QueueContext.ts.
 */
import { assertEvent, setup, type SnapshotFrom } from 'xstate'
import { cappedExponentialMs } from '../domain/Backoff.ts'
import { type MatchboxError, OwnershipLost, Overloaded, ShuttingDown, Unavailable } from '../domain/errors.ts'
import { assert } from '../kernel/assert.ts'
import { type AddResult, isOwnershipLost, isTransient, type PollResult, type QueueCommand, type QueueEvent, type QueueProgress, queueCommandActions, type TimerName } from './PhysicalQueueProtocol.ts'
import { bufferPage, finalAckLevels, markGrown, resumeSubqueues, settledDelivery, startDelivery, startReads, subqueueOf, unsavedAckLevels, withSubqueue } from './QueueBacklog.ts'
import { isIdle, makeQueueContext, nextId, progressOf, type QueueContext, type QueueInput, timerDueTimes } from './QueueContext.ts'

const withCommands = setup({
  types: { context: {} as QueueContext, events: {} as QueueEvent, input: {} as QueueInput, output: {} as QueueProgress },
  actions: queueCommandActions,
  guards: {
    isOwnershipLost: ({ event }) => 'error' in event && isOwnershipLost(event.error),
    isTransient: ({ event }) => 'error' in event && isTransient(event.error),
    isAcquireTimer: ({ event }) => event.type === 'timer.fired' && event.name === 'acquire',
    isIdleTimeout: ({ context, event }) => event.type === 'timer.fired' && event.name === 'idle' && isIdle(context, event.nowMs),
    isFinalCheckpoint: ({ context }) => context.checkpointing?.final === true,
    isRangeMoved: ({ context, event }) => event.type === 'ownership.checked' && event.rangeId !== context.rangeId,
    isAppendQueueFull: ({ context }) => context.pendingAdds.length >= context.limits.appendQueueSizeMax,
    isPollersFull: ({ context }) => context.pollers.length >= context.limits.pollersMax,
  },
})
const { assign, enqueueActions } = withCommands
/** Asks for a command (a step's `enqueue`, seen as a sink for commands). */
type Emit = (command: QueueCommand) => void

const addReply = (requestId: string, result: AddResult) => ({ type: 'add.reply', params: { requestId, result } }) as const
const pollReply = (pollId: string, result: PollResult) => ({ type: 'poll.reply', params: { pollId, result } }) as const
const shuttingDown = (context: QueueContext): MatchboxError => new ShuttingDown({ component: `physical queue ${context.queue}` })

// Asks for the timer changes that bring `managed` in line with `desired`; the new timer map, or null if none changed.
function retime(enqueue: Emit, context: QueueContext, desired: Partial<Record<TimerName, number>>, managed: ReadonlyArray<TimerName>): QueueContext['timers'] | null {
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

// ------------------------------------------------------------ pump steps (owned only)
// Each takes the context, asks for its commands and returns the context it leaves (the same
// object when it changed nothing). The `pump` action runs them in order after every owned event.

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
  if (context.checkpointing !== null) return context
  const ackLevels = unsavedAckLevels(context)
  if (ackLevels.length === 0) return context
  const due = context.checkpointDueMs !== null && context.nowMs >= context.checkpointDueMs
  if (due || context.acksSinceCheckpoint >= context.limits.checkpointAckCountMax) {
    enqueue({ type: 'store.checkpoint', params: { ackLevels, final: false } })
    return { ...context, checkpointing: { final: false }, acksSinceCheckpoint: 0, checkpointDueMs: null }
  }
  return context.checkpointDueMs === null ? { ...context, checkpointDueMs: context.nowMs + context.limits.checkpointIntervalMs } : context
}

/** A queue that has not confirmed its range for a while reads it (see ownershipCheckIntervalMs). */
function checkOwnershipIfDue(context: QueueContext, enqueue: Emit): QueueContext {
  if (context.ownershipCheckInFlight || context.nowMs - context.ownershipConfirmedMs < context.limits.ownershipCheckIntervalMs) return context
  enqueue({ type: 'store.checkOwnership', params: {} })
  return { ...context, ownershipCheckInFlight: true }
}

const pumpTimers: ReadonlyArray<TimerName> = ['retry', 'checkpoint', 'idle', 'ownership']

/** Brings the pump's timers in line with what is due. */
function armTimers(context: QueueContext, enqueue: Emit): QueueContext {
  const timers = retime(enqueue, context, timerDueTimes(context), pumpTimers)
  return timers === null ? context : { ...context, timers }
}

const pumpSteps: ReadonlyArray<(context: QueueContext, enqueue: Emit) => QueueContext> = [matchPollers, appendNextBatch, readNextPages, checkpointIfDue, checkOwnershipIfDue, armTimers]

const machineSetup = withCommands.extend({
  actions: {
    /** Records the event's time, and activity for the events a client caused. */
    observe: assign(({ context, event }) => ({
      nowMs: event.nowMs,
      lastActivityMs: event.type === 'task.added' || event.type === 'poll.arrived' || event.type === 'dispatch.completed' ? event.nowMs : context.lastActivityMs,
    })),

    // ------------------------------------------------------------ loading
    /** Acquired: resume every known subqueue above its saved ack level (subqueue 0 always). */
    adoptRange: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'queue.acquired')
      const { rangeId, ackLevels } = event.metadata
      const timers = retime(enqueue, context, {}, ['acquire']) ?? context.timers
      enqueue.assign(() => ({ rangeId, acquireAttempts: 0, subqueues: resumeSubqueues(ackLevels), savedAckLevels: ackLevels, ownershipConfirmedMs: event.nowMs, timers }))
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
      const entry = Object.entries(context.deliveries).find(([, delivery]) => delivery.poller.pollId === event.pollId)
      if (entry === undefined) return
      const [deliveryId, delivery] = entry
      enqueue.assign(() => ({ deliveries: { ...context.deliveries, [deliveryId]: { ...delivery, pollCancelled: true } } }))
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
      enqueue.assign(() => ({ appending: null, ownershipConfirmedMs: event.nowMs }))
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
    confirmCheckpoint: assign(({ event }) => {
      assertEvent(event, 'checkpoint.completed')
      return { checkpointing: null, savedAckLevels: event.metadata.ackLevels, ownershipConfirmedMs: event.nowMs }
    }),
    /** A checkpoint failed transiently: try again after the checkpoint interval. */
    retryCheckpointLater: assign(({ context }) => ({ checkpointing: null, checkpointDueMs: context.nowMs + context.limits.checkpointIntervalMs })),
    /** A routine checkpoint failed while draining: the final one will save the ack levels. */
    dropCheckpoint: assign({ checkpointing: null }),
    /** Rows were moved into this queue (a retired version's backlog): look again. */
    noteBacklogGrew: assign(({ context, event }) => {
      assertEvent(event, 'backlog.grew')
      return markGrown(context, event.subqueues)
    }),
    /**
     * The ownership check ended without seeing another owner — it read our range, or could not
     * read at all — so the next check is due one interval from now.
     */
    endOwnershipCheck: assign(({ context }) => ({ ownershipCheckInFlight: false, ownershipConfirmedMs: context.nowMs })),

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
    /** Moves forward everything that can move, in the order of `pumpSteps`, then saves the context once. */
    pump: enqueueActions(({ context, enqueue }) => {
      let next = context
      for (const pumpStep of pumpSteps) next = pumpStep(next, enqueue)
      if (next !== context) enqueue.assign(() => next)
    }),

    // ------------------------------------------------------------ draining and unloading
    noteIdle: assign({ drainCause: 'idle' }),
    noteDrainCause: assign(({ event }) => {
      assertEvent(event, 'drain.requested')
      return { drainCause: event.reason }
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
      enqueue.assign(() => ({ drainDeadlineMs: deadline, timers }))
    }),
    /**
     * Writes the one final checkpoint once no append or checkpoint is in flight and either every
     * delivery was answered or the drain deadline passed (unanswered deliveries stay stored above
     * the ack level and are delivered again by the next owner).
     */
    writeFinalCheckpointWhenReady: enqueueActions(({ context, enqueue }) => {
      if (context.finalCheckpointRequested || context.appending !== null || context.checkpointing !== null) return
      const deadlinePassed = context.drainDeadlineMs !== null && context.nowMs >= context.drainDeadlineMs
      if (Object.keys(context.deliveries).length > 0 && !deadlinePassed) return
      enqueue.assign(() => ({ finalCheckpointRequested: true, checkpointing: { final: true } }))
      enqueue({ type: 'store.checkpoint', params: { ackLevels: finalAckLevels(context), final: true } })
    }),
    noteDrained: assign(({ context }) => ({ unloadReason: { kind: 'drained', cause: context.drainCause ?? 'drain' } as const })),
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
        'queue.acquired': { target: 'owned', actions: ['observe', 'adoptRange', ...pump] },
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
        'task.added': [{ guard: 'isAppendQueueFull', actions: ['observe', 'refuseOverloaded'] }, { actions: ['observe', 'queueAdd', ...pump] }],
        'poll.arrived': [{ guard: 'isPollersFull', actions: ['observe', 'refuseOverloaded'] }, { actions: ['observe', 'queuePoll', ...pump] }],
        'poll.cancelled': { actions: ['observe', 'cancelPoll'] },
        'append.completed': { actions: ['observe', 'markBatchGrown', 'spoolBatch', ...pump] },
        'append.failed': [
          { guard: 'isOwnershipLost', target: 'unloaded', actions: ['observe', 'failBatch', 'noteOwnershipLost'] },
          { actions: ['observe', 'markBatchGrown', 'failBatch', ...pump] },
        ],
        'read.completed': { actions: ['observe', 'bufferPage', ...pump] },
        'read.failed': { actions: ['observe', 'retryReadLater', ...pump] },
        'dispatch.completed': { actions: ['observe', 'settleDelivery', ...pump] },
        'checkpoint.completed': { actions: ['observe', 'confirmCheckpoint', ...pump] },
        'checkpoint.failed': [
          { guard: 'isOwnershipLost', target: 'unloaded', actions: ['observe', 'noteOwnershipLost'] },
          { actions: ['observe', 'retryCheckpointLater', ...pump] },
        ],
        'backlog.grew': { actions: ['observe', 'noteBacklogGrew', ...pump] },
        'ownership.checked': [
          { guard: 'isRangeMoved', target: 'unloaded', actions: ['observe', 'noteRangeMoved'] },
          { actions: ['observe', 'endOwnershipCheck', ...pump] },
        ],
        'ownership.check.failed': { actions: ['observe', 'endOwnershipCheck', ...pump] },
        'timer.fired': [
          { guard: 'isIdleTimeout', target: 'draining', actions: ['observe', 'noteIdle'] },
          { actions: ['observe', 'forgetTimer', ...pump] },
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
