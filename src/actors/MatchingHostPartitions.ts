/**
 * MatchingHostPartitions — the partition instances a Matching host has loaded, and their
 * unload bookkeeping (DESIGN.md §6).
 *
 * Each instance lives on a fiber of its own, attached to the host's scope: the fiber makes the
 * partition actor in a scope of its own, waits until the instance is released, unloads it
 * (final checkpoints) and closes that scope. The host supervises the fiber: its end (or the host
 * scope closing, which interrupts it) retires the instance's restart book, and a defect in the
 * partition reaches the host's `onDefect` as the fiber's `Cause`. Closing the host's scope
 * interrupts whatever instance is still loaded; its finalizer answers every reply still owed.
 *
 * The fiber starts at once and makes the actor synchronously, so a request that routes to a
 * new partition is sent to it in the same turn, as one to a loaded partition is. Partition
 * fibers run on the host's scheduler, or without one on a microtask scheduler (each mailbox hop
 * a microtask, never an event-loop turn): the Promise face's requests continue on them.
 *
 * Unload is by instance: `unloadInstance(name, generation)` never unloads a later instance of
 * the same partition. When membership moves a partition away, the host unloads it after
 * `membershipUnloadDelayMs` if it still is not ours; if it is ours again by then (the view
 * flickered), the host compares each owned queue's range with the stored one and unloads the
 * instance if another host took it meanwhile, instead of serving from a stale queue until its
 * periodic ownership check.
 */
import { Cause, Deferred, Effect, Exit, Fiber, Scope } from 'effect'
import { MixedScheduler, type Scheduler } from 'effect/Scheduler'
import type { PartitionKey } from '../domain/QueueKey.ts'
import { assert } from '../kernel/assert.ts'
import type { Clock } from '../kernel/Clock.ts'
import { membershipUnloadDelayMs } from '../kernel/Limits.ts'
import type { Random } from '../kernel/Random.ts'
import type { MatchingHostOptions } from './MatchingHostProtocol.ts'
import type { HostRouting, Route } from './MatchingHostRouting.ts'
import { makePartitionActor, type PartitionActor } from './PartitionActor.ts'
import { makeRestartBooks, type RestartBooks } from './RestartBooks.ts'

/** A loaded partition instance. */
export interface PartitionEntry {
  readonly actor: PartitionActor
  /** Releases the instance: it unloads (queues drain) and leaves the host. Once; resolves then. */
  readonly finish: () => Promise<void>
}

/** The partition instances of one host. */
export interface HostPartitions {
  /** The loaded instance of `route`'s partition, or a new one. Throws a defect if it cannot start. */
  actorFor(route: Route): PartitionActor
  /** The loaded instance of the partition named `name`, if any. */
  get(name: string): PartitionEntry | undefined
  /** Unloads the instance `generation` of partition `name`, never a later one; resolves once it left. */
  unloadInstance(name: string, generation: number, reason: string): Promise<void>
  /** Stops watching membership, unloads every instance, then closes the host's scope. */
  closeAll(reason: string): Promise<void>
  /** Loaded instances and restart books kept (diagnostics). */
  sizes(): { readonly partitionsLoaded: number; readonly restartBooks: number }
}

/** What the partitions of a host share with the rest of it. */
export interface HostPartitionsOptions {
  readonly host: MatchingHostOptions
  readonly clock: Clock
  readonly random: Random
  readonly routing: HostRouting
  /** The host's scope: every partition fiber is attached to it (its close interrupts them). */
  readonly scope: Scope.Closeable
  /** Called when an instance of partition `name` left the book (the fence cache forgets it). */
  readonly onInstanceGone: (name: string) => void
  /** Polls wait on partition `key` with no task ready there (PartitionActor's `onPollsIdle`). */
  readonly onPollsIdle?: (key: PartitionKey) => void
  /** Tasks are ready on partition `key` with no poll waiting there (PartitionActor's `onTasksIdle`). */
  readonly onTasksIdle?: (key: PartitionKey) => void
}

// What every instance of a host's partitions shares.
interface Book {
  readonly options: HostPartitionsOptions
  readonly partitions: Map<string, PartitionEntry>
  readonly restartBooks: RestartBooks
  readonly onDefect: (queue: string, defect: unknown) => void
  readonly scheduler: Scheduler
}

/** Makes a host's partition book and subscribes it to membership changes. */
export function makeHostPartitions(options: HostPartitionsOptions): HostPartitions {
  const { host, scope } = options
  const book: Book = {
    options,
    partitions: new Map(),
    restartBooks: makeRestartBooks(),
    // A defect inside a queue or a partition (a bug): by default rethrown asynchronously, so it
    // is not lost.
    onDefect: host.onDefect ?? ((queue, defect) => queueMicrotask(() => { throw defect instanceof Error ? defect : new Error(`defect in ${queue}: ${String(defect)}`) })),
    scheduler: host.scheduler ?? new MixedScheduler('sync'),
  }
  const { partitions } = book
  const runOptions = host.scheduler === undefined ? undefined : { scheduler: host.scheduler }
  let generation = 0

  const unloadInstance = async (name: string, instance: number, reason: string): Promise<void> => {
    const entry = partitions.get(name)
    if (entry === undefined || entry.actor.generation !== instance) return
    await Effect.runPromise(entry.actor.unload(reason), runOptions)
    if (partitions.get(name) === entry) partitions.delete(name)
    await entry.finish()
  }

  const unsubscribe = watchMembership(options, partitions, book.restartBooks, unloadInstance)

  return {
    actorFor(route) {
      const existing = partitions.get(route.name)
      if (existing !== undefined && !existing.actor.isUnloaded()) return existing.actor
      return startPartition(book, route, ++generation).actor
    },
    get: (name) => partitions.get(name),
    unloadInstance,
    async closeAll(reason) {
      unsubscribe?.()
      await Promise.all([...partitions.entries()].map(([name, entry]) => unloadInstance(name, entry.actor.generation, reason)))
      await Effect.runPromise(Scope.close(scope, Exit.void), runOptions)
    },
    sizes: () => ({ partitionsLoaded: partitions.size, restartBooks: book.restartBooks.size() }),
  }
}

// Starts instance `instance` of `route`'s partition on a fiber in the host's scope and enters it
// in the book. The fiber makes the actor synchronously (it starts at once), waits until the
// instance is released, unloads it and closes the instance's scope.
function startPartition(book: Book, { key, name }: Route, instance: number): PartitionEntry {
  const { options, partitions, restartBooks } = book
  const { host, clock } = options
  const released = Deferred.makeUnsafe<void>()
  let actor: PartitionActor | undefined
  let finishing: Promise<void> | null = null
  // Released once, whoever asks first (the partition unloading itself, the host); resolves once
  // the fiber ended, so its queues have drained and its restart book is written no more.
  const finish = (): Promise<void> => (finishing ??= (Deferred.doneUnsafe(released, Exit.void), ended))
  const life = Effect.scoped(
    Effect.gen(function* () {
      actor = yield* makePartitionActor({
        partition: key,
        generation: instance,
        restarts: restartBooks.open(name, key),
        store: host.store,
        history: host.history,
        clock,
        random: options.random.fork(),
        ...(host.limits === undefined ? {} : { limits: host.limits }),
        currentVersion: () => options.routing.knownVersion(key.namespace, key.family) ?? null,
        onUnloaded: (unloadedGeneration) => {
          if (partitions.get(name)?.actor.generation === unloadedGeneration) {
            partitions.delete(name)
            options.onInstanceGone(name)
          }
          // Whatever unloaded it (its default queue died, it went idle), the instance leaves.
          void finish()
        },
        ...(host.onStep === undefined ? {} : { onStep: host.onStep }),
        onDefect: book.onDefect,
        ...(options.onPollsIdle === undefined ? {} : { onPollsIdle: () => options.onPollsIdle?.(key) }),
        ...(options.onTasksIdle === undefined ? {} : { onTasksIdle: () => options.onTasksIdle?.(key) }),
        ...(host.partitionCompanion === undefined ? {} : { companion: () => host.partitionCompanion?.(key, instance) }),
      })
      yield* Deferred.await(released)
      yield* actor.unload('unloaded')
    }),
  )
  const fiber = Fiber.runIn(Effect.runFork(life, { scheduler: book.scheduler }), options.scope)
  // The supervisor: the instance's end retires its restart book, and a defect is reported.
  const ended = new Promise<void>((resolve) =>
    fiber.addObserver((exit) => {
      restartBooks.finished(name, clock.now())
      if (Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)) book.onDefect(name, Cause.squash(exit.cause))
      resolve()
    }),
  )
  assert(actor !== undefined, () => `partition ${name} did not start synchronously`)
  const entry: PartitionEntry = { actor, finish }
  partitions.set(name, entry)
  return entry
}

// When membership moves a partition away, unloads its instance after a short delay if it still
// is not ours; if it is ours again by then, unloads it only if another host took it meanwhile.
// A view waives the restart delays of the partitions it gives this host (RestartBooks.ts).
// Returns the unsubscribe function (none without membership).
function watchMembership(
  options: HostPartitionsOptions,
  partitions: ReadonlyMap<string, PartitionEntry>,
  restartBooks: RestartBooks,
  unloadInstance: HostPartitions['unloadInstance'],
): (() => void) | undefined {
  const { routing, clock } = options
  return options.host.membership?.subscribe(() => {
    restartBooks.waiveOurs((key) => routing.isOurs(key), clock.now())
    for (const [name, entry] of partitions) {
      if (routing.isOurs(entry.actor.partition)) continue
      const instance = entry.actor.generation
      clock.setTimer(membershipUnloadDelayMs, () => {
        if (!routing.isOurs(entry.actor.partition)) return void unloadInstance(name, instance, 'membership moved the partition')
        void takenMeanwhile(options.host, entry.actor).then((taken) => {
          if (taken) return unloadInstance(name, instance, 'another host took the partition while membership flickered')
        })
      })
    }
  })
}

// After a flicker: true when another host acquired one of the instance's owned queues since
// this host did. A failed read answers false: the queue's own periodic check still runs.
async function takenMeanwhile(host: MatchingHostOptions, actor: PartitionActor): Promise<boolean> {
  for (const queue of actor.loadedQueues()) {
    if (queue.state !== 'owned') continue
    try {
      const [ours, stored] = await Promise.all([queue.rangeIdWhenOwned(), host.store.inspect(queue.key)])
      if (stored !== null && stored.metadata.rangeId !== ours) return true
    } catch {
      return false
    }
  }
  return false
}
