/**
 * TimelineRecorder — what every workload's timeline records, whatever its marks stand for: the
 * x axis, the marks along it, when each host was down, the heal, and the faults (every world
 * reports those the same way, as `FaultEvent`s). A workload's recorder (the Matching ranges in
 * sim/matching/RangeTimeline.ts, the jobs' lives in sim/jobs/JobTimeline.ts) holds one, feeds it
 * every record it hears and adds the rows of its own.
 *
 * The x axis is the order in which records arrived (one store call or History answer at a
 * time, so it is the commit order), not virtual time: many records share a millisecond. Each
 * record keeps its virtual time, as the trace prints it (`@ms` since the world's epoch), for
 * the axis labels and the hover text, so a mark leads to its trace lines.
 *
 * Does not: render (TimelinePage.ts) or judge; it never reads wall time.
 */
import { epochMs } from './Turns.ts'

/** One mark: a committed call, an answer or a fault, at `order` on the axis. */
export interface TimelineMarkBase<Kind extends string> {
  readonly order: number
  /** Virtual ms since the world's epoch (the trace's `@ms`). */
  readonly nowMs: number
  readonly kind: Kind
  readonly hostId?: string
  /** A one-word flavour: an answer, a fault's name. */
  readonly tag?: string
  /** Hover text. */
  readonly detail: string
}

/** A span when a host was down (crashed, not yet restarted). */
export interface DownSpan {
  readonly hostId: string
  readonly fromOrder: number
  /** Exclusive. */
  toOrder: number
  /** The crash that took it down. */
  readonly reason: string
}

/** What every timeline draws, besides its own rows. */
export interface TimelineFrame<Mark> {
  readonly hosts: ReadonlyArray<string>
  readonly marks: ReadonlyArray<Mark>
  readonly down: ReadonlyArray<DownSpan>
  readonly healOrder: number | null
  /** One past the last record's order. */
  readonly orderEnd: number
  /** Virtual time of each order (ms since the world's epoch), for axis labels. */
  readonly timeAt: ReadonlyArray<number>
}

/**
 * Which hosts are down, from the faults a recorder hears: a crash opens a span, a restart or the
 * heal closes it; `spans(orderEnd)` closes the ones still open at the end of the run.
 */
export class DownSpans {
  readonly #spans: DownSpan[] = []
  readonly #open = new Map<string, DownSpan>()

  /** A fault struck `hostId` at `order`. */
  fault(name: string, hostId: string, order: number): void {
    if (name.startsWith('crash.') && !this.#open.has(hostId)) {
      const span: DownSpan = { hostId, fromOrder: order, toOrder: order + 1, reason: name }
      this.#open.set(hostId, span)
      this.#spans.push(span)
    } else if (name === 'restart') {
      this.up(hostId, order)
    }
  }

  /** `hostId` is up again from `order` (a restart, the heal). */
  up(hostId: string, order: number): void {
    const span = this.#open.get(hostId)
    if (span === undefined) return
    span.toOrder = order
    this.#open.delete(hostId)
  }

  /** Every span; open ones end at `orderEnd`. */
  spans(orderEnd: number): ReadonlyArray<DownSpan> {
    for (const span of this.#open.values()) span.toOrder = Math.max(span.toOrder, orderEnd)
    return this.#spans
  }
}

/** A world event every workload's world reports: a fault (maybe striking one host) or the heal. */
export type SharedWorldEvent = { readonly kind: 'fault'; readonly name: string; readonly hostId?: string; readonly detail: string } | { readonly kind: 'heal' }

/** The axis, marks, down spans and heal of one run; a workload's recorder holds one. */
export class TimelineRecorder<Mark extends TimelineMarkBase<string>> {
  readonly #hosts: string[]
  readonly #marks: Mark[] = []
  readonly #down = new DownSpans()
  readonly #timeAt: number[] = []
  #healOrder: number | null = null

  /**
   * @param hosts the run's host ids at its start, in lane order; a host that joins later (a new
   * process of a membership move) gets a lane below them at its first mark.
   */
  constructor(hosts: ReadonlyArray<string>) {
    this.#hosts = [...hosts]
  }

  /** One record arrived at virtual `nowMs`: its order on the axis and its time as the trace prints it. */
  tick(nowMs: number): { readonly order: number; readonly at: number } {
    const at = nowMs - epochMs
    this.#timeAt.push(at)
    return { order: this.#timeAt.length - 1, at }
  }

  /** Adds a mark. */
  mark(mark: Mark): void {
    if (mark.hostId !== undefined && !this.#hosts.includes(mark.hostId)) this.#hosts.push(mark.hostId)
    this.#marks.push(mark)
  }

  /**
   * Records a fault or the heal heard at `order` (from `tick`) and says so; false for an event
   * of the workload's own, which the workload records itself. A fault is a mark of kind `fault`.
   */
  shared(event: SharedWorldEvent | { readonly kind: string }, order: number, at: number): boolean {
    if (event.kind === 'heal') {
      this.#healOrder = order
      for (const host of this.#hosts) this.#down.up(host, order)
      return true
    }
    if (event.kind !== 'fault') return false
    const fault = event as Extract<SharedWorldEvent, { kind: 'fault' }>
    // Every workload's marks have the kind `fault` with no fields beyond the base ones.
    this.mark({ order, nowMs: at, kind: 'fault', ...(fault.hostId === undefined ? {} : { hostId: fault.hostId }), tag: fault.name, detail: `${fault.name}: ${fault.detail}` } as Mark)
    if (fault.hostId !== undefined) this.#down.fault(fault.name, fault.hostId, order)
    return true
  }

  /** How many records arrived: one past the last order. */
  get orderEnd(): number {
    return this.#timeAt.length
  }

  /** What was recorded; down spans still open end at the last record. */
  frame(): TimelineFrame<Mark> {
    const orderEnd = this.orderEnd
    return { hosts: [...this.#hosts], marks: this.#marks, down: this.#down.spans(orderEnd), healOrder: this.#healOrder, orderEnd, timeAt: this.#timeAt }
  }
}
