/**
 * ThroughputChart — the queues page's small chart of a queue's deaths per minute over the last
 * hour, as inline SVG drawn on the server: one bar per minute, oldest on the left, scaled to the
 * busiest minute, with a text title that says the totals (what a screen reader reads).
 *
 * Why deaths only: the store keeps a dead job with its time of death, but an acked job is
 * deleted and leaves nothing behind, so completions per minute cannot be read from it.
 *
 * Invariants: no script and no style attribute (the page's Content-Security-Policy allows
 * neither), only SVG presentation attributes; every number comes from the summary, escaped by
 * `html` like any value.
 *
 * Does not: read the store.
 */
import type { QueueSummary } from '../persistence/dashboard/DashboardReads.ts'
import { type Html, html } from './Html.ts'

const widthPx = 180
const heightPx = 28

/** The deaths chart of one queue. */
export function deathsChart(queue: QueueSummary): Html {
  const minutes = queue.diedPerMinute
  const total = minutes.reduce((sum, count) => sum + count, 0)
  const peak = Math.max(1, ...minutes)
  const barPx = widthPx / Math.max(1, minutes.length)
  const bars = minutes.map((count, minute) => {
    if (count === 0) return html``
    const h = Math.max(1, Math.round((count / peak) * (heightPx - 2)))
    const x = widthPx - (minute + 1) * barPx
    return html`<rect x="${x.toFixed(1)}" y="${heightPx - h}" width="${Math.max(1, barPx - 0.6).toFixed(1)}" height="${h}"><title>${count} died ${minute === 0 ? 'in the last minute' : `${minute}–${minute + 1} min ago`}</title></rect>`
  })
  const title = `${total}${queue.diedCapped ? '+' : ''} died in the last hour, at most ${Math.max(...minutes, 0)} in one minute`
  return html`<svg class="chart" role="img" aria-label="${title}" width="${widthPx}" height="${heightPx}" viewBox="0 0 ${widthPx} ${heightPx}"><title>${title}</title><line x1="0" y1="${heightPx - 0.5}" x2="${widthPx}" y2="${heightPx - 0.5}" stroke="#c9ced6"/><g fill="#d64545">${bars}</g></svg>`
}
