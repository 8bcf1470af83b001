/**
 * Membership — the view of which hosts exist, and so which host owns each partition, that a
 * Matching host routes by (DESIGN.md §6). Owners are rendezvous hashes (domain/Rendezvous.ts)
 * over the current host list.
 *
 * Two views:
 * - static: a fixed host list given at construction. Two hosts given different lists disagree
 *   about owners and may take queues from each other over and over; the range fence keeps that
 *   safe, and the simulator uses exactly this to inject membership disagreement.
 * - dynamic: host rows with heartbeats in the shared database (persistence/membership/MembershipStore.ts).
 *   Every `heartbeatIntervalMs` on the injected clock the host renews its own row (expiring
 *   `ttlMs` later) and re-reads the live rows; subscribers hear when the host list changes. A
 *   host that stops heartbeating drops out of every view once its row expires.
 *
 * Invariants: `hosts()` is sorted (code-point order) and has no duplicates; listeners run only
 * when that list actually changed; a host cut off from the store sees its own row and everyone
 * else's lapse, and owns nothing, by the time others stop counting it — a tick that finds a
 * beat still running re-filters the cached rows by the local clock, and a beat whose store calls
 * failed publishes them re-filtered; at most one beat is in flight (a tick that finds one
 * running skips its beat).
 *
 * A running host never declares itself dead: after a pause (its timers fire late, its row
 * expired meanwhile) the first tick renews before it publishes, a beat whose row expired while
 * it was written writes it again, and `current()` lets a caller wait for that renewal before it
 * decides what this host owns. `settled()` lets a test that drives the clock wait for the beats
 * an advance started, so its virtual time never outruns a slow store's answers.
 *
 * Errors: a store failure (a catalogue error) skips that half of the beat and is reported to
 * `onStoreError`; the next tick tries again. Anything else — including a listener that throws —
 * is a defect and is not caught.
 *
 * Closing waits for a beat in flight before leaving, so a late heartbeat cannot re-insert the
 * row after the leave; against a store that never answers, close waits as long as the store
 * does (the store's own timeouts bound it).
 *
 * Does not: own the store (the caller closes it), route or unload partitions (the Matching host
 * does, on notification), or read the real clock — time and timers come from the Clock.
 */
import { InvalidInput, isMatchboxError, type MatchboxError } from '../domain/errors.ts'
import type { PartitionKey } from '../domain/QueueKey.ts'
import { ownerOf } from '../domain/Rendezvous.ts'
import type { CancelTimer, Clock } from '../kernel/Clock.ts'
import { membershipHeartbeatIntervalMs, membershipHostTtlMs, ownerCacheEntriesMax } from '../kernel/Limits.ts'
import { checkHostId, compareHostIds, type HostRow, type MembershipStore } from '../persistence/membership/MembershipStore.ts'

/** Which host owns each partition, as this host currently sees it. */
export interface Membership {
  /** The owner of `partition` among `hosts()`; null when there are no hosts. */
  ownerOf(partition: PartitionKey): string | null
  /** The hosts in the current view, sorted, without duplicates. */
  hosts(): ReadonlyArray<string>
  /** Calls `listener` after every change of `hosts()`; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void
  /** Stops updating, empties the view and drops listeners (dynamic: also leaves the store). Idempotent. */
  close(): Promise<void>
}

/** Options of `makeDynamicMembership`. */
export interface DynamicMembershipOptions {
  /** This host's id: a valid name, unique among hosts sharing the store. */
  readonly hostId: string
  /** The shared host rows; not closed by `close`. */
  readonly store: MembershipStore
  readonly clock: Clock
  /** Time between heartbeats (default `membershipHeartbeatIntervalMs`). */
  readonly heartbeatIntervalMs?: number
  /** Lifetime of a heartbeat; must exceed the interval (default `membershipHostTtlMs`). */
  readonly ttlMs?: number
  /** Hears every store failure a beat swallowed (for logs and gauges). */
  readonly onStoreError?: (error: MatchboxError) => void
  /**
   * False for an observer: it reads the live hosts but writes no row of its own, so it owns no
   * partition (a process that only enqueues). Default true.
   */
  readonly member?: boolean
}

/** A dynamic membership view. */
export interface DynamicMembership extends Membership {
  /** Settles when the first beat has finished, successfully or not. */
  readonly ready: Promise<void>
  /**
   * Null while this host's own row is fresh by the clock (or it is an observer, or closed);
   * otherwise — after a pause, or a clock moved past the row's expiry — the renewal it waits
   * for (a beat is started if none is running), which settles once that beat has finished,
   * successfully or not. Decide what this host owns after it, not before.
   */
  current(): Promise<void> | null
  /**
   * Resolves once no beat is in flight (at once when none is; a beat whose store calls failed
   * has finished too); rejects with a beat's defect. A test that drives a ManualClock over a real
   * store waits on it after each advance, so virtual time never runs a TTL ahead of the beats:
   * a tick that finds a read still running re-filters the rows cached by the advanced clock, and
   * a live peer whose row was read a TTL of virtual time ago drops out of the view.
   */
  settled(): Promise<void>
}

function sortedUnique(hostIds: ReadonlyArray<string>): ReadonlyArray<string> {
  return Object.freeze([...new Set(hostIds)].sort(compareHostIds))
}

function sameHosts(a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean {
  return a.length === b.length && a.every((host, index) => host === b[index])
}

// Listeners are wrapped so that one function subscribed twice is two subscriptions.
function makeListeners(): { add(listener: () => void): () => void; notify(): void; clear(): void } {
  const entries = new Set<{ readonly listener: () => void }>()
  return {
    add(listener) {
      const entry = { listener }
      entries.add(entry)
      return () => {
        entries.delete(entry)
      }
    },
    notify() {
      // A snapshot: a listener that subscribes another must not have it called in this round.
      for (const entry of Array.from(entries)) entry.listener()
    },
    clear() {
      entries.clear()
    },
  }
}

/**
 * Owners of partitions under one view, remembered: a rendezvous hash costs one hash per host,
 * and routing asks for the same partitions on every poll (an engine's claim several times a
 * job). The caller starts a fresh cache when the view changes; it holds at most
 * `ownerCacheEntriesMax` partitions and starts over past that. Kept by family, then namespace,
 * type and partition, so a lookup reads the names it is given and builds no key.
 */
function makeOwnerCache(): { ownerOf(partition: PartitionKey, view: ReadonlyArray<string>): string | null; clear(): void } {
  // family → `namespace` → type → partition → owner.
  let owners = new Map<string, Map<string, Map<string, Map<number, string | null>>>>()
  let entries = 0
  return {
    ownerOf(partition, view) {
      const byPartition = owners.get(partition.family)?.get(partition.namespace)?.get(partition.type)
      const known = byPartition?.get(partition.partition)
      if (known !== undefined) return known
      const owner = ownerOf(partition, view)
      if (entries >= ownerCacheEntriesMax) {
        owners = new Map()
        entries = 0
      }
      let byNamespace = owners.get(partition.family)
      if (byNamespace === undefined) owners.set(partition.family, (byNamespace = new Map()))
      let byType = byNamespace.get(partition.namespace)
      if (byType === undefined) byNamespace.set(partition.namespace, (byType = new Map()))
      let byPartitionIndex = byType.get(partition.type)
      if (byPartitionIndex === undefined) byType.set(partition.type, (byPartitionIndex = new Map()))
      byPartitionIndex.set(partition.partition, owner)
      entries++
      return owner
    },
    clear() {
      owners = new Map()
      entries = 0
    },
  }
}

/** A view over a fixed host list (validated names; order and repetitions do not matter). */
export function makeStaticMembership(hostIds: ReadonlyArray<string>): Membership {
  let view = sortedUnique(hostIds.map((hostId) => checkHostId(hostId)))
  const owners = makeOwnerCache()
  return {
    ownerOf: (partition) => owners.ownerOf(partition, view),
    hosts: () => view,
    subscribe: () => () => {},
    async close() {
      view = Object.freeze([])
      owners.clear()
    },
  }
}

function positiveInteger(field: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new InvalidInput({ field, reason: 'must be an integer ≥ 1' })
  return value
}

/**
 * A view kept by heartbeats in `store`. The first beat starts at once (`ready` settles after
 * it); until it lands the view is empty. Throws `InvalidInput` for bad options.
 */
export function makeDynamicMembership(options: DynamicMembershipOptions): DynamicMembership {
  const { store, clock } = options
  const hostId = checkHostId(options.hostId)
  const intervalMs = positiveInteger('heartbeatIntervalMs', options.heartbeatIntervalMs ?? membershipHeartbeatIntervalMs)
  const ttlMs = positiveInteger('ttlMs', options.ttlMs ?? membershipHostTtlMs)
  if (ttlMs <= intervalMs) throw new InvalidInput({ field: 'ttlMs', reason: `must exceed heartbeatIntervalMs (${intervalMs})` })

  const listeners = makeListeners()
  let rows: ReadonlyArray<HostRow> = []
  let view: ReadonlyArray<string> = Object.freeze([])
  const owners = makeOwnerCache()
  let inFlight: Promise<void> | null = null
  let cancelTimer: CancelTimer = () => {}
  let closing: Promise<void> | null = null

  // Runs `call`; a catalogue error is reported and becomes undefined, anything else propagates.
  const attempt = async <T>(call: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await call()
    } catch (error) {
      if (!isMatchboxError(error)) throw error
      options.onStoreError?.(error)
      return undefined
    }
  }

  const publish = (): void => {
    if (closing !== null) return
    const nowMs = clock.now()
    const next = sortedUnique(rows.filter((row) => row.expiresAtMs > nowMs).map((row) => row.hostId))
    if (sameHosts(view, next)) return
    view = next
    owners.clear()
    listeners.notify()
  }

  const member = options.member ?? true
  const renew = () => attempt(() => store.heartbeat({ hostId, nowMs: clock.now(), ttlMs }))
  const beat = async (): Promise<void> => {
    if (member) {
      let own = await renew()
      // The clock passed the new expiry while the row was written (the process paused, or a
      // virtual clock was advanced): write it again at the time it is now.
      if (own !== undefined && own.expiresAtMs <= clock.now()) own = await renew()
      // Keep our fresh row even if the read below fails, so our own view does not lapse early.
      if (own !== undefined) rows = [...rows.filter((row) => row.hostId !== hostId), own]
    }
    const live = await attempt(() => store.liveHosts({ nowMs: clock.now() }))
    if (live !== undefined) rows = live
    publish()
  }

  // True once the beat in flight has had a turn to run: ticks fired back to back in one
  // synchronous stretch (a virtual clock advanced far at once) gave it none, and say nothing
  // about the store.
  let beatHadTurn = false
  const startBeat = (): void => {
    if (inFlight !== null || closing !== null) return
    const running = beat().finally(() => {
      if (inFlight === running) inFlight = null
    })
    inFlight = running
    beatHadTurn = false
    queueMicrotask(() => {
      if (inFlight === running) beatHadTurn = true
    })
  }

  const tick = (): void => {
    if (closing !== null) return
    cancelTimer = clock.setTimer(intervalMs, tick)
    // A beat still running after its turn means a slow store: re-filter, so rows lapse on time
    // even while it hangs. Otherwise the beat started now publishes fresh rows a round trip
    // later — so a host waking from a pause renews before it decides what it owns, instead of
    // first seeing its own row (and everyone else's) lapsed.
    if (inFlight !== null && beatHadTurn) publish()
    startBeat()
  }

  const ownFresh = (): boolean => {
    const own = rows.find((row) => row.hostId === hostId)
    return own !== undefined && own.expiresAtMs > clock.now()
  }

  startBeat()
  const ready = (inFlight as Promise<void> | null) ?? Promise.resolve()
  cancelTimer = clock.setTimer(intervalMs, tick)

  return {
    ready,
    current() {
      if (!member || closing !== null || ownFresh()) return null
      startBeat()
      return inFlight
    },
    async settled() {
      // A beat started while the one awaited ran (a tick, or `current()`) is waited for too.
      while (inFlight !== null) await inFlight
    },
    ownerOf: (partition) => owners.ownerOf(partition, view),
    hosts: () => view,
    subscribe: (listener) => listeners.add(listener),
    close() {
      closing ??= (async () => {
        cancelTimer()
        listeners.clear()
        view = Object.freeze([])
        owners.clear()
        await inFlight
        // Leaving is a courtesy that moves our partitions at once; if it fails, our row expires.
        if (member) await attempt(() => store.leave({ hostId }))
      })()
      return closing
    },
  }
}
