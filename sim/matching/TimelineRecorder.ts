/**
 * TimelineRecorder — listens to one run (the boundary log and the world's events) and keeps
 * what a timeline draws: which host held which range of each physical queue, from the acquire
 * that raised it to the next; appends, checkpoints, relocations and user-data writes as they
 * committed; History's answers (deliveries); faults; when each host was down; the heal.
 *
 * The x axis is the order in which these records arrived (one store call or History answer at
 * a time, so it is the commit order), not virtual time: many records share a millisecond.
 * Each record keeps its virtual time for the axis labels and the hover text.
 *
 * Does not: render (TimelineHtml.ts) or judge (Checkers.ts); it never reads wall time.
 */
import type { BoundaryRecord } from '../core/Boundary.ts'
import { DownSpans, type DownSpan } from '../core/TimelinePage.ts'
import { epochMs } from '../core/Turns.ts'
import type { WorldEvent } from './World.ts'

/** What a mark on the timeline stands for. */
export type TimelineMarkKind = 'append' | 'checkpoint' | 'relocate' | 'userData' | 'start' | 'fault' | 'other'

/** One mark: a committed store call, a History answer or a fault. */
export interface TimelineMark {
  readonly order: number
  readonly nowMs: number
  readonly kind: TimelineMarkKind
  readonly hostId?: string
  /** The physical queue it touched, if any. */
  readonly queue?: string
  /** A one-word flavour: History's answer, the fault's name. */
  readonly tag?: string
  /** Jobs it concerns (appended, deleted or answered), so a page can pick out lost ones. */
  readonly jobIds?: ReadonlyArray<string>
  /** Hover text. */
  readonly detail: string
}

/** One range of one physical queue, held by the host that acquired it until the next acquire. */
export interface TimelineOwnership {
  readonly queue: string
  readonly hostId: string
  readonly rangeId: number
  readonly fromOrder: number
  /** Exclusive; the end of the run for the last range. */
  toOrder: number
  readonly fromMs: number
}

/** A span when a host was down (crashed, not yet restarted). */
export type TimelineDownSpan = DownSpan

/** Everything one timeline draws. */
export interface TimelineData {
  readonly hosts: ReadonlyArray<string>
  readonly queues: ReadonlyArray<string>
  readonly marks: ReadonlyArray<TimelineMark>
  readonly ownership: ReadonlyArray<TimelineOwnership>
  readonly down: ReadonlyArray<TimelineDownSpan>
  readonly healOrder: number | null
  /** One past the last record's order. */
  readonly orderEnd: number
  /** Virtual time of each order (ms since the world's epoch, as the trace's `@ms`), for axis labels. */
  readonly timeAt: ReadonlyArray<number>
}

/** Collects one run; pass `onBoundary` and `onEvent` to `runSeed`, then call `data()`. */
export class TimelineRecorder {
  readonly #hosts: ReadonlyArray<string>
  readonly #marks: TimelineMark[] = []
  readonly #ownership: TimelineOwnership[] = []
  readonly #current = new Map<string, TimelineOwnership>()
  readonly #down = new DownSpans()
  readonly #timeAt: number[] = []
  #healOrder: number | null = null

  /** @param hosts the run's host ids, in lane order. */
  constructor(hosts: ReadonlyArray<string>) {
    this.#hosts = hosts
  }

  // Arrow properties so the recorder's methods can be handed to runSeed as they are.

  /** The boundary listener for `runSeed({ onBoundary })`. */
  readonly onBoundary = (record: BoundaryRecord, nowMs: number): void => {
    const order = this.#tick(nowMs)
    const at = this.#relative(nowMs)
    switch (record.op) {
      case 'acquire': {
        const previous = this.#current.get(record.queue)
        if (previous !== undefined) previous.toOrder = order
        const held: TimelineOwnership = { queue: record.queue, hostId: record.hostId, rangeId: record.metadata.rangeId, fromOrder: order, toOrder: order + 1, fromMs: at }
        this.#current.set(record.queue, held)
        this.#ownership.push(held)
        return
      }
      case 'append':
        this.#mark({ order, nowMs: at, kind: 'append', hostId: record.hostId, queue: record.queue, jobIds: record.jobIds, detail: `${record.hostId} appended ${record.jobIds.join(', ')} as ${record.queue}#${record.taskIds.join(',')} under range ${record.rangeId}` })
        return
      case 'checkpoint': {
        const levels = record.ackLevels.map((level) => `subqueue ${level.subqueue} ack ${level.ackLevel}`).join(', ')
        const deleted = record.deletedJobIds.length === 0 ? '' : `; deleted ${record.deletedJobIds.join(', ')}`
        this.#mark({ order, nowMs: at, kind: 'checkpoint', hostId: record.hostId, queue: record.queue, jobIds: record.deletedJobIds, detail: `${record.hostId} checkpointed ${record.queue} under range ${record.rangeId}: ${levels}${deleted}` })
        return
      }
      case 'relocate':
        this.#mark({ order, nowMs: at, kind: 'relocate', hostId: record.hostId, queue: record.from, detail: `${record.hostId} relocated ${record.moved} tasks ${record.from} (r${record.fromRangeId}) → ${record.to} (r${record.toRangeId})` })
        return
      case 'attempt':
      case 'answered':
      case 'unloaded':
        // Attempts are in the trace; the timeline draws what committed.
        return
      case 'userData':
        this.#mark({ order, nowMs: at, kind: 'userData', hostId: record.hostId, detail: `${record.hostId} user data ${record.family} expecting v${record.expectedVersion} → ${record.outcome}` })
        return
      default: {
        // A record kind this timeline does not know yet still shows up, with all it says.
        const other = record as unknown as { op: string; hostId?: string; queue?: string }
        this.#mark({ order, nowMs: at, kind: 'other', ...(other.hostId === undefined ? {} : { hostId: other.hostId }), ...(other.queue === undefined ? {} : { queue: other.queue }), detail: `${other.op}: ${JSON.stringify(record)}` })
      }
    }
  }

  /** The world-event listener for `runSeed({ onEvent })`. */
  readonly onEvent = (event: WorldEvent, nowMs: number): void => {
    const order = this.#tick(nowMs)
    const at = this.#relative(nowMs)
    if (event.kind === 'heal') {
      this.#healOrder = order
      for (const host of this.#hosts) this.#down.up(host, order)
      return
    }
    if (event.kind === 'history') {
      this.#mark({ order, nowMs: at, kind: 'start', hostId: event.hostId, tag: event.answer, jobIds: [event.jobId], detail: `History answered ${event.answer} for ${event.jobId} to ${event.hostId}` })
      return
    }
    const host = event.hostId === undefined ? {} : { hostId: event.hostId }
    this.#mark({ order, nowMs: at, kind: 'fault', ...host, tag: event.name, detail: `${event.name}: ${event.detail}` })
    if (event.hostId !== undefined) this.#down.fault(event.name, event.hostId, order)
  }

  /** What was recorded; spans still open end at the last record. */
  data(): TimelineData {
    const orderEnd = this.#timeAt.length
    for (const held of this.#current.values()) held.toOrder = Math.max(held.toOrder, orderEnd)
    const queues = [...new Set([...this.#ownership.map((held) => held.queue), ...this.#marks.flatMap((mark) => (mark.queue === undefined ? [] : [mark.queue]))])].sort()
    return { hosts: this.#hosts, queues, marks: this.#marks, ownership: this.#ownership, down: this.#down.spans(orderEnd), healOrder: this.#healOrder, orderEnd, timeAt: this.#timeAt }
  }

  #tick(nowMs: number): number {
    this.#timeAt.push(this.#relative(nowMs))
    return this.#timeAt.length - 1
  }

  // Time as the trace prints it (`@ms`), so a mark's hover text leads to its trace lines.
  #relative(nowMs: number): number {
    return nowMs - epochMs
  }

  #mark(mark: TimelineMark): void {
    this.#marks.push(mark)
  }
}
