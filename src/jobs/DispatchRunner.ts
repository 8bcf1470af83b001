/**
 * DispatchRunner — runs the dispatch machine of each job queue this engine claims from
 * (machines/DispatchMachine.ts; the contract is Dispatch.ts's). The machine decides; this file
 * carries out its commands and tells it what happened, one step per event, and owns what a step
 * cannot hold: each claim's promise, each line poll's loop, and the queue's batcher of claims
 * straight from the store.
 *
 * Invariants: a claim's id is drawn from a counter per queue, in the order claims join, so a
 * seed's trace names them the same way on every run; a step that executes commands which raise
 * events (none do synchronously today) queues them behind itself, so steps never nest; a line
 * poll runs only while the machine lists it; every parked claim is failed by its line poll's failure.
 *
 * One queue's dispatch is one state record (`QueueDispatchState`) that module functions step;
 * the record's callbacks are made once per dispatch, so a step allocates no closure.
 *
 * Does not: claim from the store (StoreClaims.ts), decide ordering (the machine), or keep time:
 * deadlines are timers on the injected clock.
 *
 * Length: past 400 lines because every command the machine asks for is carried out here, beside
 * the state those commands touch (claims, parked claims' ends, line polls, statements in flight);
 * the face other files call (`handleOf`) is a list of one-line forwards.
 */
import { assert } from '../kernel/assert.ts'
import type { CancelTimer } from '../kernel/Clock.ts'
import { claimPollWaitMs, claimRetryDelayMs, dispatchIdleUnloadMs, jobBatchesInFlightMax, jobBatchSizeMax, jobKeptHoldMs } from '../kernel/Limits.ts'
import { makeMicroBatcher } from '../kernel/MicroBatcher.ts'
import { type DispatchMachine, type DispatchSnapshot, hasPollsToEndAtHandlerStart, isDeliveredHere, isDrained, isEmpty, isMatchingHolding } from '../machines/DispatchMachine.ts'
import type { DispatchCommand, DispatchEvent } from '../machines/DispatchProtocol.ts'
import { type DispatchStepper, makeDispatchStepper } from '../machines/DispatchStepper.ts'
import type { JobRecord } from '../persistence/jobs/JobStore.ts'
import type { DirectClaims, Dispatches, DispatchRuntime, DispatchStepListener, HeadStatement, PlaceInLine, QueueDispatch } from './Dispatch.ts'
import { claimedJobOf } from './JobsHistory.ts'
import { jobsNamespace, jobTaskType } from './QueueRouting.ts'

// A queue's dispatch as its runner keeps it: the face, and whether it may be dropped now.
interface KeptDispatch {
  readonly dispatch: QueueDispatch
  readonly handle: QueueDispatch
  mayDrop(nowMs: number): boolean
  /** Steps the dispatch with `event` (the partition instances' news). */
  send(event: DispatchEvent): void
}

/**
 * Makes an engine's dispatches; `machine` is the dispatch machine or a variant of it (`provide`),
 * and `onStep` hears each step.
 */
export function makeDispatches(runtime: () => DispatchRuntime, machine: DispatchMachine, onStep?: DispatchStepListener): Dispatches {
  const stepper = makeDispatchStepper(machine)
  const byQueue = new Map<string, KeptDispatch>()
  // How many dispatches the engine made, numbering each (DispatchStepListener's `dispatch`).
  let made = 0
  // The partition instances loaded on this engine, per queue: what a dispatch made later starts with.
  const instances = new Map<string, Set<string>>()
  let closing = false
  const live = (queue: string): KeptDispatch => {
    let kept = byQueue.get(queue)
    if (kept === undefined) {
      kept = makeQueueDispatch(runtime(), stepper, queue, onStep, ++made, () => live(queue).dispatch)
      byQueue.set(queue, kept)
      // A dispatch made while partition instances of its queue are loaded here starts delivering;
      // one made while the engine closes starts closing.
      for (const instance of instances.get(queue) ?? []) kept.send({ type: 'partition.loaded', instance })
      if (closing) kept.send({ type: 'engine.closing' })
    }
    return kept
  }
  return {
    engineClosing() {
      if (closing) return
      closing = true
      for (const kept of byQueue.values()) kept.send({ type: 'engine.closing' })
    },
    partitionLoaded(queue, instance) {
      let loaded = instances.get(queue)
      if (loaded === undefined) instances.set(queue, (loaded = new Set()))
      loaded.add(instance)
      byQueue.get(queue)?.send({ type: 'partition.loaded', instance })
      return {
        close() {
          const current = instances.get(queue)
          if (current?.delete(instance) !== true) return
          if (current.size === 0) instances.delete(queue)
          byQueue.get(queue)?.send({ type: 'partition.unloaded', instance })
          if (current.size === 0) runtime().partitionsLeft(queue)
        },
      }
    },
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
    heldTwo: (own, handed, passBeside) => current().heldTwo(own, handed, passBeside),
    endIdlePolls: () => current().endIdlePolls(),
    workerStopping: () => current().workerStopping(),
    matchingReached: () => current().matchingReached(),
    slotFreed: () => current().slotFreed(),
    deliveryStale: () => current().deliveryStale(),
    passStarted: () => current().passStarted(),
    headOut: () => current().headOut(),
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
    isDeliveredHere: () => current().isDeliveredHere(),
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
  rerouted: boolean
}

// How a parked claim's wait ends besides a hand-over: its line poll failed (`fail`), or it is
// woken with nothing (`wake`: the queue's partitions left this engine).
interface ParkedEnds {
  readonly fail: (error: unknown) => void
  readonly wake: () => void
}

// Kept jobs no claim took go back to the store, those of one turn in one statement; the pass
// asked for then serves the claims that joined meanwhile — on this engine, and on the owners of
// the queue's other partitions, where a claim (their own, or one forwarded to them) may wait for
// it. A release that fails leaves its job to lapse at its deadline and be delivered again, as any
// unsettled claim.
function makeReleaser(runtime: DispatchRuntime, queue: string): (job: JobRecord) => Promise<void> {
  const released = makeMicroBatcher<JobRecord, void>({
    async run(jobs) {
      const claims = jobs.map((job) => ({ id: job.id, claimToken: job.claimToken as string }))
      await runtime.jobStore.release({ claims, nowMs: runtime.now() })
      runtime.announceDue(queue, runtime.now(), false)
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

// One queue's dispatch as its module functions step it: the machine's snapshot and the runner's
// own state (claims, parked claims' failures, line polls, store statements in flight, since when
// it holds nothing), with the callbacks it hands out, made once per dispatch.
interface QueueDispatchState {
  readonly runtime: DispatchRuntime
  readonly stepper: DispatchStepper
  readonly queue: string
  readonly onStep: DispatchStepListener | undefined
  // This dispatch's number among the engine's (DispatchStepListener's `dispatch`).
  readonly number: number
  snapshot: DispatchSnapshot
  // Since when the machine's `use` region is `empty` (a new dispatch holds nothing); null while holding.
  emptySinceMs: number | null
  // Release, direct-claim and head statements of this dispatch at the store.
  statementsInFlight: number
  // The head statements of the queue at the store (`headOut`), each marked once another ran beside it.
  readonly headsOut: Set<HeadMark>
  direct: DirectClaims | null
  stepCount: number
  nextClaimId: number
  // The first claim id drawn after the latest pass started.
  passMarker: number
  stepping: boolean
  // What the last `claim.heldTwo` step had its claimant answer (null: settle at the store), until `heldTwo` reads it.
  twoAnswered: JobRecord | null
  // The jobs line polls were matched (through Matching, claimed by History), while anything holds them.
  readonly throughMatching: WeakSet<JobRecord>
  readonly pending: DispatchEvent[]
  readonly claims: Map<number, Claim>
  readonly parkedEnds: Map<number, ParkedEnds>
  readonly polls: Map<number, AbortController>
  readonly releaseLater: (job: JobRecord) => Promise<void>
  readonly statementDone: () => void
  readonly isListed: (pollId: number) => boolean
  readonly send: (event: DispatchEvent) => void
}

// One queue's dispatch: its state, the face over it, and whether it may be dropped now.
function makeQueueDispatch(runtime: DispatchRuntime, stepper: DispatchStepper, queue: string, onStep: DispatchStepListener | undefined, number: number, current: () => QueueDispatch): KeptDispatch {
  const state: QueueDispatchState = {
    runtime,
    stepper,
    queue,
    onStep,
    number,
    snapshot: stepper.start(queue),
    emptySinceMs: runtime.now(),
    statementsInFlight: 0,
    headsOut: new Set(),
    direct: null,
    stepCount: 0,
    nextClaimId: 1,
    passMarker: 1,
    stepping: false,
    twoAnswered: null,
    throughMatching: new WeakSet(),
    pending: [],
    claims: new Map<number, Claim>(),
    parkedEnds: new Map<number, ParkedEnds>(),
    polls: new Map<number, AbortController>(),
    releaseLater: makeReleaser(runtime, queue),
    statementDone: () => void state.statementsInFlight--,
    isListed: (pollId) => state.snapshot.context.linePolls.includes(pollId),
    send: (event) => send(state, event),
  }
  return {
    dispatch: faceOf(state),
    handle: handleOf(queue, current),
    mayDrop: (nowMs) => !state.stepping && state.statementsInFlight === 0 && state.emptySinceMs !== null && nowMs - state.emptySinceMs >= dispatchIdleUnloadMs,
    send: state.send,
  }
}

// The dispatch's methods over `state`.
function faceOf(state: QueueDispatchState): QueueDispatch {
  const { send } = state
  return {
    queue: state.queue,
    join: (onOffer) => join(state, onOffer),
    park: (place, deadlineMs, signal) => park(state, place, deadlineMs, signal),
    reserveFirst() {
      const first = state.snapshot.context.waiting[0]
      if (first === undefined) return undefined
      send({ type: 'claim.reserved', claimId: first })
      return first
    },
    release: (claimId) => send({ type: 'claim.released', claimId }),
    handOver: (job, claimId = null) => send({ type: 'job.handed', job, claimId }),
    returnJob: (job) => send({ type: 'job.returned', job }),
    heldTwo(own, handed, passBeside) {
      // Read back right after the step: inside another step the event would only be queued.
      assert(!state.stepping, 'a claim holding two jobs is settled outside any dispatch step')
      send({ type: 'claim.heldTwo', own, handed, passBeside, throughMatching: state.throughMatching.has(handed) })
      // Set by the step's `claim.answer` (a job) or `claim.settleHead` (null); read once.
      const answer = state.twoAnswered
      state.twoAnswered = null
      return answer
    },
    endIdlePolls() {
      // Nothing to end: no step (the common case, a loop whose claims go straight to the store).
      if (hasPollsToEndAtHandlerStart(state.snapshot)) send({ type: 'handler.started' })
    },
    workerStopping() {
      if (state.snapshot.context.linePolls.length > state.snapshot.context.parked.length) send({ type: 'worker.stopping' })
    },
    matchingReached: () => send({ type: 'matching.reached' }),
    slotFreed: () => send({ type: 'slot.freed' }),
    deliveryStale: () => send({ type: 'delivery.stale' }),
    passStarted() {
      state.passMarker = state.nextClaimId
      send({ type: 'pass.started' })
    },
    headOut: () => headOut(state),
    forwardedArrived: () => send({ type: 'forwarded.arrived' }),
    forwardedLeft: () => send({ type: 'forwarded.left' }),
    lazyPollStarted: () => send({ type: 'lazyPoll.started' }),
    lazyPollEnded: () => send({ type: 'lazyPoll.ended' }),
    waitingCount: () => state.snapshot.context.waiting.length,
    waitingSincePass: () => state.snapshot.context.waiting.reduce((count, claimId) => (claimId < state.passMarker ? count + 1 : count), 0),
    forwardedWaiting: () => state.snapshot.context.forwardedWaiting,
    lazyPolls: () => state.snapshot.context.lazyPolls,
    generation: () => state.snapshot.context.generation,
    isDrained: () => isDrained(state.snapshot),
    isMatchingHolding: () => isMatchingHolding(state.snapshot),
    isDeliveredHere: () => isDeliveredHere(state.snapshot),
    hasSpare: () => state.snapshot.context.spare.length > 0,
    expireKept() {
      if (state.snapshot.context.spare.length > 0) send({ type: 'kept.expired' })
    },
    steps: () => state.stepCount,
    directClaims(make) {
      const claims = (state.direct ??= make())
      return (ack) => counted(state, claims(ack))
    },
  }
}

// Counts `statement` while it runs and hands it back as it is: the caller's continuation runs
// when it would without the count (no promise added between them).
function counted<T>(state: QueueDispatchState, statement: Promise<T>): Promise<T> {
  state.statementsInFlight++
  statement.then(state.statementDone, state.statementDone)
  return statement
}

// A head statement at the store: whether another ran beside it, and whether it is still out.
interface HeadMark {
  overlapped: boolean
  out: boolean
}

// A head statement of the queue goes out (QueueDispatch's `headOut`): it and those already out
// ran beside each other. When the last one out ends after a short answer beside another
// (`heldBehind`), the machine hears that the rows those held are claimable again.
function headOut(state: QueueDispatchState): HeadStatement {
  const { headsOut } = state
  const mark: HeadMark = { overlapped: headsOut.size > 0, out: true }
  for (const other of headsOut) other.overlapped = true
  headsOut.add(mark)
  state.statementsInFlight++
  const end = (): boolean => {
    if (!mark.out) return false
    mark.out = false
    headsOut.delete(mark)
    state.statementsInFlight--
    return true
  }
  const quietIfHeld = (): void => {
    if (headsOut.size === 0 && state.snapshot.context.heldBehind) state.send({ type: 'store.quiet' })
  }
  return {
    answered(generation, asked, claimed) {
      const ending = end()
      state.send({ type: 'store.answered', generation, asked, claimed, overlapped: mark.overlapped })
      if (ending) quietIfHeld()
    },
    ended() {
      if (end()) quietIfHeld()
    },
  }
}

// Steps the machine with `event`, and with every event its commands raise, one at a time.
function send(state: QueueDispatchState, event: DispatchEvent): void {
  const { pending, stepper, onStep } = state
  // A claim that comes to hold this job beside its own ranks it first within its priority.
  if (event.type === 'linePoll.matched') state.throughMatching.add(event.job)
  pending.push(event)
  if (state.stepping) return
  state.stepping = true
  try {
    for (let next = pending.shift(); next !== undefined; next = pending.shift()) {
      const [after, commands] = stepper.step(state.snapshot, next)
      state.snapshot = after
      state.stepCount++
      if (!isEmpty(after)) state.emptySinceMs = null
      else state.emptySinceMs ??= state.runtime.now()
      onStep?.(state.queue, next, commands, state.number)
      for (const command of commands) execute(state, command)
    }
  } finally {
    state.stepping = false
  }
}

// Carries out one command of a step.
function execute(state: QueueDispatchState, command: DispatchCommand): void {
  const { runtime, queue } = state
  switch (command.type) {
    case 'claim.handOver': {
      const claim = state.claims.get(command.params.claimId)
      // The machine hands over only to claims it lists; one not known here left in the same turn.
      if (claim === undefined || claim.handed !== null) {
        state.pending.push({ type: 'job.returned', job: command.params.job })
        return
      }
      claim.handed = command.params.job
      state.claims.delete(command.params.claimId)
      claim.settle?.()
      claim.onOffer()
      return
    }
    case 'job.release':
      return void counted(state, state.releaseLater(command.params.job))
    case 'claim.answer':
      state.twoAnswered = command.params.job
      return
    case 'claim.settleHead':
      state.twoAnswered = null
      return
    case 'job.kept': {
      // The pass that gives kept jobs back (every queue's, at its start) runs by then: the
      // driver's one timer, no timer per job.
      const nowMs = runtime.now()
      const leftMs = (command.params.job.deadlineMs ?? nowMs) - nowMs
      return runtime.driver.notifyDue(nowMs + Math.max(0, Math.min(jobKeptHoldMs, Math.floor(leftMs / 2))), queue)
    }
    case 'claims.fail':
      for (const claimId of command.params.claimIds) state.parkedEnds.get(claimId)?.fail(command.params.error)
      return
    case 'claims.reroute':
      for (const claimId of command.params.claimIds) {
        const claim = state.claims.get(claimId)
        if (claim !== undefined) claim.rerouted = true
        state.parkedEnds.get(claimId)?.wake()
      }
      return
    case 'linePoll.start':
      return runLinePoll(state, command.params.pollId)
    case 'linePoll.end':
      state.polls.get(command.params.pollId)?.abort(handedOff)
      state.polls.delete(command.params.pollId)
      return
    case 'pass.request':
      return runtime.driver.notifyDue(runtime.now(), queue)
    case 'slot.announce':
      return runtime.announceSlotFreed(queue)
  }
}

// Starts line poll `pollId`, which tells the machine how it ended.
function runLinePoll(state: QueueDispatchState, pollId: number): void {
  const { polls, send } = state
  const controller = new AbortController()
  polls.set(pollId, controller)
  const forget = (): void => {
    if (polls.get(pollId) === controller) polls.delete(pollId)
  }
  runLinePollLoop(state.runtime, state.queue, pollId, controller.signal, state.isListed, send).then(
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

// A claim joins the line: its place, whose `offered` resolves at its hand-over.
function join(state: QueueDispatchState, onOffer: () => void = () => {}): PlaceInLine {
  const { claims, send } = state
  const claimId = state.nextClaimId++
  const claim: Claim = { handed: null, settle: null, onOffer, rerouted: false }
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
    wasRerouted: () => claim.rerouted,
    leave() {
      if (!claims.delete(claimId)) return
      send({ type: 'claim.left', claimId })
    },
  }
}

// Parks the claim at `place` on the line polls (QueueDispatch's `park`).
async function park(state: QueueDispatchState, place: PlaceInLine, deadlineMs: number, signal: AbortSignal | undefined): Promise<void> {
  const { runtime, parkedEnds, send } = state
  // Settles when the wait ends: resolved by the deadline, the signal or a reroute, rejected by the line poll's failure.
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
  parkedEnds.set(place.claimId, { fail, wake })
  send({ type: 'claim.parked', claimId: place.claimId })
  try {
    await Promise.race([place.offered(), ended])
  } finally {
    cancelTimer()
    signal?.removeEventListener('abort', wake)
    parkedEnds.delete(place.claimId)
    // Handed a job, the claim ends the extra polls once its handler has started (`endIdlePolls`).
    send({ type: 'claim.unparked', claimId: place.claimId, handed: place.job() !== null })
  }
}
