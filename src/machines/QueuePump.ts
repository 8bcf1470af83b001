/**
 * QueuePump — the heart of an owned physical queue, pure: after every event it hands eligible
 * backlog tasks to waiting pollers (highest subqueue first, lowest id first, and never a lower
 * priority while a higher one's rows are unread), sync-matches new adds when nothing stored
 * could be ahead of them, starts the next append batch, reads the next page of any subqueue
 * that ran dry, requests a checkpoint when enough acks or time accumulated, checks ownership
 * when it has not been confirmed for a while, and re-arms the timers it needs — one timer per
 * purpose, never one per task.
 *
 * Why reads cannot pass an append whose outcome is unknown: every append of this owner goes
 * through the store's row lock on the queue, so a later committed id implies every earlier
 * append finished; and an ambiguous append marks its subqueues as possibly grown, so the next
 * read looks again.
 */
import type { QueueCommand, TimerName } from './PhysicalQueueProtocol.ts'
import { type BufferedTask, type Delivery, nextId, type Poller, type QueueContext, type SubqueueState, subqueueOf, subqueueOrder, syncTimers, withSubqueue } from './QueueContext.ts'

/** A handler's result: the next context and the commands to run, in order. */
export type Step = readonly [QueueContext, ReadonlyArray<QueueCommand>]

/** Marks subqueues as possibly holding unread rows (an append or relocation landed). */
export function markGrown(context: QueueContext, subqueues: ReadonlyArray<number>): QueueContext {
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
