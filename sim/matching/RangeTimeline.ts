/**
 * RangeTimeline — the Matching workload's timeline: which host held which range of each
 * physical queue, and what committed under it. The recorder listens to one run (the boundary
 * log and the world's events) and keeps, from the acquire that raised a range to the next, who
 * held it; appends, checkpoints, relocations and user-data writes as they committed; History's
 * answers (deliveries); faults; when each host was down; the heal.
 *
 * The page draws it top to bottom: one lane per host (when it was down, History's answers to
 * it, its appends and checkpoints, faults that struck it), a lane for faults that strike the
 * world (clock jumps, idle unloads), then one row per physical queue showing which host held
 * which range when, with the appends and checkpoints that committed under it (a lost task is
 * ringed in red). A dashed line marks the heal between the safety and liveness phases.
 *
 * The axis, the marks' order, down spans and the heal are core/TimelineRecorder.ts; the page
 * around the drawing, the lanes and the axis are core/TimelinePage.ts.
 *
 * Does not: judge (Checkers.ts), read files, clocks or the network; the caller writes the page
 * where it likes.
 */
import type { BoundaryRecord } from '../core/Boundary.ts'
import { escape, hostLaneHeight, hostLaneTop, labelsSvg, legendItem as item, type PageLayout, pageLayout, plotSvg, renderTimelinePage, spanBox, type TimelinePageText, title, worldLaneHeight } from '../core/TimelinePage.ts'
import { type TimelineFrame, type TimelineMarkBase, TimelineRecorder } from '../core/TimelineRecorder.ts'
import type { WorldEvent } from './World.ts'

/** What a mark on the timeline stands for. */
export type TimelineMarkKind = 'append' | 'checkpoint' | 'relocate' | 'userData' | 'start' | 'fault' | 'other'

/** One mark: a committed store call, a History answer or a fault. */
export interface TimelineMark extends TimelineMarkBase<TimelineMarkKind> {
  /** The physical queue it touched, if any. */
  readonly queue?: string
  /** Jobs it concerns (appended, deleted or answered), so a page can pick out lost ones. */
  readonly jobIds?: ReadonlyArray<string>
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

/** Everything one timeline draws. */
export interface TimelineData extends TimelineFrame<TimelineMark> {
  readonly queues: ReadonlyArray<string>
  readonly ownership: ReadonlyArray<TimelineOwnership>
}

/** Collects one run; pass `onBoundary` and `onEvent` to `runSeed`, then call `data()`. */
export class RangeTimelineRecorder {
  readonly #log: TimelineRecorder<TimelineMark>
  readonly #ownership: TimelineOwnership[] = []
  readonly #current = new Map<string, TimelineOwnership>()

  /** @param hosts the run's host ids, in lane order. */
  constructor(hosts: ReadonlyArray<string>) {
    this.#log = new TimelineRecorder(hosts)
  }

  // Arrow properties so the recorder's methods can be handed to runSeed as they are.

  /** The boundary listener for `runSeed({ onBoundary })`. */
  readonly onBoundary = (record: BoundaryRecord, nowMs: number): void => {
    const { order, at } = this.#log.tick(nowMs)
    const mark = (fields: Omit<TimelineMark, 'order' | 'nowMs'>): void => this.#log.mark({ order, nowMs: at, ...fields })
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
        return mark({ kind: 'append', hostId: record.hostId, queue: record.queue, jobIds: record.jobIds, detail: `${record.hostId} appended ${record.jobIds.join(', ')} as ${record.queue}#${record.taskIds.join(',')} under range ${record.rangeId}` })
      case 'checkpoint': {
        const levels = record.ackLevels.map((level) => `subqueue ${level.subqueue} ack ${level.ackLevel}`).join(', ')
        const deleted = record.deletedJobIds.length === 0 ? '' : `; deleted ${record.deletedJobIds.join(', ')}`
        return mark({ kind: 'checkpoint', hostId: record.hostId, queue: record.queue, jobIds: record.deletedJobIds, detail: `${record.hostId} checkpointed ${record.queue} under range ${record.rangeId}: ${levels}${deleted}` })
      }
      case 'relocate':
        return mark({ kind: 'relocate', hostId: record.hostId, queue: record.from, detail: `${record.hostId} relocated ${record.moved} tasks ${record.from} (r${record.fromRangeId}) → ${record.to} (r${record.toRangeId})` })
      case 'attempt':
      case 'answered':
      case 'unloaded':
        // Attempts are in the trace; the timeline draws what committed.
        return
      case 'userData':
        return mark({ kind: 'userData', hostId: record.hostId, detail: `${record.hostId} user data ${record.family} expecting v${record.expectedVersion} → ${record.outcome}` })
      default: {
        // A record kind this timeline does not know yet still shows up, with all it says.
        const other = record as unknown as { op: string; hostId?: string; queue?: string }
        mark({ kind: 'other', ...(other.hostId === undefined ? {} : { hostId: other.hostId }), ...(other.queue === undefined ? {} : { queue: other.queue }), detail: `${other.op}: ${JSON.stringify(record)}` })
      }
    }
  }

  /** The world-event listener for `runSeed({ onEvent })`. */
  readonly onEvent = (event: WorldEvent, nowMs: number): void => {
    const { order, at } = this.#log.tick(nowMs)
    if (this.#log.shared(event, order, at) || event.kind !== 'history') return
    this.#log.mark({ order, nowMs: at, kind: 'start', hostId: event.hostId, tag: event.answer, jobIds: [event.jobId], detail: `History answered ${event.answer} for ${event.jobId} to ${event.hostId}` })
  }

  /** What was recorded; spans still open end at the last record. */
  data(): TimelineData {
    const frame = this.#log.frame()
    for (const held of this.#current.values()) held.toOrder = Math.max(held.toOrder, frame.orderEnd)
    const queues = [...new Set([...this.#ownership.map((held) => held.queue), ...frame.marks.flatMap((mark) => (mark.queue === undefined ? [] : [mark.queue]))])].sort()
    return { ...frame, queues, ownership: this.#ownership }
  }
}

/** What the page says above the drawing; `highlightJobIds` are the at-least-once checker's lost tasks. */
export type TimelinePage = TimelinePageText<TimelineData>

const answerColors: Record<string, string> = { started: '#2ca02c', 'already-started': '#17becf', obsolete: '#8c8c8c', retryable: '#ff7f0e' }
const markColors = { append: '#1f4e79', checkpoint: '#7b3294', relocate: '#a6611a', userData: '#008080', fault: '#d62728', other: '#000' }

// A queue's row height, in pixels.
const queueRowHeight = 22

// Rows of a host lane, from the top: faults, store writes, History answers. A queue row has
// only writes (and its ownership bar behind them).
function markShape(mark: TimelineMark, x: number, top: number, height: number): string {
  const t = title(`@${mark.nowMs} ms · ${mark.detail}`)
  const writeY = height >= hostLaneHeight ? top + 18 : top + height / 2
  switch (mark.kind) {
    case 'start': {
      const color = answerColors[mark.tag ?? ''] ?? '#000'
      return `<circle cx="${x}" cy="${top + height - 8}" r="3.6" fill="${color}" stroke="#fff" stroke-width="0.6">${t}</circle>`
    }
    case 'append':
      return `<rect x="${x - 0.8}" y="${writeY - 5}" width="1.6" height="10" fill="${markColors.append}">${t}</rect>`
    case 'checkpoint':
      return `<path d="M${x} ${writeY - 5}l4 5-4 5-4-5z" fill="${markColors.checkpoint}">${t}</path>`
    case 'relocate':
      return `<path d="M${x - 4} ${writeY}h8m-3-3 3 3-3 3" stroke="${markColors.relocate}" stroke-width="1.6" fill="none">${t}</path>`
    case 'userData':
      return `<rect x="${x - 3}" y="${writeY - 3}" width="6" height="6" fill="${markColors.userData}">${t}</rect>`
    case 'fault':
      return `<path d="M${x - 5} ${top + 1}h10l-5 8z" fill="${markColors.fault}" stroke="#fff" stroke-width="0.5">${t}</path>`
    case 'other':
      return `<path d="M${x - 4} ${writeY - 4}l8 8m0-8-8 8" stroke="${markColors.other}" stroke-width="2">${t}</path>`
  }
}

// Range ownership bars, then every mark in its host's lane (or the world lane) and again in its queue's row.
function rows(data: TimelineData, at: PageLayout, highlight: ReadonlySet<string>): string[] {
  const parts: string[] = []
  for (const held of data.ownership) {
    const box = spanBox(at, held.queue, held.fromOrder, held.toOrder, 1.5)
    if (box === undefined) continue
    const { x, y, w } = box
    const label = w > 70 ? `<text x="${x + 4}" y="${y + 15}" class="range">r${held.rangeId} ${escape(held.hostId)}</text>` : ''
    parts.push(
      `<g><rect x="${x}" y="${y + 2}" width="${w}" height="${queueRowHeight - 4}" rx="2" fill="${at.color(held.hostId)}" fill-opacity="0.5" stroke="${at.color(held.hostId)}"/>${label}${title(`${held.queue}: range ${held.rangeId} acquired by ${held.hostId} @${held.fromMs} ms (#${held.fromOrder}–#${held.toOrder})`)}</g>`,
    )
  }
  for (const mark of data.marks) {
    const x = at.x(mark.order)
    const lost = mark.jobIds?.filter((jobId) => highlight.has(jobId)) ?? []
    const queueTop = mark.queue === undefined ? undefined : at.rowY.get(mark.queue)
    if (lost.length > 0 && queueTop !== undefined) parts.push(`<circle cx="${x}" cy="${queueTop + queueRowHeight / 2}" r="8" fill="none" stroke="#d00" stroke-width="2">${title(`lost: ${lost.join(', ')} · ${mark.detail}`)}</circle>`)
    const hostTop = hostLaneTop(at, mark.hostId)
    if (hostTop !== undefined) parts.push(markShape(mark, x, hostTop, mark.hostId === undefined ? worldLaneHeight : hostLaneHeight))
    if (queueTop !== undefined && mark.kind !== 'fault') parts.push(markShape(mark, x, queueTop + 1, queueRowHeight))
  }
  return parts
}

function legend(): string {
  const dot = (color: string): string => `<circle cx="0" cy="6" r="4" fill="${color}"/>`
  return [
    item(`<rect x="-1" y="1" width="2" height="10" fill="${markColors.append}"/>`, 'append'),
    item(`<path d="M0 1l5 5-5 5-5-5z" fill="${markColors.checkpoint}"/>`, 'checkpoint'),
    item(`<path d="M-5 6h10m-3-3 3 3-3 3" stroke="${markColors.relocate}" stroke-width="1.6" fill="none"/>`, 'relocate'),
    item(`<rect x="-3" y="3" width="6" height="6" fill="${markColors.userData}"/>`, 'user data'),
    item(dot(answerColors.started as string), 'History: started (delivered)'),
    item(dot(answerColors['already-started'] as string), 'already started'),
    item(dot(answerColors.obsolete as string), 'obsolete'),
    item(dot(answerColors.retryable as string), 'retryable'),
    item(`<path d="M-6 1h12l-6 10z" fill="${markColors.fault}"/>`, 'fault'),
    item(`<path d="M-4 2l8 8m0-8-8 8" stroke="${markColors.other}" stroke-width="2"/>`, 'other store record'),
    item(`<rect x="-6" y="0" width="12" height="12" fill="#ccc"/>`, 'host down'),
    item(`<rect x="-6" y="2" width="12" height="8" rx="2" fill="#4e79a7" fill-opacity="0.5" stroke="#4e79a7"/>`, 'range held (host colour)'),
  ].join('')
}

/** The page, as one self-contained HTML string. */
export function renderTimelineHtml(page: TimelinePage): string {
  const { data } = page
  const at = pageLayout(data.hosts, data.queues, queueRowHeight, data.orderEnd)
  const backgrounds = [...at.rowY.values()].map((y, index) => `<rect x="0" y="${y}" width="${at.plotWidth}" height="${queueRowHeight}" fill="${index % 2 === 0 ? '#f4f4f4' : '#fbfbfb'}"/>`)
  const plot = plotSvg(at, data, 'heal → liveness phase', backgrounds, rows(data, at, new Set(page.highlightJobIds ?? [])))
  const labels = labelsSvg(at, 'world (clock, idle)', 'range ownership per physical queue', [...at.rowY].map(([queue, y]) => `<text x="8" y="${y + 15}" class="queue">${escape(queue)}${title(queue)}</text>`))
  return renderTimelinePage({ title: page.title, summary: page.summary, violations: page.violations, legend: legend(), labels, plot })
}
