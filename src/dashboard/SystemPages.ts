/**
 * SystemPages — the pages that are not about one queue: schedules (spec, zone, last and next
 * firing), engines (each engine's heartbeat and the physical queues it owns with their range
 * ids), the simulator (open a failure file, see its timeline and the replay command), what an
 * action did, and the error page.
 *
 * Invariants: an engine whose membership row has expired is shown as stopped, and owns nothing
 * (ownership is rendezvous hashing over the live engines, as the engines compute it themselves);
 * the simulator's timeline is shown in a sandboxed frame served from its own URL.
 *
 * Does not: read the store, run the simulator or act.
 */
import { ownerOf } from '../domain/Rendezvous.ts'
import type { TaskType } from '../domain/QueueKey.ts'
import type { EngineRow, PhysicalQueueRow } from '../persistence/dashboard/DashboardReads.ts'
import type { ScheduleInfo } from '../jobs/Schedules.ts'
import { type Html, html } from './Html.ts'
import { csrfField, duration, instant, link, page, type PageContext } from './Layout.ts'

/** The schedules page. */
export function schedulesPage(context: PageContext, schedules: ReadonlyArray<ScheduleInfo>): Html {
  const rows = schedules.map(
    (schedule) => html`<tr><td>${schedule.name}</td><td><code>${schedule.spec}</code></td><td>${schedule.timezone ?? 'UTC'}</td>
<td><a href="${link(context, `/queues/${encodeURIComponent(schedule.queue)}`)}">${schedule.queue}</a></td><td>${instant(schedule.lastFiredAt)}</td><td>${instant(schedule.nextRunAt)}</td><td><code>${JSON.stringify(schedule.payload)}</code></td></tr>`,
  )
  const body =
    schedules.length === 0
      ? html`<p class="muted">No schedules registered.</p>`
      : html`<table id="schedules"><thead><tr><th>name</th><th>spec</th><th>time zone</th><th>queue</th><th>last firing</th><th>next firing</th><th>payload</th></tr></thead><tbody>${rows}</tbody></table>`
  return page(context, 'Schedules', body)
}

/** What the engines page shows. */
export interface EnginesView {
  /** This dashboard's own engine. */
  readonly selfHostId: string
  /** Membership rows; empty when the engine is alone on its store. */
  readonly hosts: ReadonlyArray<EngineRow>
  readonly physicalQueues: ReadonlyArray<PhysicalQueueRow>
}

/** The owner of each physical queue: rendezvous over the live engines, or this engine when alone. */
export function ownersOf(view: EnginesView, nowMs: number): Map<string, string | null> {
  const live = view.hosts.filter((host) => host.expiresAtMs > nowMs).map((host) => host.hostId)
  const alone = view.hosts.length === 0
  return new Map(
    view.physicalQueues.map((queue) => [
      queue.queueKey,
      alone ? view.selfHostId : ownerOf({ namespace: queue.namespace, family: queue.family, type: queue.taskType as TaskType, partition: queue.partition }, live),
    ]),
  )
}

/** The engines page. */
export function enginesPage(context: PageContext, view: EnginesView): Html {
  const owners = ownersOf(view, context.nowMs)
  const owned = (hostId: string) => view.physicalQueues.filter((queue) => owners.get(queue.queueKey) === hostId)
  const hostRows = (view.hosts.length === 0 ? [{ hostId: view.selfHostId, lastSeenMs: null, expiresAtMs: null }] : view.hosts).map((host) => {
    const live = host.expiresAtMs === null || host.expiresAtMs > context.nowMs
    const partitions = owned(host.hostId).map((queue) => html`<code>${queue.family}/${queue.partition}</code> <span class="muted">range ${queue.rangeId}</span>`)
    return html`<tr><td><code>${host.hostId}</code>${host.hostId === view.selfHostId ? html` <span class="muted">(this dashboard)</span>` : ''}</td>
<td>${live ? 'live' : html`<span class="stale">stopped heartbeating</span>`}</td>
<td>${host.lastSeenMs === null ? 'alone on its store' : html`${instant(host.lastSeenMs)} <span class="muted">(${duration(context.nowMs - host.lastSeenMs)} ago)</span>`}</td>
<td>${partitions.length === 0 ? html`<span class="muted">none</span>` : partitions.map((part, index) => html`${index === 0 ? '' : html`<br>`}${part}`)}</td></tr>`
  })
  const queueRows = view.physicalQueues.map(
    (queue) => html`<tr><td>${queue.namespace}</td><td>${queue.family}</td><td>${queue.taskType}</td><td class="num">${queue.partition}</td><td>${queue.version ?? 'default'}</td>
<td class="num">${queue.rangeId}</td><td class="num">${queue.lastTaskId}</td><td><code>${owners.get(queue.queueKey) ?? '–'}</code></td><td>${instant(queue.updatedAtMs)}</td></tr>`,
  )
  return page(
    context,
    'Engines',
    html`<table id="engines"><thead><tr><th>engine</th><th>status</th><th>last heartbeat</th><th>partitions owned</th></tr></thead><tbody>${hostRows}</tbody></table>
<h2>Physical queues</h2>${view.physicalQueues.length === 0 ? html`<p class="muted">No physical queue has been loaded yet.</p>` : html`<table id="physical-queues"><thead><tr><th>namespace</th><th>family</th><th>type</th><th class="num">partition</th><th>version</th><th class="num">range id</th><th class="num">last task id</th><th>owner</th><th>updated</th></tr></thead><tbody>${queueRows}</tbody></table>`}
<p class="muted">An owner is the live engine that rendezvous hashing picks, as the engines pick it; the range id is the fence of the owner's writes.</p>`,
  )
}

/** A simulator failure file, replayed. */
export interface SimulatorReplay {
  readonly seed: number
  readonly store: string
  /** True when the case passes now. */
  readonly ok: boolean
  readonly violations: ReadonlyArray<string>
  /** The command that replays it from a shell. */
  readonly replayCommand: string
  /** The timeline page (a whole HTML document). */
  readonly timelineHtml: string
}

/** The simulator page: a form to open a failure file, and the replay shown beneath when there is one. */
export function simulatorPage(context: PageContext, available: boolean, replay: { readonly id: string; readonly result: SimulatorReplay } | null): Html {
  if (!available) return page(context, 'Simulator', html`<p class="muted">This dashboard was mounted without the simulator; run <code>npx matchbox dashboard</code> to open failure files.</p>`)
  const form = html`<form method="post" action="${link(context, '/simulator')}">${csrfField(context)}<label>Contents of a <code>sim-failure-&lt;seed&gt;.json</code> file</label><textarea name="failure" rows="8" required></textarea><p><button>Replay and show the timeline</button></p></form>`
  if (replay === null) return page(context, 'Simulator', form)
  const { result } = replay
  return page(
    context,
    `Simulator · seed ${result.seed}`,
    html`<p>Seed <b>${result.seed}</b> on the ${result.store} store: <b id="sim-verdict">${result.ok ? 'passes now' : 'still fails'}</b>.</p>
${result.violations.length === 0 ? '' : html`<ul>${result.violations.map((violation) => html`<li>${violation}</li>`)}</ul>`}
<p>Replay it: <code id="replay-command">${result.replayCommand}</code></p>
<iframe title="timeline" sandbox="allow-scripts" src="${link(context, `/simulator/${replay.id}/timeline`)}"></iframe>${form}`,
  )
}

/** What an action did. */
export interface ActionReport {
  readonly title: string
  readonly lines: ReadonlyArray<string>
  readonly backPath: string
}

/** The page an action answers with. */
export function actionPage(context: PageContext, report: ActionReport): Html {
  return page(context, report.title, html`<div class="notice" id="action-result">${report.lines.map((line) => html`<p>${line}</p>`)}</div><p><a href="${link(context, report.backPath)}">back</a></p>`)
}

/** The page of a request the dashboard refuses or cannot answer. */
export function errorPage(context: PageContext, title: string, tag: string, message: string): Html {
  return page(context, title, html`<div class="error" id="error"><p><b>${tag}</b>: ${message}</p></div><p><a href="${link(context, '/')}">queues</a></p>`)
}
