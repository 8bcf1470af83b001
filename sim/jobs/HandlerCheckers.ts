/**
 * HandlerCheckers — the handler side of the job engine, judged outside it from what its `work`
 * handlers were given (the world wraps each handler: JobsHost.ts), what clients' claims
 * returned, and what committed at the JobStore boundary (JobCheckers.ts keeps each job's current
 * claim). Each violation is a sentence, under one checker's name:
 *
 * - handler once per claim: no claim token reaches two handler runs;
 * - heartbeat keeps claim: once faults are healed, a job whose handler is running never lapses —
 *   no other claim of it commits, and its deadline never passes, while the handler runs (its
 *   work loop heartbeats for it);
 * - claims reach a worker: once faults are healed, every claim issued since — an enqueue that
 *   inserts its job claimed for a waiting claim included — reaches a handler or a client, or is
 *   settled with its token (ack, retry, fail), before its deadline — a claim nobody holds waits
 *   for its visibility timeout;
 * - stop releases: the same, for a claim the stopped host's statements made while its loops were
 *   stopping; and when `stop()` resolves, none of that worker's handlers still runs.
 *
 * Judged only after the heal for the two timing rules: with faults on, a store that refuses
 * heartbeats, a lost hand-over or a slow call legitimately lapse a claim (at-least-once).
 *
 * Does not: read the engine's memory, or judge prompt delivery (JobsWorld.ts does, from the
 * due jobs JobCheckers.ts lists).
 */
import type { JobBoundaryRecord } from './JobBoundary.ts'
import type { JobCheckerName } from './JobCheckers.ts'
import type { HandlerEvent } from './JobsHost.ts'

/** What the handler checkers read from the job checkers and report to. */
export interface HandlerCheckerDeps {
  readonly fail: (checker: JobCheckerName, sentence: string) => void
  /** The job's current claim at the store (null: none, or the job ended). */
  readonly claimOf: (id: string) => { readonly token: string; readonly deadlineMs: number } | null
}

interface Running {
  readonly event: HandlerEvent
  readonly startedAtMs: number
  /** Whether the handler was given the job's current claim, still within its deadline. */
  readonly claimValid: boolean
}

interface Unheld {
  readonly id: string
  readonly hostId: string
  readonly committedAtMs: number
}

/** The online handler checks. */
export class HandlerCheckers {
  readonly #deps: HandlerCheckerDeps
  // Claims (`id:token`) handed to a handler so far, and the handlers running now.
  readonly #ran = new Set<string>()
  readonly #running = new Map<string, Running>()
  // Claims committed after the heal that no handler or client holds yet, by `id:token`.
  readonly #unheld = new Map<string, Unheld>()
  // Per host: the intervals its loops on some queue were stopping (from, until; until null: still).
  readonly #stopping = new Map<string, Array<{ fromMs: number; untilMs: number | null }>>()
  #healedAtMs: number | null = null

  constructor(deps: HandlerCheckerDeps) {
    this.#deps = deps
  }

  /** Faults are off from now on: the timing rules apply. */
  healed(nowMs: number): void {
    this.#healedAtMs = nowMs
  }

  /** `hostId`'s incarnation `incarnation` crashed: its handlers stopped running there, and never return. */
  crashed(hostId: string, incarnation: number): void {
    for (const [claim, { event }] of this.#running) if (event.hostId === hostId && event.incarnation === incarnation) this.#running.delete(claim)
  }

  /** A handler started or returned. */
  handler(event: HandlerEvent, nowMs: number): void {
    const claim = `${event.id}:${event.claimToken}`
    if (!event.started) {
      this.#running.delete(claim)
      return
    }
    if (this.#ran.has(claim)) this.#deps.fail('handler once per claim', `job ${event.id}'s claim ${event.claimToken} reached a second handler run, on ${event.hostId} (${event.queue}) at ${nowMs}`)
    this.#ran.add(claim)
    const current = this.#deps.claimOf(event.id)
    const claimValid = current !== null && current.token === event.claimToken && current.deadlineMs > nowMs
    this.#running.set(claim, { event, startedAtMs: nowMs, claimValid })
    this.#unheld.delete(claim)
  }

  /** A client's claim returned `token` for job `id`. */
  clientHolds(id: string, token: string): void {
    this.#unheld.delete(`${id}:${token}`)
  }

  /** Checks one committed JobStore call. */
  observe(record: JobBoundaryRecord): void {
    if (record.op === 'ack' || record.op === 'retry' || record.op === 'fail') this.#unheld.delete(`${record.id}:${record.claimToken}`)
    if (record.op === 'ackBatch') for (const claim of record.claims) this.#unheld.delete(`${claim.id}:${claim.claimToken}`)
    // An enqueue that inserted its job claimed (for a claim waiting here or on another engine) is a claim too.
    if (record.op === 'enqueue' && record.job.state === 'processing' && record.job.claimToken !== null) {
      if (this.#healedAtMs !== null && record.nowMs >= this.#healedAtMs) this.#unheld.set(`${record.job.id}:${record.job.claimToken}`, { id: record.job.id, hostId: record.hostId, committedAtMs: record.committedAtMs })
      return
    }
    if (record.op !== 'claim' || record.outcome.kind !== 'claimed') return
    const healedAtMs = this.#healedAtMs
    if (healedAtMs === null) return
    for (const { event, startedAtMs, claimValid } of this.#running.values()) {
      // A handler given a claim that had already lapsed holds nothing another claim could take.
      if (event.id !== record.id || event.claimToken === record.claimToken || startedAtMs < healedAtMs || !claimValid) continue
      this.#deps.fail('heartbeat keeps claim', `job ${record.id} was claimed again (${record.claimToken}, by ${record.hostId} at ${record.nowMs}) while its handler on ${event.hostId} still ran for claim ${event.claimToken}, started at ${startedAtMs}`)
    }
    // A claim issued before the heal (its statement waited out a pause, a jump or a slow store)
    // may commit already lapsed: only claims issued with faults off must reach a worker in time.
    if (record.nowMs < healedAtMs) return
    this.#unheld.set(`${record.id}:${record.claimToken}`, { id: record.id, hostId: record.hostId, committedAtMs: record.committedAtMs })
  }

  /** `stop()` was called on `hostId`'s loops of a queue. */
  stopCalled(hostId: string, nowMs: number): void {
    const intervals = this.#stopping.get(hostId) ?? []
    intervals.push({ fromMs: nowMs, untilMs: null })
    this.#stopping.set(hostId, intervals)
  }

  /** `stop()` on `hostId`'s (incarnation `incarnation`) loops of `queue` resolved: none of its handlers may still run. */
  stopResolved(hostId: string, incarnation: number, queue: string, nowMs: number): void {
    const open = this.#stopping.get(hostId)?.find((interval) => interval.untilMs === null)
    if (open !== undefined) open.untilMs = nowMs
    for (const { event, startedAtMs } of this.#running.values()) {
      if (event.hostId !== hostId || event.incarnation !== incarnation || event.queue !== queue) continue
      this.#deps.fail('stop releases', `stop() of ${hostId}'s loops on ${queue} resolved at ${nowMs} while its handler of job ${event.id} (claim ${event.claimToken}, started at ${startedAtMs}) still ran`)
    }
  }

  /** Time moved to `nowMs` (before anything ran at it): claims that lapsed unheld or under a running handler. */
  tick(nowMs: number): void {
    const healedAtMs = this.#healedAtMs
    if (healedAtMs === null) return
    for (const [claim, unheld] of this.#unheld) {
      const current = this.#deps.claimOf(unheld.id)
      if (current === null || `${unheld.id}:${current.token}` !== claim) {
        this.#unheld.delete(claim)
        continue
      }
      if (current.deadlineMs > nowMs) continue
      this.#unheld.delete(claim)
      const stopped = this.#stopping.get(unheld.hostId)?.some((interval) => interval.fromMs <= unheld.committedAtMs && (interval.untilMs === null || unheld.committedAtMs <= interval.untilMs)) === true
      this.#deps.fail(
        stopped ? 'stop releases' : 'claims reach a worker',
        `job ${unheld.id}'s claim ${current.token}, committed by ${unheld.hostId} at ${unheld.committedAtMs}${stopped ? ' while its work loops were stopping' : ''}, reached no handler or client and lapsed at ${current.deadlineMs}`,
      )
    }
    for (const { event, startedAtMs, claimValid } of this.#running.values()) {
      // A handler given a claim that had already lapsed is no heartbeat's failure.
      if (startedAtMs < healedAtMs || !claimValid) continue
      const current = this.#deps.claimOf(event.id)
      if (current === null || current.token !== event.claimToken || current.deadlineMs > nowMs) continue
      this.#deps.fail('heartbeat keeps claim', `job ${event.id}'s claim ${event.claimToken} lapsed at ${current.deadlineMs} while its handler on ${event.hostId} ran (started at ${startedAtMs})`)
      // Told once: the handler runs on, judged no further.
      this.#running.delete(`${event.id}:${event.claimToken}`)
    }
  }
}
