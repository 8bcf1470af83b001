/**
 * Dispatch — runs the dispatch machine of each job queue this engine claims from
 * (machines/DispatchMachine.ts): the claims of this engine waiting for a job, the hand-over of a
 * job claimed for one of them, and the queue's Matching polls on behalf of the claims parked in
 * line (its line polls). The machine decides; this file carries out its commands and tells it
 * what happened, one step per event, and owns what a step cannot hold: each claim's promise,
 * each line poll's loop, and the queue's batcher of claims straight from the store.
 *
 * A job reaches a claim in line by a hand-over: from an enqueue of this engine (eager dispatch,
 * JobQueue.ts), from a due-time pass (Claimer.ts's `claimForWaitingWorkers`), or from Matching
 * through a line poll. The machine's header says when the line runs one poll and when one per
 * parked claim, and when the store is skipped (drained) or left to Matching (polls forwarded
 * here wait).
 *
 * Invariants: a claim's id is drawn from a counter per queue, in the order claims join, so a
 * seed's trace names them the same way on every run; a step that executes commands which raise
 * events (none do synchronously today) queues them behind itself, so steps never nest; a line
 * poll runs only while the machine lists it; every parked claim is failed by its line poll's failure.
 *
 * Lifetime: a dispatch that has held nothing (the machine's `use` region `empty`) for
 * `dispatchIdleUnloadMs`, with no store statement of its own in flight, is dropped at the next
 * due-time pass; the queue's next use makes a new one. Callers hold the handle `of` gives, which
 * reaches the queue's dispatch of the moment, so none keeps talking to a dropped one.
 *
 * Does not: claim from the store (StoreClaims.ts), decide ordering (the machine), or keep time:
 * deadlines are timers on the injected clock.
 *
 * Length: past 400 lines because the dispatch's interface (mostly its doc comments), its runner
 * and the handle that outlives a drop are one contract; split, each would restate the others.
 */
import type { MatchingHost } from '../actors/MatchingHost.ts'
import type { CancelTimer, Clock } from '../kernel/Clock.ts'
import { claimPollWaitMs, claimRetryDelayMs, dispatchIdleUnloadMs, jobBatchesInFlightMax, jobBatchSizeMax, jobKeptHoldMs } from '../kernel/Limits.ts'
import { makeMicroBatcher } from '../kernel/MicroBatcher.ts'
import { type DispatchMachine, type DispatchSnapshot, isDrained, isEmpty, isMatchingHolding } from '../machines/DispatchMachine.ts'
import type { DispatchCommand, DispatchEvent } from '../machines/DispatchProtocol.ts'
import { type DispatchStepper, makeDispatchStepper } from '../machines/DispatchStepper.ts'
import type { ClaimRef, JobRecord, JobStore } from '../persistence/jobs/JobStore.ts'
import type { DueDriver } from './DueDriver.ts'
import { claimedJobOf } from './JobsHistory.ts'
import { jobsNamespace, jobTaskType } from './QueueRouting.ts'

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
}

/**
 * What acking a claimed job takes besides the statement (JobHandle.ts): its claim, and the
 * `job.completed` event once the ack took effect.
 */
export interface AckHook {
  readonly ref: ClaimRef
  readonly completed: (nowMs: number) => void
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
   * Ends the line polls beyond one per parked claim: a worker calls it once the handler of a job
   * handed to it has started (ending a poll steps the partition's queue machine, which need not
   * stand between a job and its handler), and a stopping worker calls it too.
   */
  endIdlePolls(): void
  /** A job that came through Matching reached its claimant: the store may serve rows behind it again. */
  matchingReached(): void
  /** A job of the queue left processing on this engine while a handle limits the queue per key. */
  slotFreed(): void
  /** A due-time pass over the queue started. */
  passStarted(): void
  /** A claim statement straight from the store, made in pass generation `generation`, asked for `asked` rows and got `claimed`. */
  storeAnswered(generation: number, asked: number, claimed: number): void
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
}

// A queue's dispatch as its runner keeps it: the face, and whether it may be dropped now.
interface KeptDispatch {
  readonly dispatch: QueueDispatch
  readonly handle: QueueDispatch
  mayDrop(nowMs: number): boolean
}

/** Hears every step of a queue's dispatch machine with the commands it asked for (simulators, traces, tests). */
export type DispatchStepListener = (queue: string, event: DispatchEvent, commands: ReadonlyArray<DispatchCommand>) => void

/**
 * Makes an engine's dispatches; `machine` is the dispatch machine or a variant of it (`provide`),
 * and `onStep` hears each step.
 */
export function makeDispatches(runtime: () => DispatchRuntime, machine: DispatchMachine, onStep?: DispatchStepListener): Dispatches {
  const stepper = makeDispatchStepper(machine)
  const byQueue = new Map<string, KeptDispatch>()
  const live = (queue: string): KeptDispatch => {
    let kept = byQueue.get(queue)
    if (kept === undefined) {
      kept = makeQueueDispatch(runtime(), stepper, queue, onStep, () => live(queue).dispatch)
      byQueue.set(queue, kept)
    }
    return kept
  }
  return {
    of: (queue) => live(queue).handle,
    *all() {
      for (const kept of byQueue.values()) yield kept.dispatch
    },
    prune(nowMs) {
      for (const [queue, kept] of byQueue) if (kept.mayDrop(nowMs)) byQueue.delete(queue)
    },
    size: () => byQueue.size,
  }
}

// The handle `of` gives out: every call goes to the queue's dispatch of the moment (`current`).
function handleOf(queue: string, current: () => QueueDispatch): QueueDispatch {
  return {
    queue,
    join: (onOffer) => current().join(onOffer),
    park: (place, deadlineMs, signal) => current().park(place, deadlineMs, signal),
    reserveFirst: () => current().reserveFirst(),
    release: (claimId) => current().release(claimId),
    handOver: (job, claimId) => current().handOver(job, claimId),
    returnJob: (job) => current().returnJob(job),
    endIdlePolls: () => current().endIdlePolls(),
    matchingReached: () => current().matchingReached(),
    slotFreed: () => current().slotFreed(),
    passStarted: () => current().passStarted(),
    storeAnswered: (generation, asked, claimed) => current().storeAnswered(generation, asked, claimed),
    forwardedArrived: () => current().forwardedArrived(),
    forwardedLeft: () => current().forwardedLeft(),
    lazyPollStarted: () => current().lazyPollStarted(),
    lazyPollEnded: () => current().lazyPollEnded(),
    waitingCount: () => current().waitingCount(),
    waitingSincePass: () => current().waitingSincePass(),
    forwardedWaiting: () => current().forwardedWaiting(),
    lazyPolls: () => current().lazyPolls(),
    generation: () => current().generation(),
    expireKept: () => current().expireKept(),
    isDrained: () => current().isDrained(),
    isMatchingHolding: () => current().isMatchingHolding(),
    hasSpare: () => current().hasSpare(),
    steps: () => current().steps(),
    directClaims: (make) => current().directClaims(make),
  }
}

/** The reason a line poll is aborted with: a constant, so that ending a poll builds no error. */
const handedOff = Symbol('line poll ended')

interface Claim {
  handed: JobRecord | null
  settle: (() => void) | null
  readonly onOffer: () => void
}

// Kept jobs no claim took go back to the store, those of one turn in one statement; the pass
// asked for then serves the claims that joined meanwhile. A release that fails leaves its job to
// lapse at its deadline and be delivered again, as any unsettled claim.
function makeReleaser(runtime: DispatchRuntime, queue: string): (job: JobRecord) => Promise<void> {
  const released = makeMicroBatcher<JobRecord, void>({
    async run(jobs) {
      const claims = jobs.map((job) => ({ id: job.id, claimToken: job.claimToken as string }))
      await runtime.jobStore.release({ claims, nowMs: runtime.now() })
      runtime.driver.notifyDue(runtime.now(), queue)
      return jobs.map(() => undefined)
    },
    sizeMax: jobBatchSizeMax,
    inFlightMax: jobBatchesInFlightMax,
  })
  return (job) => released(job).catch(() => {})
}

// One line poll: polls Matching until the machine no longer lists it, telling it (`send`) of each
// task matched (already claimed by History for this engine) and of a whole wait with nothing.
async function runLinePollLoop(
  runtime: DispatchRuntime,
  queue: string,
  pollId: number,
  signal: AbortSignal,
  isListed: (pollId: number) => boolean,
  send: (event: DispatchEvent) => void,
): Promise<void> {
  while (isListed(pollId)) {
    const pollDeadlineMs = runtime.now() + claimPollWaitMs
    const polled = await runtime.matching.poll({ namespace: jobsNamespace, family: queue, type: jobTaskType, identity: runtime.hostId, waitMs: claimPollWaitMs, signal })
    if (polled !== null) send({ type: 'linePoll.matched', pollId, job: claimedJobOf(polled.response) })
    else if (!isListed(pollId)) return
    // Back before its deadline, the poll was refused (its partition unloading or changing
    // owner; Matching itself waits out a queue's idle unload): pause rather than spin.
    else if (runtime.now() < pollDeadlineMs) await runtime.driver.waitForDelivery(queue, runtime.now() + claimRetryDelayMs)
    else send({ type: 'linePoll.idled', pollId })
  }
}

// One queue's dispatch: the machine's snapshot and the runner's own state (claims, parked
// claims' failures, line polls, store statements in flight, since when it holds nothing) with
// the methods over them. Past 120 lines because it is one object's closure: its methods share
// that state, which split across functions would be passed around on every step of the claim path.
function makeQueueDispatch(runtime: DispatchRuntime, stepper: DispatchStepper, queue: string, onStep: DispatchStepListener | undefined, current: () => QueueDispatch): KeptDispatch {
  let snapshot: DispatchSnapshot = stepper.start(queue)
  // Since when the machine's `use` region is `empty` (a new dispatch holds nothing); null while holding.
  let emptySinceMs: number | null = runtime.now()
  // Release and direct-claim statements of this dispatch at the store.
  let statementsInFlight = 0
  // Counts `statement` while it runs and hands it back as it is: the caller's continuation runs
  // when it would without the count (no promise added between them).
  const counted = <T>(statement: Promise<T>): Promise<T> => {
    statementsInFlight++
    const done = (): void => void statementsInFlight--
    statement.then(done, done)
    return statement
  }
  let direct: DirectClaims | null = null
  let stepCount = 0
  let nextClaimId = 1
  // The first claim id drawn after the latest pass started.
  let passMarker = 1
  let stepping = false
  const pending: DispatchEvent[] = []
  const claims = new Map<number, Claim>()
  const parkedFails = new Map<number, (error: unknown) => void>()
  const polls = new Map<number, AbortController>()

  const send = (event: DispatchEvent): void => {
    pending.push(event)
    if (stepping) return
    stepping = true
    try {
      for (let next = pending.shift(); next !== undefined; next = pending.shift()) {
        const [after, commands] = stepper.step(snapshot, next)
        snapshot = after
        stepCount++
        if (!isEmpty(after)) emptySinceMs = null
        else emptySinceMs ??= runtime.now()
        onStep?.(queue, next, commands)
        for (const command of commands) execute(command)
      }
    } finally {
      stepping = false
    }
  }

  const execute = (command: DispatchCommand): void => {
    switch (command.type) {
      case 'claim.handOver': {
        const claim = claims.get(command.params.claimId)
        // The machine hands over only to claims it lists; one not known here left in the same turn.
        if (claim === undefined || claim.handed !== null) {
          pending.push({ type: 'job.returned', job: command.params.job })
          return
        }
        claim.handed = command.params.job
        claims.delete(command.params.claimId)
        claim.settle?.()
        claim.onOffer()
        return
      }
      case 'job.release':
        return void counted(releaseLater(command.params.job))
      case 'job.kept': {
        // The pass that gives kept jobs back (every queue's, at its start) runs by then: the
        // driver's one timer, no timer per job.
        const nowMs = runtime.now()
        const leftMs = (command.params.job.deadlineMs ?? nowMs) - nowMs
        return runtime.driver.notifyDue(nowMs + Math.max(0, Math.min(jobKeptHoldMs, Math.floor(leftMs / 2))), queue)
      }
      case 'claims.fail':
        for (const claimId of command.params.claimIds) parkedFails.get(claimId)?.(command.params.error)
        return
      case 'linePoll.start':
        return runLinePoll(command.params.pollId)
      case 'linePoll.end':
        polls.get(command.params.pollId)?.abort(handedOff)
        polls.delete(command.params.pollId)
        return
      case 'pass.request':
        return runtime.driver.notifyDue(runtime.now(), queue)
      case 'slot.announce':
        return runtime.announceSlotFreed(queue)
    }
  }

  const isListed = (pollId: number): boolean => snapshot.context.linePolls.includes(pollId)

  const releaseLater = makeReleaser(runtime, queue)

  const runLinePoll = (pollId: number): void => {
    const controller = new AbortController()
    polls.set(pollId, controller)
    const forget = (): void => {
      if (polls.get(pollId) === controller) polls.delete(pollId)
    }
    runLinePollLoop(runtime, queue, pollId, controller.signal, isListed, send).then(
      () => {
        forget()
        send({ type: 'linePoll.stopped', pollId })
      },
      (error: unknown) => {
        forget()
        send({ type: 'linePoll.failed', pollId, error })
      },
    )
  }

  const dispatch: QueueDispatch = {
    queue,
    join(onOffer = () => {}) {
      const claimId = nextClaimId++
      const claim: Claim = { handed: null, settle: null, onOffer }
      claims.set(claimId, claim)
      let offered: Promise<void> | null = null
      send({ type: 'claim.queued', claimId })
      return {
        claimId,
        offered() {
          offered ??= claim.handed !== null ? Promise.resolve() : new Promise((resolve) => (claim.settle = resolve))
          return offered
        },
        job: () => claim.handed,
        leave() {
          if (!claims.delete(claimId)) return
          send({ type: 'claim.left', claimId })
        },
      }
    },
    async park(place, deadlineMs, signal) {
      // Settles when the wait ends: resolved by the deadline or the signal, rejected by the line poll's failure.
      let fail: (error: unknown) => void = () => {}
      let wake: () => void = () => {}
      const ended = new Promise<void>((resolve, reject) => {
        wake = resolve
        fail = reject
      })
      const cancelTimer: CancelTimer = runtime.clock.setTimer(deadlineMs - runtime.now(), wake)
      signal?.addEventListener('abort', wake, { once: true })
      if (signal?.aborted === true || place.job() !== null) {
        cancelTimer()
        signal?.removeEventListener('abort', wake)
        return
      }
      parkedFails.set(place.claimId, fail)
      send({ type: 'claim.parked', claimId: place.claimId })
      try {
        await Promise.race([place.offered(), ended])
      } finally {
        cancelTimer()
        signal?.removeEventListener('abort', wake)
        parkedFails.delete(place.claimId)
        // Handed a job, the claim ends the extra polls once its handler has started (`endIdlePolls`).
        send({ type: 'claim.unparked', claimId: place.claimId, handed: place.job() !== null })
      }
    },
    reserveFirst() {
      const first = snapshot.context.waiting[0]
      if (first === undefined) return undefined
      send({ type: 'claim.reserved', claimId: first })
      return first
    },
    release: (claimId) => send({ type: 'claim.released', claimId }),
    handOver: (job, claimId = null) => send({ type: 'job.handed', job, claimId }),
    returnJob: (job) => send({ type: 'job.returned', job }),
    endIdlePolls() {
      // Nothing to end: no step (the common case, a loop whose claims go straight to the store).
      if (snapshot.context.linePolls.length > snapshot.context.parked.length) send({ type: 'handler.started' })
    },
    matchingReached: () => send({ type: 'matching.reached' }),
    slotFreed: () => send({ type: 'slot.freed' }),
    passStarted() {
      passMarker = nextClaimId
      send({ type: 'pass.started' })
    },
    storeAnswered: (generation, asked, claimed) => send({ type: 'store.answered', generation, asked, claimed }),
    forwardedArrived: () => send({ type: 'forwarded.arrived' }),
    forwardedLeft: () => send({ type: 'forwarded.left' }),
    lazyPollStarted: () => send({ type: 'lazyPoll.started' }),
    lazyPollEnded: () => send({ type: 'lazyPoll.ended' }),
    waitingCount: () => snapshot.context.waiting.length,
    waitingSincePass: () => snapshot.context.waiting.reduce((count, claimId) => (claimId < passMarker ? count + 1 : count), 0),
    forwardedWaiting: () => snapshot.context.forwardedWaiting,
    lazyPolls: () => snapshot.context.lazyPolls,
    generation: () => snapshot.context.generation,
    isDrained: () => isDrained(snapshot),
    isMatchingHolding: () => isMatchingHolding(snapshot),
    hasSpare: () => snapshot.context.spare.length > 0,
    expireKept() {
      if (snapshot.context.spare.length > 0) send({ type: 'kept.expired' })
    },
    steps: () => stepCount,
    directClaims(make) {
      const claims = (direct ??= make())
      return (ack) => counted(claims(ack))
    },
  }
  return {
    dispatch,
    handle: handleOf(queue, current),
    mayDrop: (nowMs) => !stepping && statementsInFlight === 0 && emptySinceMs !== null && nowMs - emptySinceMs >= dispatchIdleUnloadMs,
  }
}
