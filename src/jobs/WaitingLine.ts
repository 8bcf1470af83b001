/**
 * WaitingLine — the claims of this engine waiting for a job of a queue, first come first
 * offered (ClaimState's `waiting`), the hand-over of a job claimed for one of them, and the
 * queue's Matching polls on behalf of the workers parked in line (its line polls).
 *
 * A job reaches a claim in line by a hand-over: from an enqueue of this engine (eager dispatch,
 * JobQueue.ts), from a due-time pass (Claimer.ts's `claimForWaitingWorkers`), or from Matching.
 * Matching holds tasks of a queue this engine serves only while polls of other engines wait
 * here too, or when the tasks were stored before this engine took the queue over. So the
 * workers parked in line do not each park a poll: one line poll runs while any is parked, and
 * each task it is matched (claimed already) goes to the worker waiting longest. An idle
 * worker's wait, and a job handed to it, then step no queue machine: with sixteen workers and
 * jobs arriving one at a time, one poll stays parked throughout. Once a task does come through
 * Matching, the line polls for every parked worker, so that the next tasks sync-match side by
 * side instead of waiting in the backlog, until a job is handed over from the store again or a
 * poll waits its whole time for nothing; such a poll ends, down to one.
 *
 * Line polls never outnumber the workers parked: a worker handed a job ends one once its
 * handler has started (`endIdleLinePolls`), since ending a poll steps the partition's queue
 * machine, which need not stand between a job and its handler. A task matched in that window
 * goes to the next worker in line, else to `spare`, which the next worker takes before parking.
 *
 * Does not: claim from the store (Claimer.ts, StoreClaims.ts), or serve polls other engines
 * forwarded here (each of those parks its own poll, so that Matching serves it in its turn).
 */
import type { CancelTimer } from '../kernel/Clock.ts'
import { claimPollWaitMs, claimRetryDelayMs } from '../kernel/Limits.ts'
import type { JobRecord } from '../persistence/jobs/JobStore.ts'
import { claimedJobOf } from './JobsHistory.ts'
import { jobsNamespace, jobTaskType } from './QueueRouting.ts'
import { type ClaimState, claimStateOf, type JobsRuntime, type WaitingWorker } from './Runtime.ts'

/**
 * Ends `queue`'s line polls beyond one per worker parked in line (all of them once none is). A
 * worker calls it once it has started the handler of a job handed to it, so that the queue
 * machine's step for an ended poll runs behind the handler's start rather than before it; a
 * stopping worker calls it too.
 */
export function endIdleLinePolls(runtime: JobsRuntime, queue: string): void {
  const state = runtime.claims.get(queue)
  if (state === undefined) return
  while (state.linePolls.length > state.parked.size) state.linePolls.pop()?.abort(handedOff)
}

/**
 * Called once a job that came through Matching has reached its claimant: claims may take rows
 * straight from the store again. While a claimable job of the queue is with Matching the store
 * claims nothing behind it, so claims that found nothing meanwhile (the queue marked drained)
 * and still wait would otherwise wait for the next scan: a due-time pass runs now for them.
 */
export function rowsBehindMatchingJob(runtime: JobsRuntime, state: ClaimState, queue: string): void {
  const waitedBehind = state.drained && (state.waiting.length > 0 || state.forwardedWaiting > 0)
  state.drained = false
  if (waitedBehind) runtime.driver.notifyDue(runtime.now(), queue)
}

/**
 * Eager dispatch, first half: the worker of this engine waiting longest for `queue`, taken out
 * of line so that no other enqueue hands it a job too; undefined when none waits.
 */
export function takeWaitingWorker(runtime: JobsRuntime, queue: string): WaitingWorker | undefined {
  return claimStateOf(runtime, queue).waiting.shift()
}

/**
 * Gives `job`, already claimed for this engine, to `worker` (eager dispatch's second half; by
 * default the worker waiting longest) — or, if it stopped waiting meanwhile, to the next worker
 * waiting, else to the queue's `spare` list, which the next worker poll takes first.
 */
export function handOver(runtime: JobsRuntime, queue: string, job: JobRecord, worker: WaitingWorker | undefined = takeWaitingWorker(runtime, queue)): void {
  const state = claimStateOf(runtime, queue)
  // Jobs reach the line from the store again (an enqueue, a pass): one line poll will do.
  state.pollPerWorker = false
  for (let next = worker; next !== undefined; next = state.waiting.shift()) if (next.offer(job)) return
  state.spare.push(job)
}

/**
 * The reason the line's poll is aborted with: a constant, so that ending a poll builds no error
 * (an abort without a reason builds a DOMException).
 */
const handedOff = Symbol('no worker parked')

/** A claim's place in its queue's line. */
export interface PlaceInLine {
  /** Resolves once a job is handed over. */
  offered(): Promise<void>
  /** The job handed over, if any. */
  job(): JobRecord | null
  /** Takes the claim out of line; later offers pass it by. */
  leave(): void
}

/** Puts a waiting claim in its queue's `waiting` list; `onOffer` runs at the hand-over. */
export function waitInLine(state: ClaimState, onOffer: () => void = () => {}): PlaceInLine {
  let handed: JobRecord | null = null
  let open = true
  let settle: (() => void) | null = null
  let offered: Promise<void> | null = null
  const worker: WaitingWorker = {
    offer(job) {
      if (!open || handed !== null) return false
      handed = job
      settle?.()
      onOffer()
      return true
    },
  }
  state.waiting.push(worker)
  return {
    offered() {
      offered ??= handed !== null ? Promise.resolve() : new Promise((resolve) => (settle = resolve))
      return offered
    },
    job: () => handed,
    leave() {
      open = false
      const index = state.waiting.indexOf(worker)
      if (index >= 0) state.waiting.splice(index, 1)
    },
  }
}

/**
 * Parks a worker's claim of `queue`, in line at `place`, until a job is handed to it, the clock
 * reaches `deadlineMs`, or `signal` aborts; the queue's line poll runs meanwhile. Rejects with
 * the line poll's failure (a Matching or store error), as the worker's own poll would. Leaving
 * with nothing handed over as the last parked worker ends the line poll at once.
 */
export async function parkInLine(runtime: JobsRuntime, queue: string, place: PlaceInLine, deadlineMs: number, signal: AbortSignal | undefined): Promise<void> {
  const state = claimStateOf(runtime, queue)
  // Settles when the wait ends: resolved by the deadline or the signal, rejected by the line poll's failure.
  let fail: (error: unknown) => void = () => {}
  let wake: () => void = () => {}
  const ended = new Promise<void>((resolve, reject) => {
    wake = resolve
    fail = reject
  })
  const cancelTimer: CancelTimer = runtime.clock.setTimer(deadlineMs - runtime.now(), wake)
  signal?.addEventListener('abort', wake, { once: true })
  state.parked.add(fail)
  try {
    if (signal?.aborted !== true) {
      if (state.linePolls.length === 0 || (state.pollPerWorker && state.linePolls.length < state.parked.size)) startLinePoll(runtime, queue, state)
      await Promise.race([place.offered(), ended])
    }
  } finally {
    cancelTimer()
    signal?.removeEventListener('abort', wake)
    state.parked.delete(fail)
    // Handed a job, the worker ends the poll once its handler has started (`endIdleLinePolls`).
    if (place.job() === null) endIdleLinePolls(runtime, queue)
  }
}

// Runs one more of `queue`'s line polls: it polls Matching until it is ended and hands each task
// matched to the worker waiting longest, switching the line to a poll per parked worker
// (`pollPerWorker`, the file header says when and why); a poll that waited its whole time for
// nothing switches it back and ends itself unless it is the last.
function startLinePoll(runtime: JobsRuntime, queue: string, state: ClaimState): void {
  const poll = new AbortController()
  state.linePolls.push(poll)
  const isRunning = (): boolean => state.linePolls.includes(poll)
  const stop = (): void => {
    const index = state.linePolls.indexOf(poll)
    if (index >= 0) state.linePolls.splice(index, 1)
  }
  const running = async (): Promise<void> => {
    while (isRunning()) {
      const pollDeadlineMs = runtime.now() + claimPollWaitMs
      const polled = await runtime.matching.poll({ namespace: jobsNamespace, family: queue, type: jobTaskType, identity: runtime.hostId, waitMs: claimPollWaitMs, signal: poll.signal })
      if (polled !== null) {
        handOver(runtime, queue, claimedJobOf(polled.response))
        rowsBehindMatchingJob(runtime, state, queue)
        // Tasks are coming through Matching: poll for every parked worker, as a poll of each would.
        state.pollPerWorker = true
        while (isRunning() && state.linePolls.length < state.parked.size) startLinePoll(runtime, queue, state)
      } else if (!isRunning()) {
        return
      } else if (runtime.now() < pollDeadlineMs) {
        // Back before its deadline, the poll was refused (its partition unloading or changing
        // owner; Matching itself waits out a queue's idle unload): pause rather than spin.
        await runtime.driver.waitForDelivery(queue, runtime.now() + claimRetryDelayMs)
      } else {
        // A whole wait with nothing: tasks no longer come through Matching.
        state.pollPerWorker = false
        if (state.linePolls.length > 1) return stop()
      }
    }
  }
  running().then(stop, (error: unknown) => {
    stop()
    for (const parkedFail of state.parked) parkedFail(error)
  })
}
