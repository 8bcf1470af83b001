/**
 * MatchingHostRequests — the bodies of a Matching host's `addTask` and `poll` (DESIGN.md §6),
 * written once with a callback for the answer; the host's Promise face and Effect face both
 * wrap them (MatchingHost.ts). Each continues synchronously from a partition's answer, as an
 * awaiting fiber would, so the Promise face needs no fiber per call.
 *
 * - An add goes to an owned partition where a poll of this host waits (so the two match at
 *   once), else to a random owned one (seeded Random), so tasks spread. A clean refusal (the
 *   partition was unloading, its queue had just lost ownership, it waits out a restart delay) is
 *   retried once, on another owned partition when there is one.
 * - A poll first loads the queues it may take from in every owned partition and waits (never
 *   past its deadline or abort) for their first backlog pages; then it prefers a partition with
 *   tasks ready now, else rotates through them, so an idle poll looks at the other partitions of
 *   its family. A poll that finds its partition unloading or its queue taken answers empty.
 * - A poll waiting on a partition of a family of several partitions is registered with the host's
 *   waiting polls (MatchingHostWaiting.ts): tasks ready on another partition of its family the
 *   host owns (stored there, or read from its backlog) move it there, so a ready task and an idle
 *   poll of one host do not wait on different partitions; a moved poll polls the partitions the
 *   host owns then, the one it moved to first. Only a poll with time left and not aborted moves.
 *
 * Does not: forward requests to other hosts. A family none of whose partitions is ours fails
 * with a retryable `Unavailable`; a router in front of the hosts picks the host.
 */
import { getMaxListeners, setMaxListeners } from 'node:events'
import { Cause, Exit } from 'effect'
import { InvalidInput, isMatchboxError, refusal, type ShuttingDown, Unavailable } from '../domain/errors.ts'
import { type TaskType, validateName } from '../domain/QueueKey.ts'
import { makeTask, type Task } from '../domain/Task.ts'
import type { Clock } from '../kernel/Clock.ts'
import type { Random } from '../kernel/Random.ts'
import type { UserData } from '../persistence/queues/Store.ts'
import type { PollerInfo } from './History.ts'
import { type AddTaskOutcome, type AddTaskRequest, type MatchingError, type MatchingHostOptions, type PolledTask, type PollRequest, pollWaitMsMax } from './MatchingHostProtocol.ts'
import type { HostPartitions } from './MatchingHostPartitions.ts'
import { familyKey, type HostRouting, type Route } from './MatchingHostRouting.ts'
import type { PartitionActor, Polled, Reply } from './PartitionActor.ts'
import type { HostWaitingPolls } from './MatchingHostWaiting.ts'
import type { PhysicalQueueActor, PollWatch } from './PhysicalQueueActor.ts'

/** What the request bodies read of their host. */
export interface HostRequestsContext {
  readonly host: MatchingHostOptions
  readonly clock: Clock
  readonly random: Random
  readonly routing: HostRouting
  readonly partitions: HostPartitions
  /** The refusal of a closed host, or null while it serves. */
  readonly closedRefusal: () => ShuttingDown | null
  /** Its polls waiting on one of several owned partitions of a family (MatchingHostWaiting.ts). */
  readonly waiting: HostWaitingPolls
  /** Adds sent to each partition instance (by route name) and not yet answered. */
  readonly addsInFlight: Map<string, number>
}

// A failure thrown by a synchronous check: a catalogue error fails, anything else is a defect.
const exitOf = (error: unknown): Exit.Exit<never, MatchingError> => (isMatchboxError(error) ? Exit.fail(error) : Exit.die(error))

// The catalogue error an answer failed with, if it did (not a defect).
const errorOf = (exit: Exit.Exit<unknown, MatchingError>): MatchingError | undefined =>
  Exit.isFailure(exit) && Exit.hasFails(exit) ? (Cause.squash(exit.cause) as MatchingError) : undefined

const noPartition = (context: HostRequestsContext, namespace: string, family: string, type: TaskType): Unavailable =>
  refusal(() => new Unavailable({ operation: 'route', detail: `host ${context.host.hostId} owns no partition of ${namespace}/${family}/${type}`, maybeCommitted: false }))

// A poll that found its partition unloading or its queue taken is simply empty: nothing was
// started for it, and the caller polls again.
const emptyHanded: ReadonlyArray<string> = ['ShuttingDown', 'Unavailable', 'OwnershipLost']

/** Adds a task to an owned partition of its family; `done` hears where it went. */
export function addTaskWith(context: HostRequestsContext, request: AddTaskRequest, done: Reply<AddTaskOutcome>): void {
  const closed = context.closedRefusal()
  if (closed !== null) return done(Exit.fail(closed))
  let owned: Route[]
  let task: Task
  try {
    owned = context.routing.owned(request.namespace, request.family, request.type)
    task = makeTask({ ...request.task, createdAtMs: request.task.createdAtMs ?? context.clock.now() })
    if (owned.length === 0) return done(Exit.fail(noPartition(context, request.namespace, request.family, request.type)))
  } catch (error) {
    return done(exitOf(error))
  }
  try {
    addTo(context, task, owned, 0, choosePartition(context, owned), done)
  } catch (error) {
    done(exitOf(error))
  }
}

// Where an add goes: the partition with the most polls of this host waiting and not yet spoken
// for by adds on their way there, so that adds issued together spread over the polls waiting on
// several partitions and each meets one (sync match) instead of all but the first being stored
// behind one partition's polls. Failing that, a partition where a poll waits, else any of
// `among`, at random.
function choosePartition(context: HostRequestsContext, among: ReadonlyArray<Route>): Route {
  let best: Route | undefined
  let bestFree = 0
  let withPolls: Route | undefined
  for (const candidate of among) {
    let polls = 0
    for (const queue of context.partitions.get(candidate.name)?.actor.loadedQueues() ?? []) polls += queue.pollerCount()
    if (polls > 0) withPolls ??= candidate
    const free = polls - (context.addsInFlight.get(candidate.name) ?? 0)
    if (free > bestFree) {
      best = candidate
      bestFree = free
    }
  }
  return best ?? withPolls ?? context.random.pick(among)
}

// Counts an add on its way to `route` until it is answered.
function addSent(context: HostRequestsContext, route: Route): () => void {
  context.addsInFlight.set(route.name, (context.addsInFlight.get(route.name) ?? 0) + 1)
  return () => {
    const left = (context.addsInFlight.get(route.name) ?? 1) - 1
    if (left > 0) context.addsInFlight.set(route.name, left)
    else context.addsInFlight.delete(route.name)
  }
}

// One attempt of an add; a clean refusal of the first goes to another owned partition when
// there is one: a partition that lost its range waits out a restart delay before it loads again.
function addTo(context: HostRequestsContext, task: Task, owned: ReadonlyArray<Route>, attemptIndex: number, route: Route, done: Reply<AddTaskOutcome>): void {
  const partition = route.key.partition
  const answered = addSent(context, route)
  try {
    context.partitions.actorFor(route).requests.addTask(task, (exit) => {
      answered()
      if (Exit.isSuccess(exit)) {
        const added = exit.value
        // Stored with no poll there: a poll of ours waiting on another partition comes for it.
        if (added.kind !== 'matched') context.waiting.taskStored(route.key)
        return done(Exit.succeed(added.kind === 'matched' ? { kind: 'matched', partition } : { kind: 'spooled', partition, taskId: added.taskId }))
      }
      // Refused without a write: one fresh attempt, as a caller would retry.
      const error = errorOf(exit)
      const refusedCleanly = error?._tag === 'ShuttingDown' || error?._tag === 'OwnershipLost' || (error?._tag === 'Unavailable' && !error.maybeCommitted)
      if (!refusedCleanly || attemptIndex > 0 || context.closedRefusal() !== null) return done(Exit.failCause(exit.cause))
      // Let the partition settle the death that refused us before routing again.
      const others = owned.filter((candidate) => candidate.name !== route.name)
      void Promise.resolve().then(() => addTo(context, task, owned, attemptIndex + 1, others.length > 0 ? choosePartition(context, others) : route, done))
    })
  } catch (error) {
    answered()
    done(exitOf(error))
  }
}

/** Long-polls the owned partitions of a family; `done` hears the started task or null. */
export function pollWith(context: HostRequestsContext, request: PollRequest, done: Reply<PolledTask | null>): void {
  const closed = context.closedRefusal()
  if (closed !== null) return done(Exit.fail(closed))
  let identity: string
  let version: string | null
  let owned: Route[]
  try {
    identity = validateName('identity', request.identity)
    if (typeof request.waitMs !== 'number' || !Number.isFinite(request.waitMs) || request.waitMs < 0 || request.waitMs > pollWaitMsMax) {
      return done(Exit.fail(new InvalidInput({ field: 'waitMs', reason: `must be a number in 0…${pollWaitMsMax}` })))
    }
    version = request.version === undefined || request.version === null ? null : validateName('version', request.version)
    owned = context.routing.owned(request.namespace, request.family, request.type)
  } catch (error) {
    return done(exitOf(error))
  }
  if (owned.length === 0) return done(Exit.fail(noPartition(context, request.namespace, request.family, request.type)))
  const poller: PollerInfo = { identity, version }
  if (version === null || context.routing.knownVersion(request.namespace, request.family) !== undefined) return pollOwned(context, request, poller, owned, done)
  // A versioned poller needs the family's current version: read it once.
  let reading: Promise<UserData | null>
  try {
    reading = context.host.store.getUserData({ namespace: request.namespace, family: request.family })
  } catch (error) {
    return done(exitOf(error))
  }
  reading.then(
    (userData) => {
      context.routing.rememberVersion(request.namespace, request.family, userData)
      pollOwned(context, request, poller, owned, done)
    },
    (error: unknown) => done(exitOf(error)),
  )
}

// Polls the owned partitions of a family once its current version is known: warms the cold
// ones, then polls the chosen one.
function pollOwned(context: HostRequestsContext, request: PollRequest, poller: PollerInfo, owned: ReadonlyArray<Route>, done: Reply<PolledTask | null>, prefer?: number): void {
  try {
    const actors = owned.map((route) => context.partitions.actorFor(route))
    // The queues this poller may take from: its version's, and the default one when it is
    // unversioned or its version is current.
    const current = context.routing.knownVersion(request.namespace, request.family) ?? null
    const { version } = poller
    const versions: ReadonlyArray<string | null> = version === null ? [null] : version === current ? [version, null] : [version]
    const relevant = (queue: PhysicalQueueActor): boolean => versions.includes(queue.key.version)
    const deadlineMs = context.clock.now() + request.waitMs
    const cold = actors.filter((actor) => actor.loadedQueues().filter(relevant).length < versions.length)
    const pollChosen = (): void => pollChosenPartition(context, request, poller, actors, relevant, deadlineMs, done, prefer)
    if (cold.length === 0) return pollChosen()
    warmThen(cold, versions, deadlineMs, request.signal, pollChosen, done)
  } catch (error) {
    done(exitOf(error))
  }
}

// Loads the queues in every cold partition and waits (never past the poll's deadline or abort)
// for their first backlog pages, so a task stored in any partition counts as ready; then `next`.
// A warm-up never fails but may die. Each listens on the poll's signal until it answers: one
// per partition, not a leak.
function warmThen(cold: ReadonlyArray<PartitionActor>, versions: ReadonlyArray<string | null>, deadlineMs: number, signal: AbortSignal | undefined, next: () => void, done: Reply<PolledTask | null>): void {
  if (signal !== undefined) setMaxListeners(Math.max(getMaxListeners(signal), cold.length + 10), signal)
  let waiting = cold.length
  let failed = false
  for (const actor of cold) {
    actor.requests.warm(versions, deadlineMs, signal, (exit) => {
      if (failed) return
      if (Exit.isFailure(exit)) {
        failed = true
        return done(Exit.die(Cause.squash(exit.cause)))
      }
      if (--waiting > 0) return
      try {
        next()
      } catch (error) {
        done(exitOf(error))
      }
    })
  }
}

// Prefers a partition with tasks ready now, then `prefer` (where a task was just stored);
// otherwise rotates (per family, type and version, so interleaved pollers of different versions
// do not alias onto the same partitions). With several partitions, the wait is registered with
// the host's waiting polls, which may move it to a partition that stores a task meanwhile.
function pollChosenPartition(
  context: HostRequestsContext,
  request: PollRequest,
  poller: PollerInfo,
  actors: ReadonlyArray<PartitionActor>,
  relevant: (queue: PhysicalQueueActor) => boolean,
  deadlineMs: number,
  done: Reply<PolledTask | null>,
  prefer?: number,
): void {
  const ready = actors.find((actor) => actor.loadedQueues().some((queue) => relevant(queue) && queue.hasReady()))
  const preferred = ready ?? (prefer === undefined ? undefined : actors.find((actor) => actor.partition.partition === prefer))
  const chosen = preferred ?? (actors[context.routing.nextTurn(`${familyKey(request.namespace, request.family)}\u0000${request.type}\u0000${poller.version ?? ''}`) % actors.length] as PartitionActor)
  const answer: Reply<Polled> = (exit) => {
    if (Exit.isSuccess(exit)) {
      const polled = exit.value
      return done(Exit.succeed(polled.kind === 'task' ? { task: polled.task, partition: chosen.partition.partition, taskId: polled.taskId, response: polled.response } : null))
    }
    const error = errorOf(exit)
    done(error !== undefined && emptyHanded.includes(error._tag) ? Exit.succeed(null) : Exit.failCause(exit.cause))
  }
  // A family of one partition has nowhere to move a poll to.
  if (actors.length === 1 && context.routing.routesOf(request.namespace, request.family, request.type).length === 1) return chosen.requests.poll(poller, deadlineMs, request.signal, answer)
  // A moved poll polls the partitions the host owns then (it may have gained the one it moves to).
  const again = (partition: number): void => pollOwnedNow(context, request, poller, deadlineMs, done, partition)
  waitMovable(context, request, poller, chosen, actors, gainedOfFamily(context, request, actors), relevant, deadlineMs, answer, again)
}

// The partition actors of the poll's family the host has loaded and owns now beyond `actors`
// (those it had when the poll chose): a partition it gained since counts, so the poll may move
// there. Read only when `actors` do not answer, so a move costs no routing read in the common case.
function gainedOfFamily(context: HostRequestsContext, request: PollRequest, actors: ReadonlyArray<PartitionActor>): () => ReadonlyArray<PartitionActor> {
  return () => {
    const gained: PartitionActor[] = []
    for (const route of context.routing.owned(request.namespace, request.family, request.type)) {
      const actor = context.partitions.get(route.name)?.actor
      if (actor !== undefined && !actors.includes(actor)) gained.push(actor)
    }
    return gained
  }
}

// Polls the family's owned partitions again for what is left of the poll's wait.
function pollOwnedNow(context: HostRequestsContext, request: PollRequest, poller: PollerInfo, deadlineMs: number, done: Reply<PolledTask | null>, prefer: number): void {
  let owned: Route[]
  try {
    owned = context.routing.owned(request.namespace, request.family, request.type)
  } catch (error) {
    return done(exitOf(error))
  }
  if (owned.length === 0) return done(Exit.succeed(null))
  pollOwned(context, { ...request, waitMs: Math.max(0, deadlineMs - context.clock.now()) }, poller, owned, done, prefer)
}

// Polls `chosen` with a wait the host's waiting polls may move: a moved wait that came back
// empty polls again (`again`) on the partition that stored a task, unless the poll's own signal
// aborted or its deadline passed meanwhile.
function waitMovable(
  context: HostRequestsContext,
  request: PollRequest,
  poller: PollerInfo,
  chosen: PartitionActor,
  actors: ReadonlyArray<PartitionActor>,
  gained: () => ReadonlyArray<PartitionActor>,
  relevant: (queue: PhysicalQueueActor) => boolean,
  deadlineMs: number,
  answer: Reply<Polled>,
  again: (partition: number) => void,
): void {
  const outer = request.signal
  const wait = new AbortController()
  const abort = (): void => wait.abort()
  if (outer?.aborted === true) wait.abort()
  else outer?.addEventListener('abort', abort, { once: true })
  let movedTo: number | undefined
  // A poll whose wait is up or whose caller aborted answers where it is: moved, it would not poll again.
  const canPollAgain = (): boolean => outer?.aborted !== true && context.clock.now() < deadlineMs
  // Its queues tell whether they have it with History now: a move spent on it then would find it
  // answered by that task, while an idle poll stayed where it is.
  const watch: PollWatch = { delivering: 0 }
  const isReady = (actor: PartitionActor): boolean => actor.loadedQueues().some((queue) => relevant(queue) && queue.hasReady())
  const remove = context.waiting.add(chosen.partition, {
    partition: chosen.partition.partition,
    canMove: () => watch.delivering === 0 && canPollAgain(),
    // An instance the poll knew may have unloaded since, and the host loaded the partition again:
    // the new instance is among `gained`, so a known instance that cannot take does not answer alone.
    canTakeFrom: (partition) => {
      const takes = (actor: PartitionActor): boolean => actor.partition.partition === partition && actor.loadedQueues().some(relevant)
      return actors.some(takes) || gained().some(takes)
    },
    moveTo: (partition) => {
      movedTo = partition
      wait.abort()
    },
    readyHere: () => isReady(chosen),
    readyElsewhere: () => {
      const elsewhere = (actor: PartitionActor): boolean => actor !== chosen && isReady(actor)
      return (actors.find(elsewhere) ?? gained().find(elsewhere))?.partition.partition
    },
  })
  chosen.requests.poll(
    poller,
    deadlineMs,
    wait.signal,
    (exit) => {
      remove()
      outer?.removeEventListener('abort', abort)
      const moved = movedTo !== undefined && Exit.isSuccess(exit) && exit.value.kind !== 'task' && canPollAgain()
      if (moved) return again(movedTo as number)
      answer(exit)
    },
    watch,
  )
}
