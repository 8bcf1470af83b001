/**
 * MatchingHost — a Matching host (DESIGN.md §6): an Effect scope that routes `addTask` and
 * `poll` to partition actors for the partitions membership assigns to this host, with a
 * Promise face for everyone and a Layer for Effect users.
 *
 * - A family has `partitionCount` partitions (default 4); an add goes to a random owned one
 *   (seeded Random), so tasks spread; a poll prefers an owned partition with tasks ready now,
 *   else rotates through them — an idle poll looks at the other partitions of its family.
 * - When membership moves a partition away, the host unloads it after `membershipUnloadDelayMs`
 *   if it still is not ours, by instance: a later instance of the same partition is untouched.
 *   If it is ours again by then (the view flickered), the host compares each owned queue's
 *   range with the stored one at once and unloads the instance if another host took it in the
 *   meantime, instead of serving from a stale queue until its periodic ownership check.
 * - `close()` drains every partition (final checkpoints) and closes the scope.
 *
 * Does not: forward requests to other hosts. A request for a family none of whose partitions
 * is ours fails with a retryable `Unavailable`; a router in front of the hosts picks the host.
 *
 * Length: past 400 lines because the request bodies, the Effect and Promise faces that wrap them
 * and the Layer share the routing and the unload bookkeeping; split apart, each would re-read the
 * other's state.
 */
import { getMaxListeners, setMaxListeners } from 'node:events'
import { Cause, Context, Effect, Exit, Layer, Scope } from 'effect'
import { Scheduler as SchedulerReference, type Scheduler } from 'effect/Scheduler'
import { InvalidInput, isMatchboxError, type MatchboxError, refusal, ShuttingDown, Unavailable } from '../domain/errors.ts'
import type { JsonValue } from '../domain/Json.ts'
import { encodePartitionKey, makePartitionKey, type PartitionKey, type QueueKey, type TaskType, validateName } from '../domain/QueueKey.ts'
import { makeTask, type Task, type TaskInput } from '../domain/Task.ts'
import { type Clock, RealClock } from '../kernel/Clock.ts'
import { fenceLoadWaitMs, membershipUnloadDelayMs, partitionCountDefault, routedFamiliesMax } from '../kernel/Limits.ts'
import { Random, seedFromEntropy } from '../kernel/Random.ts'
import { registerSizes } from '../kernel/Sizes.ts'
import type { QueueCommand, QueueEvent } from '../machines/PhysicalQueueProtocol.ts'
import type { QueueLimits } from '../machines/QueueContext.ts'
import type { Store, UserData } from '../persistence/queues/Store.ts'
import type { History, PollerInfo } from './History.ts'
import { makePartitionActor, type PartitionActor, type Reply } from './PartitionActor.ts'
import { makeRestartBooks } from './RestartBooks.ts'
import type { PhysicalQueueActor } from './PhysicalQueueActor.ts'

/** The membership view a host needs (see Membership.ts for static and dynamic ones). */
export interface MembershipView {
  /** The host that owns `partition`, or null when no host is known. */
  ownerOf(partition: PartitionKey): string | null
  /** Calls `listener` whenever ownership may have changed; returns an unsubscribe function. */
  subscribe(listener: () => void): () => void
}

/** What a Matching host needs. */
export interface MatchingHostOptions {
  readonly hostId: string
  readonly store: Store
  readonly history: History
  /** Default: the real clock. */
  readonly clock?: Clock
  /** Default: seeded from entropy. */
  readonly random?: Random
  /** Default: this host owns every partition. */
  readonly membership?: MembershipView
  /** Partitions per family (default 4), or a function of (namespace, family). */
  readonly partitionCount?: number | ((namespace: string, family: string) => number)
  readonly limits?: Partial<QueueLimits>
  /**
   * The Effect scheduler the host's fibers run on. Default: Effect's own (yields through the
   * event loop). The simulator passes `new MixedScheduler('sync')` so every fiber hop is a
   * microtask and one event-loop turn reaches quiescence.
   */
  readonly scheduler?: Scheduler
  readonly onStep?: (queue: PhysicalQueueActor, event: QueueEvent, commands: ReadonlyArray<QueueCommand>) => void
  /** Defects inside queues (bugs); default: rethrown asynchronously so they are not lost. */
  readonly onDefect?: (queue: string, defect: unknown) => void
}

/** A task to add. `task.createdAtMs` defaults to now. */
export interface AddTaskRequest {
  readonly namespace: string
  readonly family: string
  readonly type: TaskType
  readonly task: Omit<TaskInput, 'createdAtMs'> & { readonly createdAtMs?: number }
}

/** Where an added task went. */
export type AddTaskOutcome = { readonly kind: 'matched'; readonly partition: number } | { readonly kind: 'spooled'; readonly partition: number; readonly taskId: number }

/** A long poll. */
export interface PollRequest {
  readonly namespace: string
  readonly family: string
  readonly type: TaskType
  /** The poller's deployment version; null or absent for unversioned workers. */
  readonly version?: string | null
  readonly identity: string
  /**
   * How long to wait for a task, ms (0 … 10 min), counted once the chosen queue has loaded and
   * read its backlog: a zero-wait poll still sees the tasks stored when it arrived.
   */
  readonly waitMs: number
  /** Ends the wait early when aborted (a worker stopping); the poll then answers null. */
  readonly signal?: AbortSignal
}

/** A task started for a poller: what History answered and where the task came from. */
export interface PolledTask {
  readonly task: Task
  readonly partition: number
  /** The backlog task id, or null if the task was sync-matched without an insert. */
  readonly taskId: number | null
  readonly response: JsonValue
}

/** Every error a Matching host's operations fail with (catalogue errors, each with `_tag` for `catchTag`). */
export type MatchingError = MatchboxError

/**
 * The Effect face of a Matching host: each operation's expected failures are in its error
 * channel as tagged catalogue errors — `InvalidInput` (bad request), `Unavailable` (no owned
 * partition here, a store outage), `ShuttingDown` (the host is closing), `Overloaded`,
 * `VersionConflict` (user data) — so Effect users `catchTag` them; defects stay defects.
 */
export interface MatchingHostEffects {
  readonly hostId: string
  addTask(request: AddTaskRequest): Effect.Effect<AddTaskOutcome, MatchingError>
  poll(request: PollRequest): Effect.Effect<PolledTask | null, MatchingError>
  getUserData(namespace: string, family: string): Effect.Effect<UserData | null, MatchingError>
  updateUserData(namespace: string, family: string, expectedVersion: number, data: JsonValue): Effect.Effect<UserData, MatchingError>
  retireVersion(request: { namespace: string; family: string; type: TaskType; version: string }): Effect.Effect<number, MatchingError>
  /** Drains every partition (final checkpoints); afterwards every operation fails with `ShuttingDown`. */
  readonly close: Effect.Effect<void>
}

/** The Promise face of a Matching host. Failures reject with a MatchboxError. */
export interface MatchingHost {
  readonly hostId: string
  /** The same host as Effects, with typed errors. */
  readonly effects: MatchingHostEffects
  addTask(request: AddTaskRequest): Promise<AddTaskOutcome>
  poll(request: PollRequest): Promise<PolledTask | null>
  getUserData(namespace: string, family: string): Promise<UserData | null>
  updateUserData(namespace: string, family: string, expectedVersion: number, data: JsonValue): Promise<UserData>
  /** Moves a retired version's backlog (every owned partition) to the default queues; returns tasks moved. */
  retireVersion(request: { namespace: string; family: string; type: TaskType; version: string }): Promise<number>
  /** The partition numbers of a family that membership assigns to this host now (all of them without membership). */
  ownedPartitions(namespace: string, family: string, type: TaskType): ReadonlyArray<number>
  /**
   * The range fence for claims this host makes on the family's behalf outside Matching (the job
   * engine's claims straight from its jobs table): the default physical queue of a partition
   * this host owns — one that holds its range already, else the first that can be loaded and
   * acquired now — and the range id it holds. Null when this host owns no partition of the
   * family. Rejects (`Unavailable`, `ShuttingDown`) when none can be owned now (each waits out a
   * restart delay, or its acquire did not finish in time).
   */
  claimFence(namespace: string, family: string, type: TaskType): Promise<OwnedRange | null>
  /**
   * A claim made with `fence` was refused: another host took the queue. Unloads the partition
   * instance that held that range (a later instance is untouched), as its own ownership check
   * would; resolves once it has, so a `claimFence` after it loads the partition anew.
   */
  fenceRefused(fence: OwnedRange): Promise<void>
  close(): Promise<void>
}

/** A physical queue this host owns and the range id it holds: the fence of claims made through it. */
export interface OwnedRange {
  readonly queueKey: QueueKey
  readonly rangeId: number
}

const pollWaitMsMax = 10 * 60_000

/** A partition a request may be routed to, with its canonical name. */
interface Route {
  readonly key: PartitionKey
  readonly name: string
}

/**
 * Starts a Matching host. Past 120 lines because the routing, the partition book, the claim fence
 * cache and the request bodies share one host's state; its faces at the end only wrap them.
 */
export function makeMatchingHost(options: MatchingHostOptions): MatchingHost {
  const clock = options.clock ?? new RealClock()
  const random = options.random ?? Random.make(seedFromEntropy())
  const scope = Scope.makeUnsafe()
  const partitions = new Map<string, { actor: PartitionActor; finish: () => Promise<void> }>()
  const currentVersions = new Map<string, string | null>()
  const rotation = new Map<string, number>()
  const restartBooks = makeRestartBooks()
  let generation = 0
  let closed = false
  const runOptions = options.scheduler === undefined ? undefined : { scheduler: options.scheduler }
  const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> => Effect.runPromise(effect, runOptions)

  const countOf = (namespace: string, family: string): number => {
    const count = typeof options.partitionCount === 'function' ? options.partitionCount(namespace, family) : (options.partitionCount ?? partitionCountDefault)
    return Math.max(1, Math.floor(count))
  }
  const isOurs = (partition: PartitionKey): boolean => (options.membership?.ownerOf(partition) ?? options.hostId) === options.hostId
  const familyKey = (namespace: string, family: string) => `${namespace}\u0000${family}`

  // Every partition of a family and task type, validated and named once: each add and poll
  // routes through them. Rebuilt when the family's partition count changes. Only names already
  // valid are remembered, so a request with a bad one is refused by validation every time.
  const routeCache = new Map<string, ReadonlyArray<Route>>()
  const routesOf = (namespace: string, family: string, type: TaskType): ReadonlyArray<Route> => {
    const count = countOf(namespace, family)
    const cacheable = typeof namespace === 'string' && typeof family === 'string' && (type === 'workflow' || type === 'activity')
    const cacheKey = cacheable ? `${namespace}\u0000${family}\u0000${type}` : null
    const cached = cacheKey === null ? undefined : routeCache.get(cacheKey)
    if (cached !== undefined && cached.length === count) return cached
    const routes: Route[] = []
    for (let partition = 0; partition < count; partition++) {
      const key = makePartitionKey({ namespace, family, type, partition })
      routes.push({ key, name: encodePartitionKey(key) })
    }
    if (cacheKey !== null) {
      if (routeCache.size >= routedFamiliesMax) routeCache.clear()
      routeCache.set(cacheKey, routes)
    }
    return routes
  }
  const ownedPartitions = (namespace: string, family: string, type: TaskType): Route[] => routesOf(namespace, family, type).filter((route) => isOurs(route.key))

  const actorFor = ({ key, name }: Route): PartitionActor => {
    const existing = partitions.get(name)
    if (existing !== undefined && !existing.actor.isUnloaded()) return existing.actor
    const child = Scope.forkUnsafe(scope)
    const instance = ++generation
    const actor = Effect.runSync(
      (options.scheduler === undefined ? (effect: Effect.Effect<PartitionActor>) => effect : Effect.provideService(SchedulerReference, options.scheduler))(Scope.provide(child)(
        makePartitionActor({
          partition: key,
          generation: instance,
          restarts: restartBooks.open(name),
          store: options.store,
          history: options.history,
          clock,
          random: random.fork(),
          ...(options.limits === undefined ? {} : { limits: options.limits }),
          currentVersion: () => currentVersions.get(familyKey(key.namespace, key.family)) ?? null,
          onUnloaded: (unloadedGeneration) => {
            const entry = partitions.get(name)
            if (entry?.actor.generation === unloadedGeneration) {
              partitions.delete(name)
              // Its cached fence queue went with it: kept, it would keep the whole instance.
              fenceQueues.delete(name)
            }
            // Whatever unloaded it (its default queue died, it went idle), the instance leaves.
            void finish()
          },
          ...(options.onStep === undefined ? {} : { onStep: options.onStep }),
          onDefect: options.onDefect ?? ((queue, defect) => queueMicrotask(() => { throw defect instanceof Error ? defect : new Error(`defect in ${queue}: ${String(defect)}`) })),
        }),
      )),
    )
    // Once its queues have drained (unload answers then), the instance leaves the host's scope (a
    // child scope left open keeps it, its fibers and scheduler for the host's life) and its
    // restart book is written no more. Once, whoever asks first.
    let finishing: Promise<void> | null = null
    const finish = (): Promise<void> =>
      (finishing ??= run(actor.unload('unloaded'))
        .then(() => run(Scope.close(child, Exit.void)))
        .finally(() => restartBooks.finished(name, clock.now())))
    partitions.set(name, { actor, finish })
    return actor
  }

  // Unloads a partition instance, never a later one.
  const unloadInstance = async (name: string, instance: number, reason: string): Promise<void> => {
    const entry = partitions.get(name)
    if (entry === undefined || entry.actor.generation !== instance) return
    await run(entry.actor.unload(reason))
    if (partitions.get(name) === entry) partitions.delete(name)
    await entry.finish()
  }

  // After a flicker: true when another host acquired one of the instance's owned queues since
  // this host did. A failed read answers false: the queue's own periodic check still runs.
  const takenMeanwhile = async (actor: PartitionActor): Promise<boolean> => {
    for (const queue of actor.loadedQueues()) {
      if (queue.state !== 'owned') continue
      try {
        const [ours, stored] = await Promise.all([queue.rangeIdWhenOwned(), options.store.inspect(queue.key)])
        if (stored !== null && stored.metadata.rangeId !== ours) return true
      } catch {
        return false
      }
    }
    return false
  }

  const unsubscribe = options.membership?.subscribe(() => {
    for (const [name, entry] of partitions) {
      if (isOurs(entry.actor.partition)) continue
      const instance = entry.actor.generation
      clock.setTimer(membershipUnloadDelayMs, () => {
        if (!isOurs(entry.actor.partition)) return void unloadInstance(name, instance, 'membership moved the partition')
        void takenMeanwhile(entry.actor).then((taken) => {
          if (taken) return unloadInstance(name, instance, 'another host took the partition while membership flickered')
        })
      })
    }
  })

  const shuttingDown = (): ShuttingDown => new ShuttingDown({ component: `matching host ${options.hostId}` })
  const refuseIfClosed: Effect.Effect<void, MatchingError> = Effect.suspend(() => (closed ? Effect.fail(shuttingDown()) : Effect.void))

  const noPartition = (namespace: string, family: string, type: TaskType): Unavailable =>
    refusal(() => new Unavailable({ operation: 'route', detail: `host ${options.hostId} owns no partition of ${namespace}/${family}/${type}`, maybeCommitted: false }))

  // Runs a synchronous validation or store call: a catalogue error fails, anything else is a defect.
  const attempt = <A>(fn: () => A): Effect.Effect<A, MatchingError> =>
    Effect.suspend(() => {
      try {
        return Effect.succeed(fn())
      } catch (error) {
        return isMatchboxError(error) ? Effect.fail(error) : Effect.die(error)
      }
    })
  const fromStore = <A>(call: () => Promise<A>): Effect.Effect<A, MatchingError> =>
    Effect.tryPromise({ try: call, catch: (error) => error }).pipe(Effect.catch((error: unknown) => (isMatchboxError(error) ? Effect.fail(error) : Effect.die(error))))

  // A failure thrown by a synchronous check: a catalogue error fails, anything else is a defect.
  const exitOf = (error: unknown): Exit.Exit<never, MatchingError> => (isMatchboxError(error) ? Exit.fail(error) : Exit.die(error))
  // The catalogue error an answer failed with, if it did (not a defect).
  const errorOf = (exit: Exit.Exit<unknown, MatchingError>): MatchingError | undefined =>
    Exit.isFailure(exit) && Exit.hasFails(exit) ? (Cause.squash(exit.cause) as MatchingError) : undefined

  // addTask and poll are written once, with a callback for the answer, and both faces wrap them:
  // the Promise face without a fiber per call, the Effect face with the answer in its error
  // channel. Each continues synchronously from a partition's answer, as an awaiting fiber would.

  const addTaskWith = (request: AddTaskRequest, done: Reply<AddTaskOutcome>): void => {
    if (closed) return done(Exit.fail(shuttingDown()))
    let owned: Route[]
    let task: Task
    try {
      owned = ownedPartitions(request.namespace, request.family, request.type)
      task = makeTask({ ...request.task, createdAtMs: request.task.createdAtMs ?? clock.now() })
      if (owned.length === 0) return done(Exit.fail(noPartition(request.namespace, request.family, request.type)))
    } catch (error) {
      return done(exitOf(error))
    }
    // A partition where a poll of this host waits takes the add, so the two match at once (a
    // poll waits on one owned partition); otherwise any owned one, at random.
    const choose = (among: ReadonlyArray<Route>): Route =>
      among.find((candidate) => partitions.get(candidate.name)?.actor.loadedQueues().some((queue) => queue.hasPollers()) === true) ?? random.pick(among)
    // One retry: the partition may have been unloading when the add reached it. The retry goes to
    // another owned partition when there is one: a partition that lost its range waits out a
    // restart delay before it loads again.
    const attemptAdd = (attemptIndex: number, route: Route): void => {
      const partition = route.key.partition
      try {
        actorFor(route).requests.addTask(task, (exit) => {
          if (Exit.isSuccess(exit)) {
            const added = exit.value
            return done(Exit.succeed(added.kind === 'matched' ? { kind: 'matched', partition } : { kind: 'spooled', partition, taskId: added.taskId }))
          }
          // Refused without a write (the partition was unloading, its queue had just lost
          // ownership, or it waits out a restart delay): one fresh attempt, as a caller would retry.
          const error = errorOf(exit)
          const refusedCleanly = error?._tag === 'ShuttingDown' || error?._tag === 'OwnershipLost' || (error?._tag === 'Unavailable' && !error.maybeCommitted)
          if (!refusedCleanly || attemptIndex > 0 || closed) return done(Exit.failCause(exit.cause))
          // Let the partition settle the death that refused us before routing again.
          const others = owned.filter((candidate) => candidate.name !== route.name)
          void Promise.resolve().then(() => attemptAdd(attemptIndex + 1, others.length > 0 ? choose(others) : route))
        })
      } catch (error) {
        done(exitOf(error))
      }
    }
    try {
      attemptAdd(0, choose(owned))
    } catch (error) {
      done(exitOf(error))
    }
  }

  const pollWith = (request: PollRequest, done: Reply<PolledTask | null>): void => {
    if (closed) return done(Exit.fail(shuttingDown()))
    let identity: string
    let version: string | null
    let owned: Route[]
    try {
      identity = validateName('identity', request.identity)
      if (typeof request.waitMs !== 'number' || !Number.isFinite(request.waitMs) || request.waitMs < 0 || request.waitMs > pollWaitMsMax) {
        return done(Exit.fail(new InvalidInput({ field: 'waitMs', reason: `must be a number in 0…${pollWaitMsMax}` })))
      }
      version = request.version === undefined || request.version === null ? null : validateName('version', request.version)
      owned = ownedPartitions(request.namespace, request.family, request.type)
    } catch (error) {
      return done(exitOf(error))
    }
    if (owned.length === 0) return done(Exit.fail(noPartition(request.namespace, request.family, request.type)))
    const poller: PollerInfo = { identity, version }
    const key = familyKey(request.namespace, request.family)
    if (version === null || currentVersions.has(key)) return pollOwned(request, poller, owned, done)
    // A versioned poller needs the family's current version: read it once.
    let reading: Promise<UserData | null>
    try {
      reading = options.store.getUserData({ namespace: request.namespace, family: request.family })
    } catch (error) {
      return done(exitOf(error))
    }
    reading.then(
      (userData) => {
        // A cache of user data (a versioned poll reads it again when absent), bounded as the others.
        if (currentVersions.size >= routedFamiliesMax) currentVersions.clear()
        currentVersions.set(key, currentVersionOf(userData))
        pollOwned(request, poller, owned, done)
      },
      (error: unknown) => done(exitOf(error)),
    )
  }

  // Polls the owned partitions of a family once its current version is known.
  const pollOwned = (request: PollRequest, poller: PollerInfo, owned: ReadonlyArray<Route>, done: Reply<PolledTask | null>): void => {
    try {
      const actors = owned.map(actorFor)
      // The queues this poller may take from: its version's, and the default one when it is
      // unversioned or its version is current.
      const current = currentVersions.get(familyKey(request.namespace, request.family)) ?? null
      const { version } = poller
      const versions: ReadonlyArray<string | null> = version === null ? [null] : version === current ? [version, null] : [version]
      const relevant = (queue: PhysicalQueueActor): boolean => versions.includes(queue.key.version)
      // Load those queues in every owned partition and wait (never past the poll's deadline or
      // abort) for their first backlog pages, so a task stored in any partition counts as ready below.
      const deadlineMs = clock.now() + request.waitMs
      const cold = actors.filter((actor) => actor.loadedQueues().filter(relevant).length < versions.length)
      const pollChosen = (): void => {
        // Prefer a partition with tasks ready now; otherwise rotate (per family, type and version,
        // so interleaved pollers of different versions do not alias onto the same partitions).
        const ready = actors.find((actor) => actor.loadedQueues().some((queue) => relevant(queue) && queue.hasReady()))
        const family = `${familyKey(request.namespace, request.family)}\u0000${request.type}\u0000${version ?? ''}`
        const turn = rotation.get(family) ?? 0
        // Only a starting point for the next idle poll: forgetting it costs nothing, so the
        // counters start over past as many families as the route cache keeps.
        if (rotation.size >= routedFamiliesMax) rotation.clear()
        rotation.set(family, turn + 1)
        const chosen = ready ?? (actors[turn % actors.length] as PartitionActor)
        chosen.requests.poll(poller, deadlineMs, request.signal, (exit) => {
          if (Exit.isSuccess(exit)) {
            const polled = exit.value
            return done(Exit.succeed(polled.kind === 'task' ? { task: polled.task, partition: chosen.partition.partition, taskId: polled.taskId, response: polled.response } : null))
          }
          // A poll that found its partition unloading or its queue taken is simply empty: nothing
          // was started for it, and the caller polls again.
          const error = errorOf(exit)
          done(error !== undefined && emptyHanded.includes(error._tag) ? Exit.succeed(null) : Exit.failCause(exit.cause))
        })
      }
      if (cold.length === 0) return pollChosen()
      // The poll goes on once every warm-up answered; a warm-up never fails but may die. Each
      // warm-up listens on the poll's signal until it answers: one per partition, not a leak.
      if (request.signal !== undefined) setMaxListeners(Math.max(getMaxListeners(request.signal), cold.length + 10), request.signal)
      let waiting = cold.length
      let failed = false
      for (const actor of cold) {
        actor.requests.warm(versions, deadlineMs, request.signal, (exit) => {
          if (failed) return
          if (Exit.isFailure(exit)) {
            failed = true
            return done(Exit.die(Cause.squash(exit.cause)))
          }
          if (--waiting > 0) return
          try {
            pollChosen()
          } catch (error) {
            done(exitOf(error))
          }
        })
      }
    } catch (error) {
      done(exitOf(error))
    }
  }
  const emptyHanded: ReadonlyArray<string> = ['ShuttingDown', 'Unavailable', 'OwnershipLost']

  // The Promise face of a request written with a callback: a failure rejects with the catalogue
  // error itself, a defect with the defect. It settles as `Effect.runPromise` of the Effect face
  // would, microtask for microtask (the answer as an Exit, then one `then`), so a caller that
  // orders its own work around these Promises (the simulator) sees the same order either way.
  const promiseOf = <A>(start: (done: Reply<A>) => void): Promise<A> =>
    new Promise<Exit.Exit<A, MatchingError>>((resolve) => start(resolve)).then((exit) => {
      if (Exit.isFailure(exit)) throw Cause.squash(exit.cause)
      return exit.value
    })

  // The default queue of each owned partition a fence was read from, by partition name: a fence
  // is read from it without a mailbox round trip while it stays owned.
  const fenceQueues = new Map<string, PhysicalQueueActor>()
  const defaultQueueOf = (actor: PartitionActor): PhysicalQueueActor | undefined => actor.loadedQueues().find((queue) => queue.key.version === null && queue.state !== 'unloaded')
  // A draining queue (an idle unload) still holds its range until another host acquires it.
  const holdsRange = (queue: PhysicalQueueActor | undefined): queue is PhysicalQueueActor => queue?.state === 'owned' || queue?.state === 'draining'
  const cachedFenceQueue = (route: Route): PhysicalQueueActor | undefined => {
    const cached = fenceQueues.get(route.name)
    return holdsRange(cached) && partitions.get(route.name)?.actor.isUnloaded() === false ? cached : undefined
  }
  // Loads `route`'s partition if its default queue does not hold its range, waiting a bounded
  // time for the acquire, so a claim never goes out long after it was asked for, on a view that
  // may have moved on. Undefined when it does not hold it then (a restart delay, a slow acquire).
  const loadFenceQueue = async (route: Route): Promise<PhysicalQueueActor | undefined> => {
    const actor = actorFor(route)
    if (!holdsRange(defaultQueueOf(actor))) await run(actor.warm([null], clock.now() + fenceLoadWaitMs))
    const queue = defaultQueueOf(actor)
    if (!holdsRange(queue)) return undefined
    if (fenceQueues.size >= routedFamiliesMax) fenceQueues.clear()
    fenceQueues.set(route.name, queue)
    return queue
  }
  // Any partition of the family this host owns fences a claim (the jobs table has no partition
  // column): one whose fence is at hand first, else each in turn, so one partition waiting out a
  // restart delay does not stop this host's claims while it owns another.
  const claimFence = async (namespace: string, family: string, type: TaskType): Promise<OwnedRange | null> => {
    if (closed) throw shuttingDown()
    const routes = ownedPartitions(namespace, family, type)
    if (routes.length === 0) return null
    let queue: PhysicalQueueActor | undefined
    for (const route of routes) if ((queue = cachedFenceQueue(route)) !== undefined) break
    for (const route of routes) if (queue === undefined) queue = await loadFenceQueue(route)
    if (queue === undefined) {
      throw new Unavailable({ operation: 'claim fence', detail: `no partition of ${family} this host owns holds its range (yet)`, maybeCommitted: false })
    }
    return { queueKey: queue.key, rangeId: await queue.rangeIdWhenOwned() }
  }
  const fenceRefused = async (fence: OwnedRange): Promise<void> => {
    const name = encodePartitionKey(fence.queueKey)
    const entry = partitions.get(name)
    fenceQueues.delete(name)
    const queue = entry === undefined ? undefined : defaultQueueOf(entry.actor)
    if (entry === undefined || queue === undefined || queue.state !== 'owned') return
    const rangeId = await queue.rangeIdWhenOwned().catch(() => null)
    if (rangeId === fence.rangeId) await unloadInstance(name, entry.actor.generation, 'a fenced claim found the range taken').catch(() => {})
  }

  const retireVersion = (request: { namespace: string; family: string; type: TaskType; version: string }): Effect.Effect<number, MatchingError> =>
    Effect.gen(function* () {
      yield* refuseIfClosed
      const version = yield* attempt(() => validateName('version', request.version))
      let moved = 0
      for (const route of ownedPartitions(request.namespace, request.family, request.type)) moved += yield* actorFor(route).retireVersion(version)
      return moved
    })

  const close: Effect.Effect<void> = Effect.suspend(() => {
    if (closed) return Effect.void
    closed = true
    unsubscribe?.()
    return Effect.promise(async () => {
      await Promise.all([...partitions.entries()].map(([name, entry]) => unloadInstance(name, entry.actor.generation, 'host closing')))
      await run(Scope.close(scope, Exit.void))
    })
  })

  const effects: MatchingHostEffects = {
    hostId: options.hostId,
    addTask: (request) => Effect.callback<AddTaskOutcome, MatchingError>((resume) => addTaskWith(request, resume)),
    poll: (request) => Effect.callback<PolledTask | null, MatchingError>((resume) => pollWith(request, resume)),
    getUserData: (namespace, family) => fromStore(() => options.store.getUserData({ namespace, family })),
    updateUserData: (namespace, family, expectedVersion, data) =>
      Effect.map(
        fromStore(() => options.store.updateUserData({ namespace, family, expectedVersion, data, nowMs: clock.now() })),
        (updated) => {
          if (currentVersions.size >= routedFamiliesMax) currentVersions.clear()
          currentVersions.set(familyKey(namespace, family), currentVersionOf(updated))
          return updated
        },
      ),
    retireVersion,
    close,
  }

  // The Promise face: every call runs the Effect face on this host's one runner (its scheduler);
  // a failure rejects with the catalogue error itself. Its sizes (kernel/Sizes.ts) count what it
  // keeps per partition and per family.
  return registerSizes<MatchingHost>({
    hostId: options.hostId,
    effects,
    addTask: (request) => promiseOf((done) => addTaskWith(request, done)),
    poll: (request) => promiseOf((done) => pollWith(request, done)),
    getUserData: (namespace, family) => run(effects.getUserData(namespace, family)),
    updateUserData: (namespace, family, expectedVersion, data) => run(effects.updateUserData(namespace, family, expectedVersion, data)),
    retireVersion: (request) => run(retireVersion(request)),
    ownedPartitions(namespace, family, type) {
      return ownedPartitions(namespace, family, type).map((route) => route.key.partition)
    },
    claimFence,
    fenceRefused,
    close: () => run(close),
  }, () => ({
    partitionsLoaded: partitions.size,
    restartBooks: restartBooks.size(),
    fenceQueues: fenceQueues.size,
    routedFamilies: routeCache.size,
    pollRotations: rotation.size,
    currentVersions: currentVersions.size,
  }))
}

/** The current deployment version recorded in a family's user data (`{ currentVersion }`), if any. */
export function currentVersionOf(userData: UserData | null): string | null {
  const data = userData?.data
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return null
  const current = (data as { readonly [key: string]: JsonValue }).currentVersion
  return typeof current === 'string' ? current : null
}

/** The Matching host as an Effect service: its Effect face, with typed errors. */
export class MatchingHostService extends Context.Service<MatchingHostService, MatchingHostEffects>()('matchbox/MatchingHost') {}

/** A layer that starts a host and closes it (draining every partition) when the layer's scope ends. */
export function layerMatchingHost(options: MatchingHostOptions): Layer.Layer<MatchingHostService> {
  return Layer.effect(
    MatchingHostService,
    Effect.acquireRelease(
      Effect.sync(() => makeMatchingHost(options).effects),
      (host) => host.close,
    ),
  )
}

/** The task store a Matching host persists to, as a service an Effect program provides (a layer of its own). */
export class MatchingStore extends Context.Service<MatchingStore, Store>()('matchbox/MatchingStore') {}

/** The History a Matching host records task starts with, as a service. */
export class MatchingHistory extends Context.Service<MatchingHistory, History>()('matchbox/MatchingHistory') {}

/** The clock a Matching host reads and sets its timers on, as a service (default when absent: the real clock). */
export class MatchingClock extends Context.Service<MatchingClock, Clock>()('matchbox/MatchingClock') {}

/**
 * A host layer whose store and History come from the context, as an Effect user wires its own
 * services: `layerMatchingHostWith({ hostId }).pipe(Layer.provide(myStoreLayer), …)`. The clock
 * is taken from `MatchingClock` when the context has one. The host closes with the layer's scope.
 */
export function layerMatchingHostWith(options: Omit<MatchingHostOptions, 'store' | 'history' | 'clock'>): Layer.Layer<MatchingHostService, never, MatchingStore | MatchingHistory> {
  return Layer.effect(
    MatchingHostService,
    Effect.gen(function* () {
      const store = yield* MatchingStore
      const history = yield* MatchingHistory
      const clock = yield* Effect.serviceOption(MatchingClock)
      return yield* Effect.acquireRelease(
        Effect.sync(() => makeMatchingHost({ ...options, store, history, ...(clock._tag === 'Some' ? { clock: clock.value } : {}) }).effects),
        (host) => host.close,
      )
    }),
  )
}
