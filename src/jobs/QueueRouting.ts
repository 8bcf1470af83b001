/**
 * QueueRouting — where a job queue lives in Matching, and which engine serves it: the one
 * module that knows the jobs↔Matching addressing.
 *
 * - Job queue `q` is Matching family `q` in namespace `jobs`, task type `activity`.
 * - It has `partitions` Matching partitions, stored once in the family's user data
 *   (`{ partitions: n }`, compare-and-set), so every engine on the database agrees. The first
 *   engine to use the queue stores it: the count its handle asked for, or the default, one.
 *   One partition keeps the strict claim order (priority, then ready time, then ready order)
 *   across the whole queue; several let several engines share a hot queue's Matching work, and
 *   the order then holds within each partition only. The count cannot change once stored:
 *   tasks already spooled in a partition would be stranded.
 * - Membership (when several engines share the database) assigns each partition to one engine;
 *   without membership this engine owns every partition.
 *
 * Invariants: a stored count is cached forever (it never changes); `route` is answered from the
 * cache and the membership view, without I/O; a queue not loaded yet routes with the default;
 * `load` — which every enqueue and claim awaits first — never answers on this engine's own
 * stale membership (after a pause it waits for the renewal), so a sole engine that paused still
 * finds itself the owner of its queues.
 *
 * Does not: move tasks between partitions, or decide anything about jobs.
 */
import { InvalidInput } from '../domain/errors.ts'
import type { JsonValue } from '../domain/Json.ts'
import { makePartitionKey } from '../domain/QueueKey.ts'
import { jobQueuePartitionsDefault, jobQueuePartitionsMax, routedFamiliesMax } from '../kernel/Limits.ts'
import type { MatchingHost, MembershipView } from '../actors/MatchingHost.ts'
import type { UserData } from '../persistence/queues/Store.ts'
import { registerSizes } from '../kernel/Sizes.ts'

/** The Matching namespace job queues live in. */
export const jobsNamespace = 'jobs'

/** The Matching task type of job deliveries. */
export const jobTaskType = 'activity'

/** Where a queue's partitions are served, as this engine sees it now. */
export interface QueueRoute {
  readonly partitions: number
  /** Partition numbers this engine owns. */
  readonly owned: ReadonlyArray<number>
  /** The other partitions and the engine that owns each (partitions with no live owner are left out). */
  readonly remote: ReadonlyArray<{ readonly partition: number; readonly hostId: string }>
}

/** The routing of one engine. */
export interface QueueRouting {
  /** The cached partition count of `queue` (the default until `load` has run). */
  partitionCount(queue: string): number
  /**
   * Loads the queue's partition count (once per engine), storing `requested` — or the default —
   * when the family has none yet. `InvalidInput` when `requested` differs from the stored count.
   * When this engine's own membership is stale (it woke from a pause), it first waits for the
   * renewal, so the route decided after it counts this engine in.
   */
  load(queue: string, requested?: number): Promise<number>
  /** The queue's partitions and their owners now. */
  route(queue: string): QueueRoute
  /** True when this engine owns at least one partition of `queue`. */
  owns(queue: string): boolean
  /** True when this engine owns every partition of `queue` (without building its route). */
  ownsEvery(queue: string): boolean
  /** The Matching view of ownership: nobody (not this engine) when membership knows no owner. */
  readonly membership: MembershipView | undefined
}

/** A membership view that can say when this engine's own membership is being renewed (Membership.ts `current`). */
export type RenewingMembershipView = MembershipView & { current?(): Promise<void> | null }

/** What routing needs. */
export interface QueueRoutingOptions {
  readonly hostId: string
  /** Absent: this engine owns every partition (one engine on its store). */
  readonly membership?: RenewingMembershipView
  /** Reads and writes the families' user data. */
  readonly userData: Pick<MatchingHost, 'getUserData' | 'updateUserData'>
}

/** Validates a requested partition count. */
export function checkPartitions(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > jobQueuePartitionsMax) {
    throw new InvalidInput({ field, reason: `must be an integer in 1…${jobQueuePartitionsMax}` })
  }
  return value
}

function storedPartitions(userData: UserData | null): number | null {
  const data = userData?.data
  if (data === null || data === undefined || typeof data !== 'object' || Array.isArray(data)) return null
  const partitions = (data as { readonly [key: string]: JsonValue }).partitions
  return typeof partitions === 'number' && Number.isInteger(partitions) && partitions >= 1 ? partitions : null
}

/** Makes the routing of one engine. */
export function makeQueueRouting(options: QueueRoutingOptions): QueueRouting {
  // Partition counts, a cache of what the store holds (a count never changes once stored), in two
  // generations of at most `routedFamiliesMax` queues: a full one becomes the older, and a count
  // read from the older moves back, so a queue in use keeps its count and one unused for a whole
  // generation is read from the store again by its next `load`.
  let counts = new Map<string, number>()
  let olderCounts = new Map<string, number>()
  const remember = (queue: string, count: number): void => {
    if (counts.size >= routedFamiliesMax) {
      olderCounts = counts
      counts = new Map()
    }
    counts.set(queue, count)
  }
  const countOf = (queue: string): number | undefined => {
    const count = counts.get(queue)
    if (count !== undefined) return count
    const older = olderCounts.get(queue)
    if (older !== undefined) remember(queue, older)
    return older
  }
  const loading = new Map<string, Promise<number>>()
  // The count the first handle of a queue asked for, stored if the family has none yet.
  const pendingRequest = new Map<string, number>()
  const { hostId } = options
  const view = options.membership
  // Matching treats "no known owner" as its own; an engine in a group must not.
  const membership: MembershipView | undefined =
    view === undefined ? undefined : { ownerOf: (partition) => view.ownerOf(partition) ?? '', subscribe: (listener) => view.subscribe(listener) }

  const ownerOf = (queue: string, partition: number): string | null =>
    view === undefined ? hostId : view.ownerOf(makePartitionKey({ namespace: jobsNamespace, family: queue, type: jobTaskType, partition }))

  const fetch = async (queue: string): Promise<number> => {
    for (;;) {
      const userData = await options.userData.getUserData(jobsNamespace, queue)
      const stored = storedPartitions(userData)
      if (stored !== null) return stored
      const base = userData?.data !== undefined && userData.data !== null && typeof userData.data === 'object' && !Array.isArray(userData.data) ? userData.data : {}
      try {
        const written = await options.userData.updateUserData(jobsNamespace, queue, userData?.version ?? 0, { ...base, partitions: pendingRequest.get(queue) ?? jobQueuePartitionsDefault })
        return storedPartitions(written) ?? jobQueuePartitionsDefault
      } catch (error) {
        // Another engine stored first: read what it stored.
        if ((error as { _tag?: unknown })._tag !== 'VersionConflict') throw error
      }
    }
  }

  // Its sizes (kernel/Sizes.ts): the partition counts cached, both generations.
  const routing: QueueRouting = {
    membership,
    partitionCount: (queue) => countOf(queue) ?? jobQueuePartitionsDefault,
    async load(queue, requested) {
      const renewal = view?.current?.()
      if (renewal !== undefined && renewal !== null) await renewal
      let count = countOf(queue)
      if (count === undefined) {
        let pending = loading.get(queue)
        if (pending === undefined) {
          if (requested !== undefined) pendingRequest.set(queue, requested)
          pending = fetch(queue).finally(() => {
            loading.delete(queue)
            pendingRequest.delete(queue)
          })
          loading.set(queue, pending)
        }
        count = await pending
        remember(queue, count)
      }
      if (requested !== undefined && requested !== count) {
        throw new InvalidInput({ field: 'options.partitions', reason: `queue ${queue} has ${count} partition(s) stored; the count cannot change` })
      }
      return count
    },
    route(queue) {
      const partitions = countOf(queue) ?? jobQueuePartitionsDefault
      const owned: number[] = []
      const remote: Array<{ partition: number; hostId: string }> = []
      for (let partition = 0; partition < partitions; partition++) {
        const owner = ownerOf(queue, partition)
        if (owner === hostId) owned.push(partition)
        else if (owner !== null) remote.push({ partition, hostId: owner })
      }
      return { partitions, owned, remote }
    },
    owns(queue) {
      const partitions = countOf(queue) ?? jobQueuePartitionsDefault
      for (let partition = 0; partition < partitions; partition++) if (ownerOf(queue, partition) === hostId) return true
      return false
    },
    ownsEvery(queue) {
      const partitions = countOf(queue) ?? jobQueuePartitionsDefault
      for (let partition = 0; partition < partitions; partition++) if (ownerOf(queue, partition) !== hostId) return false
      return true
    },
  }
  return registerSizes(routing, () => ({ routingCounts: counts.size + olderCounts.size, routingLoads: loading.size }))
}
