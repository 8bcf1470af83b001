/**
 * PhysicalQueueActor — runs one PhysicalQueueMachine: holds its snapshot, steps it with XState's
 * pure `transition()` for each event, executes the commands the step returns (store calls,
 * History calls, replies, timers) and turns their outcomes back into events. It steps through
 * QueueStepper.ts, which gives the same snapshots and commands as `transition()` without
 * building an actor per step. The machine
 * decides; this file only does I/O.
 *
 * Invariants:
 * - events are processed one at a time, synchronously, in arrival order; I/O outcomes arrive
 *   later as new events, so the machine never sees a half-applied step;
 * - every add and poll gets exactly one reply, also when the queue unloads: a poll whose task
 *   is with History when the queue unloads still gets History's answer;
 * - after unload nothing is written: late store outcomes are ignored;
 * - time is the injected Clock and jitter the injected Random; one timer per purpose.
 *
 * A failure outside the error catalogue (a defect) — from an I/O call, or an assertion failing
 * inside a step, which then is not applied — is handed to `onDefect`, which the partition actor
 * (the supervisor) turns into a crash of this queue.
 *
 * A poll's caller may watch whether the queue has the poll with History (`PollWatch`), read after
 * every step from the machine's deliveries: the host's book of waiting polls moves only idle polls.
 *
 * Length: past 400 lines because each command the machine asks for is carried out here beside
 * the state it touches (the polls and adds waiting for replies, the timers, History calls in
 * flight and their retry counts); split, the reply paths of one poll would live in two files.
 */
import { equalJitterDelayMs } from '../domain/Backoff.ts'
import { isMatchboxError, type MatchboxError, ShuttingDown } from '../domain/errors.ts'
import { encodeQueueKey, type QueueKey } from '../domain/QueueKey.ts'
import type { Task } from '../domain/Task.ts'
import type { CancelTimer, Clock } from '../kernel/Clock.ts'
import { historyRetryInitialMs, historyRetryMaxMs } from '../kernel/Limits.ts'
import type { Random } from '../kernel/Random.ts'
import type { QueueSnapshot } from '../machines/PhysicalQueueMachine.ts'
import { type AddResult, type PollResult, type QueueCommand, type QueueEvent, type QueueProgress, type StartOutcome, type TimerName } from '../machines/PhysicalQueueProtocol.ts'
import { bookValues } from '../machines/Book.ts'
import { hasEligible } from '../machines/QueueBacklog.ts'
import type { QueueLimits, SubqueueState } from '../machines/QueueContext.ts'
import { startQueueMachine, stepQueueMachine } from '../machines/QueueStepper.ts'
import type { Store } from '../persistence/queues/Store.ts'
import type { History, PollerInfo } from './History.ts'

/** What a physical queue actor needs. */
export interface PhysicalQueueActorOptions {
  readonly key: QueueKey
  readonly store: Store
  readonly history: History
  readonly clock: Clock
  readonly random: Random
  /** In-process instance number; not the range id. */
  readonly generation: number
  readonly limits?: Partial<QueueLimits>
  /** Called once when the queue unloads, with its progress. */
  readonly onUnloaded?: (progress: QueueProgress) => void
  /** Called with a failure outside the error catalogue; the supervisor decides what dies. */
  readonly onDefect?: (defect: unknown) => void
  /** Observes every event and the commands it produced (traces, the simulator). */
  readonly onStep?: (event: QueueEvent, commands: ReadonlyArray<QueueCommand>) => void
  /**
   * Called when polls wait here with no task ready after a delivery ended without a start (its
   * task obsolete, or to be retried) or a poll arrived: the host may send one to another
   * partition that has one.
   */
  readonly onPollsIdle?: () => void
  /**
   * Called when tasks are ready here and no poll waits here, after a backlog page was read or a
   * poll took a task: the host may move here a poll waiting idle on another partition.
   */
  readonly onTasksIdle?: () => void
}

/** The lifecycle state, as callers see it. */
export type QueueState = 'loading' | 'owned' | 'draining' | 'unloaded'

/**
 * What a poll's caller may watch of it across the queues it waits in: how many of them have it
 * with History now. A Matching host moves only a poll that none has (MatchingHostWaiting.ts): a
 * move spent on one with History would leave an idle poll where it is.
 */
export interface PollWatch {
  delivering: number
}

// A poll waiting here or with History: how to answer it, and its engagement if watched.
interface PollEntry {
  readonly resolve: (result: PollResult) => void
  readonly poller: PollerInfo
  readonly cancelDeadline: CancelTimer
  readonly watch: PollWatch | undefined
  engaged: boolean
}

/** A running physical queue. */
export class PhysicalQueueActor {
  readonly key: QueueKey
  readonly queue: string
  readonly generation: number
  /** Resolves with the progress report when the queue unloads. */
  readonly unloaded: Promise<QueueProgress>
  readonly #options: PhysicalQueueActorOptions
  #snapshot: QueueSnapshot
  // The commands of the initial step (acquire), carried out on `start`.
  readonly #initialCommands: ReadonlyArray<QueueCommand>
  readonly #adds = new Map<string, (result: AddResult) => void>()
  readonly #polls = new Map<string, PollEntry>()
  // Polls whose caller watches their engagement (`poll`'s `watch`).
  #watched = 0
  readonly #timers = new Map<TimerName, CancelTimer>()
  readonly #retryAttempts = new Map<string, number>()
  #sequence = 0
  #resolveUnloaded!: (progress: QueueProgress) => void
  #done = false

  constructor(options: PhysicalQueueActorOptions) {
    this.#options = options
    this.key = options.key
    this.queue = encodeQueueKey(options.key)
    this.generation = options.generation
    this.unloaded = new Promise((resolve) => {
      this.#resolveUnloaded = resolve
    })
    const input = { queue: this.queue, nowMs: options.clock.now(), ...(options.limits === undefined ? {} : { limits: options.limits }) }
    const [snapshot, commands] = startQueueMachine(input)
    this.#snapshot = snapshot
    this.#initialCommands = commands
  }

  #ownedWaiters: Array<{ resolve: (rangeId: number) => void; reject: (error: MatchboxError) => void }> = []
  #readWaiters: Array<() => void> = []

  /** Starts the machine (which asks to acquire the queue). */
  start(): void {
    this.#carryOut(null, this.#initialCommands)
  }

  /** Current lifecycle state. */
  get state(): QueueState {
    return this.#snapshot.status === 'done' ? 'unloaded' : (this.#snapshot.value as QueueState)
  }

  /**
   * A read-only view of the loaded queue's memory, for `matchbox lifecycle` and tests: the range
   * it holds, the ack levels last saved by a checkpoint, each subqueue's AckWindow (read level,
   * in-memory ack level, outstanding ids, completions above the ack gap) and how many deliveries
   * are with History. After unload it shows the memory as it was at unload.
   */
  progress() {
    const context = this.#snapshot.context
    const windows = Object.fromEntries(Object.entries(context.subqueues).map(([subqueue, state]) => [Number(subqueue), state.window]))
    return { rangeId: context.rangeId, savedAckLevels: context.savedAckLevels, windows, deliveriesInFlight: context.deliveries.size }
  }

  /** Adds a task: resolves when it is matched, spooled, or refused. */
  addTask(task: Task): Promise<AddResult> {
    const requestId = this.#nextId('add')
    return new Promise((resolve) => {
      if (this.#done) return resolve({ kind: 'failed', error: this.#gone() })
      this.#adds.set(requestId, resolve)
      this.#send({ type: 'task.added', nowMs: this.#now(), requestId, task })
    })
  }

  /**
   * Waits for a task until `deadlineMs`; resolves with a started task, nothing, or a refusal.
   * The deadline counts only once the queue can answer: a poll that reaches a queue still loading
   * (or reading a backlog page) waits for that first, so even a zero-wait poll sees the tasks
   * stored when it arrived. An aborted `signal` ends the wait at once (a task already with
   * History still reaches the poll). `watch` counts, while the poll is here, whether this queue
   * has it with History (asked History to start a task for it) after each step.
   */
  poll(poller: PollerInfo, deadlineMs: number, signal?: AbortSignal, watch?: PollWatch): Promise<PollResult> {
    const pollId = this.#nextId('poll')
    return new Promise((resolve) => {
      if (this.#done) return resolve({ kind: 'failed', error: this.#gone() })
      if (signal?.aborted === true) return resolve({ kind: 'none' })
      const cancel = (): void => this.#send({ type: 'poll.cancelled', nowMs: this.#now(), pollId })
      let cancelTimer: CancelTimer | null = null
      const armDeadline = (): void => {
        if (this.#polls.has(pollId)) cancelTimer = this.#options.clock.setTimer(deadlineMs - this.#now(), cancel)
      }
      signal?.addEventListener('abort', cancel, { once: true })
      const cancelDeadline = (): void => {
        cancelTimer?.()
        signal?.removeEventListener('abort', cancel)
      }
      this.#polls.set(pollId, { resolve, poller, cancelDeadline, watch, engaged: false })
      if (watch !== undefined) this.#watched++
      const ready = this.isBacklogRead()
      this.#send({ type: 'poll.arrived', nowMs: this.#now(), pollId, identity: poller.identity })
      if (ready) armDeadline()
      else void this.backlogRead().then(armDeadline)
    })
  }

  /** Asks the queue to drain and unload; resolves with its progress. */
  drain(reason: string): Promise<QueueProgress> {
    this.#send({ type: 'drain.requested', nowMs: this.#now(), reason })
    return this.unloaded
  }

  /** True when a backlog task is read and ready to hand to a poller now (never unless owned). */
  hasReady(): boolean {
    if (this.state !== 'owned') return false
    const { subqueues, nowMs } = this.#snapshot.context
    for (const subqueue in subqueues) if (hasEligible(subqueues[subqueue] as SubqueueState, nowMs)) return true
    return false
  }

  /** How many polls wait in the queue now (none unless owned). */
  pollerCount(): number {
    return this.state === 'owned' ? this.#snapshot.context.pollers.length : 0
  }

  /** Resolves with the range id once the queue is owned; rejects if it unloads first. */
  rangeIdWhenOwned(): Promise<number> {
    if (this.state === 'owned' || this.state === 'draining') return Promise.resolve(this.#rangeId())
    if (this.#done) return Promise.reject(this.#gone())
    return new Promise((resolve, reject) => this.#ownedWaiters.push({ resolve, reject }))
  }

  /**
   * Resolves once the queue has read what its backlog held when it loaded: it is owned with no
   * page read in flight (a failed read counts as done), or it left service. A poll that picks
   * among cold queues waits for this, so a stored task counts as ready.
   */
  backlogRead(): Promise<void> {
    if (this.isBacklogRead()) return Promise.resolve()
    return new Promise((resolve) => this.#readWaiters.push(resolve))
  }

  /** True once `backlogRead()` would resolve at once. */
  isBacklogRead(): boolean {
    const state = this.state
    if (state === 'loading') return false
    return state !== 'owned' || Object.values(this.#snapshot.context.subqueues).every((subqueue) => !subqueue.readInFlight)
  }

  /** Tells the queue that rows were moved into these subqueues (a relocation). */
  backlogGrew(subqueues: ReadonlyArray<number>): void {
    this.#send({ type: 'backlog.grew', nowMs: this.#now(), subqueues })
  }

  #now(): number {
    return this.#options.clock.now()
  }

  #nextId(prefix: string): string {
    return `${this.queue}#g${this.generation}-${prefix}-${++this.#sequence}`
  }

  #gone(): MatchboxError {
    return new ShuttingDown({ component: `physical queue ${this.queue}` })
  }

  // One step: the pure transition gives the next snapshot and the commands it asks for, which
  // run only after the snapshot is in place.
  #send(event: QueueEvent): void {
    if (this.#done) return
    let commands: ReadonlyArray<QueueCommand>
    try {
      const [snapshot, stepCommands] = stepQueueMachine(this.#snapshot, event)
      this.#snapshot = snapshot
      commands = stepCommands
    } catch (defect) {
      // A failed assertion inside the machine: the step is not applied and the supervisor decides.
      this.#options.onDefect?.(defect)
      return
    }
    this.#carryOut(event, commands)
  }

  #carryOut(event: QueueEvent | null, commands: ReadonlyArray<QueueCommand>): void {
    if (event !== null) this.#options.onStep?.(event, commands)
    for (const command of commands) this.#execute(command)
    if (this.#watched > 0) this.#markEngaged()
    this.#reportIdle(event)
    if (this.#ownedWaiters.length > 0 && this.state === 'owned') {
      const rangeId = this.#rangeId()
      for (const waiter of this.#ownedWaiters.splice(0)) waiter.resolve(rangeId)
    }
    if (this.#readWaiters.length > 0 && this.isBacklogRead()) for (const resolve of this.#readWaiters.splice(0)) resolve()
  }

  // After a step: tasks ready with no poll here may draw an idle poll from another partition of
  // the host (`onTasksIdle`, any step); a poll that arrived to find nothing ready may move to one
  // (`onPollsIdle`: several polls that chose this partition for one ready task).
  #reportIdle(event: QueueEvent | null): void {
    if (event === null) return
    const { onTasksIdle, onPollsIdle } = this.#options
    if (onTasksIdle !== undefined && this.pollerCount() === 0 && this.hasReady()) onTasksIdle()
    else if (event.type === 'poll.arrived' && onPollsIdle !== undefined && this.pollerCount() > 0 && !this.hasReady()) onPollsIdle()
  }

  #fail(error: unknown): MatchboxError | undefined {
    if (isMatchboxError(error)) return error
    this.#options.onDefect?.(error)
    return undefined
  }

  // Runs a store call and turns its outcome into an event (defects go to the supervisor).
  #call<T>(operation: string, run: () => Promise<T>, ok: (value: T) => QueueEvent, failed: (error: MatchboxError) => QueueEvent): void {
    run().then(
      (value) => this.#send(ok(value)),
      (error: unknown) => {
        const known = this.#fail(error)
        if (known !== undefined) this.#send(failed(known))
      },
    )
  }

  #execute(command: QueueCommand): void {
    const { store, key } = this.#options
    switch (command.type) {
      case 'store.acquire':
        return this.#call('acquire', () => store.acquire({ key, nowMs: this.#now() }), (metadata) => ({ type: 'queue.acquired', nowMs: this.#now(), metadata }), (error) => ({ type: 'queue.acquire.failed', nowMs: this.#now(), error }))
      case 'store.append': {
        const { batchId, tasks } = command.params
        const rangeId = this.#rangeId()
        return this.#call('append', () => store.append({ key, rangeId, tasks, nowMs: this.#now() }), (result) => ({ type: 'append.completed', nowMs: this.#now(), batchId, firstTaskId: result.firstTaskId }), (error) => ({ type: 'append.failed', nowMs: this.#now(), batchId, error }))
      }
      case 'store.read': {
        const { subqueue, afterTaskId, limit } = command.params
        return this.#call('read', () => store.read({ key, subqueue, afterTaskId, limit }), (tasks) => ({ type: 'read.completed', nowMs: this.#now(), subqueue, tasks, limit }), (error) => ({ type: 'read.failed', nowMs: this.#now(), subqueue, error }))
      }
      case 'store.checkpoint': {
        const rangeId = this.#rangeId()
        return this.#call('checkpoint', () => store.checkpoint({ key, rangeId, ackLevels: command.params.ackLevels, nowMs: this.#now() }), (result) => ({ type: 'checkpoint.completed', nowMs: this.#now(), metadata: result.metadata }), (error) => ({ type: 'checkpoint.failed', nowMs: this.#now(), error }))
      }
      case 'store.checkOwnership':
        return this.#call('inspect', () => store.inspect(key), (inspection) => ({ type: 'ownership.checked', nowMs: this.#now(), rangeId: inspection?.metadata.rangeId ?? null }), (error) => ({ type: 'ownership.check.failed', nowMs: this.#now(), error }))
      case 'history.recordStart':
        return this.#recordStart(command.params)
      case 'add.reply': {
        const resolve = this.#adds.get(command.params.requestId)
        this.#adds.delete(command.params.requestId)
        return resolve?.(command.params.result)
      }
      case 'poll.reply': {
        const poll = this.#forget(command.params.pollId)
        poll?.cancelDeadline()
        return poll?.resolve(command.params.result)
      }
      case 'timer.set': {
        const { name, atMs } = command.params
        this.#timers.get(name)?.()
        this.#timers.delete(name)
        if (atMs !== null) this.#timers.set(name, this.#options.clock.setTimer(atMs - this.#now(), () => {
          this.#timers.delete(name)
          this.#send({ type: 'timer.fired', nowMs: this.#now(), name })
        }))
        return
      }
      case 'queue.unloaded':
        return this.#unload(command.params)
    }
  }

  // Each watched poll's engagement after a step: with History while a delivery of this queue holds it.
  #markEngaged(): void {
    const delivering = new Set(bookValues(this.#snapshot.context.deliveries).map((delivery) => delivery.poller.pollId))
    for (const [pollId, poll] of this.#polls) {
      if (poll.watch === undefined || poll.engaged === delivering.has(pollId)) continue
      poll.engaged = !poll.engaged
      poll.watch.delivering += poll.engaged ? 1 : -1
    }
  }

  // Removes a poll that answers, and its engagement from its watch.
  #forget(pollId: string): PollEntry | undefined {
    const poll = this.#polls.get(pollId)
    if (poll === undefined) return undefined
    this.#polls.delete(pollId)
    if (poll.watch !== undefined) {
      this.#watched--
      if (poll.engaged) poll.watch.delivering--
    }
    return poll
  }

  #rangeId(): number {
    return this.#snapshot.context.rangeId
  }

  #recordStart(params: Extract<QueueCommand, { type: 'history.recordStart' }>['params']): void {
    const { deliveryId, task, taskId, pollId } = params
    const poller = this.#polls.get(pollId)?.poller ?? { identity: params.identity, version: this.key.version }
    // A backlog task's tries are counted across deliveries; a sync match is tried once (a
    // refused one is appended, and backs off from the backlog).
    const retryKey = taskId === null ? null : `${task.priority}:${taskId}`
    const answer = (outcome: StartOutcome): void => {
      if (this.#done) return this.#answerOrphan(pollId, task, taskId, outcome)
      this.#send({ type: 'dispatch.completed', nowMs: this.#now(), deliveryId, outcome })
      if (outcome.kind !== 'started' && this.pollerCount() > 0 && !this.hasReady()) this.#options.onPollsIdle?.()
    }
    const retryable = (reason: string): StartOutcome => {
      const attempt = retryKey === null ? 1 : (this.#retryAttempts.get(retryKey) ?? 0) + 1
      if (retryKey !== null) this.#retryAttempts.set(retryKey, attempt)
      const retryDelayMs = Math.min(historyRetryMaxMs, equalJitterDelayMs(historyRetryInitialMs, attempt, this.#options.random.float(), historyRetryMaxMs))
      return { kind: 'retryable', reason, retryDelayMs }
    }
    this.#options.history.recordTaskStarted(task, poller, { key: this.key, rangeId: this.#rangeId() }).then(
      (result) => {
        if (result.kind !== 'retryable' && retryKey !== null) this.#retryAttempts.delete(retryKey)
        answer(result.kind === 'retryable' ? retryable(result.reason) : result)
      },
      (error: unknown) => answer(retryable(error instanceof Error ? error.message : String(error))),
    )
  }

  // History answered after the queue unloaded: the poll (if still waiting) still gets its task.
  #answerOrphan(pollId: string, task: Task, taskId: number | null, outcome: StartOutcome): void {
    const poll = this.#forget(pollId)
    if (poll === undefined) return
    poll.cancelDeadline()
    poll.resolve(outcome.kind === 'started' ? { kind: 'task', task, taskId, response: outcome.response } : { kind: 'none' })
  }

  /** The progress report once unloaded (also before the `unloaded` promise's callbacks run). */
  get finalProgress(): QueueProgress | null {
    return this.#finalProgress
  }

  #finalProgress: QueueProgress | null = null

  #unload(progress: QueueProgress): void {
    this.#done = true
    this.#finalProgress = progress
    for (const cancel of this.#timers.values()) cancel()
    this.#timers.clear()
    // Every add was answered by the machine; polls not waiting on History are told it is over.
    for (const [requestId, resolve] of this.#adds) {
      this.#adds.delete(requestId)
      resolve({ kind: 'failed', error: this.#gone() })
    }
    const delivering = new Set(bookValues(this.#snapshot.context.deliveries).map((delivery) => delivery.poller.pollId))
    for (const [pollId, poll] of this.#polls) {
      if (delivering.has(pollId)) continue
      this.#forget(pollId)
      poll.cancelDeadline()
      poll.resolve({ kind: 'none' })
    }
    for (const waiter of this.#ownedWaiters.splice(0)) waiter.reject(this.#gone())
    this.#options.onUnloaded?.(progress)
    this.#resolveUnloaded(progress)
  }
}
