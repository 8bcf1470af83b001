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
 * Does not: read files, clocks or the network; the caller writes the string where it likes.
 */
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

const hostColors = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#b07aa1', '#76b7b2', '#edc948', '#ff9da7', '#9c755f', '#bab0ac']
const answerColors: Record<string, string> = { started: '#2ca02c', 'already-started': '#17becf', obsolete: '#8c8c8c', retryable: '#ff7f0e' }
const markColors = { append: '#1f4e79', checkpoint: '#7b3294', relocate: '#a6611a', userData: '#008080', fault: '#d62728', other: '#000' }

// Geometry, in pixels. The plot is wide enough that a mark per commit stays apart on long runs
// but never so wide that a short run looks empty; past the cap marks may touch.
const labelWidth = 260
const plotWidthMin = 1_000
const plotWidthMax = 14_000
const pixelsPerRecord = 1.4
const axisHeight = 34
const sectionHeight = 22
const hostLaneHeight = 42
const worldLaneHeight = 28
const queueRowHeight = 22
const tickSpacing = 110

const escape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
const fixed = (value: number): string => (Math.round(value * 10) / 10).toString()
const formatMs = (ms: number): string => (ms < 10_000 ? `${ms} ms` : ms < 600_000 ? `${fixed(ms / 1000)} s` : `${fixed(ms / 60_000)} min`)

interface Layout {
  readonly x: (order: number) => number
  readonly plotWidth: number
  readonly hostY: ReadonlyMap<string, number>
  readonly worldY: number
  readonly queueHeaderY: number
  readonly queueY: ReadonlyMap<string, number>
  readonly height: number
  readonly color: (hostId: string | undefined) => string
}

function layout(data: TimelineData): Layout {
  const plotWidth = Math.round(Math.min(plotWidthMax, Math.max(plotWidthMin, data.orderEnd * pixelsPerRecord)))
  const scale = plotWidth / Math.max(1, data.orderEnd)
  let y = axisHeight + sectionHeight
  const hostY = new Map<string, number>()
  for (const host of data.hosts) {
    hostY.set(host, y)
    y += hostLaneHeight
  }
  const worldY = y
  y += worldLaneHeight
  const queueHeaderY = y
  y += sectionHeight
  const queueY = new Map<string, number>()
  for (const queue of data.queues) {
    queueY.set(queue, y)
    y += queueRowHeight
  }
  const colorOf = new Map(data.hosts.map((host, index) => [host, hostColors[index % hostColors.length] as string]))
  return {
    x: (order) => Math.round((order + 0.5) * scale * 10) / 10,
    plotWidth,
    hostY,
    worldY,
    queueHeaderY,
    queueY,
    height: y + axisHeight,
    color: (hostId) => (hostId === undefined ? '#555' : (colorOf.get(hostId) ?? '#555')),
  }
}

const title = (text: string): string => `<title>${escape(text)}</title>`

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

function axis(data: TimelineData, at: Layout, y: number, labelsBelow: boolean): string {
  const parts = [`<line x1="0" x2="${at.plotWidth}" y1="${y}" y2="${y}" stroke="#999"/>`]
  const every = Math.max(1, Math.round(tickSpacing / Math.max(0.001, at.x(1) - at.x(0))))
  for (let order = 0; order < data.orderEnd; order += every) {
    const x = at.x(order)
    const label = `@${formatMs(data.timeAt[order] ?? 0)}`
    const textY = labelsBelow ? y + 14 : y - 6
    // The first label starts at the edge instead of centring on it, so it is not cut off.
    const anchor = order === 0 ? ' style="text-anchor:start"' : ''
    parts.push(`<line x1="${x}" x2="${x}" y1="${y - 3}" y2="${y + 3}" stroke="#999"/><text x="${x}" y="${textY}" class="tick"${anchor}>${escape(label)}</text>`)
    parts.push(`<text x="${x}" y="${labelsBelow ? y + 26 : y - 18}" class="order"${anchor}>#${order}</text>`)
  }
  return parts.join('')
}

function plot(data: TimelineData, at: Layout, highlight: ReadonlySet<string>): string {
  const parts: string[] = []
  const width = at.plotWidth
  // Lane backgrounds.
  for (const [host, y] of at.hostY) parts.push(`<rect x="0" y="${y}" width="${width}" height="${hostLaneHeight - 2}" fill="${at.color(host)}" fill-opacity="0.07"/>`)
  parts.push(`<rect x="0" y="${at.worldY}" width="${width}" height="${worldLaneHeight - 2}" fill="#d62728" fill-opacity="0.05"/>`)
  for (const [index, y] of [...at.queueY.values()].entries()) parts.push(`<rect x="0" y="${y}" width="${width}" height="${queueRowHeight}" fill="${index % 2 === 0 ? '#f4f4f4' : '#fbfbfb'}"/>`)
  // Phases.
  if (data.healOrder !== null) {
    const x = at.x(data.healOrder)
    parts.push(`<rect x="${x}" y="${axisHeight}" width="${Math.max(0, width - x)}" height="${at.height - 2 * axisHeight}" fill="#2ca02c" fill-opacity="0.05"/>`)
    parts.push(`<line x1="${x}" x2="${x}" y1="${axisHeight - 4}" y2="${at.height - axisHeight + 4}" stroke="#2ca02c" stroke-width="1.5" stroke-dasharray="5 3"/>`)
    parts.push(`<text x="${x + 4}" y="${axisHeight + 14}" class="phase">heal → liveness phase</text>`)
  }
  parts.push(`<text x="4" y="${axisHeight + 14}" class="phase">safety phase (faults on)</text>`)
  // Hosts down.
  for (const span of data.down) {
    const y = at.hostY.get(span.hostId)
    if (y === undefined) continue
    const x = at.x(span.fromOrder)
    const w = Math.max(2, at.x(span.toOrder) - x)
    parts.push(`<rect x="${x}" y="${y}" width="${w}" height="${hostLaneHeight - 2}" fill="url(#down)">${title(`${span.hostId} down (${span.reason}) from #${span.fromOrder} to #${span.toOrder}`)}</rect>`)
  }
  // Range ownership.
  for (const held of data.ownership) {
    const y = at.queueY.get(held.queue)
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
      const y = mark.queue === undefined ? undefined : at.queueY.get(mark.queue)
      if (y !== undefined) parts.push(`<circle cx="${x}" cy="${y + queueRowHeight / 2}" r="8" fill="none" stroke="#d00" stroke-width="2">${title(`lost: ${lost.join(', ')} · ${mark.detail}`)}</circle>`)
    }
    const hostTop = mark.hostId === undefined ? at.worldY : at.hostY.get(mark.hostId)
    if (hostTop !== undefined) parts.push(markShape(mark, x, hostTop, mark.hostId === undefined ? worldLaneHeight : hostLaneHeight))
    const queueTop = mark.queue === undefined ? undefined : at.queueY.get(mark.queue)
    if (queueTop !== undefined && mark.kind !== 'fault') parts.push(markShape(mark, x, queueTop + 1, queueRowHeight))
  }
  parts.push(axis(data, at, axisHeight - 2, false), axis(data, at, at.height - axisHeight + 2, true))
  return `<svg xmlns="http://www.w3.org/2000/svg" id="plot" width="${width}" height="${at.height}" viewBox="0 0 ${width} ${at.height}">
<defs><pattern id="down" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#ddd"/><line x1="0" y1="0" x2="0" y2="6" stroke="#999" stroke-width="2"/></pattern></defs>
${parts.join('\n')}
</svg>`
}

function labels(data: TimelineData, at: Layout): string {
  const parts: string[] = [`<text x="8" y="${axisHeight + 15}" class="section">hosts</text>`]
  for (const [host, y] of at.hostY) {
    parts.push(`<rect x="8" y="${y + 12}" width="12" height="12" rx="2" fill="${at.color(host)}"/><text x="26" y="${y + 23}" class="lane">${escape(host)}</text>`)
  }
  parts.push(`<text x="26" y="${at.worldY + 18}" class="lane">world (clock, idle)</text>`)
  parts.push(`<text x="8" y="${at.queueHeaderY + 15}" class="section">range ownership per physical queue</text>`)
  for (const [queue, y] of at.queueY) parts.push(`<text x="8" y="${y + 15}" class="queue">${escape(queue)}${title(queue)}</text>`)
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth}" height="${at.height}">${parts.join('')}</svg>`
}

function legend(): string {
  const item = (shape: string, text: string): string => `<span class="item"><svg width="14" height="14" viewBox="-7 -2 14 14">${shape}</svg>${escape(text)}</span>`
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

const css = `
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:18px;margin:0 0 6px}
.summary{font:12px/1.5 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;margin:0 0 8px;color:#333}
.violations{color:#b00020;font-weight:600;margin:0 0 8px;padding-left:18px}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;margin:6px 0 8px}.legend .item{display:inline-flex;align-items:center;gap:4px}
#info{position:sticky;top:0;z-index:1;background:#fffbe6;border:1px solid #e6d9a0;padding:4px 8px;min-height:18px;font:12px ui-monospace,Menlo,Consolas,monospace;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.chart{display:flex;border:1px solid #ddd;margin-top:6px}.labels{flex:none;background:#fff;border-right:1px solid #ddd}.scroll{overflow-x:auto;flex:1}
text{font-family:system-ui,sans-serif}.tick{font-size:10px;fill:#555;text-anchor:middle}.order{font-size:9px;fill:#aaa;text-anchor:middle}
.section{font-size:12px;font-weight:700;fill:#333}.lane{font-size:13px;fill:#222}.queue{font:11px ui-monospace,Menlo,Consolas,monospace;fill:#333}
.range{font-size:10px;fill:#111;pointer-events:none}.phase{font-size:11px;fill:#2c7a2c;font-style:italic}
`

// Shows the hovered mark's title in the sticky bar (native titles are slow and vanish).
const script = `
const info=document.getElementById('info');const plot=document.getElementById('plot');
plot.addEventListener('mouseover',(e)=>{
  for(let el=e.target;el&&el!==plot;el=el.parentElement){
    const t=el.querySelector(':scope>title');if(t){info.textContent=t.textContent;return}
  }
});
`

/** The page, as one self-contained HTML string. */
export function renderTimelineHtml(page: TimelinePage): string {
  const at = layout(page.data)
  const violations = page.violations.length === 0 ? '' : `<ul class="violations">${page.violations.map((line) => `<li>${escape(line)}</li>`).join('')}</ul>`
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(page.title)}</title><style>${css}</style></head>
<body>
<h1>${escape(page.title)}</h1>
<div class="summary">${escape(page.summary.join('\n'))}</div>
${violations}
<div class="legend">${legend()}</div>
<div id="info">hover a mark for its details · x axis: commit order (#), labelled with virtual time (@)</div>
<div class="chart"><div class="labels">${labels(page.data, at)}</div><div class="scroll">${plot(page.data, at, new Set(page.highlightJobIds ?? []))}</div></div>
<script>${script}</script>
</body></html>
`
}
