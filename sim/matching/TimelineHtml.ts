/**
 * TimelineHtml — draws one recorded run (TimelineRecorder) as a self-contained HTML page:
 * inline CSS, inline SVG and a few lines of inline script, no network. Top to bottom: one lane
 * per host (when it was down, History's answers to it, its appends and checkpoints, faults that
 * struck it), a lane for faults that strike the world (clock jumps, idle unloads), then one row
 * per physical queue showing which host held which range when, with the appends and
 * checkpoints that committed under it (a lost task is ringed in red). A dashed line marks the
 * heal between the safety and liveness phases. Every mark has a hover title; the page also
 * shows it in a bar on top.
 *
 * The x axis is commit order (see TimelineRecorder), labelled with virtual time.
 *
 * The page around the drawing, the axis and the phases are core/TimelinePage.ts.
 *
 * Does not: read files, clocks or the network; the caller writes the string where it likes.
 */
import {
  axis,
  axisHeight,
  downPattern,
  escape,
  hostLabelsSvg,
  hostLaneHeight,
  hostLanesSvg,
  labelWidth,
  legendItem as item,
  phases,
  renderTimelinePage,
  title,
  worldLaneHeight,
  type PageLayout,
  pageLayout,
} from '../core/TimelinePage.ts'
import type { TimelineData, TimelineMark } from './TimelineRecorder.ts'

/** What the page says above the drawing. */
export interface TimelinePage {
  readonly title: string
  /** Lines about the run: options, result, counts. */
  readonly summary: ReadonlyArray<string>
  readonly violations: ReadonlyArray<string>
  /** Jobs to ring in red wherever they appear (the at-least-once checker's lost tasks). */
  readonly highlightJobIds?: ReadonlyArray<string>
  readonly data: TimelineData
}

const answerColors: Record<string, string> = { started: '#2ca02c', 'already-started': '#17becf', obsolete: '#8c8c8c', retryable: '#ff7f0e' }
const markColors = { append: '#1f4e79', checkpoint: '#7b3294', relocate: '#a6611a', userData: '#008080', fault: '#d62728', other: '#000' }

// A queue's row height, in pixels.
const queueRowHeight = 22

type Layout = PageLayout

const layout = (data: TimelineData): Layout => pageLayout(data.hosts, data.queues, queueRowHeight, data.orderEnd)

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

function plot(data: TimelineData, at: Layout, highlight: ReadonlySet<string>): string {
  const parts: string[] = []
  const width = at.plotWidth
  parts.push(hostLanesSvg(at, data.down, at))
  for (const [index, y] of [...at.rowY.values()].entries()) parts.push(`<rect x="0" y="${y}" width="${width}" height="${queueRowHeight}" fill="${index % 2 === 0 ? '#f4f4f4' : '#fbfbfb'}"/>`)
  parts.push(phases(data.healOrder, at, at.height, 'heal → liveness phase'))
  // Range ownership.
  for (const held of data.ownership) {
    const y = at.rowY.get(held.queue)
    if (y === undefined) continue
    const x = at.x(held.fromOrder)
    const w = Math.max(1.5, at.x(held.toOrder) - at.x(held.fromOrder))
    const label = w > 70 ? `<text x="${x + 4}" y="${y + 15}" class="range">r${held.rangeId} ${escape(held.hostId)}</text>` : ''
    parts.push(
      `<g><rect x="${x}" y="${y + 2}" width="${w}" height="${queueRowHeight - 4}" rx="2" fill="${at.color(held.hostId)}" fill-opacity="0.5" stroke="${at.color(held.hostId)}"/>${label}${title(`${held.queue}: range ${held.rangeId} acquired by ${held.hostId} @${held.fromMs} ms (#${held.fromOrder}–#${held.toOrder})`)}</g>`,
    )
  }
  // Marks: in their host's lane (or the world lane), and again in their queue's row.
  for (const mark of data.marks) {
    const x = at.x(mark.order)
    const lost = mark.jobIds?.filter((jobId) => highlight.has(jobId)) ?? []
    if (lost.length > 0) {
      const y = mark.queue === undefined ? undefined : at.rowY.get(mark.queue)
      if (y !== undefined) parts.push(`<circle cx="${x}" cy="${y + queueRowHeight / 2}" r="8" fill="none" stroke="#d00" stroke-width="2">${title(`lost: ${lost.join(', ')} · ${mark.detail}`)}</circle>`)
    }
    const hostTop = mark.hostId === undefined ? at.worldY : at.hostY.get(mark.hostId)
    if (hostTop !== undefined) parts.push(markShape(mark, x, hostTop, mark.hostId === undefined ? worldLaneHeight : hostLaneHeight))
    const queueTop = mark.queue === undefined ? undefined : at.rowY.get(mark.queue)
    if (queueTop !== undefined && mark.kind !== 'fault') parts.push(markShape(mark, x, queueTop + 1, queueRowHeight))
  }
  parts.push(axis(data.timeAt, data.orderEnd, at, axisHeight - 2, false), axis(data.timeAt, data.orderEnd, at, at.height - axisHeight + 2, true))
  return `<svg xmlns="http://www.w3.org/2000/svg" id="plot" width="${width}" height="${at.height}" viewBox="0 0 ${width} ${at.height}">
${downPattern}
${parts.join('\n')}
</svg>`
}

function labels(data: TimelineData, at: Layout): string {
  const parts: string[] = [hostLabelsSvg(at, 'world (clock, idle)')]
  parts.push(`<text x="8" y="${at.rowsHeaderY + 15}" class="section">range ownership per physical queue</text>`)
  for (const [queue, y] of at.rowY) parts.push(`<text x="8" y="${y + 15}" class="queue">${escape(queue)}${title(queue)}</text>`)
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth}" height="${at.height}">${parts.join('')}</svg>`
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
  const at = layout(page.data)
  return renderTimelinePage({ title: page.title, summary: page.summary, violations: page.violations, legend: legend(), labels: labels(page.data, at), plot: plot(page.data, at, new Set(page.highlightJobIds ?? [])) })
}
