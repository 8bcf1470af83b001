/**
 * PartitionActor — one partition of a queue family on this host (DESIGN.md §6): an Effect fiber
 * with a bounded mailbox that owns the partition's physical queues — the default queue and one
 * per deployment version — creates them on demand and supervises them.
 *
 * Routing: a task pinned to a version spools to that version's queue; unversioned and
 * auto-upgrade tasks to the default queue. A poller with a version waits on its
 * version's queue and, when that version is current in the family's user data, on the default
 * queue too; an unversioned poller waits on the default queue.
 *
 * Supervision: the default queue's death unloads the whole partition (its versioned queues
 * drain); a versioned queue's death removes only it. A queue that died of lost ownership or a
 * failed load is recreated only after a restart delay (`partitionRestartSchedule`: doubling,
 * capped), so two hosts that disagree about membership take the queue from each other at a
 * bounded rate — the range fence keeps every exchange safe. Unload is by instance: a stale generation never unloads its replacement.
 * The delay is written to the restart book the host keeps (RestartBooks.ts) the moment the queue
 * dies, so it holds for the partition's next instance even if this one is unloading meanwhile.
 * When the last queue unloads idle and no request waits on a drain, the partition unloads too:
 * the partitions of queues that came and went do not stay loaded for the host's life.
 *
 * A partition instance may carry a companion (`PartitionCompanion`): work of the embedding
 * service bound to the instance's life, made when it starts and closed when it unloads. The job
 * engine binds each job queue's dispatch to its partitions' instances so.
 *
 * The mailbox serializes routing and lifecycle decisions only; an add or a poll completes on
 * its physical queue, so batching and long polls are never blocked behind each other.
 *
 * Length: past 400 lines because the requests come in two faces (Effects, and a reply
 * callback for the Matching host's Promise face) over the one mailbox and its refusal book;
 * split apart, each face would re-read the other's state.
 */
import { Deferred, Effect, Exit, Queue, type Scope } from 'effect'
import { isMatchboxError, type MatchboxError, refusal, ShuttingDown, Unavailable } from '../domain/errors.ts'
import { encodePartitionKey, type PartitionKey, type QueueKey } from '../domain/QueueKey.ts'
import { spoolVersionOf, type Task } from '../domain/Task.ts'
import type { Clock } from '../kernel/Clock.ts'
import { partitionMailboxSizeMax } from '../kernel/Limits.ts'
import type { Random } from '../kernel/Random.ts'
import type { AddResult, PollResult, QueueCommand, QueueEvent, QueueProgress } from '../machines/PhysicalQueueProtocol.ts'
import type { QueueLimits } from '../machines/QueueContext.ts'
import type { RelocatedTask, Store } from '../persistence/queues/Store.ts'
import type { History, PollerInfo } from './History.ts'
import { PhysicalQueueActor, type PollWatch } from './PhysicalQueueActor.ts'
import { bookQueueEnd, type RestartBook } from './RestartBooks.ts'

/** What a partition actor needs. */
export interface PartitionActorOptions {
  readonly partition: PartitionKey
  /** This partition actor's instance number on its host. */
  readonly generation: number
  readonly store: Store
  readonly history: History
  readonly clock: Clock
  readonly random: Random
  readonly limits?: Partial<QueueLimits>
  /** The family's current deployment version (from user data), or null. */
  readonly currentVersion: () => string | null
  /** Called once when the partition unloads (default queue died or unload asked). */
  readonly onUnloaded?: (generation: number) => void
  /** Restart delays per queue slot, shared by successive instances of this partition. */
  readonly restarts?: RestartBook
  /** Observes every queue step (traces, the simulator). */
  readonly onStep?: (queue: PhysicalQueueActor, event: QueueEvent, commands: ReadonlyArray<QueueCommand>) => void
  /** A defect in a queue; the partition unloads that queue and reports it here. */
  readonly onDefect?: (queue: string, defect: unknown) => void
  /** Polls wait in one of its queues with no task ready after a delivery that started nothing (PhysicalQueueActor's `onPollsIdle`). */
  readonly onPollsIdle?: () => void
  /** Tasks are ready in one of its queues with no poll waiting there (PhysicalQueueActor's `onTasksIdle`). */
  readonly onTasksIdle?: () => void
  /** Makes the instance's companion when it starts (MatchingHostOptions `partitionCompanion`). */
  readonly companion?: () => PartitionCompanion | undefined
}

/**
 * Work a partition instance carries beside its physical queues, for as long as it is loaded:
 * made when the instance starts, closed once when it unloads — whatever unloads it (membership
 * moved the partition away, its default queue lost its range, it went idle) — or when its scope
 * closes. A defect in `close` is the partition's defect.
 */
export interface PartitionCompanion {
  /** The instance unloaded: called once, before its queues drain. */
  close(reason: string): void
}

/** Hears a request's answer: its value, a catalogue error, or a defect. */
export type Reply<A> = (exit: Exit.Exit<A, MatchboxError>) => void

type Message =
  | { readonly kind: 'add'; readonly task: Task; readonly reply: Reply<Added> }
  | { readonly kind: 'poll'; readonly poller: PollerInfo; readonly deadlineMs: number; readonly signal: AbortSignal | undefined; readonly reply: Reply<Polled>; readonly watch?: PollWatch }
  | { readonly kind: 'queue.unloaded'; readonly queue: PhysicalQueueActor; readonly progress: QueueProgress }
  | { readonly kind: 'unload'; readonly reason: string; readonly reply: Reply<void> }
  | { readonly kind: 'retire'; readonly version: string; readonly reply: Reply<number> }
  | { readonly kind: 'warm'; readonly versions: ReadonlyArray<string | null>; readonly deadlineMs: number; readonly signal: AbortSignal | undefined; readonly reply: Reply<void> }

/** Where a routed task went: matched to a waiting poller, or spooled with its task id. */
export type Added = Exclude<AddResult, { readonly kind: 'failed' }>

/** A poll's answer: a started task, or nothing within the deadline. */
export type Polled = Exclude<PollResult, { readonly kind: 'failed' }>

/**
 * A partition's requests for callers that are not fibers (the Matching host's Promise face): the
 * same mailbox and answers as the Effect methods, without a fiber per request. `reply` hears the
 * answer at the moment an awaiting fiber would resume: synchronously, when the answer is made.
 * A full mailbox makes the request wait for room on a fiber of its own; it is never dropped.
 */
export interface PartitionRequests {
  addTask(task: Task, reply: Reply<Added>): void
  /** `watch`, if given, counts whether the poll is with History (PhysicalQueueActor's `PollWatch`). */
  poll(poller: PollerInfo, deadlineMs: number, signal: AbortSignal | undefined, reply: Reply<Polled>, watch?: PollWatch): void
  warm(versions: ReadonlyArray<string | null>, deadlineMs: number, signal: AbortSignal | undefined, reply: Reply<void>): void
}

/**
 * A running partition. Every method is an Effect that waits for mailbox room (backpressure:
 * a full mailbox makes the caller wait, it never drops a message). Expected failures are
 * catalogue errors in the error channel (`ShuttingDown` once the partition unloads, a store's
 * `Unavailable`, `OwnershipLost`, `Overloaded`…); defects stay defects.
 */
export interface PartitionActor {
  readonly partition: PartitionKey
  readonly generation: number
  /** Routes a task to its physical queue. */
  addTask(task: Task): Effect.Effect<Added, MatchboxError>
  /** Waits for a task until `deadlineMs` (or until `signal` aborts) on the queues this poller may take from. */
  poll(poller: PollerInfo, deadlineMs: number, signal?: AbortSignal): Effect.Effect<Polled, MatchboxError>
  /** Drains every queue (final checkpoints) and stops. */
  unload(reason: string): Effect.Effect<void>
  /** Moves a retired version's backlog to the default queue; returns how many tasks moved. */
  retireVersion(version: string): Effect.Effect<number, MatchboxError>
  /**
   * Loads these queues (null = the default) if they are not loaded, and waits until each has
   * read its backlog's first pages (or left service), or until `deadlineMs` or `signal` aborts,
   * whichever comes first: a poll choosing among partitions then sees their stored tasks as ready.
   */
  warm(versions: ReadonlyArray<string | null>, deadlineMs: number, signal?: AbortSignal): Effect.Effect<void>
  /** The same requests with a callback for the answer (see PartitionRequests). */
  readonly requests: PartitionRequests
  /** True once unloaded. */
  isUnloaded(): boolean
  /** The physical queues loaded now (for inspection and tests). */
  loadedQueues(): ReadonlyArray<PhysicalQueueActor>
}

const versionSlot = (version: string | null): string => (version === null ? '' : `@${version}`)

/** Starts a partition actor in the current scope; closing the scope stops its fiber. */
export const makePartitionActor = (options: PartitionActorOptions): Effect.Effect<PartitionActor, never, Scope.Scope> =>
  Effect.gen(function* () {
    const mailbox = yield* Queue.bounded<Message>(partitionMailboxSizeMax)
    // A message that finds the mailbox full waits for room on a fiber of its own, on this
    // partition's services (its scheduler): it is never dropped.
    const runFork = Effect.runForkWith(yield* Effect.context<never>())
    const offerWhenRoom = (message: Message): void => void runFork(Queue.offer(mailbox, message))
    const queues = new Map<string, PhysicalQueueActor>()
    // Restart bookkeeping outlives this instance: the host hands the same book to the next one,
    // so a default queue's death (which unloads the partition) still waits out its delay.
    const restarts: RestartBook = options.restarts ?? new Map()
    const handled = new WeakSet<PhysicalQueueActor>()
    let queueGeneration = 0
    // Version slots whose retirement is moving their backlog (onRetire), with the last retirement
    // asked for: no queue is made for them meanwhile.
    const retiring = new Map<string, Promise<number>>()
    let unloaded = false
    // Polls held while every queue they may take from waits out a restart delay: the unload
    // answers them at once (the partition is gone from here; the poller looks again elsewhere).
    const heldPolls = new Set<() => void>()
    const name = encodePartitionKey(options.partition)
    let companion = options.companion?.()
    const closeCompanion = (reason: string): void => {
      const closing = companion
      companion = undefined
      closing?.close(reason)
    }

    const keyOf = (version: string | null): QueueKey => ({ ...options.partition, version })

    // The queue for `version`, created on demand unless it is waiting out a restart delay.
    const queueFor = (version: string | null): PhysicalQueueActor | Unavailable => {
      const slot = versionSlot(version)
      const existing = queues.get(slot)
      if (existing !== undefined && existing.state !== 'unloaded') return existing
      // A queue that died while requests sat in the mailbox ahead of its `queue.unloaded`
      // message: settle its death now, so no request resurrects it (or a dead partition).
      if (existing?.finalProgress != null) onQueueUnloaded(existing, existing.finalProgress)
      if (unloaded) return refusal(() => new Unavailable({ operation: 'route', detail: `partition ${name} unloaded`, maybeCommitted: false }))
      // A version being retired gets no new queue until its backlog has moved: one made meanwhile
      // would hold the version's range against the retirement's fence.
      if (retiring.has(slot)) return refusal(() => new Unavailable({ operation: 'load', detail: `${name}${slot} is being retired`, maybeCommitted: false }))
      const notBefore = restarts.get(slot)?.notBeforeMs ?? 0
      if (options.clock.now() < notBefore) {
        return refusal(() => new Unavailable({ operation: 'load', detail: `${name}${slot} restarts at ${notBefore}`, maybeCommitted: false, retryAtMs: notBefore }))
      }
      const queue: PhysicalQueueActor = new PhysicalQueueActor({
        key: keyOf(version),
        store: options.store,
        history: options.history,
        clock: options.clock,
        random: options.random,
        generation: ++queueGeneration,
        ...(options.limits === undefined ? {} : { limits: options.limits }),
        onUnloaded: (progress) => {
          // The restart book is written at once, not when the mailbox reaches the notice: an
          // instance that unloads meanwhile (idle, its scope closed) still leaves the back-off behind.
          bookRestart(queue, progress)
          // Never dropped: with the mailbox full, the notice waits for room on a fiber of its own.
          const notice: Message = { kind: 'queue.unloaded', queue, progress }
          if (!Queue.offerUnsafe(mailbox, notice)) offerWhenRoom(notice)
        },
        onDefect: (defect) => {
          options.onDefect?.(queue.queue, defect)
          void queue.drain('defect')
        },
        ...(options.onStep === undefined ? {} : { onStep: (event: QueueEvent, commands: ReadonlyArray<QueueCommand>) => options.onStep?.(queue, event, commands) }),
        ...(options.onPollsIdle === undefined ? {} : { onPollsIdle: options.onPollsIdle }),
        ...(options.onTasksIdle === undefined ? {} : { onTasksIdle: options.onTasksIdle }),
      })
      queues.set(slot, queue)
      queue.start()
      return queue
    }

    const refused = (): ShuttingDown => refusal(() => new ShuttingDown({ component: `partition ${name}` }))

    // A queue draining on its own (idle unload) while its partition stays: requests wait for the
    // drain to finish and go to a fresh queue rather than fail. The continuation runs outside the
    // mailbox, which is safe because every handler body here is synchronous.
    // Requests waiting so on a drain keep the partition loaded (drainWaiters), so that their retry
    // finds it rather than a refusal.
    let drainWaiters = 0
    const afterDrain = <A>(queue: PhysicalQueueActor, retry: () => Promise<A>): Promise<A> | null => {
      if (queue.state !== 'draining' || unloaded) return null
      drainWaiters++
      return queue.unloaded.then(() => {
        if (queue.finalProgress !== null) onQueueUnloaded(queue, queue.finalProgress)
        const retried = retry()
        drainWaiters--
        return retried
      })
    }

    const onAdd = (task: Task): Promise<AddResult> => {
      if (unloaded) return Promise.resolve({ kind: 'failed', error: refused() })
      const queue = queueFor(spoolVersionOf(task))
      if (queue instanceof Unavailable) return Promise.resolve({ kind: 'failed', error: queue })
      return afterDrain(queue, () => onAdd(task)) ?? queue.addTask(task)
    }

    const onPoll = (poller: PollerInfo, deadlineMs: number, signal: AbortSignal | undefined, watch?: PollWatch): Promise<PollResult> => {
      if (signal?.aborted === true) return Promise.resolve({ kind: 'none' })
      if (unloaded) return Promise.resolve({ kind: 'failed', error: refused() })
      const versions: Array<string | null> = poller.version === null ? [null] : poller.version === options.currentVersion() ? [poller.version, null] : [poller.version]
      const targets = versions.map(queueFor).filter((queue): queue is PhysicalQueueActor => !(queue instanceof Unavailable))
      if (targets.length === 0) {
        // Every queue is waiting out a restart: hold the poll until then (or its deadline) rather
        // than answer at once, which would turn a patient poller into a busy loop.
        const wakeMs = Math.min(deadlineMs, ...versions.map((version) => restarts.get(versionSlot(version))?.notBeforeMs ?? deadlineMs))
        return new Promise((resolve) => {
          const answer = (result: PollResult): void => {
            heldPolls.delete(refuseHeld)
            cancel()
            resolve(result)
          }
          const refuseHeld = (): void => answer({ kind: 'failed', error: refused() })
          const cancel = options.clock.setTimer(wakeMs - options.clock.now(), () => answer({ kind: 'none' }))
          heldPolls.add(refuseHeld)
          signal?.addEventListener('abort', () => answer({ kind: 'none' }), { once: true })
        })
      }
      // A poll that meets a queue unloading on its own has not been served: it goes to the fresh
      // queue, whose own load counts before the poll's deadline (PhysicalQueueActor.poll), so a
      // zero-wait poll still sees the tasks stored when it arrived.
      const draining = targets.find((queue) => queue.state === 'draining')
      const waited = draining === undefined ? null : afterDrain(draining, () => onPoll(poller, deadlineMs, signal, watch))
      if (waited !== null) return waited
      if (targets.length === 1) {
        // A queue that began its idle unload while this poll waited answers early (or refuses a
        // poll that arrived just behind the drain): wait out the drain and poll the fresh queue,
        // so the poller's wait holds whatever the queue does.
        const queue = targets[0] as PhysicalQueueActor
        return queue.poll(poller, deadlineMs, signal, watch).then((result) => {
          if (result.kind === 'task' || signal?.aborted === true || queue.state === 'owned' || queue.state === 'loading') return result
          if (result.kind === 'failed' && result.error._tag !== 'ShuttingDown') return result
          if (result.kind === 'none' && options.clock.now() >= deadlineMs) return result
          if (queue.state === 'unloaded' && queue.finalProgress !== null) onQueueUnloaded(queue, queue.finalProgress)
          return afterDrain(queue, () => onPoll(poller, deadlineMs, signal, watch)) ?? (unloaded ? result : onPoll(poller, deadlineMs, signal, watch))
        })
      }
      // Two queues: the first task wins, and the wait on the other ends with it — left waiting,
      // it would be matched the next task stored there, started for a poller that already has
      // its answer. A task the other queue starts for this poller in the same instant goes
      // unreceived; History's timeout delivers it again (at-least-once).
      const legs = new AbortController()
      const endLegs = (): void => legs.abort()
      signal?.addEventListener('abort', endLegs, { once: true })
      return firstTask(targets.map((queue) => queue.poll(poller, deadlineMs, legs.signal, watch))).then((result) => {
        signal?.removeEventListener('abort', endLegs)
        legs.abort()
        return result
      })
    }

    // Books a queue's end in the restart book, once per queue: a failure starts or lengthens its
    // back-off by the restart schedule's next step (RestartBooks.ts); a clean unload forgets it.
    const booked = new WeakSet<PhysicalQueueActor>()
    const bookRestart = (queue: PhysicalQueueActor, progress: QueueProgress): void => {
      if (booked.has(queue)) return
      booked.add(queue)
      const failed = progress.reason.kind === 'ownership-lost' || progress.reason.kind === 'acquire-failed'
      bookQueueEnd(restarts, versionSlot(queue.key.version), failed, options.clock.now())
    }

    const onQueueUnloaded = (queue: PhysicalQueueActor, progress: QueueProgress): void => {
      if (handled.has(queue)) return
      handled.add(queue)
      const slot = versionSlot(queue.key.version)
      if (queues.get(slot) === queue) queues.delete(slot)
      bookRestart(queue, progress)
      // The default queue's death takes the partition down; a version's only itself.
      if (queue.key.version === null && !unloaded && progress.reason.kind !== 'drained') void stop(`default queue ${progress.reason.kind}`)
      // The last queue went idle and no request waits for it: the partition holds nothing and
      // unloads too, so the partitions of queues that came and went do not stay for the host's
      // life. A request that reaches it later is refused, and the host routes it to a new instance.
      else if (!unloaded && queues.size === 0 && drainWaiters === 0 && progress.reason.kind === 'drained' && progress.reason.cause === 'idle') void stop('idle')
    }

    const stop = async (reason: string): Promise<void> => {
      if (!unloaded) {
        unloaded = true
        closeCompanion(reason)
        options.onUnloaded?.(options.generation)
        for (const refuseHeld of [...heldPolls]) refuseHeld()
      }
      await Promise.all([...queues.values()].map((queue) => queue.drain(reason)))
    }

    // Retirements of one version run one after another: each takes the retired queue's range, so a
    // second running beside the first would take it from under the first's relocations.
    const onRetire = async (version: string): Promise<number> => {
      const slot = versionSlot(version)
      const before = retiring.get(slot)
      const run = (before === undefined ? Promise.resolve() : before.then(() => undefined, () => undefined)).then(() => retire(version, slot))
      retiring.set(slot, run)
      try {
        return await run
      } finally {
        if (retiring.get(slot) === run) retiring.delete(slot)
      }
    }
    const retire = async (version: string, slot: string): Promise<number> => {
      const retired = queues.get(slot)
      await retired?.drain(`version ${version} retired`)
      if (queues.get(slot) === retired) queues.delete(slot)
      const target = queueFor(null)
      if (target instanceof Unavailable) throw target
      // Take the retired queue's fence (range +1) so no stale owner can write it while we move its rows.
      const source = await options.store.acquire({ key: keyOf(version), nowMs: options.clock.now() })
      const targetRangeId = await target.rangeIdWhenOwned()
      let moved = 0
      for (const subqueue of Object.keys(source.ackLevels).map(Number)) {
        let afterTaskId = source.ackLevels[subqueue] ?? 0
        for (;;) {
          const page = await options.store.read({ key: keyOf(version), subqueue, afterTaskId, limit: 1_000 })
          if (page.length === 0) break
          afterTaskId = (page.at(-1) as { taskId: number }).taskId
          const relocated = await relocateInto(target, subqueue, {
            from: keyOf(version),
            fromRangeId: source.rangeId,
            to: keyOf(null),
            toRangeId: targetRangeId,
            taskIds: page.map((stored) => stored.taskId),
            nowMs: options.clock.now(),
          })
          moved += relocated.length
        }
      }
      return moved
    }
    // Moves rows into the default queue and tells it at once. The queue reads a subqueue again
    // only when told it grew, and a retirement that fails later (an outage, a lost fence) never
    // gets back to tell it: rows moved so would wait unread for as long as the queue stays loaded.
    // A relocation that failed may have moved its rows too (its answer lost after the commit), so
    // only a failure that says nothing was written goes untold.
    const relocateInto = async (target: PhysicalQueueActor, subqueue: number, params: Parameters<Store['relocate']>[0]): Promise<ReadonlyArray<RelocatedTask>> => {
      try {
        const relocated = await options.store.relocate(params)
        if (relocated.length > 0) target.backlogGrew([subqueue])
        return relocated
      } catch (error) {
        if (!isMatchboxError(error) || error.maybeCommitted) target.backlogGrew([subqueue])
        throw error
      }
    }

    const onWarm = (versions: ReadonlyArray<string | null>, deadlineMs: number, signal: AbortSignal | undefined): Promise<void> => {
      if (unloaded) return Promise.resolve()
      const reading = versions.map(queueFor).filter((queue): queue is PhysicalQueueActor => !(queue instanceof Unavailable) && !queue.isBacklogRead())
      if (reading.length === 0 || signal?.aborted === true) return Promise.resolve()
      return new Promise((resolve) => {
        const done = (): void => {
          cancel()
          signal?.removeEventListener('abort', done)
          resolve()
        }
        const cancel = options.clock.setTimer(deadlineMs - options.clock.now(), done)
        signal?.addEventListener('abort', done, { once: true })
        void Promise.all(reading.map((queue) => queue.backlogRead())).then(done)
      })
    }

    // Answers a reply once the physical queue (or the lifecycle step) settles: a value, a
    // catalogue error in the error channel, or a defect that stays a defect.
    const settle = <A>(reply: Reply<A>, answer: Promise<A>): void => {
      answer.then(
        (value) => reply(Exit.succeed(value)),
        (error: unknown) => reply(isMatchboxError(error) ? Exit.fail(error) : Exit.die(error)),
      )
    }
    // A physical queue's failed outcome goes into the error channel.
    const settleOutcome = <A extends { readonly kind: string }>(reply: Reply<Exclude<A, { readonly kind: 'failed' }>>, answer: Promise<A>): void => {
      answer.then(
        (result) => reply(result.kind === 'failed' ? Exit.fail((result as unknown as { readonly error: MatchboxError }).error) : Exit.succeed(result as Exclude<A, { readonly kind: 'failed' }>)),
        (error: unknown) => reply(Exit.die(error)),
      )
    }

    const refuseMessage = (message: Message): void => {
      if (message.kind !== 'queue.unloaded') settle(message.reply as Reply<unknown>, refusalOf(message.kind))
    }
    const refusalOf = (kind: Exclude<Message['kind'], 'queue.unloaded'>): Promise<never> | Promise<void> => (kind === 'unload' || kind === 'warm' ? Promise.resolve() : Promise.reject(refused()))

    const handle = (message: Message): void => {
      switch (message.kind) {
        case 'add':
          return settleOutcome(message.reply, onAdd(message.task))
        case 'poll':
          return settleOutcome(message.reply, onPoll(message.poller, message.deadlineMs, message.signal, message.watch))
        case 'queue.unloaded':
          return onQueueUnloaded(message.queue, message.progress)
        case 'unload':
          return settle(message.reply, stop(message.reason))
        case 'retire':
          return settle(message.reply, onRetire(message.version))
        case 'warm':
          return settle(message.reply, onWarm(message.versions, message.deadlineMs, message.signal))
      }
    }

    // When the scope closes, the mailbox loop stops; anyone still waiting on it (or arriving
    // later with a stale reference) is refused instead of waiting forever. The replies still
    // owed are kept with their refusals, so the finalizer can answer each one: an ask then waits
    // on its reply alone, with no second fiber racing it against the close.
    let closed = false
    const owed = new Map<Reply<unknown>, () => Exit.Exit<unknown, MatchboxError>>()
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        closeCompanion('scope closed')
        for (const [reply, refusal] of owed) reply(refusal())
        owed.clear()
      }),
    )
    // A defect while handling one message reaches the loop as its Cause; it is reported to the
    // supervisor and the message answered with a refusal. It must not end the loop, or every
    // later request would wait forever.
    const handleSafely = (message: Message): Effect.Effect<void> =>
      Effect.sync(() => {
        if (message.kind !== 'queue.unloaded') owed.delete(message.reply as Reply<unknown>)
        handle(message)
      }).pipe(
        Effect.catchDefect((defect) =>
          Effect.sync(() => {
            options.onDefect?.(name, defect)
            refuseMessage(message)
          }),
        ),
      )
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(mailbox), handleSafely)))

    // Sends a request and waits for its answer; a closed partition refuses at once.
    const ask = <A>(make: (reply: Reply<A>) => Message, refusal: () => Exit.Exit<A, MatchboxError>): Effect.Effect<A, MatchboxError> =>
      Effect.suspend(() => {
        if (closed) return refusal()
        const answer = Deferred.makeUnsafe<A, MatchboxError>()
        const reply: Reply<A> = (exit) => Deferred.doneUnsafe(answer, exit)
        owed.set(reply as Reply<unknown>, refusal)
        return Effect.andThen(Queue.offer(mailbox, make(reply)), Deferred.await(answer))
      })
    // The same for a caller that is not a fiber: the answer goes to `reply`, once (the first
    // answer wins, as a Deferred's does).
    const send = <A>(make: (reply: Reply<A>) => Message, refusal: () => Exit.Exit<A, MatchboxError>, reply: Reply<A>): void => {
      if (closed) return reply(refusal())
      let answered = false
      const once: Reply<A> = (exit) => {
        if (answered) return
        answered = true
        reply(exit)
      }
      owed.set(once as Reply<unknown>, refusal)
      const message = make(once)
      if (!Queue.offerUnsafe(mailbox, message)) offerWhenRoom(message)
    }
    const refuse = <A>(): Exit.Exit<A, MatchboxError> => Exit.fail(refused())

    return {
      partition: options.partition,
      generation: options.generation,
      addTask: (task) => ask<Added>((reply) => ({ kind: 'add', task, reply }), refuse),
      poll: (poller, deadlineMs, signal) => ask<Polled>((reply) => ({ kind: 'poll', poller, deadlineMs, signal, reply }), refuse),
      unload: (reason) => Effect.orDie(ask<void>((reply) => ({ kind: 'unload', reason, reply }), () => Exit.void)),
      retireVersion: (version) => ask<number>((reply) => ({ kind: 'retire', version, reply }), refuse),
      warm: (versions, deadlineMs, signal) => Effect.orDie(ask<void>((reply) => ({ kind: 'warm', versions, deadlineMs, signal, reply }), () => Exit.void)),
      requests: {
        addTask: (task, reply) => send<Added>((once) => ({ kind: 'add', task, reply: once }), refuse, reply),
        poll: (poller, deadlineMs, signal, reply, watch) => send<Polled>((once) => ({ kind: 'poll', poller, deadlineMs, signal, reply: once, ...(watch === undefined ? {} : { watch }) }), refuse, reply),
        warm: (versions, deadlineMs, signal, reply) => send<void>((once) => ({ kind: 'warm', versions, deadlineMs, signal, reply: once }), () => Exit.void, reply),
      },
      isUnloaded: () => unloaded,
      loadedQueues: () => [...queues.values()],
    } satisfies PartitionActor
  })

// Resolves with the first poll that returns a task, or the last answer if none does.
function firstTask(polls: ReadonlyArray<Promise<PollResult>>): Promise<PollResult> {
  return new Promise((resolve) => {
    let remaining = polls.length
    let last: PollResult = { kind: 'none' }
    for (const poll of polls) {
      void poll.then((result) => {
        remaining--
        if (result.kind === 'task') return resolve(result)
        last = result
        if (remaining === 0) resolve(last)
      })
    }
  })
}
