/**
 * QueuePages — the queues page (every queue's counts, oldest pending job, deaths per minute of
 * the last hour, paused or running with the button that flips it, and the enqueue form) and a queue's jobs page (one state, newest first, keyset paged, with bulk actions; on
 * the pending tab, the pending jobs by fairness key when the queue has keys).
 *
 * Invariants: counts come capped from DashboardReads and are shown capped ("10,000+" with a
 * title saying it is a lower bound); a page link carries the last id shown as its keyset bound,
 * never an offset; forms post to /actions with the CSRF field and are left out when read-only.
 *
 * Does not: read the store (the handler passes the rows in) or act (Actions.ts does).
 */
import { errorSummary } from '../domain/JobRules.ts'
import type { JobRecord, JobState } from '../persistence/jobs/JobStore.ts'
import type { FairnessBacklog, QueueSummary } from '../persistence/dashboard/DashboardReads.ts'
import { type Html, html } from './Html.ts'
import { countCell, csrfField, duration, instant, link, page, type PageContext } from './Layout.ts'
import { deathsChart } from './ThroughputChart.ts'

/** The three job states, in the order the tabs show them. */
export const jobStates: ReadonlyArray<JobState> = ['pending', 'processing', 'dead']

/** The first line of a job's most telling error: why it died and the handler's last error. */
const errorLine = (job: JobRecord): string => errorSummary(job, 120)

function enqueueForm(context: PageContext, queue: string | null): Html {
  return html`<h2>Enqueue a job</h2>
<form method="post" action="${link(context, '/actions')}" class="enqueue">${csrfField(context)}<input type="hidden" name="action" value="enqueue">
<label>Queue <input name="queue" required value="${queue ?? ''}"></label>
<label>Payload (JSON) <textarea name="payload" rows="4">{}</textarea></label>
<label>Priority (0–9) <input name="priority" type="number" min="0" max="9" value="0"></label>
<label>Delay (seconds) <input name="delaySeconds" type="number" min="0" value="0"></label>
<label>Key (optional) <input name="key"></label>
<p><button>Enqueue</button></p></form>`
}

// Whether a queue runs or is paused, with the button that flips it (not in read-only mode).
function pauseCell(context: PageContext, queue: string, pausedAtMs: number | undefined): Html {
  const state = pausedAtMs === undefined ? html`<span class="muted">running</span>` : html`<span class="paused" title="paused at ${instant(pausedAtMs)}">paused</span>`
  if (context.readOnly) return state
  const action = pausedAtMs === undefined ? 'pause' : 'resume'
  return html`${state} <form class="inline" method="post" action="${link(context, '/actions')}">${csrfField(context)}<input type="hidden" name="queue" value="${queue}"><button name="action" value="${action}">${action === 'pause' ? 'Pause' : 'Resume'}</button></form>`
}

/** The queues page; `paused` maps each paused queue to when it was paused. */
export function queuesPage(context: PageContext, queues: ReadonlyArray<QueueSummary>, indexed: boolean, paused: ReadonlyMap<string, number> = new Map()): Html {
  const rows = queues.map(
    (queue) => html`<tr><td><a href="${link(context, `/queues/${encodeURIComponent(queue.queue)}`)}">${queue.queue}</a></td>
<td class="num"><a href="${link(context, `/queues/${encodeURIComponent(queue.queue)}`, { state: 'pending' })}">${countCell(queue.pending)}</a></td>
<td class="num"><a href="${link(context, `/queues/${encodeURIComponent(queue.queue)}`, { state: 'processing' })}">${countCell(queue.processing)}</a></td>
<td class="num">${countCell(queue.scheduledLater)}</td>
<td class="num"><a href="${link(context, `/queues/${encodeURIComponent(queue.queue)}`, { state: 'dead' })}">${countCell(queue.dead)}</a></td>
<td class="num">${queue.oldestPendingCreatedAtMs === null ? '–' : duration(context.nowMs - queue.oldestPendingCreatedAtMs)}</td>
<td>${deathsChart(queue)}</td><td class="pause">${pauseCell(context, queue.queue, paused.get(queue.queue))}</td></tr>`,
  )
  const table =
    queues.length === 0
      ? html`<p class="muted">No jobs in any queue.</p>`
      : html`<table id="queues"><thead><tr><th>queue</th><th class="num">pending</th><th class="num">processing</th><th class="num">scheduled later</th><th class="num">dead</th><th class="num">oldest pending</th><th>died per minute, last hour</th><th>state</th></tr></thead><tbody>${rows}</tbody></table>
<p class="muted">Counts are exact up to a cap; a count shown with + is a lower bound. The chart counts jobs that died; completed jobs are deleted on ack and leave nothing to count.${indexed ? '' : ' (memory store: counted in process.)'}</p>`
  return page(context, 'Queues', html`${table}${context.readOnly ? '' : enqueueForm(context, null)}`)
}

function stateTabs(context: PageContext, queue: string, state: JobState): Html {
  return html`<p class="tabs">${jobStates.map((each) => html`<a class="${each === state ? 'on' : ''}" href="${link(context, `/queues/${encodeURIComponent(queue)}`, { state: each })}">${each}</a>`)}</p>`
}

function bulkButtons(context: PageContext, state: JobState): Html {
  if (context.readOnly) return html``
  if (state === 'dead') {
    return html`<div class="actions"><button name="action" value="retry">Retry selected</button><button name="action" value="delete" class="danger">Delete selected</button>
<button name="action" value="retry-all-dead">Retry all dead jobs of this queue</button><button name="action" value="delete-all-dead" class="danger">Delete all dead jobs of this queue</button></div>`
  }
  return html`<div class="actions"><button name="action" value="cancel" class="danger">Cancel selected</button></div>`
}

function jobRow(context: PageContext, job: JobRecord): Html {
  const select = context.readOnly ? '' : html`<td><input type="checkbox" name="ids" value="${job.id}" aria-label="select ${job.id}"></td>`
  return html`<tr>${select}<td><a class="job" href="${link(context, `/queues/${encodeURIComponent(job.queue)}/jobs/${encodeURIComponent(job.id)}`)}"><code>${job.id}</code></a></td>
<td>${job.key ?? ''}</td><td class="num">${job.attempts}/${job.maxAttempts}</td><td class="num">${job.priority}</td>
<td>${instant(job.createdAtMs)}</td><td>${instant(job.state === 'dead' ? job.diedAtMs : job.runAtMs)}</td><td>${errorLine(job)}</td></tr>`
}

// The pending jobs by fairness key, when the queue has keyed ones (a queue without keys shows nothing).
function keyBacklogTable(backlog: FairnessBacklog | null): Html {
  if (backlog === null || backlog.keys.every((entry) => entry.key === null)) return html``
  const rows = backlog.keys.map((entry) => html`<tr><td>${entry.key === null ? html`<span class="muted">no key</span>` : entry.key}</td><td class="num">${entry.pending.toLocaleString('en-US')}${backlog.capped ? '+' : ''}</td></tr>`)
  return html`<h2>Pending by fairness key</h2><table id="fairness-keys"><thead><tr><th>fairness key</th><th class="num">pending</th></tr></thead><tbody>${rows}</tbody></table>
${backlog.capped ? html`<p class="muted">Counted over the oldest pending jobs up to a cap: each count is a lower bound.</p>` : ''}`
}

/**
 * A queue's jobs in one state, newest first; `nextBefore` is the keyset bound of the next page;
 * `backlog` (the pending tab) the queue's pending jobs by fairness key.
 */
export function jobsPage(context: PageContext, queue: string, state: JobState, jobs: ReadonlyArray<JobRecord>, nextBefore: string | null, paged: boolean, backlog: FairnessBacklog | null = null): Html {
  const head = html`<tr>${context.readOnly ? '' : html`<th></th>`}<th>id</th><th>key</th><th class="num">attempts</th><th class="num">priority</th><th>created</th><th>${state === 'dead' ? 'died' : 'run at'}</th><th>error</th></tr>`
  const table =
    jobs.length === 0
      ? html`<p class="muted">No ${state} jobs${paged ? ' on this page' : ''}.</p>`
      : html`<table id="jobs"><thead>${head}</thead><tbody>${jobs.map((job) => jobRow(context, job))}</tbody></table>`
  const pager = html`<p>${paged ? html`<a href="${link(context, `/queues/${encodeURIComponent(queue)}`, { state })}">newest</a> · ` : ''}${nextBefore === null ? html`<span class="muted">end</span>` : html`<a rel="next" href="${link(context, `/queues/${encodeURIComponent(queue)}`, { state, before: nextBefore })}">older →</a>`}</p>`
  const body = context.readOnly
    ? html`${stateTabs(context, queue, state)}${keyBacklogTable(backlog)}${table}${pager}`
    : html`${stateTabs(context, queue, state)}${keyBacklogTable(backlog)}<form method="post" action="${link(context, '/actions')}">${csrfField(context)}<input type="hidden" name="queue" value="${queue}">${bulkButtons(context, state)}${table}</form>${pager}`
  return page(context, `${queue} · ${state}`, body)
}
