import { describe, expect, it } from 'vitest'
import { initialTransition, transition } from 'xstate'
import { OwnershipLost, Unavailable } from '../domain/errors.ts'
import { makeTask, type Task } from '../domain/Task.ts'
import type { QueueMetadata } from '../persistence/queues/Store.ts'
import { physicalQueueMachine, type QueueSnapshot } from './PhysicalQueueMachine.ts'
import { commandsOf, type QueueCommand, type QueueEvent } from './PhysicalQueueProtocol.ts'
import { buffered } from './QueueBacklog.ts'
import { makeQueueContext, type SubqueueState } from './QueueContext.ts'

type EventInput = QueueEvent extends infer E ? (E extends QueueEvent ? Omit<E, 'nowMs'> & { nowMs?: number } : never) : never
const key = { namespace: 'default', family: 'emails', type: 'activity', partition: 0, version: null } as const

/** A machine under test: feeds events, keeps every command it asked for. */
class Harness {
  snapshot: QueueSnapshot
  log: QueueCommand[] = []
  nowMs = 1_000

  constructor(limits: Record<string, number> = {}) {
    const [snapshot, actions] = initialTransition(physicalQueueMachine, { queue: 'default/emails/activity/0', nowMs: this.nowMs, limits })
    this.snapshot = snapshot
    this.log.push(...commandsOf(actions))
  }

  send(event: EventInput): QueueCommand[] {
    const [snapshot, actions] = transition(physicalQueueMachine, this.snapshot, { nowMs: this.nowMs, ...event } as QueueEvent)
    this.snapshot = snapshot
    const commands = commandsOf(actions)
    this.log.push(...commands)
    return commands
  }

  acquired(ackLevels: Record<number, number> = {}, lastTaskId = 0): QueueCommand[] {
    const metadata: QueueMetadata = { key, rangeId: 3, lastTaskId, ackLevels, updatedAtMs: 0 }
    return this.send({ type: 'queue.acquired', metadata })
  }

  of<T extends QueueCommand['type']>(type: T, commands: ReadonlyArray<QueueCommand> = this.log): Array<Extract<QueueCommand, { type: T }>> {
    return commands.filter((command): command is Extract<QueueCommand, { type: T }> => command.type === type)
  }

  storeWrites(): QueueCommand[] {
    return this.log.filter((command) => command.type === 'store.append' || command.type === 'store.checkpoint')
  }
}

const task = (jobId: string, priority = 0, expiresAtMs: number | null = null): Task => makeTask({ jobId, priority, createdAtMs: 0, expiresAtMs })
const stored = (taskId: number, jobId = `job-${taskId}`, priority = 0) => ({ taskId, task: task(jobId, priority) })

describe('PhysicalQueueMachine', () => {
  it('loads by acquiring, then reads each known subqueue once', () => {
    const queue = new Harness()
    expect(queue.snapshot.value).toBe('loading')
    expect(queue.log).toEqual([{ type: 'store.acquire', params: {} }])
    const commands = queue.acquired({ 0: 4, 7: 2 })
    expect(queue.snapshot.value).toBe('owned')
    expect(queue.of('store.read', commands)).toEqual([
      { type: 'store.read', params: { subqueue: 7, afterTaskId: 2, limit: 1000 } },
      { type: 'store.read', params: { subqueue: 0, afterTaskId: 4, limit: 1000 } },
    ])
  })

  it('an empty queue: one backlog read per load/unload cycle and exactly one final write on idle unload', () => {
    const queue = new Harness()
    queue.acquired()
    queue.send({ type: 'read.completed', subqueue: 0, tasks: [], limit: 1000 })
    queue.nowMs += 5 * 60_000
    queue.send({ type: 'timer.fired', name: 'idle' })
    expect(queue.snapshot.value).toBe('draining')
    expect(queue.of('store.checkpoint')).toEqual([{ type: 'store.checkpoint', params: { ackLevels: [{ subqueue: 0, ackLevel: 0 }], final: true } }])
    queue.send({ type: 'checkpoint.completed', metadata: { key, rangeId: 3, lastTaskId: 0, ackLevels: { 0: 0 }, updatedAtMs: 0 } })
    expect(queue.snapshot.status).toBe('done')
    expect(queue.of('store.read')).toHaveLength(1)
    expect(queue.storeWrites()).toHaveLength(1)
    expect(queue.of('queue.unloaded')[0]?.params.reason).toEqual({ kind: 'drained', cause: 'idle' })
  })

  it('idle timer with a poller waiting does not unload', () => {
    const queue = new Harness()
    queue.acquired()
    queue.send({ type: 'read.completed', subqueue: 0, tasks: [], limit: 1000 })
    queue.send({ type: 'poll.arrived', pollId: 'p1', identity: 'w1' })
    queue.nowMs += 10 * 60_000
    queue.send({ type: 'timer.fired', name: 'idle' })
    expect(queue.snapshot.value).toBe('owned')
  })

  it('sync-matches an add to a waiting poller without any insert', () => {
    const queue = new Harness()
    queue.acquired()
    queue.send({ type: 'read.completed', subqueue: 0, tasks: [], limit: 1000 })
    queue.send({ type: 'poll.arrived', pollId: 'p1', identity: 'w1' })
    const added = queue.send({ type: 'task.added', requestId: 'a1', task: task('j1') })
    const [start] = queue.of('history.recordStart', added)
    expect(start?.params).toMatchObject({ taskId: null, pollId: 'p1', identity: 'w1', task: { jobId: 'j1' } })
    const done = queue.send({ type: 'dispatch.completed', deliveryId: start?.params.deliveryId as string, outcome: { kind: 'started', response: { claim: 1 } } })
    expect(queue.of('poll.reply', done)[0]?.params.result).toMatchObject({ kind: 'task', taskId: null, response: { claim: 1 } })
    expect(queue.of('add.reply', done)[0]?.params).toEqual({ requestId: 'a1', result: { kind: 'matched' } })
    expect(queue.of('store.append')).toEqual([])
  })

  it('spools an add with no poller, coalescing concurrent adds into bounded batches', () => {
    const queue = new Harness()
    queue.acquired()
    queue.send({ type: 'read.completed', subqueue: 0, tasks: [], limit: 1000 })
    for (let i = 0; i < 151; i++) queue.send({ type: 'task.added', requestId: `a${i}`, task: task(`j${i}`) })
    const appends = queue.of('store.append')
    expect(appends.map((append) => append.params.tasks.length)).toEqual([1])
    const first = queue.send({ type: 'append.completed', batchId: appends[0]?.params.batchId as string, firstTaskId: 1 })
    expect(queue.of('add.reply', first)[0]?.params).toEqual({ requestId: 'a0', result: { kind: 'spooled', taskId: 1 } })
    expect(queue.of('store.append', first)[0]?.params.tasks).toHaveLength(100)
    expect(queue.of('store.read', first)).toEqual([{ type: 'store.read', params: { subqueue: 0, afterTaskId: 0, limit: 1000 } }])
  })

  it('fails an add fast when the append queue is full', () => {
    const queue = new Harness({ appendQueueSizeMax: 2 })
    queue.acquired()
    for (let i = 0; i < 4; i++) queue.send({ type: 'task.added', requestId: `a${i}`, task: task(`j${i}`) })
    // a0 went into the append in flight; a1, a2 wait; a3 is refused.
    expect(queue.of('add.reply').map((reply) => [reply.params.requestId, reply.params.result.kind])).toEqual([['a3', 'failed']])
    expect(queue.of('add.reply')[0]?.params.result).toMatchObject({ error: { _tag: 'Overloaded' } })
  })

  it('walks upstream Matching: 1–3 read, 2 dispatched before 1, the gap holds the ack level, then it advances', () => {
    const queue = new Harness()
    queue.acquired()
    for (const id of ['p1', 'p2', 'p3']) queue.send({ type: 'poll.arrived', pollId: id, identity: `w-${id}` })
    const read = queue.send({ type: 'read.completed', subqueue: 0, tasks: [stored(1), stored(2), stored(3)], limit: 1000 })
    const starts = queue.of('history.recordStart', read)
    expect(starts.map((start) => start.params.taskId)).toEqual([1, 2, 3])
    const deliveryOf = (taskId: number) => starts.find((start) => start.params.taskId === taskId)?.params.deliveryId as string
    queue.send({ type: 'dispatch.completed', deliveryId: deliveryOf(2), outcome: { kind: 'started', response: null } })
    expect(queue.snapshot.context.subqueues[0]?.window).toMatchObject({ ackLevel: 0, readLevel: 3, handledAboveAck: [2] })
    queue.send({ type: 'dispatch.completed', deliveryId: deliveryOf(1), outcome: { kind: 'obsolete' } })
    expect(queue.snapshot.context.subqueues[0]?.window).toMatchObject({ ackLevel: 2, readLevel: 3, unhandled: [3] })
    // Not per task: the checkpoint waits for its interval.
    expect(queue.of('store.checkpoint')).toEqual([])
    queue.nowMs += 1_000
    const due = queue.send({ type: 'timer.fired', name: 'checkpoint' })
    expect(queue.of('store.checkpoint', due)).toEqual([{ type: 'store.checkpoint', params: { ackLevels: [{ subqueue: 0, ackLevel: 2 }], final: false } }])
  })

  it('a retryable start failure keeps the delivery pending and re-dispatches it after the backoff', () => {
    const queue = new Harness()
    queue.acquired()
    queue.send({ type: 'poll.arrived', pollId: 'p1', identity: 'w1' })
    const [first] = queue.of('history.recordStart', queue.send({ type: 'read.completed', subqueue: 0, tasks: [stored(1)], limit: 1000 }))
    const failed = queue.send({ type: 'dispatch.completed', deliveryId: first?.params.deliveryId as string, outcome: { kind: 'retryable', reason: 'busy', retryDelayMs: 250 } })
    expect(queue.of('history.recordStart', failed)).toEqual([])
    expect(queue.of('timer.set', failed)).toContainEqual({ type: 'timer.set', params: { name: 'retry', atMs: queue.nowMs + 250 } })
    expect(queue.snapshot.context.subqueues[0]?.window.ackLevel).toBe(0)
    queue.nowMs += 250
    const again = queue.of('history.recordStart', queue.send({ type: 'timer.fired', name: 'retry' }))
    expect(again.map((start) => start.params.taskId)).toEqual([1])
  })

  it('a poll whose deadline passes while History has its task is answered, never re-queued', () => {
    const queue = new Harness()
    queue.acquired()
    queue.send({ type: 'poll.arrived', pollId: 'p1', identity: 'w1' })
    const [start] = queue.of('history.recordStart', queue.send({ type: 'read.completed', subqueue: 0, tasks: [stored(1)], limit: 1000 }))
    expect(queue.send({ type: 'poll.cancelled', pollId: 'p1' })).toEqual([])
    const answered = queue.send({ type: 'dispatch.completed', deliveryId: start?.params.deliveryId as string, outcome: { kind: 'obsolete' } })
    expect(queue.of('poll.reply', answered)).toEqual([{ type: 'poll.reply', params: { pollId: 'p1', result: { kind: 'none' } } }])
    expect(queue.snapshot.context.pollers).toEqual([])
  })

  it('dispatches higher priority subqueues first, FIFO within a level', () => {
    const queue = new Harness()
    queue.acquired({ 0: 0, 5: 0 })
    queue.send({ type: 'read.completed', subqueue: 0, tasks: [stored(1), stored(2)], limit: 1000 })
    queue.send({ type: 'read.completed', subqueue: 5, tasks: [stored(3, 'hi-a', 5), stored(4, 'hi-b', 5)], limit: 1000 })
    for (const id of ['p1', 'p2', 'p3', 'p4']) queue.send({ type: 'poll.arrived', pollId: id, identity: id })
    expect(queue.of('history.recordStart').map((start) => start.params.taskId)).toEqual([3, 4, 1, 2])
  })

  it('after a load, a lower priority waits for the read of a higher one instead of jumping ahead', () => {
    const queue = new Harness()
    queue.acquired({ 0: 0, 3: 0 })
    queue.send({ type: 'poll.arrived', pollId: 'p1', identity: 'w1' })
    const low = queue.send({ type: 'read.completed', subqueue: 0, tasks: [stored(1)], limit: 1000 })
    expect(queue.of('history.recordStart', low)).toEqual([])
    const high = queue.send({ type: 'read.completed', subqueue: 3, tasks: [stored(2, 'urgent', 3)], limit: 1000 })
    expect(queue.of('history.recordStart', high).map((start) => start.params.task.jobId)).toEqual(['urgent'])
  })

  it('drops expired tasks at read time and still advances the read and ack levels', () => {
    const queue = new Harness()
    queue.acquired()
    queue.send({ type: 'read.completed', subqueue: 0, tasks: [{ taskId: 1, task: task('old', 0, 500) }, stored(2)], limit: 1000 })
    expect(queue.snapshot.context.subqueues[0]?.window).toMatchObject({ ackLevel: 1, readLevel: 2, unhandled: [2] })
    expect(buffered(queue.snapshot.context.subqueues[0] as SubqueueState).map((entry) => entry.taskId)).toEqual([2])
  })

  it('ownership lost on an append unloads with no further write and fails the adds', () => {
    const queue = new Harness()
    queue.acquired()
    queue.send({ type: 'read.completed', subqueue: 0, tasks: [stored(1)], limit: 1000 })
    queue.send({ type: 'task.added', requestId: 'a1', task: task('j1') })
    queue.send({ type: 'task.added', requestId: 'a2', task: task('j2') })
    const [append] = queue.of('store.append')
    const writesBefore = queue.storeWrites().length
    const error = new OwnershipLost({ queue: 'default/emails/activity/0', rangeId: 3, currentRangeId: 4 })
    const lost = queue.send({ type: 'append.failed', batchId: append?.params.batchId as string, error })
    expect(queue.snapshot.status).toBe('done')
    expect(queue.storeWrites()).toHaveLength(writesBefore)
    expect(queue.of('add.reply', lost).map((reply) => [reply.params.requestId, (reply.params.result as { error: { _tag: string } }).error._tag])).toEqual([
      ['a1', 'OwnershipLost'],
      ['a2', 'OwnershipLost'],
    ])
    expect(queue.of('queue.unloaded', lost)[0]?.params).toMatchObject({ reason: { kind: 'ownership-lost' }, outstanding: 1 })
  })

  it('a range bump seen by a checkpoint unloads the owner with no final write', () => {
    const queue = new Harness()
    queue.acquired()
    queue.send({ type: 'poll.arrived', pollId: 'p1', identity: 'w1' })
    const [start] = queue.of('history.recordStart', queue.send({ type: 'read.completed', subqueue: 0, tasks: [stored(1)], limit: 1000 }))
    queue.send({ type: 'dispatch.completed', deliveryId: start?.params.deliveryId as string, outcome: { kind: 'started', response: null } })
    queue.nowMs += 1_000
    queue.send({ type: 'timer.fired', name: 'checkpoint' })
    expect(queue.of('store.checkpoint')).toHaveLength(1)
    const error = new OwnershipLost({ queue: 'default/emails/activity/0', rangeId: 3, currentRangeId: 9 })
    queue.send({ type: 'checkpoint.failed', error })
    expect(queue.snapshot.status).toBe('done')
    expect(queue.storeWrites()).toHaveLength(1)
    expect(queue.of('timer.set').at(-1)?.params.atMs).toBeNull()
  })

  it('a queue that never writes still learns, within a minute, that another owner took its range', () => {
    const queue = new Harness()
    queue.acquired()
    queue.send({ type: 'read.completed', subqueue: 0, tasks: [], limit: 1000 })
    queue.send({ type: 'poll.arrived', pollId: 'p1', identity: 'w1' })
    expect(queue.of('timer.set').filter((set) => set.params.name === 'ownership').at(-1)?.params.atMs).toBe(queue.nowMs + 60_000)
    queue.nowMs += 60_000
    const check = queue.send({ type: 'timer.fired', name: 'ownership' })
    expect(queue.of('store.checkOwnership', check)).toHaveLength(1)
    const moved = queue.send({ type: 'ownership.checked', rangeId: 4 })
    expect(queue.snapshot.status).toBe('done')
    expect(queue.storeWrites()).toHaveLength(0)
    expect(queue.of('poll.reply', moved)[0]?.params.result).toMatchObject({ kind: 'failed', error: { _tag: 'OwnershipLost', currentRangeId: 4 } })
  })

  it('a confirmed range re-arms the next ownership check', () => {
    const queue = new Harness()
    queue.acquired()
    queue.nowMs += 60_000
    queue.send({ type: 'timer.fired', name: 'ownership' })
    const confirmed = queue.send({ type: 'ownership.checked', rangeId: 3 })
    expect(queue.snapshot.value).toBe('owned')
    expect(queue.of('timer.set', confirmed).find((set) => set.params.name === 'ownership')?.params.atMs).toBe(queue.nowMs + 60_000)
  })

  it('an ownership check that cannot read the store ends like a confirmed one: the next check is one interval later', () => {
    const queue = new Harness()
    queue.acquired()
    queue.nowMs += 60_000
    queue.send({ type: 'timer.fired', name: 'ownership' })
    const failed = queue.send({ type: 'ownership.check.failed', error: new Unavailable({ operation: 'inspect', detail: 'down', maybeCommitted: false }) })
    expect(queue.snapshot.value).toBe('owned')
    expect(queue.snapshot.context.ownership.checkInFlight).toBe(false)
    expect(queue.of('timer.set', failed).find((set) => set.params.name === 'ownership')?.params.atMs).toBe(queue.nowMs + 60_000)
  })

  it('the state decides what an unstarted delivery becomes: owned waits again, draining refuses', () => {
    const retryable = { kind: 'retryable', reason: 'busy', retryDelayMs: 100 } as const
    const start = (queue: Harness) => {
      queue.acquired()
      queue.send({ type: 'read.completed', subqueue: 0, tasks: [], limit: 1000 })
      queue.send({ type: 'poll.arrived', pollId: 'p1', identity: 'w1' })
      const [dispatched] = queue.of('history.recordStart', queue.send({ type: 'task.added', requestId: 'a1', task: task('j1') }))
      return dispatched?.params.deliveryId as string
    }
    const owned = new Harness()
    const answered = owned.send({ type: 'dispatch.completed', deliveryId: start(owned), outcome: retryable })
    expect(owned.of('add.reply', answered)).toEqual([])
    expect(owned.of('poll.reply', answered)).toEqual([])
    // Both wait again; the add is appended rather than matched again at once (no History call in a loop).
    expect(owned.of('history.recordStart', answered)).toEqual([])
    expect(owned.of('store.append', answered).map((append) => append.params.tasks.map((appended) => appended.jobId))).toEqual([['j1']])

    const draining = new Harness()
    const deliveryId = start(draining)
    draining.send({ type: 'drain.requested', reason: 'moved' })
    const refused = draining.send({ type: 'dispatch.completed', deliveryId, outcome: retryable })
    expect(refused.filter((command) => command.type === 'add.reply' || command.type === 'poll.reply').map((command) => [command.type, (command.params.result as { error?: { _tag: string } }).error?._tag])).toEqual([
      ['add.reply', 'ShuttingDown'],
      ['poll.reply', 'ShuttingDown'],
    ])
    expect(draining.of('store.checkpoint', refused)).toEqual([{ type: 'store.checkpoint', params: { ackLevels: [{ subqueue: 0, ackLevel: 0 }], final: true } }])
  })

  it('keeps the context within 19 top-level fields, so the copies XState assigns stay fast V8 objects', () => {
    expect(Object.keys(makeQueueContext({ queue: 'q', nowMs: 0 })).length).toBeLessThanOrEqual(19)
  })

  it('a step asks only for commands: every action transition() returns is one', () => {
    const [snapshot, actions] = initialTransition(physicalQueueMachine, { queue: 'q', nowMs: 0 })
    const metadata: QueueMetadata = { key, rangeId: 1, lastTaskId: 0, ackLevels: {}, updatedAtMs: 0 }
    const [, acquired] = transition(physicalQueueMachine, snapshot, { type: 'queue.acquired', nowMs: 0, metadata })
    for (const step of [actions, acquired]) expect(commandsOf(step)).toHaveLength(step.length)
    expect(commandsOf(acquired).map((command) => command.type)).toEqual(['store.read', 'timer.set', 'timer.set'])
  })

  it('a transient acquire failure retries with a doubling delay', () => {
    const queue = new Harness()
    const failed = queue.send({ type: 'queue.acquire.failed', error: new Unavailable({ operation: 'acquire', detail: 'down', maybeCommitted: true }) })
    expect(failed).toEqual([{ type: 'timer.set', params: { name: 'acquire', atMs: queue.nowMs + 1_000 } }])
    queue.nowMs += 1_000
    expect(queue.send({ type: 'timer.fired', name: 'acquire' })).toEqual([{ type: 'store.acquire', params: {} }])
    expect(queue.send({ type: 'queue.acquire.failed', error: new Unavailable({ operation: 'acquire', detail: 'down', maybeCommitted: false }) })).toEqual([
      { type: 'timer.set', params: { name: 'acquire', atMs: queue.nowMs + 2_000 } },
    ])
  })

  it('draining refuses new work, waits for History within its deadline, then writes once', () => {
    const queue = new Harness()
    queue.acquired()
    queue.send({ type: 'poll.arrived', pollId: 'p1', identity: 'w1' })
    const [start] = queue.of('history.recordStart', queue.send({ type: 'read.completed', subqueue: 0, tasks: [stored(1), stored(2)], limit: 1000 }))
    queue.send({ type: 'drain.requested', reason: 'membership moved' })
    expect(queue.snapshot.value).toBe('draining')
    const refused = queue.send({ type: 'task.added', requestId: 'late', task: task('late') })
    expect(queue.of('add.reply', refused)[0]?.params.result).toMatchObject({ kind: 'failed', error: { _tag: 'ShuttingDown' } })
    const refusedPoll = queue.send({ type: 'poll.arrived', pollId: 'p2', identity: 'w2' })
    expect(queue.of('poll.reply', refusedPoll)[0]?.params.result).toMatchObject({ kind: 'failed', error: { _tag: 'ShuttingDown' } })
    expect(queue.of('store.checkpoint')).toEqual([])
    const answered = queue.send({ type: 'dispatch.completed', deliveryId: start?.params.deliveryId as string, outcome: { kind: 'started', response: 'ok' } })
    expect(queue.of('store.checkpoint', answered)).toEqual([{ type: 'store.checkpoint', params: { ackLevels: [{ subqueue: 0, ackLevel: 1 }], final: true } }])
    queue.send({ type: 'checkpoint.completed', metadata: { key, rangeId: 3, lastTaskId: 2, ackLevels: { 0: 1 }, updatedAtMs: 0 } })
    expect(queue.snapshot.status).toBe('done')
    expect(queue.snapshot.output).toMatchObject({ savedAckLevels: { 0: 1 }, readLevels: { 0: 2 }, reason: { kind: 'drained', cause: 'membership moved' } })
  })
})
