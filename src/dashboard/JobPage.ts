/**
 * JobPage — one job in full: state, options, attempts, timestamps, its progress, the timeline of
 * its life (JobTimeline.ts), its payload as indented JSON, why it died and the handler's last error with its stack, the error of each of
 * its latest attempts (each stack folded in a `<details>`, which needs no script), and the actions
 * that apply to its state (retry a dead job; cancel a live one; delete either).
 *
 * Invariants: every value is rendered through `html` (escaped); the payload is re-serialized
 * from the decoded JSON, so what is shown is what a handler would receive.
 *
 * Does not: read the store or act.
 */
import type { JobRecord } from '../persistence/jobs/JobStore.ts'
import { type Html, html } from './Html.ts'
import { timelineSection } from './JobTimeline.ts'
import { csrfField, duration, instant, link, page, type PageContext } from './Layout.ts'

function actionButton(context: PageContext, job: JobRecord, action: string, label: string, danger = false): Html {
  return html`<form class="inline" method="post" action="${link(context, '/actions')}">${csrfField(context)}<input type="hidden" name="queue" value="${job.queue}"><input type="hidden" name="ids" value="${job.id}"><button name="action" value="${action}" class="${danger ? 'danger' : ''}">${label}</button></form>`
}

function actions(context: PageContext, job: JobRecord): Html {
  if (context.readOnly) return html``
  const buttons = job.state === 'dead' ? [actionButton(context, job, 'retry', 'Retry'), actionButton(context, job, 'delete', 'Delete', true)] : [actionButton(context, job, 'cancel', 'Cancel', true)]
  return html`<div class="actions">${buttons}</div>`
}

function errors(job: JobRecord): Html {
  const died = job.lastError === null ? '' : html`<h2>Died</h2><p id="died">${job.lastError} <span class="muted">at ${instant(job.diedAtMs)}</span></p>`
  const handler =
    job.lastHandlerError === null
      ? ''
      : html`<h2>Last handler error</h2><pre id="handler-error">${job.lastHandlerError}</pre>${job.lastHandlerStack === null ? '' : html`<h2>Stack</h2><pre id="handler-stack">${job.lastHandlerStack}</pre>`}`
  return html`${died}${handler}`
}

function attemptHistory(job: JobRecord): Html {
  if (job.attemptErrors.length === 0) return html``
  const rows = job.attemptErrors.map(
    (entry) => html`<tr><td class="num">${entry.attempt}</td><td>${instant(entry.atMs)}</td><td><pre class="attempt-error">${entry.error}</pre>${entry.stack === null ? '' : html`<details><summary>stack</summary><pre>${entry.stack}</pre></details>`}</td></tr>`,
  )
  return html`<h2>Attempts</h2><table id="attempts"><thead><tr><th class="num">attempt</th><th>at</th><th>error</th></tr></thead><tbody>${rows}</tbody></table>
<p class="muted">The errors of its latest attempts that recorded one, oldest first; an attempt whose claim lapsed recorded none.</p>`
}

/** The job page. */
export function jobPage(context: PageContext, job: JobRecord): Html {
  const deadline = job.deadlineMs === null ? '–' : `${instant(job.deadlineMs)} (${duration(job.deadlineMs - context.nowMs)} from now)`
  const facts = html`<dl>
<dt>state</dt><dd><span class="state state-${job.state}" id="state">${job.state}</span></dd>
<dt>queue</dt><dd><a href="${link(context, `/queues/${encodeURIComponent(job.queue)}`, { state: job.state })}">${job.queue}</a></dd>
<dt>key</dt><dd>${job.key ?? '–'}</dd>
<dt>attempts</dt><dd>${job.attempts} of ${job.maxAttempts}</dd>
<dt>priority</dt><dd>${job.priority}</dd>
<dt>visibility timeout</dt><dd>${duration(job.visibilityTimeoutMs)}</dd>
<dt>backoff base</dt><dd>${duration(job.backoffBaseMs)}</dd>
<dt>dead-letter retention</dt><dd>${job.deadLetterRetentionMs === null ? 'forever' : duration(job.deadLetterRetentionMs)}</dd>
<dt>created</dt><dd>${instant(job.createdAtMs)}</dd>
<dt>run at</dt><dd>${instant(job.runAtMs)}</dd>
<dt>last claimed</dt><dd>${instant(job.claimedAtMs)}</dd>
<dt>claim deadline</dt><dd>${deadline}</dd>
<dt>expires</dt><dd>${instant(job.expiresAtMs)}</dd>
</dl>`
  const progress = job.progress === null ? '' : html`<h2>Progress</h2><pre id="progress">${JSON.stringify(job.progress, null, 2)}</pre>`
  const body = html`${actions(context, job)}${facts}${progress}${timelineSection(job, context.nowMs)}<h2>Payload</h2><pre id="payload">${JSON.stringify(job.payload, null, 2)}</pre>${errors(job)}${attemptHistory(job)}`
  return page(context, `Job ${job.id}`, body)
}
