/**
 * Matchbox — one embedded job engine (DESIGN.md §10): a Matching host whose History is Jobs,
 * the due-time driver, and the queue, outbox and schedule faces over a Store and a JobStore.
 *
 * Wiring: jobs of queue `q` are delivered through Matching family `q` in namespace `jobs`
 * (QueueRouting.ts: one partition by default, since claim order holds only within one
 * partition's backlog). Alone on its store an engine owns every partition. In a group
 * (`parts.group`: several engines on one PostgreSQL) membership assigns partitions; an engine
 * delivers only the queues it owns, hears due signals from the others, and forwards polls for
 * queues another engine owns (Forwarding.ts).
 *
 * Invariants: every time comes from the injected clock and every draw from the seeded Random
 * (ids, claim tokens, jitter and Matching's choices on separate forks); `close` stops workers
 * (waiting for handlers in flight), the driver, the Matching host (final checkpoints), then the
 * stores; once close begins new work refuses with `ShuttingDown`, and once the stores close every
 * operation does — not retryable (`closed: true`): an engine never reopens. `close` twice is
 * the same close.
 *
 * Does not: open stores (open.ts does), or sweep, or run schedules on its own.
 *
 * Length: past 400 lines because the engine's public interface, with the doc comments its users
 * read, sits beside the wiring it describes; the wiring's parts (the History, the Matching host,
 * the forwarding, what the group tells the engine, the engine's faces) are module functions
 * below it.
 */
import { makeMatchingHost } from '../actors/MatchingHost.ts'
import type { History } from '../actors/History.ts'
import type { MatchingHost, MatchingHostOptions } from '../actors/MatchingHostProtocol.ts'
import type { PhysicalQueueActor } from '../actors/PhysicalQueueActor.ts'
import { isMatchboxError } from '../domain/errors.ts'
import { validateName } from '../domain/QueueKey.ts'
import type { Scheduler } from 'effect/Scheduler'
import type { Clock } from '../kernel/Clock.ts'
import { partitionCountDefault } from '../kernel/Limits.ts'
import type { Random } from '../kernel/Random.ts'
import { registerSizes, sizesOf } from '../kernel/Sizes.ts'
import { type DispatchMachine, dispatchMachine } from '../machines/DispatchMachine.ts'
import type { QueueLimits } from '../machines/QueueContext.ts'
import type { QueueCommand, QueueEvent } from '../machines/PhysicalQueueProtocol.ts'
import type { JobStore } from '../persistence/jobs/JobStore.ts'
import type { Bus } from '../persistence/bus/Bus.ts'
import type { Store } from '../persistence/queues/Store.ts'
import { claimForWaitingWorkers, deliveryDemand, serveForwardedPoll } from './Claimer.ts'
import type { DispatchStepListener } from './Dispatch.ts'
import { makeDueDriver } from './DueDriver.ts'
import { makeForwarding } from './Forwarding.ts'
import { type JobQueue, makeJobQueue } from './JobQueue.ts'
import { makeJobsHistory } from './JobsHistory.ts'
import {
  outboxPrefix,
  outboxStamps,
  type QueueOptions,
  requestedPartitions,
  resolveConcurrencyPerKey,
  resolveRateLimits,
  resolveFairnessWeights,
  resolveQueueOptions,
  validateQueueName,
} from './QueueOptions.ts'
import { jobsNamespace, jobTaskType, makeQueueRouting, type RenewingMembershipView } from './QueueRouting.ts'
import { type HandOvers, makeHandOvers } from './HandOvers.ts'
import { type JobsRuntime, makeRuntime } from './Runtime.ts'
import { makeSignalCoalescer } from './SignalCoalescer.ts'
import { armNextToken, fenced } from './StoreClaims.ts'
import { describeSchedules, registerSchedule, runSchedules, type ScheduleInfo, type ScheduleOptions, unregisterSchedule } from './Schedules.ts'
import { type EventHub, type Logger, makeEventHub, type MatchboxEvent } from './Events.ts'
import { type MaintenanceOptions, startMaintenance } from './Maintenance.ts'
import { makeObservedJobStore } from './StoreHealth.ts'
import type { JsonValue } from '../domain/Json.ts'

/** An open engine. */
export interface Matchbox {
  /** This host's id (lease holder, poller identity). */
  readonly hostId: string
  /**
   * A handle on queue `name`; jobs enqueued through it carry `options` (defaults 300 s / 3 / 5 s /
   * forever). `T` types the payload for `enqueue`, `claim`, `getJob` and `work`
   * (`mb.queue<Email>('emails')`); payloads are still checked to be plain JSON at run time.
   */
  queue<T = JsonValue>(name: string, options?: QueueOptions): JobQueue<T>
  /** The outbox `name`: a queue with fixed options (visibility 60 s, 5 attempts, backoff base 5 s). */
  outbox<T = JsonValue>(name: string): JobQueue<T>
  /**
   * Registers a recurring enqueue: `@every <n>s|m|h` or 5-field cron, read in UTC or in
   * `options.timezone`; a bad spec is `InvalidSpec`, a bad name, queue, payload or zone `InvalidInput`.
   */
  schedule(name: string, spec: string, queue: string, payload: unknown, options?: ScheduleOptions): Promise<void>
  /** Removes schedule `name`; false when there was none. Jobs it already enqueued stay. */
  unschedule(name: string): Promise<boolean>
  /** Every registered schedule, by name, with its last and next occurrence. */
  listSchedules(): Promise<ReadonlyArray<ScheduleInfo>>
  /** Enqueues every due occurrence exactly once across hosts (leader-elected); returns how many. */
  runSchedules(): Promise<number>
  /**
   * Starts housekeeping on the engine's clock: `runSchedules` every `schedulesEveryMs` and
   * `sweepExpired` of `queues` every `sweepEveryMs`. Returns `stop`; `close` stops it too.
   */
  startMaintenance(options: MaintenanceOptions): () => Promise<void>
  /**
   * Calls `listener` with every event of `type` (job.started, job.completed, job.retried,
   * job.dead, store.unavailable, store.recovered); returns the unsubscribe function.
   */
  on: EventHub['on']
  /** Resolves once no due-time pass is running or requested: for tests and simulators on a ManualClock. */
  idle(): Promise<void>
  /**
   * The engines this engine sees in its group on a PostgreSQL store (itself included unless it
   * is a producer), sorted; empty for an engine alone on its store.
   */
  hosts(): ReadonlyArray<string>
  /** Stops workers (waiting for handlers in flight), delivery and Matching, then closes the stores. */
  close(): Promise<void>
}

/** What an engine is built from. The engine owns them: `close` closes them through `closeStores`. */
export interface MatchboxParts {
  readonly hostId: string
  readonly store: Store
  readonly jobStore: JobStore
  readonly clock: Clock
  readonly random: Random
  /** Closes the stores (once; a shared driver is closed once). */
  readonly closeStores: () => Promise<void>
  /** Matching queue limits (tests and simulators; default: DESIGN.md §9). */
  readonly matchingLimits?: Partial<QueueLimits>
  /** Where events and maintenance failures are logged (pino-compatible); default: nowhere. */
  readonly logger?: Logger
  /** Called with every event, before `mb.on` listeners. */
  readonly onEvent?: (event: MatchboxEvent) => void
  /** The Effect scheduler of Matching's fibers (simulators pass a synchronous one); default: Effect's. */
  readonly scheduler?: Scheduler
  /** Defects (bugs) in Matching queues and delivery passes; default: rethrown asynchronously. */
  readonly onDefect?: (where: string, defect: unknown) => void
  /** Hears every step of every Matching queue of this engine, with the commands it issued (simulators and traces). */
  readonly onQueueStep?: (queue: PhysicalQueueActor, event: QueueEvent, commands: ReadonlyArray<QueueCommand>) => void
  /**
   * The claim protocol each queue's dispatch steps (machines/DispatchMachine.ts); default: the
   * dispatch machine. Simulators pass a variant made with `provide` to plant a protocol bug.
   */
  readonly dispatchMachine?: DispatchMachine
  /** Makes the Matching host's book of waiting polls (MatchingHostOptions `waitingPolls`); default: the host's own. Simulators plant a bug with it. */
  readonly matchingWaitingPolls?: MatchingHostOptions['waitingPolls']
  /** Hears every step of every queue's dispatch machine, with the commands it asked for (simulators and traces). */
  readonly onDispatchStep?: DispatchStepListener
  /**
   * Several engines on one database: membership decides which engine owns which Matching
   * partition, and the bus carries due signals and forwarded polls. Absent: this engine is
   * alone on its store and owns every partition.
   */
  readonly group?: EngineGroup
}

/** How an engine takes part in a group of engines sharing one database. */
export interface EngineGroup {
  /** Which engine owns each partition (a non-member view for an engine that owns nothing). */
  readonly membership: RenewingMembershipView & { hosts(): ReadonlyArray<string> }
  readonly bus: Bus
  /** True when the store raises the due signal itself on every enqueue (the SQL stores do, at commit), and the hand-over's message (HandOvers.ts). */
  readonly storeSignalsDue: boolean
  /**
   * True when claims parked here register as waiters and enqueues here hand jobs to other
   * engines' waiters (HandOvers.ts): the engines of one PostgreSQL database do. Absent: false.
   */
  readonly handOverAcrossEngines?: boolean
  /** Leaves the group (stops heartbeating, removes this engine's row); called by `close` after Matching has drained. */
  readonly leave: () => Promise<void>
}

/** An engine as `open` builds it: the public face plus the moment it is ready. */
export interface MatchboxEngine extends Matchbox {
  /** Settles when the engine hears the other engines of its group (at once when alone); rejects if it cannot. */
  readonly ready: Promise<void>
}

/**
 * Builds an engine over opened stores: each part needs the ones built before it, in this order
 * (the random forks are drawn in it too, so a seed gives the same engine).
 */
export function makeMatchbox(given: MatchboxParts): MatchboxEngine {
  const events = makeEventHub({
    ...(given.logger === undefined ? {} : { logger: given.logger }),
    ...(given.onEvent === undefined ? {} : { onEvent: given.onEvent }),
  })
  // Every part of the engine sees the job store through the outage watch.
  const parts: MatchboxParts = { ...given, jobStore: makeObservedJobStore(given.jobStore, events, () => Math.floor(given.clock.now())) }
  let closed = false
  // Set once workers, delivery and Matching have stopped: from then on reads and handle
  // operations refuse too (until then they serve the handlers `close` waits for).
  let storesClosed = false
  const ids = parts.random.fork()
  const jitter = parts.random.fork()
  const tokens = parts.random.fork()
  const report = (where: string) => (defect: unknown) => {
    if (parts.onDefect !== undefined) return parts.onDefect(where, defect)
    queueMicrotask(() => {
      throw defect
    })
  }
  const group = parts.group
  let driverRef: ReturnType<typeof makeDueDriver> | null = null
  // The runtime, made after the History that calls back into it.
  let runtimeRef: JobsRuntime | null = null
  const history = historyOf(parts, tokens, (dueMs, queue) => driverRef?.notifyDue(dueMs, queue), () => runtimeRef as JobsRuntime, report('rate limit wake'))
  const routing = makeQueueRouting({
    hostId: parts.hostId,
    ...(group === undefined ? {} : { membership: group.membership }),
    userData: {
      getUserData: (namespace, family) => parts.store.getUserData({ namespace, family }),
      updateUserData: (namespace, family, expectedVersion, data) => parts.store.updateUserData({ namespace, family, expectedVersion, data, nowMs: Math.floor(parts.clock.now()) }),
    },
  })
  const matching = matchingHostOf(parts, history, routing, () => runtime)
  // The driver draws only while the store is failing, from the retry-jitter stream.
  const driver = makeDueDriver({
    jobStore: parts.jobStore,
    matching,
    clock: parts.clock,
    random: jitter,
    routing,
    // Called by passes only, which start after the runtime below exists.
    claimForWaiting: (queues, nowMs) => claimForWaitingWorkers(runtime, queues, nowMs),
    deliveryDemand: () => deliveryDemand(runtime),
    isRateLimited: (queue) => runtime.rateLimited.has(queue),
    isConcurrencyLimited: (queue) => runtime.limitedQueues.has(queue),
    headOut: (queue) => runtime.dispatch.of(queue).headOut(),
    // Jobs kept for a claimant that left, of every queue (one whose partitions moved away gets no
    // pass of its own here); then the dispatches that have held nothing a while go.
    onPass: () => {
      for (const dispatch of runtime.dispatch.all()) dispatch.expireKept()
      runtime.dispatch.prune(runtime.now())
    },
    // Jobs a refused add gave back are due now: the other engines' waiting workers may take them.
    onGivenBack: (queue, dueMs) =>
      void group?.bus.signalDue(queue, dueMs).catch((error: unknown) => {
        if (!isMatchboxError(error)) report('due signal')(error)
      }),
    onDefect: report('due-time driver'),
  })
  driverRef = driver
  const forwarding = group === undefined ? null : forwardingOf(parts, group, routing, driver, () => runtime, report('forwarding'))
  const handOvers = group?.handOverAcrossEngines === true ? makeHandOvers(() => runtime, { bus: group.bus, storeSends: group.storeSignalsDue, fenced: (queue, write, otherwise) => fenced(runtime, queue, write, otherwise), onDefect: report('hand-over') }) : null
  const slotSignals = makeSignalCoalescer((error) => {
    if (!isMatchboxError(error)) report('due signal')(error)
  })
  const runtime = makeRuntime({
    hostId: parts.hostId,
    clock: parts.clock,
    random: jitter,
    ids,
    jobStore: parts.jobStore,
    matching,
    driver,
    routing,
    forwarding,
    handOvers,
    announceDue(queue, dueMs, byEnqueue) {
      driver.notifyDue(dueMs, queue)
      // The owners hear it from the store when the store signals enqueues itself. An engine that
      // owns only some of the queue's partitions tells the others too: the owner of another
      // partition may hold the claim (its own or one forwarded to it) that waits for this job.
      if (group === undefined || routing.ownsEvery(queue) || (byEnqueue && group.storeSignalsDue)) return
      group.bus.signalDue(queue, dueMs).catch((error: unknown) => {
        if (!isMatchboxError(error)) report('due signal')(error)
      })
    },
    announceSlotFreed(queue) {
      driver.notifyDue(runtime.now(), queue)
      if (group === undefined || routing.ownsEvery(queue)) return
      slotSignals.send(queue, (dueMs) => group.bus.signalDue(queue, dueMs), runtime.now())
    },
    isClosed: () => closed,
    areStoresClosed: () => storesClosed,
    events,
    dispatchMachine: parts.dispatchMachine ?? dispatchMachine,
    ...(parts.onDispatchStep === undefined ? {} : { onDispatchStep: parts.onDispatchStep }),
  })
  runtimeRef = runtime
  const { unsubscribeMembership, subscription } = listenToGroup(parts.hostId, group, driver, forwarding, handOvers)

  const ready = subscription.then(() => {})
  // Awaited by open; an engine built directly may ignore it without an unhandled rejection.
  ready.catch(() => {})

  const engine = engineFaces({ parts, runtime, driver, matching, events, ready, subscription, group, forwarding, unsubscribeMembership, setClosed: () => {
      closed = true
      runtime.dispatch.engineClosing()
    }, setStoresClosed: () => (storesClosed = true) })
  // Its sizes (kernel/Sizes.ts): what the engine keeps per queue and per partition, for the
  // long-soak bench and the tests that check they shrink back once queues go idle.
  return registerSizes(engine, () => ({ dispatches: runtime.dispatch.size(), ...sizesOf(routing), ...sizesOf(driver), ...sizesOf(matching) }))
}

// The engine's Matching host: job queues route by the partition counts routing stores, and each
// job queue's dispatch knows the instances of its partitions loaded here (Dispatch.ts); they
// start at the first request that routes to them, after the runtime exists.
function matchingHostOf(parts: MatchboxParts, history: History, routing: ReturnType<typeof makeQueueRouting>, runtime: () => JobsRuntime): MatchingHost {
  return makeMatchingHost({
    hostId: parts.hostId,
    store: parts.store,
    history,
    clock: parts.clock,
    random: parts.random.fork(),
    ...(routing.membership === undefined ? {} : { membership: routing.membership }),
    partitionCount: (namespace, family) => (namespace === jobsNamespace ? routing.partitionCount(family) : partitionCountDefault),
    ...(parts.matchingLimits === undefined ? {} : { limits: parts.matchingLimits }),
    ...(parts.scheduler === undefined ? {} : { scheduler: parts.scheduler }),
    ...(parts.onDefect === undefined ? {} : { onDefect: parts.onDefect }),
    ...(parts.onQueueStep === undefined ? {} : { onStep: parts.onQueueStep }),
    ...(parts.matchingWaitingPolls === undefined ? {} : { waitingPolls: parts.matchingWaitingPolls }),
    partitionCompanion: (partition, generation) =>
      partition.namespace === jobsNamespace && partition.type === jobTaskType ? runtime().dispatch.partitionLoaded(partition.family, `${partition.partition}#${generation}`) : undefined,
  })
}

// The forwarding of polls between the engines of `group` (`runtime` is read only once calls come).
function forwardingOf(
  parts: MatchboxParts,
  group: EngineGroup,
  routing: ReturnType<typeof makeQueueRouting>,
  driver: ReturnType<typeof makeDueDriver>,
  runtimeOf: () => JobsRuntime,
  onDefect: (defect: unknown) => void,
): ReturnType<typeof makeForwarding> {
  return makeForwarding({
    hostId: parts.hostId,
    bus: group.bus,
    clock: parts.clock,
    random: parts.random.fork(),
    jobStore: parts.jobStore,
    routing,
    serveLocally: (queue, waitMs, lazy, identity, cancelled) => {
      const runtime = runtimeOf()
      return serveForwardedPoll(runtime, queue, runtime.now() + waitMs, lazy, identity, cancelled)
    },
    wakeLocal: (queue) => driver.wake(queue),
    // The SQL store signals the released rows itself, as it does enqueues; a release that
    // fails leaves the job to lapse at its deadline.
    release: (claim, queue) => {
      const runtime = runtimeOf()
      runtime.jobStore.release({ claims: [claim], nowMs: runtime.now() }).then(
        () => queue !== undefined && runtime.announceDue(queue, runtime.now(), true),
        () => {},
      )
    },
    onDefect,
  })
}

/** What `engineFaces` wires together: the engine's parts, built by `makeMatchbox`. */
interface EngineWiring {
  readonly parts: MatchboxParts
  readonly runtime: JobsRuntime
  readonly driver: ReturnType<typeof makeDueDriver>
  readonly matching: ReturnType<typeof makeMatchingHost>
  readonly events: EventHub
  readonly ready: Promise<void>
  readonly subscription: Promise<(() => Promise<void>) | null>
  readonly group: EngineGroup | undefined
  readonly forwarding: ReturnType<typeof makeForwarding> | null
  readonly unsubscribeMembership: (() => void) | undefined
  readonly setClosed: () => void
  readonly setStoresClosed: () => void
}

// The engine's face over its wired parts; `close` stops them in order, once.
function engineFaces(wiring: EngineWiring): MatchboxEngine {
  const { parts, runtime, driver, matching, events, ready, subscription, group, forwarding, unsubscribeMembership, setClosed, setStoresClosed } = wiring
  let closing: Promise<void> | null = null
  return {
    hostId: parts.hostId,
    ready,
    queue<T = JsonValue>(name: string, options?: QueueOptions) {
      runtime.refuseIfClosed()
      return makeJobQueue<T>(
        runtime,
        validateQueueName('name', name),
        resolveQueueOptions(options),
        requestedPartitions(options),
        resolveFairnessWeights(options),
        resolveConcurrencyPerKey(options),
        resolveRateLimits(options),
      )
    },
    outbox<T = JsonValue>(name: string) {
      runtime.refuseIfClosed()
      return makeJobQueue<T>(runtime, `${outboxPrefix}${validateName('name', name)}`, outboxStamps)
    },
    schedule: (name, spec, queue, payload, options) => registerSchedule(runtime, name, spec, queue, payload, options),
    unschedule: (name) => unregisterSchedule(runtime, name),
    listSchedules: () => describeSchedules(runtime),
    runSchedules: () => runSchedules(runtime),
    startMaintenance: (options) => startMaintenance(runtime, options, parts.logger),
    on: (type, listener) => events.on(type, listener),
    async idle() {
      runtime.refuseIfStoresClosed()
      // After a pause (a clock advanced past the membership TTL) the renewal comes first: the
      // passes that follow it are the ones that deliver this engine's queues again.
      await group?.membership.current?.()
      await driver.idle()
    },
    hosts: () => group?.membership.hosts() ?? [],
    close() {
      closing ??= (async () => {
        setClosed()
        // Workers first, while the stores still answer their handlers' acks.
        await Promise.all([...runtime.workers].map((stop) => stop()))
        forwarding?.close()
        unsubscribeMembership?.()
        await driver.close()
        // Final checkpoints while this engine still owns its partitions; then it leaves, and the
        // others take them over at once.
        await matching.close()
        await group?.leave()
        // Listening until it has left, it answers a poll forwarded here meanwhile with a refusal
        // (forwarding is closed), so that poller looks again at the view without this engine
        // instead of waiting out a poll nobody hears; a hand-over reaching it goes back to the store.
        const stopListening = await subscription.catch(() => null)
        await stopListening?.()
        setStoresClosed()
        await parts.closeStores()
      })()
      return closing
    },
  }
}

// The History role of the engine's Matching host: its deliveries claim from the job store
// (`notifyDue` hears each claim's deadline; `runtimeOf` is read only once a delivery is refused
// or stale).
function historyOf(
  parts: MatchboxParts,
  random: Random,
  notifyDue: (dueMs: number, queue: string) => void,
  runtimeOf: () => JobsRuntime,
  onDefect: (defect: unknown) => void,
): ReturnType<typeof makeJobsHistory> {
  return makeJobsHistory({
    jobStore: parts.jobStore,
    clock: parts.clock,
    random,
    onClaimed: (job) => notifyDue(job.deadlineMs as number, job.queue),
    // A delivery whose job was claimed first or is gone: the queue's dispatch decides whether a
    // pass must serve the polls still waiting.
    onStale: (queue) => runtimeOf().dispatch.of(queue).deliveryStale(),
    // A delivery refused for a rate limit: the job is due at its next token, which the driver must know.
    onLimited: (queue) => {
      armNextToken(runtimeOf(), queue).catch((error: unknown) => {
        // An unavailable store: the scan comes back.
        if (!isMatchboxError(error)) onDefect(error)
      })
    },
  })
}

// What the engine hears from its group: a change of ownership (queues this engine just took over
// may have due rows, and claims that waited for their queue to have an owner look again at once),
// due signals, forwarded polls and a gap in the bus.
function listenToGroup(
  hostId: string,
  group: EngineGroup | undefined,
  driver: ReturnType<typeof makeDueDriver>,
  forwarding: ReturnType<typeof makeForwarding> | null,
  handOvers: HandOvers | null,
): { readonly unsubscribeMembership: (() => void) | undefined; readonly subscription: Promise<(() => Promise<void>) | null> } {
  const unsubscribeMembership = group?.membership.subscribe(() => {
    driver.ownersChanged()
    driver.kick()
  })
  const subscription: Promise<(() => Promise<void>) | null> =
    group === undefined
      ? Promise.resolve(null)
      : group.bus.subscribe(hostId, {
          onDue: (queue, dueMs) => (dueMs === null ? driver.kick(queue) : driver.notifyDue(dueMs, queue)),
          onMessage: (message) => handOvers?.onMessage(message) === true || forwarding?.onMessage(message),
          onGap: () => driver.kick(),
        })
  return { unsubscribeMembership, subscription }
}
