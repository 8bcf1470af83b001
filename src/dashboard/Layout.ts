/**
 * Layout — the frame every dashboard page shares: the document shell with its navigation and
 * search box, links under the mount path, the stylesheet, and the formatting of times, ages and
 * capped counts.
 *
 * Invariants: every link is built by `link` under the configured base path, with each query
 * value URL-encoded (and then HTML-escaped like any text); pages load no script at all (the
 * Content-Security-Policy the handler sends forbids it), only the stylesheet below.
 *
 * Does not: read the store or decide status codes (the handler does).
 */
import type { CappedCount } from '../persistence/dashboard/DashboardReads.ts'
import { type Html, html } from './Html.ts'

/** What every page needs to know about the request it answers. */
export interface PageContext {
  /** The mount path without a trailing slash ('' at the root). */
  readonly basePath: string
  readonly readOnly: boolean
  /** The token every form posts back. */
  readonly csrfToken: string
  /** The engine's now, in ms. */
  readonly nowMs: number
}

/** A URL under the dashboard: `path` (starting with '/') plus the query values that are set. */
export function link(context: PageContext, path: string, query: Record<string, string | null | undefined> = {}): string {
  const search = Object.entries(query)
    .filter((entry): entry is [string, string] => entry[1] !== null && entry[1] !== undefined && entry[1] !== '')
    .map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`)
    .join('&')
  return `${context.basePath}${path}${search === '' ? '' : `?${search}`}`
}

/** An ISO-8601 instant, or a dash. */
export function instant(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '–' : new Date(ms).toISOString().replace('T', ' ').replace('Z', ' UTC')
}

/** A duration in the largest two units: `3 h 12 m`, `45 s`, `120 ms`. */
export function duration(ms: number): string {
  const abs = Math.abs(ms)
  if (abs < 1_000) return `${Math.round(ms)} ms`
  const units: Array<[string, number]> = [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1_000]]
  const parts: string[] = []
  let rest = abs
  for (const [unit, size] of units) {
    if (rest >= size || parts.length > 0) {
      parts.push(`${Math.floor(rest / size)} ${unit}`)
      rest %= size
    }
    if (parts.length === 2) break
  }
  return `${ms < 0 ? '-' : ''}${parts.join(' ')}`
}

/** A capped count: exact, or `10,000+` labelled as a lower bound. */
export function countCell(count: CappedCount): Html {
  const text = count.count.toLocaleString('en-US')
  return count.capped ? html`<span class="capped" title="at least ${text}: counting stops there">${text}+</span>` : html`${text}`
}

/** The hidden CSRF field of every form. */
export function csrfField(context: PageContext): Html {
  return html`<input type="hidden" name="csrf" value="${context.csrfToken}">`
}

/** A whole page: navigation, `title`, `body`. */
export function page(context: PageContext, title: string, body: Html): Html {
  const nav = [
    ['/', 'Queues'],
    ['/schedules', 'Schedules'],
    ['/engines', 'Engines'],
    ['/simulator', 'Simulator'],
  ] as const
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Matchbox</title><link rel="stylesheet" href="${link(context, '/assets/dashboard.css')}"></head>
<body><header><a class="brand" href="${link(context, '/')}">Matchbox</a><nav>${nav.map(([path, label]) => html`<a href="${link(context, path)}">${label}</a>`)}</nav>
<form class="search" method="get" action="${link(context, '/search')}"><input name="q" placeholder="job id, or key with a queue" aria-label="search"><input name="queue" placeholder="queue" aria-label="queue"><button>Find</button></form>
${context.readOnly ? html`<span class="badge">read-only</span>` : ''}</header>
<main><h1>${title}</h1>${body}</main></body></html>`
}

/** The dashboard's stylesheet (served at /assets/dashboard.css). */
export const stylesheet = `
:root { font: 14px/1.45 system-ui, sans-serif; color: #1d2430; background: #f6f7f9; }
body { margin: 0; }
header { display: flex; gap: 1.2em; align-items: center; padding: .6em 1.2em; background: #1d2430; color: #fff; flex-wrap: wrap; }
header a { color: #cfd8e3; text-decoration: none; } header a:hover { color: #fff; }
.brand { font-weight: 700; color: #ffb347 !important; } nav { display: flex; gap: 1em; }
.search { margin-left: auto; display: flex; gap: .3em; } .search input { width: 13em; }
main { padding: 1em 1.2em 3em; max-width: 1200px; }
h1 { font-size: 1.35em; margin: .3em 0 .8em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; background: #fff; width: 100%; box-shadow: 0 1px 2px #0001; }
th, td { text-align: left; padding: .4em .7em; border-bottom: 1px solid #e6e9ee; vertical-align: top; }
th { background: #eef1f5; font-weight: 600; font-size: .9em; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font-family: ui-monospace, monospace; font-size: .92em; }
pre { background: #fff; border: 1px solid #e6e9ee; padding: .7em; overflow: auto; max-height: 28em; white-space: pre-wrap; word-break: break-word; }
.state { padding: .05em .5em; border-radius: 1em; font-size: .85em; background: #e6e9ee; }
.state-dead { background: #fbd5d5; } .state-processing { background: #fdeec7; } .state-pending { background: #d7ecfb; }
.paused { background: #fdeec7; color: #7a4b00; border-radius: 1em; padding: .05em .5em; font-size: .85em; font-weight: 600; }
.capped { border-bottom: 1px dotted; cursor: help; } .muted { color: #6b7685; } .stale { color: #b42318; font-weight: 600; }
.badge { background: #ffb347; color: #1d2430; border-radius: .3em; padding: .1em .5em; font-size: .85em; }
.tabs a { margin-right: 1em; } .tabs a.on { font-weight: 700; text-decoration: none; color: inherit; }
.actions { display: flex; gap: .5em; margin: .8em 0; flex-wrap: wrap; } form.inline { display: inline; }
button { cursor: pointer; } .danger { color: #b42318; }
.notice { background: #fff; border-left: 4px solid #2f8f46; padding: .6em 1em; margin: .5em 0 1em; }
.error { background: #fff; border-left: 4px solid #b42318; padding: .6em 1em; margin: .5em 0 1em; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .25em 1.2em; background: #fff; padding: .8em 1em; margin: 0; }
dt { color: #6b7685; } dd { margin: 0; }
label { display: block; margin: .5em 0 .2em; } textarea { width: 100%; font-family: ui-monospace, monospace; }
pre.attempt-error { margin: 0; padding: .3em .5em; max-height: 8em; } details summary { cursor: pointer; color: #6b7685; font-size: .9em; }
.event { font-size: .8em; padding: .05em .45em; border-radius: .3em; background: #eef1f5; color: #4a5565; margin-right: .3em; }
.event-claimed { background: #d7ecfb; } .event-retried, .event-earlier { background: #fdeec7; } .event-failed, .event-lapsed, .event-died { background: #fbd5d5; }
#timeline pre.attempt-error { margin-top: .3em; }
iframe { width: 100%; height: 720px; border: 1px solid #e6e9ee; background: #fff; }
`
