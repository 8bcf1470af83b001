/**
 * MatchingHostFence — the range fence a Matching host lends to claims made outside Matching
 * (the job engine's claims straight from its jobs table): the default physical queue of a
 * partition of the family this host owns, and the range id it holds.
 *
 * A fence is read from a cached queue without a mailbox round trip while that queue holds its
 * range and its partition instance is loaded; otherwise the partition is loaded, waiting at most
 * `fenceLoadWaitMs` for the acquire, so a claim never goes out long after it was asked for, on a
 * view that may have moved on. A refused claim unloads the instance that held the range, as its
 * own ownership check would.
 *
 * Bound: the cache holds at most `routedFamiliesMax` partitions and starts over past that.
 */
import { Effect } from 'effect'
import { encodePartitionKey, type TaskType } from '../domain/QueueKey.ts'
import { Unavailable } from '../domain/errors.ts'
import type { Clock } from '../kernel/Clock.ts'
import { fenceLoadWaitMs, routedFamiliesMax } from '../kernel/Limits.ts'
import type { MatchingHost } from './MatchingHostProtocol.ts'
import type { HostPartitions } from './MatchingHostPartitions.ts'
import type { HostRouting, Route } from './MatchingHostRouting.ts'
import type { PartitionActor } from './PartitionActor.ts'
import type { PhysicalQueueActor } from './PhysicalQueueActor.ts'

/** A host's claim fences: the two methods of its Promise face and the cache behind them. */
export interface HostFences extends Pick<MatchingHost, 'claimFence' | 'fenceRefused'> {
  /** Forgets the cached queue of partition `name` (its instance left): kept, it would keep the instance. */
  forget(name: string): void
  /** Cached queues (diagnostics). */
  size(): number
}

/** What the fences read. */
export interface HostFencesOptions {
  readonly clock: Clock
  readonly routing: HostRouting
  readonly partitions: HostPartitions
  /** The error a closed host answers with, or null while it serves. */
  readonly refusal: () => Error | null
  readonly runOptions: Parameters<typeof Effect.runPromise>[1]
}

const defaultQueueOf = (actor: PartitionActor): PhysicalQueueActor | undefined => actor.loadedQueues().find((queue) => queue.key.version === null && queue.state !== 'unloaded')
// A draining queue (an idle unload) still holds its range until another host acquires it.
const holdsRange = (queue: PhysicalQueueActor | undefined): queue is PhysicalQueueActor => queue?.state === 'owned' || queue?.state === 'draining'

/** Makes a host's claim fences. */
export function makeHostFences(options: HostFencesOptions): HostFences {
  const { clock, routing } = options
  // The default queue of each owned partition a fence was read from, by partition name.
  const fenceQueues = new Map<string, PhysicalQueueActor>()

  const cachedFenceQueue = (route: Route): PhysicalQueueActor | undefined => {
    const cached = fenceQueues.get(route.name)
    return holdsRange(cached) && options.partitions.get(route.name)?.actor.isUnloaded() === false ? cached : undefined
  }
  // Undefined when the queue does not hold its range in time (a restart delay, a slow acquire).
  const loadFenceQueue = async (route: Route): Promise<PhysicalQueueActor | undefined> => {
    const actor = options.partitions.actorFor(route)
    if (!holdsRange(defaultQueueOf(actor))) await Effect.runPromise(actor.warm([null], clock.now() + fenceLoadWaitMs), options.runOptions)
    const queue = defaultQueueOf(actor)
    if (!holdsRange(queue)) return undefined
    if (fenceQueues.size >= routedFamiliesMax) fenceQueues.clear()
    fenceQueues.set(route.name, queue)
    return queue
  }

  return {
    // Any partition of the family this host owns fences a claim (the jobs table has no partition
    // column): one whose fence is at hand first, else each in turn, so one partition waiting out
    // a restart delay does not stop this host's claims while it owns another.
    async claimFence(namespace: string, family: string, type: TaskType) {
      const refused = options.refusal()
      if (refused !== null) throw refused
      const routes = routing.owned(namespace, family, type)
      if (routes.length === 0) return null
      let queue: PhysicalQueueActor | undefined
      for (const route of routes) if ((queue = cachedFenceQueue(route)) !== undefined) break
      for (const route of routes) if (queue === undefined) queue = await loadFenceQueue(route)
      if (queue === undefined) {
        throw new Unavailable({ operation: 'claim fence', detail: `no partition of ${family} this host owns holds its range (yet)`, maybeCommitted: false })
      }
      return { queueKey: queue.key, rangeId: await queue.rangeIdWhenOwned() }
    },
    async fenceRefused(fence) {
      const name = encodePartitionKey(fence.queueKey)
      const entry = options.partitions.get(name)
      fenceQueues.delete(name)
      const queue = entry === undefined ? undefined : defaultQueueOf(entry.actor)
      if (entry === undefined || queue === undefined || queue.state !== 'owned') return
      const rangeId = await queue.rangeIdWhenOwned().catch(() => null)
      if (rangeId === fence.rangeId) await options.partitions.unloadInstance(name, entry.actor.generation, 'a fenced claim found the range taken').catch(() => {})
    },
    forget: (name) => void fenceQueues.delete(name),
    size: () => fenceQueues.size,
  }
}
