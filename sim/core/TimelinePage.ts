/**
 * TimelinePage — what every workload's timeline page shares: the page around the drawing (title,
 * summary, violations, legend, a sticky bar that shows the hovered mark's details, a fixed label
 * column beside a scrolling plot), the x axis (commit order, labelled with virtual time), and the
 * small helpers the drawings use. Self-contained: inline CSS, SVG and a few lines of script, no
 * network.
 *
 * Does not: decide a workload's rows or marks (matching/RangeTimeline.ts, jobs/JobTimeline.ts
 * draw their own), or read files, clocks or the network.
 */
import type { DownSpan, TimelineFrame } from './TimelineRecorder.ts'

/** Text made safe for HTML and SVG, attributes included. */
export const escape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** An SVG `<title>` (the hover text of the element it sits in). */
export const title = (text: string): string => `<title>${escape(text)}</title>`

const fixed = (value: number): string => (Math.round(value * 10) / 10).toString()

/** Virtual milliseconds for an axis label: `840 ms`, `12.5 s`, `3.2 min`. */
export const formatMs = (ms: number): string => (ms < 10_000 ? `${ms} ms` : ms < 600_000 ? `${fixed(ms / 1000)} s` : `${fixed(ms / 60_000)} min`)

/** Width of the label column, in pixels. */
export const labelWidth = 260
/** Height of each of the two axes, in pixels. */
export const axisHeight = 34

// The plot is wide enough that a mark per record stays apart on long runs but never so wide that
// a short run looks empty; past the cap marks may touch.
const plotWidthMin = 1_000
const plotWidthMax = 14_000
const pixelsPerRecord = 1.4
const tickSpacing = 110

/** The x axis of a run of `orderEnd` records: the plot's width and where each order sits. */
export function xAxisOf(orderEnd: number): { readonly plotWidth: number; readonly x: (order: number) => number } {
  const plotWidth = Math.round(Math.min(plotWidthMax, Math.max(plotWidthMin, orderEnd * pixelsPerRecord)))
  const scale = plotWidth / Math.max(1, orderEnd)
  return { plotWidth, x: (order) => Math.round((order + 0.5) * scale * 10) / 10 }
}

/** An axis line at `y` with ticks labelled by virtual time (`@`) and order (`#`). */
export function axis(timeAt: ReadonlyArray<number>, orderEnd: number, at: { readonly plotWidth: number; readonly x: (order: number) => number }, y: number, labelsBelow: boolean): string {
  const parts = [`<line x1="0" x2="${at.plotWidth}" y1="${y}" y2="${y}" stroke="#999"/>`]
  const every = Math.max(1, Math.round(tickSpacing / Math.max(0.001, at.x(1) - at.x(0))))
  for (let order = 0; order < orderEnd; order += every) {
    const x = at.x(order)
    const label = `@${formatMs(timeAt[order] ?? 0)}`
    const textY = labelsBelow ? y + 14 : y - 6
    // The first label starts at the edge instead of centring on it, so it is not cut off.
    const anchor = order === 0 ? ' style="text-anchor:start"' : ''
    parts.push(`<line x1="${x}" x2="${x}" y1="${y - 3}" y2="${y + 3}" stroke="#999"/><text x="${x}" y="${textY}" class="tick"${anchor}>${escape(label)}</text>`)
    parts.push(`<text x="${x}" y="${labelsBelow ? y + 26 : y - 18}" class="order"${anchor}>#${order}</text>`)
  }
  return parts.join('')
}

/** The heal: a dashed line, the liveness (or final) phase shaded after it, and both phases named. */
export function phases(healOrder: number | null, at: { readonly plotWidth: number; readonly x: (order: number) => number }, height: number, afterHeal: string): string {
  const parts = [`<text x="4" y="${axisHeight + 14}" class="phase">safety phase (faults on)</text>`]
  if (healOrder === null) return parts.join('')
  const x = at.x(healOrder)
  parts.push(`<rect x="${x}" y="${axisHeight}" width="${Math.max(0, at.plotWidth - x)}" height="${height - 2 * axisHeight}" fill="#2ca02c" fill-opacity="0.05"/>`)
  parts.push(`<line x1="${x}" x2="${x}" y1="${axisHeight - 4}" y2="${height - axisHeight + 4}" stroke="#2ca02c" stroke-width="1.5" stroke-dasharray="5 3"/>`)
  parts.push(`<text x="${x + 4}" y="${axisHeight + 14}" class="phase">${escape(afterHeal)}</text>`)
  return parts.join('')
}

/** Height of a section heading, of a host's lane and of the world's lane, in pixels. */
export const sectionHeight = 22
export const hostLaneHeight = 42
export const worldLaneHeight = 28

const hostColors = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#b07aa1', '#76b7b2', '#edc948', '#ff9da7', '#9c755f', '#bab0ac']

/** Where the host lanes and the world lane sit, and each host's colour. */
export interface HostLanes {
  readonly hostY: ReadonlyMap<string, number>
  readonly worldY: number
  /** The first y below the world lane, where a workload's own rows start. */
  readonly bottom: number
  readonly color: (hostId: string | undefined) => string
}

/** Every page starts with a lane per host, then the world's lane, under the top axis. */
export function hostLanes(hosts: ReadonlyArray<string>): HostLanes {
  let y = axisHeight + sectionHeight
  const hostY = new Map<string, number>()
  for (const host of hosts) {
    hostY.set(host, y)
    y += hostLaneHeight
  }
  const colorOf = new Map(hosts.map((host, index) => [host, hostColors[index % hostColors.length] as string]))
  return { hostY, worldY: y, bottom: y + worldLaneHeight, color: (hostId) => (hostId === undefined ? '#555' : (colorOf.get(hostId) ?? '#555')) }
}

/** A whole drawing's geometry: the x axis, the host lanes, then one row per name of the workload's section. */
export interface PageLayout extends HostLanes {
  readonly x: (order: number) => number
  readonly plotWidth: number
  /** Where the workload's section heading sits. */
  readonly rowsHeaderY: number
  readonly rowY: ReadonlyMap<string, number>
  readonly height: number
}

/** Lays out a run of `orderEnd` records: host lanes, then a section of `rows`, each `rowHeight` high. */
export function pageLayout(hosts: ReadonlyArray<string>, rows: ReadonlyArray<string>, rowHeight: number, orderEnd: number): PageLayout {
  const lanes = hostLanes(hosts)
  let y = lanes.bottom + sectionHeight
  const rowY = new Map<string, number>()
  for (const row of rows) {
    rowY.set(row, y)
    y += rowHeight
  }
  return { ...lanes, ...xAxisOf(orderEnd), rowsHeaderY: lanes.bottom, rowY, height: y + axisHeight }
}

/** The lanes' backgrounds and the hatched spans when a host was down. */
export function hostLanesSvg(lanes: HostLanes, down: ReadonlyArray<DownSpan>, at: { readonly plotWidth: number; readonly x: (order: number) => number }): string {
  const parts: string[] = []
  for (const [host, y] of lanes.hostY) parts.push(`<rect x="0" y="${y}" width="${at.plotWidth}" height="${hostLaneHeight - 2}" fill="${lanes.color(host)}" fill-opacity="0.07"/>`)
  parts.push(`<rect x="0" y="${lanes.worldY}" width="${at.plotWidth}" height="${worldLaneHeight - 2}" fill="#d62728" fill-opacity="0.05"/>`)
  for (const span of down) {
    const y = lanes.hostY.get(span.hostId)
    if (y === undefined) continue
    const x = at.x(span.fromOrder)
    const w = Math.max(2, at.x(span.toOrder) - x)
    parts.push(`<rect x="${x}" y="${y}" width="${w}" height="${hostLaneHeight - 2}" fill="url(#down)">${title(`${span.hostId} down (${span.reason}) from #${span.fromOrder} to #${span.toOrder}`)}</rect>`)
  }
  return parts.join('\n')
}

/** The label column's host part: the heading, a swatch and name per host, the world lane's name. */
export function hostLabelsSvg(lanes: HostLanes, worldName: string): string {
  const parts: string[] = [`<text x="8" y="${axisHeight + 15}" class="section">hosts</text>`]
  for (const [host, y] of lanes.hostY) parts.push(`<rect x="8" y="${y + 12}" width="12" height="12" rx="2" fill="${lanes.color(host)}"/><text x="26" y="${y + 23}" class="lane">${escape(host)}</text>`)
  parts.push(`<text x="26" y="${lanes.worldY + 18}" class="lane">${escape(worldName)}</text>`)
  return parts.join('')
}

/** A hatched pattern for spans when a host was down; use as `fill="url(#down)"`. */
export const downPattern =
  '<defs><pattern id="down" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#ddd"/><line x1="0" y1="0" x2="0" y2="6" stroke="#999" stroke-width="2"/></pattern></defs>'

/** The top of `hostId`'s lane, or the world lane's for a mark that struck no host; undefined for a host without a lane. */
export function hostLaneTop(lanes: HostLanes, hostId: string | undefined): number | undefined {
  return hostId === undefined ? lanes.worldY : lanes.hostY.get(hostId)
}

/** Where a span on row `row` from `fromOrder` to `toOrder` sits: its left, its row's top and its width (at least `widthMin`); undefined for a row the page leaves out. */
export function spanBox(at: PageLayout, row: string, fromOrder: number, toOrder: number, widthMin: number): { readonly x: number; readonly y: number; readonly w: number } | undefined {
  const y = at.rowY.get(row)
  if (y === undefined) return undefined
  const x = at.x(fromOrder)
  return { x, y, w: Math.max(widthMin, at.x(toOrder) - x) }
}

/**
 * The plot's SVG, from the back: the host lanes, `under` (a workload's row backgrounds), the
 * phases around the heal (`afterHeal` names the phase after it), `over` (a workload's rows and
 * marks), and the axis above and below.
 */
export function plotSvg(at: PageLayout, frame: Pick<TimelineFrame<unknown>, 'down' | 'healOrder' | 'orderEnd' | 'timeAt'>, afterHeal: string, under: ReadonlyArray<string>, over: ReadonlyArray<string>): string {
  const axes = [axis(frame.timeAt, frame.orderEnd, at, axisHeight - 2, false), axis(frame.timeAt, frame.orderEnd, at, at.height - axisHeight + 2, true)]
  const parts = [hostLanesSvg(at, frame.down, at), ...under, phases(frame.healOrder, at, at.height, afterHeal), ...over, ...axes]
  return `<svg xmlns="http://www.w3.org/2000/svg" id="plot" width="${at.plotWidth}" height="${at.height}" viewBox="0 0 ${at.plotWidth} ${at.height}">
${downPattern}
${parts.join('\n')}
</svg>`
}

/** The label column's SVG: the host lanes' and the world lane's names, the heading of a workload's rows (`section`), and one label a row. */
export function labelsSvg(at: PageLayout, worldName: string, section: string, rows: ReadonlyArray<string>): string {
  const parts = [hostLabelsSvg(at, worldName), `<text x="8" y="${at.rowsHeaderY + 15}" class="section">${escape(section)}</text>`, ...rows]
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth}" height="${at.height}">${parts.join('')}</svg>`
}

/** What a workload's page says above its drawing, and the run it draws. */
export interface TimelinePageText<Data> {
  readonly title: string
  /** Lines about the run: options, result, counts. */
  readonly summary: ReadonlyArray<string>
  readonly violations: ReadonlyArray<string>
  /** Jobs to ring in red wherever they appear. */
  readonly highlightJobIds?: ReadonlyArray<string>
  readonly data: Data
}

/** One legend entry: a small drawing (in a 14×14 box centred on x=0) and its words. */
export const legendItem = (shape: string, text: string): string => `<span class="item"><svg width="14" height="14" viewBox="-7 -2 14 14">${shape}</svg>${escape(text)}</span>`

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

/** The parts of one page. */
export interface TimelinePageParts {
  readonly title: string
  /** Lines about the run: options, result, counts. */
  readonly summary: ReadonlyArray<string>
  readonly violations: ReadonlyArray<string>
  /** Legend entries (`legendItem`). */
  readonly legend: string
  /** The label column's SVG. */
  readonly labels: string
  /** The plot's SVG; its root element must have `id="plot"` for the hover bar. */
  readonly plot: string
}

/** The page, as one self-contained HTML string. */
export function renderTimelinePage(page: TimelinePageParts): string {
  const violations = page.violations.length === 0 ? '' : `<ul class="violations">${page.violations.map((line) => `<li>${escape(line)}</li>`).join('')}</ul>`
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(page.title)}</title><style>${css}</style></head>
<body>
<h1>${escape(page.title)}</h1>
<div class="summary">${escape(page.summary.join('\n'))}</div>
${violations}
<div class="legend">${page.legend}</div>
<div id="info">hover a mark for its details · x axis: commit order (#), labelled with virtual time (@)</div>
<div class="chart"><div class="labels">${page.labels}</div><div class="scroll">${page.plot}</div></div>
<script>${script}</script>
</body></html>
`
}
