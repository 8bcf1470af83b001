/**
 * JobsHost — one simulated process running the real job engine (`makeMatchbox`) as one engine
 * of a group (DESIGN.md §6): its Matching Store, its JobStore, its membership table and its bus
 * all gated (SimStore.ts, SimJobStore.ts, SimMembershipStore.ts, SimBus.ts), its timers — the
 * membership heartbeats among them — on a private view of the world's clock (HostClock.ts),
 * Matching's fibers on a synchronous scheduler so one event-loop turn reaches quiescence.
 *
 * A worker joins dynamic membership and owns the partitions it is given; a producer watches
 * membership (`member: false`) and owns nothing. Every queue is opened with the seed's partition
 * count. A worker may also leave the group gracefully (its engine's `close()`) and come back
 * later as a new process, its `work` loops starting when the world says. Crashing the host drops
 * its parked I/O and timers (so its heartbeats stop and its row expires), cuts its bus
 * subscriptions, and abandons the engine and every handle its clients held; restarting builds a
 * fresh engine and membership over the same shared stores and bus, as a new process would.
 *
 * Records, for the ownership checker, what its own membership view says about a job's queue at
 * the moment its Matching hands the job's task to a poll (History's recordStart), and when that
 * view last took the queue's last partition away; a claim takes the oldest view recorded for its
 * job. Reports every due signal its engine sends twice, for the give-back checker: as the
 * engine sends it, and as it reaches the world's shared bus (below the gate, and below any bus
 * bug the mutation menu plants there).
 *
 * Every worker host runs `work` loops on every queue (the seed's `workLoops` as their
 * concurrency, its `workBatch` as their `batch`), whose handler takes the virtual time the world
 * draws for it (on this host's clock, so a crash leaves it running forever, as a dead process
 * does) and then fails when the world says so (it is retried on the queue's curve). Each
 * handler's start and end are reported (with the claim token it was given) to the world's
 * handler checkers. The world may `stopWork` a queue's loops at any moment and start them
 * again; they also stop with the engine. Clients' claims and the loops' share the host's
 * Matching polls.
 *
 * Does not: choose what clients do (JobsWorld.ts) or judge anything.
 */
import type { PhysicalQueueActor } from '../../src/actors/PhysicalQueueActor.ts'
import type { HostWaitingPolls } from '../../src/actors/MatchingHostWaiting.ts'
import { MixedScheduler } from 'effect/Scheduler'
import { type DynamicMembership, makeDynamicMembership } from '../../src/actors/Membership.ts'
import { isMatchboxError } from '../../src/domain/errors.ts'
import { makePartitionKey } from '../../src/domain/QueueKey.ts'
import type { JobHandle } from '../../src/jobs/JobHandle.ts'
import type { JobQueue } from '../../src/jobs/JobQueue.ts'
import { type EngineGroup, type Matchbox, makeMatchbox } from '../../src/jobs/Matchbox.ts'
import { jobsNamespace, jobTaskType } from '../../src/jobs/QueueRouting.ts'
import type { ManualClock } from '../../src/kernel/Clock.ts'
import type { Random } from '../../src/kernel/Random.ts'
import type { Bus } from '../../src/persistence/bus/Bus.ts'
import type { JobStore } from '../../src/persistence/jobs/JobStore.ts'
import type { DispatchMachine } from '../../src/machines/DispatchMachine.ts'
import type { DispatchCommand, DispatchEvent } from '../../src/machines/DispatchProtocol.ts'
import type { MembershipStore } from '../../src/persistence/membership/MembershipStore.ts'
import type { Store } from '../../src/persistence/queues/Store.ts'
import type { BoundaryListener } from '../core/Boundary.ts'
import { HostClock } from '../core/HostClock.ts'
import type { IoGate } from '../core/IoGate.ts'
import type { ClaimOwnership, JobBoundaryListener } from './JobBoundary.ts'
import type { HostRole, SimQueueOptions } from './JobsSwarm.ts'
import { makeSimBus, type SimBus } from './SimBus.ts'
import { makeSimJobStore } from './SimJobStore.ts'
import type { SimRowLocks } from './SimRowLocks.ts'
import { makeSimMembershipStore } from './SimMembershipStore.ts'
import { InstanceTags, makeSimStore } from '../core/SimStore.ts'

/** Everything a simulated engine host is made from. */
export interface JobsHostDeps {
  readonly hostId: string
  /** This host's connection to the shared database (shared objects on memory). */
  readonly store: Store
  readonly jobStore: JobStore
  /** The group's membership table and bus, shared by every host of the world. */
  readonly membershipStore: MembershipStore
  readonly bus: Bus
  readonly role: HostRole
  readonly gate: IoGate
  readonly clock: ManualClock
  /** Each incarnation's engine draws its own fork (ids, tokens, jitter). */
  readonly random: Random
  readonly queues: Readonly<Record<string, SimQueueOptions>>
  readonly recordStore: BoundaryListener
  readonly recordJobs: JobBoundaryListener
  readonly queueOf: (id: string) => string | undefined
  /** `work` loops per queue on a worker host (0: none). */
  readonly workLoops: number
  /** Their `batch` option (claims ahead into a local queue), or null for none. */
  readonly workBatch: number | null
  /** Whether a `work` handler throws this time (the world's decision). */
  readonly handlerFails: () => boolean
  /** How long a `work` handler of `queue` runs this time, virtual ms (the world's decision). */
  readonly handlerMs: (queue: string) => number
  /** Handlers return as soon as their `job.signal` aborts (else they run their time out). */
  readonly honourSignal: boolean
  /** A handler of this host's loops started (`true`) or returned (`false`) for a claim. */
  readonly onHandler: (event: HandlerEvent) => void
  /** Wraps the bus this host's engine sends on (a planted bug). */
  readonly wrapBus?: (hostId: string, bus: Bus) => Bus
  /** Wraps the job store this host's engine sees, above the gate (a planted bug). */
  readonly wrapEngineJobStore?: (hostId: string, store: JobStore) => JobStore
  /** The dispatch machine the engine runs its queues' claims by (a planted bug); absent: the real one. */
  readonly dispatchMachine?: DispatchMachine
  /** Makes the Matching host's book of waiting polls (a planted bug); absent: the real one. */
  readonly matchingWaitingPolls?: () => HostWaitingPolls
  /**
   * Hears every due signal this host's engine sends, as it sends it (`sent`, above the gate), and
   * as it reaches the world's shared bus (`reached`, below the gate and any planted bus bug): GiveBackChecker.ts.
   */
  readonly onDueSignal?: (hostId: string, queue: string, dueMs: number | null, at: 'sent' | 'reached') => void
  /** Hears every step of this incarnation's dispatch machines (DispatchChecker.ts). */
  readonly onDispatchStep?: (incarnation: number, queue: string, event: DispatchEvent, commands: ReadonlyArray<DispatchCommand>, dispatch: number) => void
  /** Hears each step of every physical queue of this host's engine (the queue's actor, after the step). */
  readonly onQueueStep?: (incarnation: number, queue: PhysicalQueueActor) => void
  /** Wraps the membership view the engine routes by (a planted bug); the host keeps judging by its own. */
  readonly wrapMembership?: (hostId: string, membership: EngineGroup['membership']) => EngineGroup['membership']
  /** Claims register as waiters and enqueues hand jobs to other engines' waiters (JobsSwarm.ts `handOvers`). */
  readonly handOvers: boolean
  /** The world's row-lock windows, which this host's head statements pass through (SimRowLocks.ts); absent: none. */
  readonly rowLocks?: SimRowLocks
  /** A worker's `work` loops wait for `startAllWork` instead of starting with the engine (a process that joins once healed). */
  readonly loopsLater?: boolean
  /** Hears every change of this host's membership view (for the trace). */
  readonly onView: (hostId: string, hosts: ReadonlyArray<string>) => void
  readonly onDefect: (hostId: string, where: string, defect: unknown) => void
}

/** A work loop's handler starting or returning, for the handler checkers. */
export interface HandlerEvent {
  readonly hostId: string
  readonly incarnation: number
  readonly queue: string
  readonly id: string
  readonly claimToken: string
  readonly started: boolean
  /** The handler's `job.signal` (aborted once the engine learned the claim is gone). */
  readonly signal: AbortSignal
  /** The loop claims ahead into a local queue (`batch`): a handler may start well after its claim was answered. */
  readonly batched: boolean
}

// `bus`, telling `hear` of every due signal sent through it before passing it on.
function hearingDue(bus: Bus, hear: (queue: string, dueMs: number | null) => void): Bus {
  return {
    kind: bus.kind,
    signalDue: (queue, dueMs) => {
      hear(queue, dueMs)
      return bus.signalDue(queue, dueMs)
    },
    send: (to, message) => bus.send(to, message),
    subscribe: (subscriber, handlers) => bus.subscribe(subscriber, handlers),
    close: () => bus.close(),
  }
}

/** A simulated engine host, alive or crashed. */
export class JobsHost {
  readonly id: string
  readonly role: HostRole
  alive = true
  /** True once the process left the group gracefully (`leave`), until it comes back (`restart`). */
  left = false
  /** Bumped on every crash and restart: answers to an earlier incarnation are ignored. */
  incarnation = 0
  mb: Matchbox
  /** This incarnation's handles, by queue name. */
  queues = new Map<string, JobQueue>()
  #clock: HostClock
  // Each queue's running `work` loops' stop, or null while stopped (or stopping).
  #stops = new Map<string, (() => Promise<void>) | null>()
  #bus: SimBus | null = null
  #membership: DynamicMembership | null = null
  // Per queue: when this incarnation's view last took the queue's last owned partition away.
  #lostAtMs = new Map<string, number>()
  // Per job id: this incarnation's views at each hand-over of the job's task, oldest first.
  #handedOut = new Map<string, ClaimOwnership[]>()
  readonly #deps: JobsHostDeps

  constructor(deps: JobsHostDeps) {
    this.#deps = deps
    this.id = deps.hostId
    this.role = deps.role
    this.#clock = new HostClock(deps.clock)
    this.mb = this.#start(deps.loopsLater !== true)
  }

  /** The hosts this incarnation's membership view shows now. */
  view(): ReadonlyArray<string> {
    return this.#membership?.hosts() ?? []
  }

  /** The partitions of `queue` this incarnation's view gives it now. */
  ownedPartitions(queue: string): number[] {
    const membership = this.#membership
    const partitions = this.#deps.queues[queue]?.partitions ?? 1
    const owned: number[] = []
    if (membership === null) return owned
    for (let partition = 0; partition < partitions; partition++) {
      if (membership.ownerOf(makePartitionKey({ namespace: jobsNamespace, family: queue, type: jobTaskType, partition })) === this.id) owned.push(partition)
    }
    return owned
  }

  #ownershipOf(id: string): ClaimOwnership | null {
    const views = this.#handedOut.get(id)
    const handedOut = views?.shift()
    if (views?.length === 0) this.#handedOut.delete(id)
    return handedOut ?? this.#viewOf(id)
  }

  #viewOf(id: string): ClaimOwnership | null {
    const queue = this.#deps.queueOf(id)
    return queue === undefined ? null : this.#viewOfQueue(queue)
  }

  #viewOfQueue(queue: string): ClaimOwnership {
    return { atMs: this.#deps.clock.now(), timersOverdueSinceMs: this.#clock.overdueSinceMs(), queue, partitions: this.#deps.queues[queue]?.partitions ?? 1, owned: this.ownedPartitions(queue), lostAtMs: this.#lostAtMs.get(queue) ?? null, member: this.role === 'worker', seesNobody: (this.#membership?.hosts().length ?? 0) === 0 }
  }

  /** This incarnation's handle on `queue`. */
  queue(name: string): JobQueue {
    const queue = this.queues.get(name)
    if (queue === undefined) throw new Error(`${this.id} has no queue ${name}`)
    return queue
  }

  #start(loops: boolean): Matchbox {
    const deps = this.#deps
    const clock = deps.clock
    const incarnation = this.incarnation
    const onDue = deps.onDueSignal
    const shared = onDue === undefined ? deps.bus : hearingDue(deps.bus, (queue, dueMs) => onDue(deps.hostId, queue, dueMs, 'reached'))
    const bus = makeSimBus(deps.hostId, deps.wrapBus?.(deps.hostId, shared) ?? shared, deps.gate)
    const engineBus = onDue === undefined ? bus : hearingDue(bus, (queue, dueMs) => onDue(deps.hostId, queue, dueMs, 'sent'))
    const membership = makeDynamicMembership({
      hostId: deps.hostId,
      store: makeSimMembershipStore(deps.hostId, deps.membershipStore, deps.gate),
      clock: this.#clock,
      member: this.role === 'worker',
    })
    this.#bus = bus
    this.#membership = membership
    this.#lostAtMs = new Map()
    this.#handedOut = new Map()
    const queueNames = Object.keys(deps.queues)
    let owning = new Set<string>()
    membership.subscribe(() => {
      const now = new Set(queueNames.filter((queue) => this.ownedPartitions(queue).length > 0))
      for (const queue of owning) if (!now.has(queue)) this.#lostAtMs.set(queue, clock.now())
      owning = now
      deps.onView(deps.hostId, membership.hosts())
    })
    const mb = makeMatchbox({
      hostId: deps.hostId,
      store: makeSimStore(deps.hostId, new InstanceTags(deps.hostId, this.incarnation, false), deps.store, deps.gate, deps.recordStore),
      jobStore: this.#engineJobStore(),
      clock: this.#clock,
      random: deps.random.fork(),
      scheduler: new MixedScheduler('sync'),
      ...(deps.dispatchMachine === undefined ? {} : { dispatchMachine: deps.dispatchMachine }),
      ...(deps.matchingWaitingPolls === undefined ? {} : { matchingWaitingPolls: deps.matchingWaitingPolls }),
      onDefect: (where, defect) => deps.onDefect(deps.hostId, where, defect),
      ...(deps.onDispatchStep === undefined ? {} : { onDispatchStep: (queue: string, event: DispatchEvent, commands: ReadonlyArray<DispatchCommand>, dispatch: number) => deps.onDispatchStep?.(incarnation, queue, event, commands, dispatch) }),
      onQueueStep: (queue, _event, commands) => {
        deps.onQueueStep?.(incarnation, queue)
        for (const command of commands) {
          if (command.type !== 'history.recordStart') continue
          const view = this.#viewOf(command.params.task.jobId)
          if (view === null) continue
          const views = this.#handedOut.get(command.params.task.jobId)
          if (views === undefined) this.#handedOut.set(command.params.task.jobId, [view])
          else views.push(view)
        }
      },
      // The simulated store never raises due signals itself: the engine sends them on the bus.
      group: { membership: deps.wrapMembership?.(deps.hostId, membership) ?? membership, bus: engineBus, storeSignalsDue: false, handOverAcrossEngines: deps.handOvers, leave: () => membership.close() },
      // The world closes the shared stores and bus once, after every engine.
      closeStores: async () => {},
    })
    this.queues = new Map(Object.entries(deps.queues).map(([name, options]) => [name, mb.queue(name, options)]))
    this.#stops = new Map()
    if (loops) this.startAllWork()
    return mb
  }

  /** Starts the `work` loops of every queue whose loops are not running (a worker's; none on a producer). */
  startAllWork(): void {
    if (this.role !== 'worker' || this.#deps.workLoops === 0) return
    for (const queue of this.queues.keys()) if (!this.working(queue)) this.startWork(queue)
  }

  #engineJobStore(): JobStore {
    const deps = this.#deps
    const clock = deps.clock
    const gated = makeSimJobStore(deps.jobStore, { hostId: deps.hostId, gate: deps.gate, now: () => clock.now(), record: deps.recordJobs, queueOf: deps.queueOf, ownershipOf: (id) => this.#ownershipOf(id), viewOf: (queue) => this.#viewOfQueue(queue), ...(deps.rowLocks === undefined ? {} : { rowLocks: deps.rowLocks }) })
    return deps.wrapEngineJobStore?.(deps.hostId, gated) ?? gated
  }

  /** Whether this incarnation's engine still hears bus messages (an engine that left stops before its membership row goes). */
  listening(): boolean {
    return this.#bus?.listening() ?? false
  }

  /** Whether `queue`'s `work` loops run on this incarnation (not stopped, not stopping). */
  working(queue: string): boolean {
    return this.alive && (this.#stops.get(queue) ?? null) !== null
  }

  /** Starts `queue`'s `work` loops (a worker whose loops are not running; none once the process left). */
  startWork(queue: string): void {
    if (!this.alive) return
    const deps = this.#deps
    const incarnation = this.incarnation
    const handle = this.queue(queue)
    const report = (job: JobHandle, started: boolean) => deps.onHandler({ hostId: this.id, incarnation, queue, id: job.id, claimToken: job.claimToken, started, signal: job.signal, batched: deps.workBatch !== null })
    const stop = handle.work(
      async (job) => {
        report(job, true)
        const ms = deps.handlerMs(queue)
        if (ms > 0) await this.#handlerRuns(ms, deps.honourSignal ? job.signal : null)
        report(job, false)
        if (deps.handlerFails()) throw new Error('handler failed')
      },
      // Store failures lapse the job (redelivered); the checkers judge what reached the store.
      { concurrency: deps.workLoops, ...(deps.workBatch === null ? {} : { batch: deps.workBatch }), onError: (error) => (isMatchboxError(error) ? undefined : deps.onDefect(deps.hostId, 'work', error)) },
    )
    this.#stops.set(queue, stop)
  }

  // A handler's virtual work: `ms` on this host's clock, or less if `signal` aborts first.
  #handlerRuns(ms: number, signal: AbortSignal | null): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal?.aborted === true) return resolve()
      const cancel = this.#clock.setTimer(ms, () => {
        signal?.removeEventListener('abort', aborted)
        resolve()
      })
      const aborted = (): void => {
        cancel()
        resolve()
      }
      signal?.addEventListener('abort', aborted, { once: true })
    })
  }

  /** Calls `stop()` on `queue`'s `work` loops; resolves when it does (never, if the host crashes meanwhile). */
  stopWork(queue: string): Promise<void> {
    const stop = this.#stops.get(queue) ?? null
    if (stop === null) return Promise.resolve()
    this.#stops.set(queue, null)
    return stop()
  }

  /** Whether the process is in a stop-the-world pause (its timers wait; the world runs none of its I/O). */
  paused(): boolean {
    return this.alive && this.#clock.isPaused()
  }

  /** A stop-the-world pause of `ms` (see HostClock.ts); `resume` ends it early. */
  pause(ms: number): void {
    this.#clock.pause(ms)
  }

  /** Ends a pause now (the heal). */
  resume(): void {
    this.#clock.resume()
  }

  /** The process dies: parked I/O never runs, timers never fire, memory and handles are gone. */
  crash(): number {
    this.alive = false
    this.incarnation++
    this.#clock.kill()
    this.#bus?.kill()
    return this.#deps.gate.dropHost(this.id)
  }

  /**
   * The process leaves the group gracefully: its engine closes (its `work` loops stop, its
   * partitions unload with their final checkpoints, its membership row goes) and the process is
   * gone from then on, until a `restart`. Resolves once the close did.
   */
  leave(): Promise<void> {
    this.alive = false
    this.left = true
    return this.mb.close()
  }

  /** A new process takes the host's place, with fresh memory; `loops` false: its `work` loops wait for `startAllWork`. */
  restart(loops = true): void {
    this.#clock = new HostClock(this.#deps.clock)
    this.alive = true
    this.left = false
    this.incarnation++
    this.mb = this.#start(loops)
  }
}
