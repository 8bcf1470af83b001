/**
 * MatchingHostRouting — which partitions of a family a Matching host's requests go to
 * (DESIGN.md §6): a family has `partitionCount` partitions (default 4), each validated and named
 * once, and the host serves those membership assigns to it. It also keeps the two small caches
 * routing reads: where the next idle poll of a family starts its rotation, and each family's
 * current deployment version from its user data.
 *
 * Bound: every cache holds at most `routedFamiliesMax` families and starts over past that;
 * forgetting an entry costs a re-validation, a rotation start or a user-data read, never a wrong
 * answer.
 *
 * Does not: hold partitions (MatchingHostPartitions.ts) or choose among loaded ones by their
 * state (MatchingHostRequests.ts).
 */
import { encodePartitionKey, makePartitionKey, type PartitionKey, type TaskType } from '../domain/QueueKey.ts'
import { partitionCountDefault, routedFamiliesMax } from '../kernel/Limits.ts'
import type { UserData } from '../persistence/queues/Store.ts'
import { currentVersionOf, type MatchingHostOptions } from './MatchingHostProtocol.ts'

/** A partition a request may be routed to, with its canonical name. */
export interface Route {
  readonly key: PartitionKey
  readonly name: string
}

/** A host's routing: its partitions by family, which of them it owns, and the caches it reads. */
export interface HostRouting {
  /** Every partition of a family and task type (validates the names; throws `InvalidInput`). */
  routesOf(namespace: string, family: string, type: TaskType): ReadonlyArray<Route>
  /** The partitions of a family that membership assigns to this host now. */
  owned(namespace: string, family: string, type: TaskType): Route[]
  /** True when membership assigns `partition` to this host (always, without membership). */
  isOurs(partition: PartitionKey): boolean
  /** The next turn of an idle poll's rotation for a family, type and version. */
  nextTurn(rotationKey: string): number
  /** The family's current version as last read, or undefined when not read yet. */
  knownVersion(namespace: string, family: string): string | null | undefined
  /** Remembers the family's current version from its user data. */
  rememberVersion(namespace: string, family: string, userData: UserData | null): void
  /** Entries of each cache (diagnostics, kernel/Sizes.ts). */
  sizes(): { readonly routedFamilies: number; readonly pollRotations: number; readonly currentVersions: number }
}

/** The key a family's per-family caches use. */
export const familyKey = (namespace: string, family: string): string => `${namespace}\u0000${family}`

/** Makes a host's routing. */
export function makeHostRouting(options: Pick<MatchingHostOptions, 'hostId' | 'membership' | 'partitionCount'>): HostRouting {
  const routeCache = new Map<string, ReadonlyArray<Route>>()
  const rotation = new Map<string, number>()
  const currentVersions = new Map<string, string | null>()

  const countOf = (namespace: string, family: string): number => {
    const count = typeof options.partitionCount === 'function' ? options.partitionCount(namespace, family) : (options.partitionCount ?? partitionCountDefault)
    return Math.max(1, Math.floor(count))
  }
  const isOurs = (partition: PartitionKey): boolean => (options.membership?.ownerOf(partition) ?? options.hostId) === options.hostId

  // Rebuilt when the family's partition count changes. Only names already valid are
  // remembered, so a request with a bad one is refused by validation every time.
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

  return {
    routesOf,
    owned: (namespace, family, type) => routesOf(namespace, family, type).filter((route) => isOurs(route.key)),
    isOurs,
    nextTurn(rotationKey) {
      const turn = rotation.get(rotationKey) ?? 0
      // Only a starting point for the next idle poll: forgetting it costs nothing.
      if (rotation.size >= routedFamiliesMax) rotation.clear()
      rotation.set(rotationKey, turn + 1)
      return turn
    },
    knownVersion: (namespace, family) => currentVersions.get(familyKey(namespace, family)),
    rememberVersion(namespace, family, userData) {
      if (currentVersions.size >= routedFamiliesMax) currentVersions.clear()
      currentVersions.set(familyKey(namespace, family), currentVersionOf(userData))
    },
    sizes: () => ({ routedFamilies: routeCache.size, pollRotations: rotation.size, currentVersions: currentVersions.size }),
  }
}
