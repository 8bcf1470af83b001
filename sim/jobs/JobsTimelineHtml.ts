/**
 * JobsTimelineHtml — draws one recorded end-to-end run (JobsTimelineRecorder) as a
 * self-contained HTML page. Top to bottom: one lane per host (when it was down, its membership
 * views, the faults that struck it, the job calls it made), a lane for faults that strike the
 * world (clock jumps), then one row per job: a line from its enqueue to its end, each claim as a
 * bar in the claiming host's colour, each `work` handler run as an outline in its host's colour
 * (a claim bar with no outline is a claim no handler was given), and marks for deliveries that
 * claimed nothing, heartbeats, lapses (red), retries, deaths, acks and cancels; the rows of jobs
 * a violation names (the handler checkers' and prompt delivery's included) are ringed in red. A
 * dashed line marks the heal between the safety phase and the final phase. Every mark has a hover title, shown in a bar on top.
 *
 * Long runs enqueue many jobs; the page draws the first `jobRowsMax` of them (by enqueue) and
 * says how many it left out, so it stays a page a browser opens.
 *
 * Does not: read files, clocks or the network; the page shell and axis are core/TimelinePage.ts.
 */
import {
  axis,
  axisHeight,
  downPattern,
  escape,
  hostLabelsSvg,
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
import type { JobsMark, JobsTimelineData } from './JobsTimelineRecorder.ts'

/** What the page says above the drawing. */
export interface JobsTimelinePage {
  readonly title: string
  readonly summary: ReadonlyArray<string>
  readonly violations: ReadonlyArray<string>
  /** Jobs to ring in red on their row (those the violations name). */
  readonly highlightJobIds?: ReadonlyArray<string>
  readonly data: JobsTimelineData
}

// Rows past this many jobs are left out: a browser still opens the page of a long run.
const jobRowsMax = 400
const jobRowHeight = 14
const colors = { enqueue: '#1f4e79', delivery: '#8c8c8c', heartbeat: '#555', lapse: '#d62728', retry: '#ff7f0e', ack: '#2ca02c', fail: '#7b3294', dead: '#000', cancel: '#8c8c8c', sweep: '#7b3294', pause: '#e377c2', fault: '#d62728', view: '#17becf' }

type Layout = PageLayout

const layout = (data: JobsTimelineData): Layout => pageLayout(data.hosts, data.jobs.slice(0, jobRowsMax).map((life) => life.id), jobRowHeight, data.orderEnd)

// One mark drawn around (x, cy); host lanes draw them in rows by kind, job rows on their line.
function markShape(mark: JobsMark, x: number, cy: number): string {
  const t = title(`@${mark.nowMs} ms · ${mark.detail}`)
  switch (mark.kind) {
    case 'enqueue':
      return `<circle cx="${x}" cy="${cy}" r="3" fill="${colors.enqueue}">${t}</circle>`
    case 'delivery':
      return `<circle cx="${x}" cy="${cy}" r="3" fill="#fff" stroke="${colors.delivery}" stroke-width="1.4">${t}</circle>`
    case 'claim':
      return `<rect x="${x - 1}" y="${cy - 5}" width="2" height="10" fill="#222">${t}</rect>`
    case 'heartbeat':
      return `<rect x="${x - 0.5}" y="${cy - 3}" width="1" height="6" fill="${colors.heartbeat}">${t}</rect>`
    case 'lapse':
      return `<path d="M${x - 4} ${cy - 4}l8 8m0-8-8 8" stroke="${colors.lapse}" stroke-width="2">${t}</path>`
    case 'retry':
      return `<path d="M${x - 3} ${cy - 4}l4 4-4 4" stroke="${colors.retry}" stroke-width="2" fill="none">${t}</path>`
    case 'ack':
      return `<path d="M${x - 4} ${cy}l3 3 5-6" stroke="${mark.tag === 'refused' ? colors.fail : colors.ack}" stroke-width="2" fill="none">${t}</path>`
    case 'fail':
      return `<path d="M${x - 3} ${cy - 3}l6 6m0-6-6 6" stroke="${colors.fail}" stroke-width="1.5">${t}</path>`
    case 'dead':
      return `<rect x="${x - 3}" y="${cy - 3}" width="6" height="6" fill="${colors.dead}">${t}</rect>`
    case 'cancel':
      return `<path d="M${x - 3} ${cy + 4}l6-8" stroke="${colors.cancel}" stroke-width="2">${t}</path>`
    case 'sweep':
      return `<path d="M${x} ${cy - 5}l4 5-4 5-4-5z" fill="${colors.sweep}">${t}</path>`
    case 'pause':
      return mark.tag === 'pause'
        ? `<rect x="${x - 3}" y="${cy - 5}" width="2" height="10" fill="${colors.pause}"/><rect x="${x + 1}" y="${cy - 5}" width="2" height="10" fill="${colors.pause}">${t}</rect>`
        : `<path d="M${x - 3} ${cy - 5}l7 5-7 5z" fill="${colors.pause}">${t}</path>`
    case 'fault':
      return `<path d="M${x - 5} ${cy - 4}h10l-5 8z" fill="${colors.fault}" stroke="#fff" stroke-width="0.5">${t}</path>`
    case 'view':
      return `<circle cx="${x}" cy="${cy}" r="2.4" fill="${colors.view}">${t}</circle>`
  }
}

// Where a mark sits in its host's lane: faults on top, views in the middle, job calls below.
function hostRow(mark: JobsMark): number {
  if (mark.kind === 'fault') return 6
  if (mark.kind === 'view') return 18
  return 31
}

function plot(data: JobsTimelineData, at: Layout, highlight: ReadonlySet<string>): string {
  const parts: string[] = []
  const width = at.plotWidth
  parts.push(hostLanesSvg(at, data.down, at))
  parts.push(phases(data.healOrder, at, at.height, 'heal → final phase: ack, claim and ack everything, sweep'))
  for (const life of data.jobs) {
    const y = at.rowY.get(life.id)
    if (y === undefined) continue
    const x = at.x(life.fromOrder)
    parts.push(`<line x1="${x}" x2="${Math.max(x + 1, at.x(life.toOrder))}" y1="${y + jobRowHeight / 2}" y2="${y + jobRowHeight / 2}" stroke="#bbb" stroke-width="1.5">${title(`${life.id} on ${life.queue}: ${life.end === 'open' ? 'not ended when the run did' : life.end}`)}</line>`)
  }
  for (const claim of data.claims) {
    const y = at.rowY.get(claim.jobId)
    if (y === undefined) continue
    const x = at.x(claim.fromOrder)
    const w = Math.max(2, at.x(claim.toOrder) - x)
    parts.push(`<rect x="${x}" y="${y + 3}" width="${w}" height="${jobRowHeight - 6}" rx="2" fill="${at.color(claim.hostId)}" fill-opacity="0.55">${title(`${claim.jobId} claimed by ${claim.hostId} (#${claim.fromOrder}–#${claim.toOrder}), valid until @${claim.deadlineMs} ms`)}</rect>`)
  }
  for (const run of data.handlers) {
    const y = at.rowY.get(run.jobId)
    if (y === undefined) continue
    const x = at.x(run.fromOrder)
    const w = Math.max(3, at.x(run.toOrder) - x)
    const ran = run.endedMs === null ? `from @${run.startedMs} ms, still running at the end` : `@${run.startedMs}–${run.endedMs} ms`
    parts.push(`<rect x="${x}" y="${y + 1}" width="${w}" height="${jobRowHeight - 2}" rx="2" fill="none" stroke="${at.color(run.hostId)}" stroke-width="1.5">${title(`${run.jobId}: handler on ${run.hostId} for claim ${run.claimToken}, ${ran}`)}</rect>`)
  }
  for (const jobId of highlight) {
    const y = at.rowY.get(jobId)
    if (y !== undefined) parts.push(`<rect x="0.5" y="${y + 0.5}" width="${width - 1}" height="${jobRowHeight - 1}" fill="none" stroke="#d00" stroke-width="1.5">${title(`${jobId}: named by a violation`)}</rect>`)
  }
  for (const mark of data.marks) {
    const x = at.x(mark.order)
    const hostTop = mark.hostId === undefined ? at.worldY : at.hostY.get(mark.hostId)
    if (hostTop !== undefined) parts.push(markShape(mark, x, mark.hostId === undefined ? hostTop + worldLaneHeight / 2 : hostTop + hostRow(mark)))
    const jobTop = mark.jobId === undefined ? undefined : at.rowY.get(mark.jobId)
    if (jobTop !== undefined) parts.push(markShape(mark, x, jobTop + jobRowHeight / 2))
  }
  parts.push(axis(data.timeAt, data.orderEnd, at, axisHeight - 2, false), axis(data.timeAt, data.orderEnd, at, at.height - axisHeight + 2, true))
  return `<svg xmlns="http://www.w3.org/2000/svg" id="plot" width="${width}" height="${at.height}" viewBox="0 0 ${width} ${at.height}">
${downPattern}
${parts.join('\n')}
</svg>`
}

function labels(data: JobsTimelineData, at: Layout): string {
  const parts: string[] = [hostLabelsSvg(at, 'world (clock)')]
  const shown = Math.min(jobRowsMax, data.jobs.length)
  const header = shown === data.jobs.length ? `jobs (${shown})` : `jobs: first ${shown} of ${data.jobs.length}`
  parts.push(`<text x="8" y="${at.rowsHeaderY + 15}" class="section">${escape(header)}</text>`)
  for (const life of data.jobs.slice(0, shown)) {
    const y = at.rowY.get(life.id) ?? 0
    parts.push(`<text x="8" y="${y + 11}" class="queue">${escape(`${life.queue} ${life.id}`)}${title(`${life.id}: ${life.end}`)}</text>`)
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth}" height="${at.height}">${parts.join('')}</svg>`
}

function legend(): string {
  return [
    item(`<circle cx="0" cy="6" r="3" fill="${colors.enqueue}"/>`, 'enqueue'),
    item(`<circle cx="0" cy="6" r="3" fill="#fff" stroke="${colors.delivery}" stroke-width="1.4"/>`, 'delivered, nothing claimed'),
    item(`<rect x="-6" y="2" width="12" height="8" rx="2" fill="#4e79a7" fill-opacity="0.55"/>`, 'claim held (host colour)'),
    item(`<rect x="-6" y="0" width="12" height="12" rx="2" fill="none" stroke="#4e79a7" stroke-width="1.5"/>`, 'handler running (host colour)'),
    item(`<rect x="-6" y="0" width="12" height="12" fill="none" stroke="#d00" stroke-width="1.5"/>`, 'job a violation names'),
    item(`<rect x="-0.5" y="3" width="1" height="6" fill="${colors.heartbeat}"/>`, 'heartbeat'),
    item(`<path d="M-4 2l8 8m0-8-8 8" stroke="${colors.lapse}" stroke-width="2"/>`, 'claim lapsed'),
    item(`<path d="M-3 2l4 4-4 4" stroke="${colors.retry}" stroke-width="2" fill="none"/>`, 'retry'),
    item(`<path d="M-4 6l3 3 5-6" stroke="${colors.ack}" stroke-width="2" fill="none"/>`, 'ack'),
    item(`<rect x="-3" y="3" width="6" height="6" fill="${colors.dead}"/>`, 'dead'),
    item(`<path d="M-3 10l6-8" stroke="${colors.cancel}" stroke-width="2"/>`, 'cancel'),
    item(`<rect x="-3" y="1" width="2" height="10" fill="${colors.pause}"/><rect x="1" y="1" width="2" height="10" fill="${colors.pause}"/>`, 'queue paused'),
    item(`<path d="M-3 1l7 5-7 5z" fill="${colors.pause}"/>`, 'queue resumed'),
    item(`<circle cx="0" cy="6" r="2.4" fill="${colors.view}"/>`, 'membership view'),
    item(`<path d="M-6 1h12l-6 10z" fill="${colors.fault}"/>`, 'fault'),
    item(`<rect x="-6" y="0" width="12" height="12" fill="#ccc"/>`, 'host down'),
  ].join('')
}

/** The page, as one self-contained HTML string. */
export function renderJobsTimelineHtml(page: JobsTimelinePage): string {
  const at = layout(page.data)
  return renderTimelinePage({ title: page.title, summary: page.summary, violations: page.violations, legend: legend(), labels: labels(page.data, at), plot: plot(page.data, at, new Set(page.highlightJobIds ?? [])) })
}
