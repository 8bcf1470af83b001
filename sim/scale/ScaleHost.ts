/**
 * ScaleHost — one engine of the world at scale (ScaleWorld.ts): the real job engine
 * (`makeMatchbox`) as one member of a large group on the shared memory database, its Matching
 * Store, JobStore, membership table and bus all through the world's IoGate (the same gated
 * wrappers the end-to-end world uses), its timers on a private view of the world's clock
 * (HostClock.ts), Matching's fibers on a synchronous scheduler.
 *
 * Unlike the end-to-end world's host, it opens queue handles only when it uses them (an engine
 * enqueues on any queue of the group but works only the queues the world gives it), since a
 * hundred engines each holding two hundred handles and loops is not how a group is deployed.
 * Its work handlers take the virtual time the world draws and sometimes fail (the job is
 * retried on its queue's curve); the loops ack what returns.
 *
 * For the ownership checker, every claim carries what this incarnation's own membership view
 * said about the job's queue when its Matching handed the job's task out (or when the claim was
 * issued): the partitions the view gives this host, and when a view last took the queue's last
 * partition away. That last time is found lazily from the views this incarnation has held,
 * because scanning every partition of every queue on each view change costs a rendezvous hash
 * per partition and host, a hundred engines over.
 *
 * Does not: choose what happens (the world does) or judge anything.
 */
import { MixedScheduler } from 'effect/Scheduler'
import { type DynamicMembership, makeDynamicMembership } from '../../src/actors/Membership.ts'
import { isMatchboxError } from '../../src/domain/errors.ts'
import { encodePartitionKey, makePartitionKey } from '../../src/domain/QueueKey.ts'
import { ownerOfEncoded } from '../../src/domain/Rendezvous.ts'
import type { JobQueue } from '../../src/jobs/JobQueue.ts'
import { type Matchbox, makeMatchbox } from '../../src/jobs/Matchbox.ts'
import { jobsNamespace, jobTaskType } from '../../src/jobs/QueueRouting.ts'
import type { ManualClock } from '../../src/kernel/Clock.ts'
import type { Random } from '../../src/kernel/Random.ts'
import type { Bus } from '../../src/persistence/bus/Bus.ts'
import type { JobStore } from '../../src/persistence/jobs/JobStore.ts'
import type { MembershipStore } from '../../src/persistence/membership/MembershipStore.ts'
import type { Store } from '../../src/persistence/queues/Store.ts'
import { HostClock } from '../core/HostClock.ts'
import type { IoGate } from '../core/IoGate.ts'
import type { ClaimOwnership, JobBoundaryListener } from '../jobs/JobBoundary.ts'
import { makeSimBus, type SimBus } from '../jobs/SimBus.ts'
import { makeSimJobStore } from '../jobs/SimJobStore.ts'
import { makeSimMembershipStore } from '../jobs/SimMembershipStore.ts'
import type { BoundaryListener } from '../core/Boundary.ts'
import { InstanceTags, makeSimStore } from '../core/SimStore.ts'
import type { ScaleQueueOptions } from './ScaleOptions.ts'

/** Everything a scale engine is made from. */
export interface ScaleHostDeps {
  readonly hostId: string
  readonly store: Store
  readonly jobStore: JobStore
  readonly membershipStore: MembershipStore
  readonly bus: Bus
  readonly gate: IoGate
  readonly clock: ManualClock
  readonly random: Random
  readonly queue: ScaleQueueOptions
  /** The queues this engine runs `work` loops on. */
  readonly works: ReadonlyArray<string>
  readonly workConcurrency: number
  readonly recordStore: BoundaryListener
  readonly recordJobs: JobBoundaryListener
  readonly queueOf: (id: string) => string | undefined
  /** How long a handler runs this time, virtual ms (the world's decision). */
  readonly handlerMs: () => number
  /** Whether a handler throws this time (the world's decision). */
  readonly handlerFails: () => boolean
  /** Hears every change of this host's membership view. */
  readonly onView: (hostId: string, hosts: ReadonlyArray<string>) => void
  readonly onDefect: (hostId: string, where: string, defect: unknown) => void
}

/** One view an incarnation held, from when. */
interface HeldView {
  readonly atMs: number
  readonly hosts: ReadonlyArray<string>
}

// Views an incarnation remembers for the lazy "when was the queue lost" question: enough for
// every change a run makes (startup, one death, one join, the faults' flickers) many times over.
const viewsKeptMax = 64

/** A scale engine, alive or crashed. */
export class ScaleHost {
  readonly id: string
  alive = true
  incarnation = 0
  mb: Matchbox
  /** When this incarnation started (world time). */
  startedAtMs: number
  readonly #deps: ScaleHostDeps
  #clock: HostClock
  #bus: SimBus | null = null
  #membership: DynamicMembership | null = null
  #handles = new Map<string, JobQueue>()
  // This incarnation's views, oldest first, with when each began.
  #views: HeldView[] = []
  // Per job id: this incarnation's views at each hand-over of the job's task, oldest first.
  #handedOut = new Map<string, ClaimOwnership[]>()

  constructor(deps: ScaleHostDeps) {
    this.#deps = deps
    this.id = deps.hostId
    this.#clock = new HostClock(deps.clock)
    this.startedAtMs = deps.clock.now()
    this.mb = this.#start()
  }

  /** The hosts this incarnation's membership view shows now. */
  view(): ReadonlyArray<string> {
    return this.#membership?.hosts() ?? []
  }

  /** This incarnation's handle on `queue`, opened on first use. */
  queue(name: string): JobQueue {
    let handle = this.#handles.get(name)
    if (handle === undefined) {
      const { visibilityTimeoutS, maxAttempts, backoffBaseS, partitions } = this.#deps.queue
      handle = this.mb.queue(name, { visibilityTimeoutS, maxAttempts, backoffBaseS, partitions })
      this.#handles.set(name, handle)
    }
    return handle
  }

  #start(): Matchbox {
    const deps = this.#deps
    const bus = makeSimBus(deps.hostId, deps.bus, deps.gate)
    const membership = makeDynamicMembership({ hostId: deps.hostId, store: makeSimMembershipStore(deps.hostId, deps.membershipStore, deps.gate), clock: this.#clock })
    this.#bus = bus
    this.#membership = membership
    this.#handles = new Map()
    this.#views = [{ atMs: deps.clock.now(), hosts: [] }]
    this.#handedOut = new Map()
    membership.subscribe(() => {
      this.#views.push({ atMs: deps.clock.now(), hosts: membership.hosts() })
      if (this.#views.length > viewsKeptMax) this.#views.shift()
      deps.onView(deps.hostId, membership.hosts())
    })
    const jobStore = makeSimJobStore(deps.jobStore, { hostId: deps.hostId, gate: deps.gate, now: () => deps.clock.now(), record: deps.recordJobs, queueOf: deps.queueOf, ownershipOf: (id) => this.#ownershipOf(id), viewOf: (queue) => this.#viewOfQueue(queue) })
    const mb = makeMatchbox({
      hostId: deps.hostId,
      store: makeSimStore(deps.hostId, new InstanceTags(deps.hostId, this.incarnation, false), deps.store, deps.gate, deps.recordStore),
      jobStore,
      clock: this.#clock,
      random: deps.random.fork(),
      scheduler: new MixedScheduler('sync'),
      onDefect: (where, defect) => deps.onDefect(deps.hostId, where, defect),
      onQueueStep: (_queue, _event, commands) => {
        for (const command of commands) {
          if (command.type !== 'history.recordStart') continue
          const view = this.#viewOf(command.params.task.jobId)
          if (view === null) continue
          const views = this.#handedOut.get(command.params.task.jobId)
          if (views === undefined) this.#handedOut.set(command.params.task.jobId, [view])
          else views.push(view)
        }
      },
      group: { membership, bus, storeSignalsDue: false, leave: () => membership.close() },
      // The world owns the shared stores.
      closeStores: async () => {},
    })
    this.mb = mb
    for (const queue of deps.works) this.#work(queue)
    return mb
  }

  #work(queue: string): void {
    const deps = this.#deps
    this.queue(queue).work(
      async () => {
        const ms = deps.handlerMs()
        if (ms > 0) await new Promise<void>((resolve) => this.#clock.setTimer(ms, resolve))
        if (deps.handlerFails()) throw new Error('handler failed')
      },
      // Store failures lapse the job (it is redelivered); the checkers judge what reached the store.
      { concurrency: deps.workConcurrency, onError: (error) => (isMatchboxError(error) ? undefined : deps.onDefect(deps.hostId, 'work', error)) },
    )
  }

  /** The partitions of a queue that `hosts` gives this host. */
  #ownedUnder(queue: string, hosts: ReadonlyArray<string>, cached: boolean): number[] {
    const owned: number[] = []
    for (let partition = 0; partition < this.#deps.queue.partitions; partition++) {
      const key = makePartitionKey({ namespace: jobsNamespace, family: queue, type: jobTaskType, partition })
      const owner = cached ? (this.#membership?.ownerOf(key) ?? null) : ownerOfEncoded(encodePartitionKey(key), hosts)
      if (owner === this.id) owned.push(partition)
    }
    return owned
  }

  // When this incarnation's views last went from giving it a partition of `queue` to giving it none.
  #lostAtMs(queue: string): number | null {
    for (let index = this.#views.length - 1; index > 0; index--) {
      const view = this.#views[index] as HeldView
      const before = this.#views[index - 1] as HeldView
      if (this.#ownedUnder(queue, view.hosts, false).length > 0) return null
      if (this.#ownedUnder(queue, before.hosts, false).length > 0) return view.atMs
    }
    return null
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
    const owned = this.#ownedUnder(queue, this.view(), true)
    return { atMs: this.#deps.clock.now(), timersOverdueSinceMs: this.#clock.overdueSinceMs(), queue, partitions: this.#deps.queue.partitions, owned, lostAtMs: owned.length > 0 ? null : this.#lostAtMs(queue), member: true, seesNobody: this.view().length === 0 }
  }

  /** Ends a stop-the-world pause (none are injected here; the heal calls it for symmetry with the clock's contract). */
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

  /** A new process takes the host's place, with fresh memory. */
  restart(): void {
    this.#clock = new HostClock(this.#deps.clock)
    this.alive = true
    this.incarnation++
    this.startedAtMs = this.#deps.clock.now()
    this.mb = this.#start()
  }
}
