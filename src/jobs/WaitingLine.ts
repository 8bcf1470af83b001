/**
 * WaitingLine — the claims of this engine waiting for a job of a queue, first come first
 * offered (ClaimState's `waiting`), and the hand-over of a job claimed for one of them: by an
 * enqueue of this engine (eager dispatch, JobQueue.ts) or by a due-time pass
 * (Claimer.ts's `claimForWaitingWorkers`).
 *
 * A claim parked in Matching meanwhile (a worker's poll) keeps that poll until the handler of
 * the job handed to it has started (`endHandedOverPolls`): ending a poll steps the partition's
 * queue machine, which need not stand between a job and its handler.
 *
 * Does not: claim anything (the job handed over is claimed already), or poll Matching.
 */
import type { JobRecord } from '../persistence/jobs/JobStore.ts'
import { type ClaimState, claimStateOf, type JobsRuntime, type WaitingWorker } from './Runtime.ts'

/**
 * Ends the Matching polls of `queue`'s workers that were handed a job (their hand-over queued
 * it). A worker calls it once it has started the handed job's handler, so that the queue
 * machine's step for the ended poll runs behind the handler's start rather than before it; the
 * next parked poll and a stopping worker call it too. Until then a poll may still be matched a
 * task, which goes to another worker in line or to `spare` (`pollParked`).
 */
export function endHandedOverPolls(runtime: JobsRuntime, queue: string): void {
  const ending = runtime.claims.get(queue)?.endingPolls
  if (ending === undefined || ending.length === 0) return
  for (const end of ending.splice(0)) end()
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
 * default the worker waiting longest) — or, if it stopped waiting meanwhile (Matching gave it a
 * task), to the next worker waiting, else to the queue's `spare` list, which the next worker
 * poll takes first.
 */
export function handOver(runtime: JobsRuntime, queue: string, job: JobRecord, worker: WaitingWorker | undefined = takeWaitingWorker(runtime, queue)): void {
  const state = claimStateOf(runtime, queue)
  for (let next = worker; next !== undefined; next = state.waiting.shift()) if (next.offer(job)) return
  state.spare.push(job)
}

/**
 * What `waitInLine`'s `offered` resolves to, and the reason its signal aborts with: a constant,
 * so that ending a poll builds no error (an abort without a reason builds a DOMException).
 */
export const handedOff = Symbol('handed a job')

/** A claim's place in its queue's line. */
export interface PlaceInLine {
  /** Aborts when the claim's Matching poll should end. */
  readonly signal: AbortSignal
  /** Resolves (to `handedOff`) once a job is handed over. */
  offered(): Promise<typeof handedOff>
  /** The job handed over, if any. */
  job(): JobRecord | null
  /** Takes the claim out of line; later offers pass it by. */
  leave(): void
}

// Puts a waiting claim in its queue's `waiting` list; `leave` takes it off the list. A claim
// `parked` in Matching has its poll ended by `signal` when the caller's signal aborts, or once
// the handler of a job handed to it has started (`endHandedOverPolls`); any other claim's wait
// is ended by `onOffer` at the hand-over.
export function waitInLine(state: ClaimState, outer: AbortSignal | undefined, onOffer: (() => void) | 'parked'): PlaceInLine {
  const controller = new AbortController()
  const abort = (): void => controller.abort(handedOff)
  outer?.addEventListener('abort', abort, { once: true })
  if (outer?.aborted === true) abort()
  let handed: JobRecord | null = null
  let open = true
  let settle: ((value: typeof handedOff) => void) | null = null
  let offered: Promise<typeof handedOff> | null = null
  const worker: WaitingWorker = {
    offer(job) {
      if (!open || handed !== null) return false
      handed = job
      settle?.(handedOff)
      if (onOffer === 'parked') state.endingPolls.push(abort)
      else onOffer()
      return true
    },
  }
  state.waiting.push(worker)
  return {
    signal: controller.signal,
    offered() {
      offered ??= handed !== null ? Promise.resolve(handedOff) : new Promise((resolve) => (settle = resolve))
      return offered
    },
    job: () => handed,
    leave() {
      open = false
      outer?.removeEventListener('abort', abort)
      const index = state.waiting.indexOf(worker)
      if (index >= 0) state.waiting.splice(index, 1)
    },
  }
}
