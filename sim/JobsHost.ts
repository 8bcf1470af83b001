/**
 * JobsHost — one simulated process running the real job engine (`makeMatchbox`): its Matching
 * Store and its JobStore both gated (SimStore.ts, SimJobStore.ts), its timers on a private view
 * of the world's clock (HostClock.ts), Matching's fibers on a synchronous scheduler so one
 * event-loop turn reaches quiescence. Crashing it drops its parked I/O and timers and abandons
 * the engine and every handle its clients held; restarting builds a fresh engine over the same
 * shared stores, as a new process would.
 *
 * Does not: choose what clients do (JobsWorld.ts) or judge anything.
 */
import { MixedScheduler } from 'effect/Scheduler'
import type { JobQueue } from '../src/jobs/JobQueue.ts'
import { type Matchbox, makeMatchbox } from '../src/jobs/Matchbox.ts'
import type { ManualClock } from '../src/kernel/Clock.ts'
import type { Random } from '../src/kernel/Random.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import type { Store } from '../src/persistence/Store.ts'
import type { BoundaryListener } from './Boundary.ts'
import { HostClock } from './HostClock.ts'
import type { IoGate } from './IoGate.ts'
import type { JobBoundaryListener } from './JobBoundary.ts'
import type { SimQueueOptions } from './JobsSwarm.ts'
import { makeSimJobStore } from './SimJobStore.ts'
import { makeSimStore } from './SimStore.ts'

/** Everything a simulated engine host is made from. */
export interface JobsHostDeps {
  readonly hostId: string
  /** This host's connection to the shared database (shared objects on memory). */
  readonly store: Store
  readonly jobStore: JobStore
  readonly gate: IoGate
  readonly clock: ManualClock
  /** Each incarnation's engine draws its own fork (ids, tokens, jitter). */
  readonly random: Random
  readonly queues: Readonly<Record<string, SimQueueOptions>>
  readonly recordStore: BoundaryListener
  readonly recordJobs: JobBoundaryListener
  readonly queueOf: (id: string) => string | undefined
  readonly onDefect: (hostId: string, where: string, defect: unknown) => void
}

/** A simulated engine host, alive or crashed. */
export class JobsHost {
  readonly id: string
  alive = true
  /** Bumped on every crash and restart: answers to an earlier incarnation are ignored. */
  incarnation = 0
  mb: Matchbox
  /** This incarnation's handles, by queue name. */
  queues = new Map<string, JobQueue>()
  #clock: HostClock
  readonly #deps: JobsHostDeps

  constructor(deps: JobsHostDeps) {
    this.#deps = deps
    this.id = deps.hostId
    this.#clock = new HostClock(deps.clock)
    this.mb = this.#start()
  }

  /** This incarnation's handle on `queue`. */
  queue(name: string): JobQueue {
    const queue = this.queues.get(name)
    if (queue === undefined) throw new Error(`${this.id} has no queue ${name}`)
    return queue
  }

  #start(): Matchbox {
    const deps = this.#deps
    const clock = deps.clock
    const mb = makeMatchbox({
      hostId: deps.hostId,
      store: makeSimStore(deps.hostId, deps.store, deps.gate, deps.recordStore),
      jobStore: makeSimJobStore(deps.jobStore, { hostId: deps.hostId, gate: deps.gate, now: () => clock.now(), record: deps.recordJobs, queueOf: deps.queueOf }),
      clock: this.#clock,
      random: deps.random.fork(),
      scheduler: new MixedScheduler('sync'),
      onDefect: (where, defect) => deps.onDefect(deps.hostId, where, defect),
      // The world closes the shared stores once, after every engine.
      closeStores: async () => {},
    })
    this.queues = new Map(Object.entries(deps.queues).map(([name, options]) => [name, mb.queue(name, options)]))
    return mb
  }

  /** The process dies: parked I/O never runs, timers never fire, memory and handles are gone. */
  crash(): number {
    this.alive = false
    this.incarnation++
    this.#clock.kill()
    return this.#deps.gate.dropHost(this.id)
  }

  /** A new process takes the host's place, with fresh memory. */
  restart(): void {
    this.#clock = new HostClock(this.#deps.clock)
    this.alive = true
    this.incarnation++
    this.mb = this.#start()
  }
}
