/**
 * Dispatch — the contract of the dispatch of each job queue this engine claims from
 * (machines/DispatchMachine.ts): what a queue's dispatch needs of its engine, the claims of this
 * engine waiting for a job (their places in line), the hand-over of a job claimed for one of
 * them, and the set of an engine's dispatches. DispatchRunner.ts runs them.
 *
 * A job reaches a claim in line by a hand-over: from an enqueue of this engine (eager dispatch,
 * JobQueue.ts), from a due-time pass (Claimer.ts's `claimForWaitingWorkers`), or from Matching
 * through a line poll. The machine's header says when the line runs one poll and when one per
 * parked claim, and when the store is skipped (drained) or left to Matching (polls forwarded
 * here wait).
 *
 * Partitions: each instance of one of the queue's partitions that this engine's Matching host
 * loads binds itself to the queue's dispatch (`partitionLoaded`, the instance's companion) and
 * unbinds when it unloads, so the dispatch knows whether this engine delivers the queue; when
 * the last instance unloads, the claims parked here go to the queue's new owner at once.
 *
 * Lifetime: a dispatch that has held nothing (the machine's `use` region `empty`) for
 * `dispatchIdleUnloadMs`, with no store statement of its own in flight, is dropped at the next
 * due-time pass; the queue's next use makes a new one. Callers hold the handle `of` gives, which
 * reaches the queue's dispatch of the moment, so none keeps talking to a dropped one.
 *
 * Does not: run anything (DispatchRunner.ts does), claim from the store (StoreClaims.ts), or
 * decide ordering (the machine).
 */
import type { MatchingHost } from '../actors/MatchingHost.ts'
import type { PartitionCompanion } from '../actors/PartitionActor.ts'
import type { Clock } from '../kernel/Clock.ts'
import type { DispatchCommand, DispatchEvent } from '../machines/DispatchProtocol.ts'
import type { ClaimRef, JobRecord, JobStore } from '../persistence/jobs/JobStore.ts'
import type { DueDriver } from './DueDriver.ts'

/** What a queue's dispatch needs of its engine (the runtime, DispatchRuntime in Runtime.ts). */
export interface DispatchRuntime {
  readonly hostId: string
  readonly clock: Clock
  readonly jobStore: JobStore
  readonly matching: MatchingHost
  readonly driver: DueDriver
  /** Whole milliseconds of the injected clock. */
  now(): number
  /** Has the queue's owner run a pass now: a slot of it freed (Runtime.ts's `announceSlotFreed`). */
  announceSlotFreed(queue: string): void
  /**
   * Rows of `queue` became due at `dueMs` through this engine (Runtime.ts's `announceDue`): its
   * own driver hears it, and the owners of the queue's other partitions when it owns only some.
   */
  announceDue(queue: string, dueMs: number, byEnqueue: boolean): void
  /** The last instance of `queue`'s partitions on this engine unloaded: what this engine keeps as its owner goes (HandOvers.ts's idle registrations). */
  partitionsLeft(queue: string): void
}

/**
 * What acking a claimed job takes besides the statement (JobHandle.ts): its claim, and the
 * `job.completed` event once the ack took effect.
 */
export interface AckHook {
  readonly ref: ClaimRef
  readonly completed: (nowMs: number) => void
}

/** A head statement of a queue at the store (QueueDispatch's `headOut`). */
export interface HeadStatement {
  /** Its claim answer, which ends it: made in pass generation `generation`, it asked for `asked` due rows and got `claimed`. */
  answered(generation: number, asked: number, claimed: number): void
  /** It ended with no claim answer for the dispatch (it failed, or it reserved rows for Matching); nothing once it has ended. */
  ended(): void
}

/** A claim's place in its queue's line. */
export interface PlaceInLine {
  readonly claimId: number
  /** Resolves once a job is handed over. */
  offered(): Promise<void>
  /** The job handed over, if any. */
  job(): JobRecord | null
  /** Takes the claim out of line; later hand-overs pass it by. */
  leave(): void
  /**
   * True when the claim's wait was ended because the queue's partitions left this engine (their
   * last instance here unloaded): it should be routed again rather than park here once more.
   */
  wasRerouted(): boolean
}

/** The dispatch of one queue on this engine. */
export interface QueueDispatch {
  readonly queue: string
  /** A claim joins the line (a job kept from an earlier hand-over goes to it at once); `onOffer` runs at its hand-over. */
  join(onOffer?: () => void): PlaceInLine
  /**
   * Parks the claim at `place` on the queue's line polls until a job is handed to it, the clock
   * reaches `deadlineMs`, or `signal` aborts. Rejects with the line poll's failure (a Matching or
   * store error), as the claim's own poll would.
   */
  park(place: PlaceInLine, deadlineMs: number, signal: AbortSignal | undefined): Promise<void>
  /** Eager dispatch, first half: sets the claim waiting longest aside for an enqueue's job; undefined when none waits. */
  reserveFirst(): number | undefined
  /** The claim set aside was not given a job (a live job held the key): it is first in line again. */
  release(claimId: number): void
  /** Hands `job`, claimed for this engine, to `claimId` if it still waits, else to the claim waiting longest, else keeps it. */
  handOver(job: JobRecord, claimId?: number | null): void
  /** A job handed to a claim that had meanwhile got another one: the next claim gets it, or it is kept. */
  returnJob(job: JobRecord): void
  /**
   * A claim that has left the line holds two jobs (`claim.heldTwo`): `own`, its store statement's,
   * and `handed`, handed to it meanwhile (`passBeside`: by a due-time pass that started while the
   * statement was out; the dispatch knows whether it came through one of its line polls, from
   * Matching). Answers the job the claim answers — the other goes to the next claim, or
   * is kept — or null when the claim is to settle the head at the store (both go back, one
   * statement claims the head): only with `passBeside`, and no claim waiting.
   */
  heldTwo(own: JobRecord, handed: JobRecord, passBeside: boolean): JobRecord | null
  /**
   * Ends the line polls beyond one per parked claim, but the line's one poll while the store
   * serves the queue (the worker's next claim parks on it again): a worker calls it once the
   * handler of a job handed to it has started (ending a poll steps the partition's queue machine,
   * which need not stand between a job and its handler). No step when there is nothing to end.
   */
  endIdlePolls(): void
  /** A worker of the queue is stopping: every line poll beyond the claims still parked ends. */
  workerStopping(): void
  /** A job that came through Matching reached its claimant: the store may serve rows behind it again. */
  matchingReached(): void
  /** A job of the queue left processing on this engine while a handle limits the queue per key. */
  slotFreed(): void
  /** A Matching delivery of the queue found its job already claimed or gone. */
  deliveryStale(): void
  /** A due-time pass over the queue started. */
  passStarted(): void
  /**
   * A head statement of this engine on the queue goes to the store: a claim straight from it (a
   * worker's, a local queue's, a pass's for the claims waiting) or a pass's reservation. The
   * store passes over rows another statement holds and a claim holds more rows than it takes,
   * so a short answer beside another head statement is no proof that nothing is due: the
   * dispatch hears each such statement's end, and runs a pass once none is out.
   */
  headOut(): HeadStatement
  forwardedArrived(): void
  forwardedLeft(): void
  lazyPollStarted(): void
  lazyPollEnded(): void
  /** Claims of this engine in line (claiming from the store or parked). */
  waitingCount(): number
  /**
   * Claims in line that joined before the latest due-time pass over the queue started: those it
   * may send rows to Matching for. A claim that joined since takes the head of the due rows
   * itself once the pass is done.
   */
  waitingSincePass(): number
  forwardedWaiting(): number
  /** Lazy claims polling Matching for a job already with Matching. */
  lazyPolls(): number
  generation(): number
  /** Jobs kept for the next claim go back to the store (a pass ran elsewhere, the queue's workers stop). */
  expireKept(): void
  /** Claims skip the store until a pass starts: the last store claim found no more due rows. */
  isDrained(): boolean
  /** Polls forwarded here wait: due jobs go through Matching, which serves pollers in arrival order. */
  isMatchingHolding(): boolean
  /** An instance of one of the queue's partitions is loaded on this engine (the machine's `delivery` region is `here`). */
  isDeliveredHere(): boolean
  /** A job handed over found no claim and is kept for the next one to join. */
  hasSpare(): boolean
  /** Machine steps taken so far (what a job costs the protocol). */
  steps(): number
  /**
   * The queue's batcher of claims straight from the store (StoreClaims.ts), made by `make` on
   * first use; a call in flight keeps the dispatch from being dropped.
   */
  directClaims(make: () => DirectClaims): DirectClaims
}

/**
 * This engine's claims of a queue straight from the store, those of one turn in one statement,
 * with the acks riding on them (StoreClaims.ts): answers whether the call's ack took effect and its job.
 */
export type DirectClaims = (ack: AckHook | null) => Promise<{ readonly acked: boolean; readonly job: JobRecord | null }>

/**
 * The dispatches of one engine, one per queue in use, all stepping `machine`. A dispatch that
 * held nothing for `dispatchIdleUnloadMs` is dropped by `prune`; the queue's next use makes a
 * new one, which serves from the store.
 */
export interface Dispatches {
  /**
   * The dispatch of `queue`, made on first use. The handle stays valid across a drop: each call
   * reaches the queue's dispatch of the moment, so a caller that holds it across an await never
   * talks to one that was dropped.
   */
  of(queue: string): QueueDispatch
  /** Every queue's dispatch kept now. */
  all(): IterableIterator<QueueDispatch>
  /**
   * Drops the dispatches that have held nothing (the machine's `use` region `empty`) since at
   * least `dispatchIdleUnloadMs` before `nowMs`, with no store statement of theirs in flight:
   * an engine's passes then cost what its queues in use cost, not every queue it ever served.
   */
  prune(nowMs: number): void
  /** How many dispatches are kept now (diagnostics). */
  size(): number
  /**
   * Binds `queue`'s dispatch to `instance`, an instance of one of its partitions just loaded on
   * this engine (the companion the Matching host makes for it): the answer's `close` is called
   * when the instance unloads. While one is loaded the dispatch's `delivery` region is `here`;
   * when the last one closes, the claims parked on the queue's line are routed again. A dispatch
   * made later starts with the instances loaded then.
   */
  partitionLoaded(queue: string, instance: string): PartitionCompanion
  /**
   * The engine began closing: every dispatch, and each one made from now on, steps into its
   * `engine` region's `closing`, where what is kept or handed here goes back to the store.
   */
  engineClosing(): void
}

/**
 * Hears every step of a queue's dispatch machine with the commands it asked for (simulators,
 * traces, tests). `dispatch` numbers the queue's dispatches on the engine in the order they were
 * made (a dropped one's successor has the next number), so a listener can tell their steps apart.
 */
export type DispatchStepListener = (queue: string, event: DispatchEvent, commands: ReadonlyArray<DispatchCommand>, dispatch: number) => void
