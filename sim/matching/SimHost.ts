/**
 * SimHost — one simulated Matching host: the real `makeMatchingHost` over a gated store, a
 * gated History, a private clock view and a membership view the world can bend. Crashing it
 * drops its parked I/O and timers and abandons its memory; restarting makes a fresh host, as a
 * new process would.
 */
import { MixedScheduler } from 'effect/Scheduler'
import type { MembershipView } from '../../src/actors/MatchingHost.ts'
import { type MatchingHost, makeMatchingHost } from '../../src/actors/MatchingHost.ts'
import type { HostWaitingPolls } from '../../src/actors/MatchingHostWaiting.ts'
import type { PhysicalQueueActor } from '../../src/actors/PhysicalQueueActor.ts'
import { ownerOfEncoded } from '../../src/domain/Rendezvous.ts'
import { encodePartitionKey, type PartitionKey } from '../../src/domain/QueueKey.ts'
import type { ManualClock } from '../../src/kernel/Clock.ts'
import type { Random } from '../../src/kernel/Random.ts'
import type { QueueCommand, QueueEvent } from '../../src/machines/PhysicalQueueProtocol.ts'
import type { Store } from '../../src/persistence/queues/Store.ts'
import type { BoundaryListener } from '../core/Boundary.ts'
import { HostClock } from '../core/HostClock.ts'
import type { IoGate } from '../core/IoGate.ts'
import type { HistoryRecord } from '../core/HistoryRecord.ts'
import { type HistoryScript, makeScriptedHistory } from './ScriptedHistory.ts'
import { InstanceTags, makeSimStore } from '../core/SimStore.ts'
import { boundedMoves } from './BoundedMoves.ts'

/** A membership view over a host list the world can change. */
class BendableMembership implements MembershipView {
  #hosts: ReadonlyArray<string>
  // Owners by canonical partition name, and by key object: the host asks with the same key
  // objects again and again, and an identity lookup skips encoding the name.
  #owners = new Map<string, string | null>()
  #ownersByKey = new WeakMap<PartitionKey, string | null>()
  readonly #listeners = new Set<() => void>()

  constructor(hosts: ReadonlyArray<string>) {
    this.#hosts = hosts
  }

  get hosts(): ReadonlyArray<string> {
    return this.#hosts
  }

  set(hosts: ReadonlyArray<string>): void {
    if (hosts.join() === this.#hosts.join()) return
    this.#hosts = hosts
    this.#owners = new Map()
    this.#ownersByKey = new WeakMap()
    for (const listener of this.#listeners) listener()
  }

  ownerOf(partition: PartitionKey): string | null {
    const known = this.#ownersByKey.get(partition)
    if (known !== undefined) return known
    const encoded = encodePartitionKey(partition)
    let owner = this.#owners.get(encoded)
    if (owner === undefined) {
      owner = ownerOfEncoded(encoded, this.#hosts)
      this.#owners.set(encoded, owner)
    }
    this.#ownersByKey.set(partition, owner)
    return owner
  }

  /** Forgets every listener: the host process that registered them is dead. */
  clearListeners(): void {
    this.#listeners.clear()
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }
}

/** Everything a simulated host is made from. */
export interface SimHostDeps {
  readonly hostId: string
  readonly store: Store
  readonly gate: IoGate
  readonly clock: ManualClock
  readonly random: Random
  readonly history: HistoryRecord
  readonly script: HistoryScript
  readonly partitionCount: number
  readonly allHosts: ReadonlyArray<string>
  readonly record: BoundaryListener
  /** Wraps the gated store each host process sees (the host-side mutations), above the boundary log. */
  readonly wrapHostStore?: (hostId: string, store: Store) => Store
  /** Makes the host's book of waiting polls (a host-side mutation); default: the host's own. */
  readonly waitingPolls?: () => HostWaitingPolls
  /** Hears polls moving between partitions without end (BoundedMoves.ts). */
  readonly onRunaway: (hostId: string, detail: string) => void
  /** Hears every step of the host's physical queues: the queue's actor after the step, and the host's incarnation then. */
  readonly onStep: (hostId: string, incarnation: number, queue: PhysicalQueueActor, event: QueueEvent, commands: ReadonlyArray<QueueCommand>) => void
  readonly onDefect: (hostId: string, queue: string, defect: unknown) => void
}

/** A simulated host, alive or crashed. */
export class SimHost {
  readonly id: string
  readonly membership: BendableMembership
  host: MatchingHost
  alive = true
  pollsInFlight = 0
  /** Bumped on every crash and restart: answers to an earlier incarnation's requests are ignored. */
  incarnation = 0
  #clock: HostClock
  readonly #deps: SimHostDeps

  constructor(deps: SimHostDeps) {
    this.#deps = deps
    this.id = deps.hostId
    this.membership = new BendableMembership(deps.allHosts)
    this.#clock = new HostClock(deps.clock)
    this.host = this.#start()
  }

  #start(): MatchingHost {
    const deps = this.#deps
    const incarnation = this.incarnation
    const tags = new InstanceTags(deps.hostId, incarnation, true)
    const gated = makeSimStore(deps.hostId, tags, deps.store, deps.gate, deps.record)
    return makeMatchingHost({
      hostId: deps.hostId,
      store: deps.wrapHostStore?.(deps.hostId, gated) ?? gated,
      history: makeScriptedHistory(deps.hostId, deps.gate, deps.history, deps.script, deps.random.fork()),
      clock: this.#clock,
      random: deps.random.fork(),
      membership: this.membership,
      partitionCount: deps.partitionCount,
      waitingPolls: () => boundedMoves(() => deps.clock.now(), (detail) => deps.onRunaway(deps.hostId, detail), deps.waitingPolls?.()),
      scheduler: new MixedScheduler('sync'),
      onStep: (queue, event, commands) => {
        tags.stepped(queue, event.type, commands)
        for (const command of commands) {
          if (command.type === 'queue.unloaded') deps.record({ op: 'unloaded', caller: tags.instanceOf(queue), queue: queue.queue, reason: command.params.reason.kind })
        }
        deps.onStep(deps.hostId, incarnation, queue, event, commands)
      },
      onDefect: (queue, defect) => deps.onDefect(deps.hostId, queue, defect),
    })
  }

  /** The process dies: parked I/O never runs, timers never fire, memory is gone. */
  crash(): number {
    this.alive = false
    this.incarnation++
    this.#clock.kill()
    // The dead process must be inert: no membership change may reach its abandoned host.
    this.membership.clearListeners()
    this.pollsInFlight = 0
    return this.#deps.gate.dropHost(this.id)
  }

  /** A new process takes the host's place, with fresh memory. */
  restart(): void {
    this.#clock = new HostClock(this.#deps.clock)
    this.alive = true
    this.incarnation++
    this.host = this.#start()
  }
}
