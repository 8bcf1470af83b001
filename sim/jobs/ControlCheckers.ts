/**
 * ControlCheckers — the judges of the operator's controls in the jobs world: pausing a queue
 * and cancelling a job a work loop's handler is running. They read the JobStore boundary log
 * (what committed, in commit order), the answers the world handed to each engine, and the work
 * loops' handlers as they start and return; never the engine's beliefs.
 *
 * - `paused claims nothing`: from the commit of a queue's pause until the commit of its
 *   resume, no claim of a job of that queue commits (a claim statement of any kind, or an
 *   enqueue that inserts its job already claimed). The documented bound is one claim statement
 *   already in flight when the pause commits; the world runs one statement at a time, whole, so
 *   a statement that commits after the pause ran after it and must have seen it: the bound here
 *   is zero statements;
 * - `cancelled never acked`: once a cancel of a job committed, no ack of it is accepted, alone
 *   or in a batch or riding a claim (a handler that ignored its signal cannot ack);
 * - `abort reaches handler`: once an engine heard the store refuse a heartbeat of a claim one of
 *   its handlers is running (the job was cancelled, or its claim lapsed or was taken), that
 *   handler's `job.signal` is aborted when it returns (or when the run ends, if it is still
 *   running then). A refusal the engine never heard (its host crashed, or the connection dropped
 *   after the commit) asks nothing of it.
 *
 * Does not: judge the rest of a job's life (JobCheckers.ts) or what handlers were given
 * (HandlerCheckers.ts).
 */
import type { JobBoundaryRecord } from './JobBoundary.ts'
import type { HandlerEvent } from './JobsHost.ts'

/** The names these checkers report under (JobCheckers.ts lists them with the others). */
export const controlCheckerNames = ['paused claims nothing', 'cancelled never acked', 'abort reaches handler'] as const

/** One control checker's name. */
export type ControlCheckerName = (typeof controlCheckerNames)[number]

/** What the checkers need from the world. */
export interface ControlCheckersDeps {
  readonly fail: (checker: ControlCheckerName, sentence: string) => void
  /** The queue a job was enqueued on, if any enqueue of it committed. */
  readonly queueOf: (id: string) => string | undefined
}

interface Running {
  readonly event: HandlerEvent
  /** When the engine heard a heartbeat of this claim refused (world time), or null. */
  refusedAtMs: number | null
}

/** The control checkers of one world. */
export class ControlCheckers {
  readonly #deps: ControlCheckersDeps
  // Queue → when its pause committed (absent: running).
  readonly #pausedSince = new Map<string, number>()
  // Job id → when its cancel committed.
  readonly #cancelledAt = new Map<string, number>()
  // Handlers running now, by `host/incarnation/id/token`.
  readonly #running = new Map<string, Running>()

  constructor(deps: ControlCheckersDeps) {
    this.#deps = deps
  }

  /** One committed JobStore call. */
  observe(record: JobBoundaryRecord): void {
    switch (record.op) {
      case 'pause':
        if (!this.#pausedSince.has(record.queue)) this.#pausedSince.set(record.queue, record.committedAtMs)
        return
      case 'resume':
        this.#pausedSince.delete(record.queue)
        return
      case 'claim':
        if (record.outcome.kind === 'claimed') this.#claimCommitted(record.id, this.#deps.queueOf(record.id), record.hostId, record.committedAtMs)
        return
      case 'enqueue':
        if (record.job.state === 'processing') this.#claimCommitted(record.job.id, record.job.queue, record.hostId, record.committedAtMs)
        return
      case 'cancel':
        if (record.ok && !this.#cancelledAt.has(record.id)) this.#cancelledAt.set(record.id, record.committedAtMs)
        return
      case 'ack':
        if (record.ok) this.#acked(record.id, record.hostId, record.committedAtMs)
        return
      case 'ackBatch':
        for (const id of record.ackedIds) this.#acked(id, record.hostId, record.committedAtMs)
        return
      default:
    }
  }

  /** The world handed engine `hostId` the store's refusal of a heartbeat of claim `claimToken` of job `id`. */
  heartbeatRefused(hostId: string, id: string, claimToken: string, nowMs: number): void {
    for (const running of this.#running.values()) {
      const { event } = running
      if (event.hostId === hostId && event.id === id && event.claimToken === claimToken && running.refusedAtMs === null) running.refusedAtMs = nowMs
    }
  }

  /** A work loop's handler started or returned. */
  handler(event: HandlerEvent, nowMs: number): void {
    const key = `${event.hostId}/${event.incarnation}/${event.id}/${event.claimToken}`
    if (event.started) {
      this.#running.set(key, { event, refusedAtMs: null })
      return
    }
    const running = this.#running.get(key)
    this.#running.delete(key)
    if (running !== undefined) this.#judgeSignal(running, `when it returned at ${nowMs}`)
  }

  /** The handlers running now, of every incarnation that has not crashed. */
  running(): HandlerEvent[] {
    return [...this.#running.values()].map((running) => running.event)
  }

  /** A host crashed: its handlers never return, and nothing is asked of them. */
  crashed(hostId: string): void {
    for (const [key, running] of this.#running) if (running.event.hostId === hostId) this.#running.delete(key)
  }

  /** The run ended: handlers still running are judged as they stand. */
  finish(nowMs: number): void {
    for (const running of this.#running.values()) this.#judgeSignal(running, `when the run ended at ${nowMs}`)
    this.#running.clear()
  }

  #judgeSignal(running: Running, when: string): void {
    const { event, refusedAtMs } = running
    if (refusedAtMs === null || event.signal.aborted) return
    const cancelled = this.#cancelledAt.get(event.id)
    this.#deps.fail(
      'abort reaches handler',
      `the handler of job ${event.id} on ${event.hostId} (claim ${event.claimToken}) heard its heartbeat refused at ${refusedAtMs}${cancelled === undefined ? '' : ` (the job was cancelled at ${cancelled})`}, yet its job.signal was not aborted ${when}`,
    )
  }

  #claimCommitted(id: string, queue: string | undefined, hostId: string, atMs: number): void {
    const since = queue === undefined ? undefined : this.#pausedSince.get(queue)
    if (since === undefined) return
    this.#deps.fail('paused claims nothing', `job ${id} of ${queue} was claimed by ${hostId} at ${atMs}, though the queue's pause committed at ${since} and no resume since`)
  }

  #acked(id: string, hostId: string, atMs: number): void {
    const cancelled = this.#cancelledAt.get(id)
    if (cancelled !== undefined) this.#deps.fail('cancelled never acked', `job ${id} was cancelled at ${cancelled}, yet an ack of it by ${hostId} was accepted at ${atMs}`)
  }
}
