/**
 * GiveBackChecker — the judge of how an engine announces the jobs it gives back to the store,
 * read from the JobStore boundary (the `release` and `unreserve` records) and the due signals on
 * the world's bus, each seen twice: when the engine sends it (above the I/O gate) and when it
 * reaches the shared bus, where every other engine hears it (below the gate and any planted bug).
 * A give-back makes jobs due again, but only the owners of the queue's partitions claim them for
 * the claims that wait there (their own, or polls forwarded to them): an owner that is not told
 * waits for its scan. A stall of a second fits inside what prompt delivery leaves unjudged (around
 * a move, before the heal), so these promises are judged where they are made.
 *
 * - `release announced`: a release of kept jobs (`release`, some row released) by an engine
 *   whose own membership view does not give it every partition of the queue is followed by a due
 *   signal of that queue from that engine that reaches the bus, dated no earlier than the
 *   release's commit — unless the world's faults lost a due signal of that queue from that engine
 *   sent after it, or the engine crashed. Judged at the end of the run (`finish`), so a signal the
 *   gate holds back however long is not late.
 * - `give-back as announced`: the due signal an engine sends for a give-back of refused
 *   Matching adds (`unreserve` of the queue's jobs committed at the same instant, the engine's
 *   last store call) announces a time at which those jobs are due: the give-back's due time is at
 *   most the signal's. A signal that announces jobs not yet due sends the owners to the store for
 *   nothing, and the jobs wait for the next scan.
 *
 * Does not: judge who claims the jobs or when (prompt delivery does, where it is judged), or the
 * give-backs that send no signal (a refused add that may have committed is given back a refusal
 * retry later, on purpose, and only the giving engine's driver hears of it).
 */
import type { JobBoundaryRecord } from './JobBoundary.ts'

/** The names this checker reports under (JobCheckers.ts lists them with the others). */
export const giveBackCheckerNames = ['release announced', 'give-back as announced'] as const

/** One give-back checker's name. */
export type GiveBackCheckerName = (typeof giveBackCheckerNames)[number]

/** What the checker needs from the world. */
export interface GiveBackCheckerDeps {
  readonly fail: (checker: GiveBackCheckerName, sentence: string) => void
  /** The queue job `id` was enqueued on, if any enqueue of it committed. */
  readonly queueOf: (id: string) => string | undefined
  /** Whether host `hostId`'s own membership view gives it every partition of `queue` now. */
  readonly ownsEvery: (hostId: string, queue: string) => boolean
  /** The world's start on the clock: sentences give times from it, as the trace does. */
  readonly epochMs: number
}

// A release whose announcement has not reached the bus yet.
interface Unannounced {
  readonly hostId: string
  readonly queue: string
  readonly ids: ReadonlyArray<string>
  readonly atMs: number
}

/** Judges the give-backs of every engine of a world (see the header). */
export class GiveBackChecker {
  readonly #deps: GiveBackCheckerDeps
  readonly #unannounced: Unannounced[] = []
  // Per host: its last committed store call, when it was a give-back of refused adds (else absent).
  readonly #lastGiveBack = new Map<string, { readonly queue: string; readonly ids: ReadonlyArray<string>; readonly untilMs: number; readonly atMs: number }>()

  constructor(deps: GiveBackCheckerDeps) {
    this.#deps = deps
  }

  /** A committed JobStore call, at world time `nowMs`. */
  observe(record: JobBoundaryRecord, nowMs: number): void {
    this.#lastGiveBack.delete(record.hostId)
    if (record.op === 'unreserve' && record.untilMs !== null && record.ids.length > 0) {
      const queue = this.#deps.queueOf(record.ids[0] as string)
      if (queue !== undefined) this.#lastGiveBack.set(record.hostId, { queue, ids: record.ids, untilMs: record.untilMs, atMs: nowMs })
      return
    }
    if (record.op !== 'release' || record.releasedIds.length === 0) return
    for (const queue of new Set(record.releasedIds.map((id) => this.#deps.queueOf(id)))) {
      if (queue === undefined || this.#deps.ownsEvery(record.hostId, queue)) continue
      this.#unannounced.push({ hostId: record.hostId, queue, ids: record.releasedIds.filter((id) => this.#deps.queueOf(id) === queue), atMs: Math.floor(nowMs) })
    }
  }

  /** Host `hostId`'s engine sent a due signal of `queue` for `dueMs`, at world time `nowMs` (above the gate). */
  sent(hostId: string, queue: string, dueMs: number | null, nowMs: number): void {
    const giveBack = this.#lastGiveBack.get(hostId)
    if (giveBack === undefined || giveBack.queue !== queue || giveBack.atMs !== nowMs) return
    this.#lastGiveBack.delete(hostId)
    // A signal without a time sends the owners to read the next due time themselves.
    if (dueMs === null || giveBack.untilMs <= dueMs) return
    this.#deps.fail(
      'give-back as announced',
      `${hostId} gave ${giveBack.ids.length === 1 ? 'job' : 'jobs'} ${giveBack.ids.join(', ')} of ${queue} back to the store at ${nowMs - this.#deps.epochMs}, due at ${giveBack.untilMs - this.#deps.epochMs}, and announced ${giveBack.ids.length === 1 ? 'it' : 'them'} due at ${dueMs - this.#deps.epochMs}: the owners it told find nothing due yet, and the give-back waits for a scan`,
    )
  }

  /** A due signal of `queue` from host `hostId`, dated `dueMs` (null: unsaid), reached the bus (every engine subscribed hears it). */
  reached(hostId: string, queue: string, dueMs: number | null): void {
    this.#settle((release) => release.hostId === hostId && release.queue === queue && (dueMs === null || dueMs >= release.atMs))
  }

  /** The world's faults lost a due signal of `queue` that host `hostId` sent. */
  lost(hostId: string, queue: string): void {
    this.#settle((release) => release.hostId === hostId && release.queue === queue)
  }

  /** Host `hostId` crashed: what it had not sent yet dies with it. */
  crashed(hostId: string): void {
    this.#settle((release) => release.hostId === hostId)
  }

  /** The run ended: every release still unannounced fails. */
  finish(): void {
    for (const release of this.#unannounced.splice(0)) {
      this.#deps.fail(
        'release announced',
        `${release.hostId} gave ${release.ids.length === 1 ? 'job' : 'jobs'} ${release.ids.join(', ')} of ${release.queue} back to the store at ${release.atMs - this.#deps.epochMs} while its view gave it only some of the queue's partitions, and no due signal of ${release.queue} from it reached the bus after: a claim waiting at another owner waits for that owner's scan`,
      )
    }
  }

  #settle(settled: (release: Unannounced) => boolean): void {
    for (let i = this.#unannounced.length - 1; i >= 0; i--) if (settled(this.#unannounced[i] as Unannounced)) this.#unannounced.splice(i, 1)
  }
}
