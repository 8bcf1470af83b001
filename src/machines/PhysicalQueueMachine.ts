/**
 * PhysicalQueueMachine — one physical queue's lifecycle, as a pure XState 5 machine (upstream Matching,
 * DESIGN.md §5). It does no I/O: every store call, History call, reply and timer is a command
 * action (PhysicalQueueProtocol.ts) that a runner executes, answering with an event. Step it
 * with `initialTransition` / `transition` and assert the snapshot and the commands.
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
 * - **unloaded** — final; reports its progress. `OwnershipLost` from any write comes straight
 *   here with no final write: a stale owner must not write again.
 */
import { enqueueActions, setup } from 'xstate'
import { type MatchboxError, OwnershipLost, ShuttingDown } from '../domain/errors.ts'
import { assert } from '../kernel/assert.ts'
import {
  abandonAll,
  maybeFinalCheckpoint,
  observe,
  onAcquired,
  onAcquireRetry,
  onAcquireTimer,
  onAppendCompleted,
  onAppendFailed,
  onBacklogGrew,
  onCheckpointCompleted,
  onCheckpointFailed,
  onDispatchCompleted,
  onDrainStarted,
  onOwnershipCheckFailed,
  onOwnershipConfirmed,
  onPollArrived,
  onPollCancelled,
  onReadCompleted,
  onReadFailed,
  onRefused,
  onTaskAdded,
  onTimer,
} from './PhysicalQueueLogic.ts'
import { isIdle, type Step } from './QueuePump.ts'
import {
  isOwnershipLost,
  isTransient,
  type QueueCommand,
  type QueueEvent,
  type QueueProgress,
  type UnloadReason,
} from './PhysicalQueueProtocol.ts'
import { makeQueueContext, progressOf, type QueueContext, type QueueInput } from './QueueContext.ts'

type EventType = QueueEvent['type'] | '*'
type EventOf<T extends EventType> = T extends '*' ? QueueEvent : Extract<QueueEvent, { type: T }>
type Handler<E extends QueueEvent = QueueEvent> = (context: QueueContext, event: E) => Step

// Command actions have no implementation here: the runner reads them off `transition`'s result.
const command = (): void => {}

function errorOf(event: QueueEvent): MatchboxError | undefined {
  return 'error' in event ? event.error : undefined
}

const machineSetup = setup({
  types: {
    context: {} as QueueContext,
    events: {} as QueueEvent,
    input: {} as QueueInput,
    output: {} as QueueProgress,
  },
  actions: {
    'store.acquire': command,
    'store.append': command,
    'store.read': command,
    'store.checkOwnership': command,
    'store.checkpoint': command,
    'history.recordStart': command,
    'add.reply': command,
    'poll.reply': command,
    'timer.set': command,
    'queue.unloaded': command,
  },
  guards: {
    isOwnershipLost: ({ event }) => {
      const error = errorOf(event)
      return error !== undefined && isOwnershipLost(error)
    },
    isTransient: ({ event }) => {
      const error = errorOf(event)
      return error !== undefined && isTransient(error)
    },
    isAcquireTimer: ({ event }) => event.type === 'timer.fired' && event.name === 'acquire',
    isIdleTimeout: ({ context, event }) => event.type === 'timer.fired' && event.name === 'idle' && isIdle(observe(context, event)),
    isFinalCheckpoint: ({ context }) => context.checkpointing?.final === true,
    isRangeMoved: ({ context, event }) => event.type === 'ownership.checked' && event.rangeId !== context.rangeId,
  },
})

// Runs a handler on the event (after recording its time) and enqueues the commands it returns.
// `type` names the event the handler expects ('*': any), so the handler is typed for it.
function run<T extends EventType>(type: T, handler: Handler<EventOf<T>>) {
  return machineSetup.enqueueActions(({ context, event, enqueue }) => {
    assert(type === '*' || event.type === type, `handler for ${type} got ${event.type}`)
    const [next, commands] = handler(observe(context, event), event as EventOf<T>)
    enqueue.assign(() => next)
    for (const requested of commands) enqueue(requested as Parameters<typeof enqueue>[0])
  })
}

// Then, while draining: write the final checkpoint if nothing holds it back.
function thenFinal<E extends QueueEvent>(handler: Handler<E>): Handler<E> {
  return (context, event) => {
    const [next, commands] = handler(context, event)
    const [final, more] = maybeFinalCheckpoint(next)
    return [final, [...commands, ...more]]
  }
}

// Leaves service: records why, answers everything still waiting, disarms timers.
function leave(reason: (context: QueueContext, event: QueueEvent) => UnloadReason) {
  return run('*', (context, event) => {
    const unloadReason = reason(context, event)
    const commands: QueueCommand[] = []
    let remaining = context
    // The append that was refused did not commit: its adds get the refusal itself.
    if (event.type === 'append.failed' && context.appending?.batchId === event.batchId) {
      for (const add of context.appending.adds) commands.push({ type: 'add.reply', params: { requestId: add.requestId, result: { kind: 'failed', error: event.error } } })
      remaining = { ...context, appending: null }
    }
    if ('error' in unloadReason) commands.push(...abandonAll(remaining, unloadReason.error))
    for (const name of Object.keys(context.timers)) commands.push({ type: 'timer.set', params: { name: name as keyof typeof context.timers, atMs: null } })
    return [{ ...context, unloadReason, pendingAdds: [], pollers: [], appending: null, timers: {} }, commands]
  })
}

const ownershipLost = leave((_, event) => ({ kind: 'ownership-lost', error: errorOf(event) as never }))

/** The physical queue machine. Input: `{ queue, nowMs, limits? }`; output: its progress at unload. */
export const physicalQueueMachine = machineSetup.createMachine({
  id: 'physicalQueue',
  context: ({ input }) => makeQueueContext(input),
  initial: 'loading',
  states: {
    loading: {
      entry: enqueueActions(({ enqueue }) => enqueue({ type: 'store.acquire', params: {} })),
      on: {
        'queue.acquired': { target: 'owned', actions: run('queue.acquired', onAcquired) },
        'queue.acquire.failed': [
          { guard: 'isTransient', actions: run('queue.acquire.failed', onAcquireRetry) },
          { target: 'unloaded', actions: leave((_, event) => ({ kind: 'acquire-failed', error: errorOf(event) as MatchboxError })) },
        ],
        'timer.fired': { guard: 'isAcquireTimer', actions: run('timer.fired', onAcquireTimer) },
        'task.added': { actions: run('task.added', (context, event) => onTaskAdded(context, event, false)) },
        'poll.arrived': { actions: run('poll.arrived', (context, event) => onPollArrived(context, event, false)) },
        'poll.cancelled': { actions: run('poll.cancelled', onPollCancelled) },
        'drain.requested': {
          target: 'unloaded',
          actions: [
            run('*', (context) => [context, abandonAll(context, new ShuttingDown({ component: `physical queue ${context.queue}` }))]),
            leave((_, event) => ({ kind: 'drained', cause: event.type === 'drain.requested' ? event.reason : 'drain' })),
          ],
        },
      },
    },
    owned: {
      on: {
        'task.added': { actions: run('task.added', (context, event) => onTaskAdded(context, event, true)) },
        'poll.arrived': { actions: run('poll.arrived', (context, event) => onPollArrived(context, event, true)) },
        'poll.cancelled': { actions: run('poll.cancelled', onPollCancelled) },
        'append.completed': { actions: run('append.completed', (context, event) => onAppendCompleted(context, event, true)) },
        'append.failed': [
          { guard: 'isOwnershipLost', target: 'unloaded', actions: ownershipLost },
          { actions: run('append.failed', (context, event) => onAppendFailed(context, event, true)) },
        ],
        'read.completed': { actions: run('read.completed', onReadCompleted) },
        'read.failed': { actions: run('read.failed', onReadFailed) },
        'dispatch.completed': { actions: run('dispatch.completed', (context, event) => onDispatchCompleted(context, event, true)) },
        'checkpoint.completed': { actions: run('checkpoint.completed', (context, event) => onCheckpointCompleted(context, event, true)) },
        'checkpoint.failed': [
          { guard: 'isOwnershipLost', target: 'unloaded', actions: ownershipLost },
          { actions: run('checkpoint.failed', onCheckpointFailed) },
        ],
        'backlog.grew': { actions: run('backlog.grew', onBacklogGrew) },
        'ownership.checked': [
          {
            guard: 'isRangeMoved',
            target: 'unloaded',
            actions: leave((context, event) => ({
              kind: 'ownership-lost',
              error: new OwnershipLost({ queue: context.queue, rangeId: context.rangeId, currentRangeId: event.type === 'ownership.checked' ? event.rangeId : null }),
            })),
          },
          { actions: run('ownership.checked', onOwnershipConfirmed) },
        ],
        'ownership.check.failed': { actions: run('ownership.check.failed', onOwnershipCheckFailed) },
        'timer.fired': [
          { guard: 'isIdleTimeout', target: 'draining', actions: run('timer.fired', (context) => [{ ...context, drainCause: 'idle' }, []]) },
          { actions: run('timer.fired', (context, event) => onTimer(context, event.name)) },
        ],
        'drain.requested': { target: 'draining', actions: run('drain.requested', (context, event) => [{ ...context, drainCause: event.reason }, []]) },
      },
    },
    draining: {
      entry: run('*', onDrainStarted),
      on: {
        'task.added': { actions: run('task.added', onRefused) },
        'poll.arrived': { actions: run('poll.arrived', onRefused) },
        'append.completed': { actions: run('append.completed', thenFinal((context, event) => onAppendCompleted(context, event, false))) },
        'append.failed': [
          { guard: 'isOwnershipLost', target: 'unloaded', actions: ownershipLost },
          { actions: run('append.failed', thenFinal((context, event) => onAppendFailed(context, event, false))) },
        ],
        'dispatch.completed': { actions: run('dispatch.completed', thenFinal((context, event) => onDispatchCompleted(context, event, false))) },
        'checkpoint.completed': [
          {
            guard: 'isFinalCheckpoint',
            target: 'unloaded',
            actions: [
              run('checkpoint.completed', (context, event) => onCheckpointCompleted(context, event, false)),
              leave((context) => ({ kind: 'drained', cause: context.drainCause ?? 'drain' })),
            ],
          },
          { actions: run('checkpoint.completed', thenFinal((context, event) => onCheckpointCompleted(context, event, false))) },
        ],
        'checkpoint.failed': [
          { guard: 'isOwnershipLost', target: 'unloaded', actions: ownershipLost },
          { guard: 'isFinalCheckpoint', target: 'unloaded', actions: leave((_, event) => ({ kind: 'final-checkpoint-failed', error: errorOf(event) as MatchboxError })) },
          { actions: run('checkpoint.failed', thenFinal((context) => [{ ...context, checkpointing: null }, []])) },
        ],
        'timer.fired': { actions: run('timer.fired', thenFinal((context) => [context, []])) },
      },
    },
    unloaded: {
      type: 'final',
      entry: enqueueActions(({ context, enqueue }) => {
        enqueue({ type: 'queue.unloaded', params: progressOf(context, context.unloadReason as UnloadReason) })
      }),
    },
  },
  output: ({ context }) => progressOf(context, context.unloadReason as UnloadReason),
})
