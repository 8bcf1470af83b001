/**
 * MatchingHost — a Matching host (DESIGN.md §6): an Effect scope that routes `addTask` and
 * `poll` to partition actors for the partitions membership assigns to this host, with a
 * Promise face for everyone and a Layer for Effect users.
 *
 * Its parts: routing (MatchingHostRouting.ts), the partition instances, their fibers in the
 * host's scope and their unload bookkeeping (MatchingHostPartitions.ts), the request bodies
 * (MatchingHostRequests.ts), the claim fences (MatchingHostFence.ts); the requests, answers
 * and faces are declared in MatchingHostProtocol.ts. This file puts them together and builds
 * the two faces and the layers.
 *
 * - The Effect face puts each operation's expected failures in its error channel.
 * - The Promise face runs `addTask` and `poll` on the callback bodies directly, without a fiber
 *   per call (they are the hot path: a fiber each would cost a scheduling hop per request), and
 *   everything else on the Effect face through one runner on the host's scheduler.
 * - `close()` drains every partition (final checkpoints) and closes the host's scope.
 *
 * Does not: forward requests to other hosts (see MatchingHostRequests.ts).
 */
import { Cause, Context, Effect, Exit, Layer, Scope } from 'effect'
import { isMatchboxError, ShuttingDown } from '../domain/errors.ts'
import { validateName } from '../domain/QueueKey.ts'
import { type Clock, RealClock } from '../kernel/Clock.ts'
import { Random, seedFromEntropy } from '../kernel/Random.ts'
import { registerSizes } from '../kernel/Sizes.ts'
import type { Store } from '../persistence/queues/Store.ts'
import type { History } from './History.ts'
import { makeHostFences } from './MatchingHostFence.ts'
import { makeHostPartitions } from './MatchingHostPartitions.ts'
import type { MatchingError, MatchingHost, MatchingHostEffects, MatchingHostOptions } from './MatchingHostProtocol.ts'
import { addTaskWith, type HostRequestsContext, pollWith } from './MatchingHostRequests.ts'
import { makeHostWaitingPolls } from './MatchingHostWaiting.ts'
import { makeHostRouting } from './MatchingHostRouting.ts'
import type { Reply } from './PartitionActor.ts'

export {
  type AddTaskOutcome,
  type AddTaskRequest,
  currentVersionOf,
  type MatchingError,
  type MatchingHost,
  type MatchingHostEffects,
  type MatchingHostOptions,
  type MembershipView,
  type OwnedRange,
  type PolledTask,
  type PollRequest,
} from './MatchingHostProtocol.ts'

/** A host's parts, as its faces see them. */
interface HostParts extends HostRequestsContext {
  readonly fences: ReturnType<typeof makeHostFences>
  readonly run: <A, E>(effect: Effect.Effect<A, E>) => Promise<A>
  readonly close: Effect.Effect<void>
}

/** Starts a Matching host in a scope of its own; `close()` closes it. */
export function makeMatchingHost(options: MatchingHostOptions): MatchingHost {
  return makeMatchingHostIn(options, Scope.makeUnsafe())
}

// Starts a host whose partition fibers live in `scope`, which the host's close closes.
function makeMatchingHostIn(options: MatchingHostOptions, scope: Scope.Closeable): MatchingHost {
  const parts = makeHostParts(options, scope)
  const effects = effectFace(parts)
  return promiseFace(parts, effects)
}

// Puts a host's parts together. The fences are made after the partitions, which tell them when
// an instance left (the callback runs only once an instance unloads).
function makeHostParts(options: MatchingHostOptions, scope: Scope.Closeable): HostParts {
  const clock = options.clock ?? new RealClock()
  const random = options.random ?? Random.make(seedFromEntropy())
  const runOptions = options.scheduler === undefined ? undefined : { scheduler: options.scheduler }
  const routing = makeHostRouting(options)
  let closed = false
  const shuttingDown = (): ShuttingDown => new ShuttingDown({ component: `matching host ${options.hostId}` })
  const closedRefusal = (): ShuttingDown | null => (closed ? shuttingDown() : null)
  const waiting = options.waitingPolls?.() ?? makeHostWaitingPolls()
  const partitions = makeHostPartitions({ host: options, clock, random, routing, scope, onInstanceGone: (name) => fences.forget(name), onPollsIdle: (key) => waiting.pollsIdle(key), onTasksIdle: (key) => waiting.taskStored(key) })
  const fences = makeHostFences({ clock, routing, partitions, refusal: closedRefusal, runOptions })
  const close: Effect.Effect<void> = Effect.suspend(() => {
    if (closed) return Effect.void
    closed = true
    return Effect.promise(() => partitions.closeAll('host closing'))
  })
  return { host: options, clock, random, routing, partitions, closedRefusal, waiting, addsInFlight: new Map(), fences, run: (effect) => Effect.runPromise(effect, runOptions), close }
}

// Runs a synchronous validation: a catalogue error fails, anything else is a defect.
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

// The Effect face: the callback bodies as Effects, the rest written as Effects.
function effectFace(parts: HostParts): MatchingHostEffects {
  const { host, routing, partitions } = parts
  const refuseIfClosed: Effect.Effect<void, MatchingError> = Effect.suspend(() => {
    const refused = parts.closedRefusal()
    return refused === null ? Effect.void : Effect.fail(refused)
  })
  return {
    hostId: host.hostId,
    addTask: (request) => Effect.callback((resume) => addTaskWith(parts, request, resume)),
    poll: (request) => Effect.callback((resume) => pollWith(parts, request, resume)),
    getUserData: (namespace, family) => fromStore(() => host.store.getUserData({ namespace, family })),
    updateUserData: (namespace, family, expectedVersion, data) =>
      Effect.map(
        fromStore(() => host.store.updateUserData({ namespace, family, expectedVersion, data, nowMs: parts.clock.now() })),
        (updated) => {
          routing.rememberVersion(namespace, family, updated)
          return updated
        },
      ),
    retireVersion: (request) =>
      Effect.gen(function* () {
        yield* refuseIfClosed
        const version = yield* attempt(() => validateName('version', request.version))
        let moved = 0
        for (const route of routing.owned(request.namespace, request.family, request.type)) moved += yield* partitions.actorFor(route).retireVersion(version)
        return moved
      }),
    close: parts.close,
  }
}

// The Promise face of a request written with a callback: a failure rejects with the catalogue
// error itself, a defect with the defect. It settles as `Effect.runPromise` of the Effect face
// would, microtask for microtask (the answer as an Exit, then one `then`), so a caller that
// orders its own work around these Promises (the simulator) sees the same order either way.
const promiseOf = <A>(start: (done: Reply<A>) => void): Promise<A> =>
  new Promise<Exit.Exit<A, MatchingError>>((resolve) => start(resolve)).then((exit) => {
    if (Exit.isFailure(exit)) throw Cause.squash(exit.cause)
    return exit.value
  })

// The Promise face: adds and polls on the callback bodies, every other call on the Effect face
// through the host's one runner; a failure rejects with the catalogue error itself. Its sizes
// (kernel/Sizes.ts) count what it keeps per partition and per family.
function promiseFace(parts: HostParts, effects: MatchingHostEffects): MatchingHost {
  const { run } = parts
  return registerSizes<MatchingHost>({
    hostId: parts.host.hostId,
    effects,
    addTask: (request) => promiseOf((done) => addTaskWith(parts, request, done)),
    poll: (request) => promiseOf((done) => pollWith(parts, request, done)),
    getUserData: (namespace, family) => run(effects.getUserData(namespace, family)),
    updateUserData: (namespace, family, expectedVersion, data) => run(effects.updateUserData(namespace, family, expectedVersion, data)),
    retireVersion: (request) => run(effects.retireVersion(request)),
    ownedPartitions: (namespace, family, type) => parts.routing.owned(namespace, family, type).map((route) => route.key.partition),
    claimFence: (namespace, family, type) => parts.fences.claimFence(namespace, family, type),
    fenceRefused: (fence) => parts.fences.fenceRefused(fence),
    close: () => run(effects.close),
  }, () => ({
    ...parts.partitions.sizes(),
    fenceQueues: parts.fences.size(),
    waitingPollFamilies: parts.waiting.size(),
    ...parts.routing.sizes(),
  }))
}

/** The Matching host as an Effect service: its Effect face, with typed errors. */
export class MatchingHostService extends Context.Service<MatchingHostService, MatchingHostEffects>()('matchbox/MatchingHost') {}

/** A layer that starts a host and closes it (draining every partition) when the layer's scope ends. */
export function layerMatchingHost(options: MatchingHostOptions): Layer.Layer<MatchingHostService> {
  return Layer.effect(MatchingHostService, acquireHost(options))
}

// A host whose scope is a child of the current one (the layer's): its partition fibers live
// there, and the host closes (draining every partition) when that scope closes.
const acquireHost = (options: MatchingHostOptions): Effect.Effect<MatchingHostEffects, never, Scope.Scope> =>
  Effect.gen(function* () {
    const hostScope = yield* Scope.fork(yield* Effect.scope)
    return yield* Effect.acquireRelease(
      Effect.sync(() => makeMatchingHostIn(options, hostScope).effects),
      (host) => host.close,
    )
  })

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
      return yield* acquireHost({ ...options, store, history, ...(clock._tag === 'Some' ? { clock: clock.value } : {}) })
    }),
  )
}
