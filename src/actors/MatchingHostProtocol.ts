/**
 * MatchingHostProtocol — what a Matching host (MatchingHost.ts) is asked and answers: its
 * options, the requests and their outcomes, its Effect and Promise faces, and the membership view
 * it routes by. Types only, besides the reading of a family's current deployment version from its
 * user data, which routing and the faces share.
 *
 * Does not: route, hold partitions or run anything (MatchingHost.ts and its parts do).
 */
import type { Effect } from 'effect'
import type { Scheduler } from 'effect/Scheduler'
import type { MatchboxError } from '../domain/errors.ts'
import type { JsonValue } from '../domain/Json.ts'
import type { PartitionKey, QueueKey, TaskType } from '../domain/QueueKey.ts'
import type { Task, TaskInput } from '../domain/Task.ts'
import type { Clock } from '../kernel/Clock.ts'
import type { Random } from '../kernel/Random.ts'
import type { QueueCommand, QueueEvent } from '../machines/PhysicalQueueProtocol.ts'
import type { QueueLimits } from '../machines/QueueContext.ts'
import type { Store, UserData } from '../persistence/queues/Store.ts'
import type { History } from './History.ts'
import type { HostWaitingPolls } from './MatchingHostWaiting.ts'
import type { PartitionCompanion } from './PartitionActor.ts'
import type { PhysicalQueueActor } from './PhysicalQueueActor.ts'

/** The membership view a host needs (see Membership.ts for static and dynamic ones). */
export interface MembershipView {
  /** The host that owns `partition`, or null when no host is known. */
  ownerOf(partition: PartitionKey): string | null
  /** Calls `listener` whenever ownership may have changed; returns an unsubscribe function. */
  subscribe(listener: () => void): () => void
}

/** What a Matching host needs. */
export interface MatchingHostOptions {
  readonly hostId: string
  readonly store: Store
  readonly history: History
  /** Default: the real clock. */
  readonly clock?: Clock
  /** Default: seeded from entropy. */
  readonly random?: Random
  /** Default: this host owns every partition. */
  readonly membership?: MembershipView
  /** Partitions per family (default 4), or a function of (namespace, family). */
  readonly partitionCount?: number | ((namespace: string, family: string) => number)
  readonly limits?: Partial<QueueLimits>
  /**
   * The Effect scheduler the host's fibers run on. Default: Effect's own (yields through the
   * event loop). The simulator passes `new MixedScheduler('sync')` so every fiber hop is a
   * microtask and one event-loop turn reaches quiescence.
   */
  readonly scheduler?: Scheduler
  readonly onStep?: (queue: PhysicalQueueActor, event: QueueEvent, commands: ReadonlyArray<QueueCommand>) => void
  /** Defects inside queues (bugs); default: rethrown asynchronously so they are not lost. */
  readonly onDefect?: (queue: string, defect: unknown) => void
  /**
   * Makes the book of the host's polls waiting on one of several owned partitions of a family
   * (MatchingHostWaiting.ts); default: the book that moves such a poll to a partition that
   * stores a task. The simulator passes one that never moves a poll, to plant that bug.
   */
  readonly waitingPolls?: () => HostWaitingPolls
  /**
   * Work each partition instance carries beside its physical queues (PartitionActor.ts's
   * `PartitionCompanion`): made when the instance starts, closed when it unloads. The job engine
   * binds each job queue's dispatch to the instances of its partitions this way. Default: none.
   */
  readonly partitionCompanion?: (partition: PartitionKey, generation: number) => PartitionCompanion | undefined
}

/** A task to add. `task.createdAtMs` defaults to now. */
export interface AddTaskRequest {
  readonly namespace: string
  readonly family: string
  readonly type: TaskType
  readonly task: Omit<TaskInput, 'createdAtMs'> & { readonly createdAtMs?: number }
}

/** Where an added task went. */
export type AddTaskOutcome = { readonly kind: 'matched'; readonly partition: number } | { readonly kind: 'spooled'; readonly partition: number; readonly taskId: number }

/** A long poll. */
export interface PollRequest {
  readonly namespace: string
  readonly family: string
  readonly type: TaskType
  /** The poller's deployment version; null or absent for unversioned workers. */
  readonly version?: string | null
  readonly identity: string
  /**
   * How long to wait for a task, ms (0 … 10 min), counted once the chosen queue has loaded and
   * read its backlog: a zero-wait poll still sees the tasks stored when it arrived.
   */
  readonly waitMs: number
  /** Ends the wait early when aborted (a worker stopping); the poll then answers null. */
  readonly signal?: AbortSignal
}

/** A task started for a poller: what History answered and where the task came from. */
export interface PolledTask {
  readonly task: Task
  readonly partition: number
  /** The backlog task id, or null if the task was sync-matched without an insert. */
  readonly taskId: number | null
  readonly response: JsonValue
}

/** Every error a Matching host's operations fail with (catalogue errors, each with `_tag` for `catchTag`). */
export type MatchingError = MatchboxError

/**
 * The Effect face of a Matching host: each operation's expected failures are in its error
 * channel as tagged catalogue errors — `InvalidInput` (bad request), `Unavailable` (no owned
 * partition here, a store outage), `ShuttingDown` (the host is closing), `Overloaded`,
 * `VersionConflict` (user data) — so Effect users `catchTag` them; defects stay defects.
 */
export interface MatchingHostEffects {
  readonly hostId: string
  addTask(request: AddTaskRequest): Effect.Effect<AddTaskOutcome, MatchingError>
  poll(request: PollRequest): Effect.Effect<PolledTask | null, MatchingError>
  getUserData(namespace: string, family: string): Effect.Effect<UserData | null, MatchingError>
  updateUserData(namespace: string, family: string, expectedVersion: number, data: JsonValue): Effect.Effect<UserData, MatchingError>
  /** `MatchingHost.retireVersion` with its failures in the error channel. */
  retireVersion(request: { namespace: string; family: string; type: TaskType; version: string }): Effect.Effect<number, MatchingError>
  /** Drains every partition (final checkpoints); afterwards every operation fails with `ShuttingDown`. */
  readonly close: Effect.Effect<void>
}

/** The Promise face of a Matching host. Failures reject with a MatchboxError. */
export interface MatchingHost {
  readonly hostId: string
  /** The same host as Effects, with typed errors. */
  readonly effects: MatchingHostEffects
  addTask(request: AddTaskRequest): Promise<AddTaskOutcome>
  poll(request: PollRequest): Promise<PolledTask | null>
  getUserData(namespace: string, family: string): Promise<UserData | null>
  updateUserData(namespace: string, family: string, expectedVersion: number, data: JsonValue): Promise<UserData>
  /**
   * Moves a retired version's backlog to the default queues in every partition of the family this
   * host owns now; returns the tasks moved. Partitions other hosts own are not touched: a host
   * that owns none answers 0 without retiring anything, so call it on every host (or on each
   * partition's owner) to retire a version everywhere.
   */
  retireVersion(request: { namespace: string; family: string; type: TaskType; version: string }): Promise<number>
  /** The partition numbers of a family that membership assigns to this host now (all of them without membership). */
  ownedPartitions(namespace: string, family: string, type: TaskType): ReadonlyArray<number>
  /**
   * The range fence for claims this host makes on the family's behalf outside Matching (the job
   * engine's claims straight from its jobs table): the default physical queue of a partition
   * this host owns — one that holds its range already, else the first that can be loaded and
   * acquired now — and the range id it holds. Null when this host owns no partition of the
   * family. Rejects (`Unavailable`, `ShuttingDown`) when none can be owned now (each waits out a
   * restart delay, or its acquire did not finish in time).
   */
  claimFence(namespace: string, family: string, type: TaskType): Promise<OwnedRange | null>
  /**
   * A claim made with `fence` was refused: another host took the queue. Unloads the partition
   * instance that held that range (a later instance is untouched), as its own ownership check
   * would; resolves once it has, so a `claimFence` after it loads the partition anew.
   */
  fenceRefused(fence: OwnedRange): Promise<void>
  close(): Promise<void>
}

/** A physical queue this host owns and the range id it holds: the fence of claims made through it. */
export interface OwnedRange {
  readonly queueKey: QueueKey
  readonly rangeId: number
}

/** The longest wait a poll may ask for: ten minutes, upstream's long-poll bound. */
export const pollWaitMsMax = 10 * 60_000

/** The current deployment version recorded in a family's user data (`{ currentVersion }`), if any. */
export function currentVersionOf(userData: UserData | null): string | null {
  const data = userData?.data
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return null
  const current = (data as { readonly [key: string]: JsonValue }).currentVersion
  return typeof current === 'string' ? current : null
}
