/**
 * JobTimeline — the end-to-end (Jobs) workload's timeline: each job's life. The recorder
 * listens to one run (the JobStore boundary and the world's events) and keeps each job's life
 * from its enqueue to its end (acked, cancelled or dead), with every delivery (History's claim
 * call, whatever it answered), the claims it granted and until when each was valid,
 * heartbeats, claims that lapsed (the job was claimed again after a deadline passed unacked),
 * retries and deaths; beside them each host's membership views, when it was down, and every
 * fault; and each run of a `work` handler (which claim it was given, on which host, from its
 * start to its return), so a claim that never reached a handler, a handler that outlived its
 * claim or a stop that left a claim behind shows.
 *
 * The page draws it top to bottom: one lane per host (when it was down, its membership views,
 * the faults that struck it, the job calls it made), a lane for faults that strike the world
 * (clock jumps), then one row per job: a line from its enqueue to its end, each claim as a bar
 * in the claiming host's colour, each handler run as an outline in its host's colour (a claim
 * bar with no outline is a claim no handler was given), and marks for deliveries that claimed
 * nothing, heartbeats, lapses (red), retries, deaths, acks and cancels; the rows of jobs a
 * violation names are ringed in red. A dashed line marks the heal between the safety phase and
 * the final phase. Long runs enqueue many jobs; the page draws the first `jobRowsMax` of them
 * (by enqueue) and says how many it left out, so it stays a page a browser opens.
 *
 * The axis, the marks' order, down spans and the heal are core/TimelineRecorder.ts; the page
 * around the drawing, the lanes and the axis are core/TimelinePage.ts.
 *
 * Does not: judge (JobCheckers.ts), read files, clocks or the network.
 */
import { escape, hostLaneTop, labelsSvg, legendItem as item, type PageLayout, pageLayout, plotSvg, renderTimelinePage, spanBox, type TimelinePageText, title, worldLaneHeight } from '../core/TimelinePage.ts'
import { type TimelineFrame, type TimelineMarkBase, TimelineRecorder } from '../core/TimelineRecorder.ts'
import { epochMs } from '../core/Turns.ts'
import type { JobBoundaryRecord } from './JobBoundary.ts'
import type { JobsWorldEvent } from './JobsWorld.ts'

/** What a mark on a jobs timeline stands for. */
export type JobsMarkKind = 'enqueue' | 'delivery' | 'claim' | 'heartbeat' | 'lapse' | 'retry' | 'ack' | 'fail' | 'dead' | 'cancel' | 'sweep' | 'pause' | 'fault' | 'view'

/** One mark: a committed job call, a lapse the recorder inferred, a fault or a view. */
export interface JobsMark extends TimelineMarkBase<JobsMarkKind> {
  readonly jobId?: string
}

/** One claim of a job: held by `hostId` from `fromOrder` until it ended (acked, retried, failed, lapsed). */
export interface JobsClaimSpan {
  readonly jobId: string
  readonly hostId: string
  readonly claimToken: string
  readonly fromOrder: number
  toOrder: number
  /** Virtual ms the claim was valid until (the last heartbeat's extension included). */
  deadlineMs: number
}

/** One run of a `work` handler on a job: from its start to its return (or the end of the run). */
export interface JobsHandlerSpan {
  readonly jobId: string
  readonly hostId: string
  readonly claimToken: string
  readonly fromOrder: number
  toOrder: number
  /** Virtual ms of the start and the return (null: still running when the run ended). */
  readonly startedMs: number
  endedMs: number | null
}

/** One job's row: from its enqueue to its end (or the end of the run). */
export interface JobsLife {
  readonly id: string
  readonly queue: string
  readonly fromOrder: number
  toOrder: number
  end: 'acked' | 'cancelled' | 'dead' | 'open'
}

/** Everything one jobs timeline draws. */
export interface JobsTimelineData extends TimelineFrame<JobsMark> {
  readonly jobs: ReadonlyArray<JobsLife>
  readonly claims: ReadonlyArray<JobsClaimSpan>
  readonly handlers: ReadonlyArray<JobsHandlerSpan>
}

/** Collects one run; pass `onJobs` and `onEvent` to `runJobsSeed`, then call `data()`. */
export class JobsTimelineRecorder {
  readonly #log: TimelineRecorder<JobsMark>
  readonly #jobs = new Map<string, JobsLife>()
  readonly #claims: JobsClaimSpan[] = []
  // The claim each job holds now, by job id.
  readonly #held = new Map<string, JobsClaimSpan>()
  readonly #handlers: JobsHandlerSpan[] = []
  // The handler runs still going, by `host/job/claim token`.
  readonly #running = new Map<string, JobsHandlerSpan>()

  /** @param hosts the run's host ids, in lane order. */
  constructor(hosts: ReadonlyArray<string>) {
    this.#log = new TimelineRecorder(hosts)
  }

  /** The JobStore boundary listener for `runJobsSeed({ onJobs })`. */
  readonly onJobs = (record: JobBoundaryRecord, nowMs: number): void => {
    if (record.op === 'getJob' || record.op === 'reserve' || record.op === 'confirm' || record.op === 'unreserve') return
    const { order, at } = this.#log.tick(nowMs)
    const host = record.hostId
    switch (record.op) {
      case 'enqueue':
        return this.#enqueued(record, order, at)
      case 'claim':
        return this.#claimed(record, order, at)
      case 'heartbeat': {
        const span = this.#held.get(record.id)
        if (record.renewed !== null && span !== undefined && span.claimToken === record.claimToken) span.deadlineMs = (record.renewed.deadlineMs ?? record.nowMs) - epochMs
        this.#mark({ order, nowMs: at, kind: 'heartbeat', hostId: host, jobId: record.id, detail: `${host} heartbeat on ${record.id}: ${record.renewed === null ? 'refused' : `valid until @${span?.deadlineMs ?? '?'} ms`}` })
        return
      }
      case 'ack':
        if (record.ok) this.#end(record.id, record.claimToken, order, 'acked')
        this.#mark({ order, nowMs: at, kind: 'ack', hostId: host, jobId: record.id, tag: record.ok ? 'ok' : 'refused', detail: `${host} acked ${record.id}: ${record.ok ? 'ok' : 'refused (claim no longer valid)'}` })
        return
      case 'ackBatch':
        for (const id of record.ackedIds) {
          const claim = record.claims.find((candidate) => candidate.id === id)
          this.#end(id, claim?.claimToken, order, 'acked')
          this.#mark({ order, nowMs: at, kind: 'ack', hostId: host, jobId: id, tag: 'ok', detail: `${host} acked ${id} in a batch of ${record.claims.length}` })
        }
        return
      case 'retry': {
        const dead = record.outcome?.kind === 'dead'
        if (record.outcome !== null) this.#end(record.id, record.claimToken, order, dead ? 'dead' : 'open')
        const said = record.outcome === null ? 'refused' : record.outcome.kind === 'dead' ? 'dead (attempts spent)' : `retry at @${record.outcome.runAtMs - epochMs} ms`
        this.#mark({ order, nowMs: at, kind: dead ? 'dead' : 'retry', hostId: host, jobId: record.id, detail: `${host} retried ${record.id}: ${said}` })
        return
      }
      case 'fail':
        if (record.ok) this.#end(record.id, record.claimToken, order, 'dead')
        this.#mark({ order, nowMs: at, kind: record.ok ? 'dead' : 'fail', hostId: host, jobId: record.id, detail: `${host} failed ${record.id}: ${record.ok ? 'dead' : 'refused'}` })
        return
      case 'release':
        for (const id of record.releasedIds) {
          this.#end(id, record.claims.find((claim) => claim.id === id)?.claimToken, order, 'open')
          this.#mark({ order, nowMs: at, kind: 'retry', hostId: host, jobId: id, tag: 'released', detail: `${host} released its claim on ${id}: back in line, due now, the attempt given back` })
        }
        return
      case 'cancel':
        if (record.ok) this.#end(record.id, undefined, order, 'cancelled')
        this.#mark({ order, nowMs: at, kind: 'cancel', hostId: host, jobId: record.id, detail: `${host} cancelled ${record.id}: ${record.ok ? 'ok' : 'too late'}` })
        return
      case 'sweep':
        this.#mark({ order, nowMs: at, kind: 'sweep', hostId: host, detail: `${host} swept ${record.queue}: ${record.dead} dead, ${record.purged} purged` })
        return
      case 'pause':
      case 'resume':
        this.#mark({ order, nowMs: at, kind: 'pause', hostId: host, tag: record.op, detail: `${host} ${record.op === 'pause' ? 'paused' : 'resumed'} ${record.queue}${record.changed ? '' : ` (it was ${record.op === 'pause' ? 'paused' : 'running'} already)`}` })
        return
    }
  }

  /** The world-event listener for `runJobsSeed({ onEvent })`. */
  readonly onEvent = (event: JobsWorldEvent, nowMs: number): void => {
    const { order, at } = this.#log.tick(nowMs)
    if (this.#log.shared(event, order, at)) return
    if (event.kind === 'handler') {
      const key = `${event.hostId}/${event.jobId}/${event.claimToken}`
      if (event.started) {
        const span: JobsHandlerSpan = { jobId: event.jobId, hostId: event.hostId, claimToken: event.claimToken, fromOrder: order, toOrder: order + 1, startedMs: at, endedMs: null }
        this.#handlers.push(span)
        this.#running.set(key, span)
        return
      }
      const span = this.#running.get(key)
      this.#running.delete(key)
      if (span === undefined) return
      span.toOrder = order
      span.endedMs = at
      return
    }
    if (event.kind === 'view') this.#mark({ order, nowMs: at, kind: 'view', hostId: event.hostId, detail: `${event.hostId} sees workers [${event.hosts.join(', ')}]` })
  }

  /** What was recorded; spans still open end at the last record. */
  data(): JobsTimelineData {
    const frame = this.#log.frame()
    const { orderEnd } = frame
    for (const life of this.#jobs.values()) if (life.end === 'open') life.toOrder = Math.max(life.toOrder, orderEnd)
    for (const span of this.#held.values()) span.toOrder = Math.max(span.toOrder, orderEnd)
    for (const span of this.#running.values()) span.toOrder = Math.max(span.toOrder, orderEnd)
    return { ...frame, jobs: [...this.#jobs.values()], claims: this.#claims, handlers: this.#handlers }
  }

  // An enqueue starts a job's life; an eager dispatch inserts it already claimed.
  #enqueued(record: Extract<JobBoundaryRecord, { op: 'enqueue' }>, order: number, at: number): void {
    const host = record.hostId
    const { job } = record
    if (!this.#jobs.has(job.id)) this.#jobs.set(job.id, { id: job.id, queue: job.queue, fromOrder: order, toOrder: order + 1, end: 'open' })
    this.#mark({ order, nowMs: at, kind: 'enqueue', hostId: host, jobId: job.id, detail: `${host} enqueued ${job.id} on ${job.queue} (priority ${job.priority})` })
    if (job.state === 'processing' && job.claimToken !== null) {
      // Eager dispatch: inserted already claimed for a worker of the same engine.
      const deadlineMs = (job.deadlineMs ?? record.nowMs) - epochMs
      const span: JobsClaimSpan = { jobId: job.id, hostId: host, claimToken: job.claimToken, fromOrder: order, toOrder: order + 1, deadlineMs }
      this.#claims.push(span)
      this.#held.set(job.id, span)
      this.#mark({ order, nowMs: at, kind: 'claim', hostId: host, jobId: job.id, detail: `${host} claimed ${job.id} at enqueue for a waiting worker (attempt 1), valid until @${deadlineMs} ms` })
    }
  }

  // A delivery: it claimed the job (ending an earlier claim that lapsed) or claimed nothing.
  #claimed(record: Extract<JobBoundaryRecord, { op: 'claim' }>, order: number, at: number): void {
    const host = record.hostId
    const { outcome } = record
    if (outcome.kind !== 'claimed') {
      const why = outcome.kind === 'obsolete' ? `obsolete (${outcome.reason})` : outcome.kind
      this.#mark({ order, nowMs: at, kind: 'delivery', hostId: host, jobId: record.id, tag: outcome.kind, detail: `${host} was delivered ${record.id}: ${why}` })
      return
    }
    const earlier = this.#held.get(record.id)
    if (earlier !== undefined) {
      earlier.toOrder = order
      this.#mark({ order, nowMs: at, kind: 'lapse', hostId: earlier.hostId, jobId: record.id, detail: `${earlier.hostId}'s claim on ${record.id} lapsed (valid until @${earlier.deadlineMs} ms); ${host} claims it again` })
    }
    const deadlineMs = (outcome.job.deadlineMs ?? record.nowMs) - epochMs
    const span: JobsClaimSpan = { jobId: record.id, hostId: host, claimToken: record.claimToken, fromOrder: order, toOrder: order + 1, deadlineMs }
    this.#claims.push(span)
    this.#held.set(record.id, span)
    this.#mark({ order, nowMs: at, kind: 'claim', hostId: host, jobId: record.id, detail: `${host} claimed ${record.id} (attempt ${outcome.job.attempts}), valid until @${deadlineMs} ms` })
  }

  #mark(mark: JobsMark): void {
    this.#log.mark(mark)
  }

  // A claim ended (ack, retry, fail) or the job did (cancel, dead); a stale token ends nothing.
  #end(jobId: string, claimToken: string | undefined, order: number, end: JobsLife['end']): void {
    const span = this.#held.get(jobId)
    if (span !== undefined && (claimToken === undefined || span.claimToken === claimToken)) {
      span.toOrder = order
      this.#held.delete(jobId)
    }
    const life = this.#jobs.get(jobId)
    if (life === undefined || end === 'open') return
    life.end = end
    life.toOrder = order + 1
  }
}

// Rows past this many jobs are left out: a browser still opens the page of a long run.
const jobRowsMax = 400
const jobRowHeight = 14
const colors = { enqueue: '#1f4e79', delivery: '#8c8c8c', heartbeat: '#555', lapse: '#d62728', retry: '#ff7f0e', ack: '#2ca02c', fail: '#7b3294', dead: '#000', cancel: '#8c8c8c', sweep: '#7b3294', pause: '#e377c2', fault: '#d62728', view: '#17becf' }

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

// Every job's line, its claims and handler runs, the rings of the jobs a violation names, then
// every mark in its host's lane (or the world lane) and again on its job's row.
function rows(data: JobsTimelineData, at: PageLayout, highlight: ReadonlySet<string>): string[] {
  const parts: string[] = []
  for (const life of data.jobs) {
    const y = at.rowY.get(life.id)
    if (y === undefined) continue
    const x = at.x(life.fromOrder)
    parts.push(`<line x1="${x}" x2="${Math.max(x + 1, at.x(life.toOrder))}" y1="${y + jobRowHeight / 2}" y2="${y + jobRowHeight / 2}" stroke="#bbb" stroke-width="1.5">${title(`${life.id} on ${life.queue}: ${life.end === 'open' ? 'not ended when the run did' : life.end}`)}</line>`)
  }
  for (const claim of data.claims) {
    const box = spanBox(at, claim.jobId, claim.fromOrder, claim.toOrder, 2)
    if (box === undefined) continue
    const { x, y, w } = box
    parts.push(`<rect x="${x}" y="${y + 3}" width="${w}" height="${jobRowHeight - 6}" rx="2" fill="${at.color(claim.hostId)}" fill-opacity="0.55">${title(`${claim.jobId} claimed by ${claim.hostId} (#${claim.fromOrder}–#${claim.toOrder}), valid until @${claim.deadlineMs} ms`)}</rect>`)
  }
  for (const run of data.handlers) {
    const box = spanBox(at, run.jobId, run.fromOrder, run.toOrder, 3)
    if (box === undefined) continue
    const { x, y, w } = box
    const ran = run.endedMs === null ? `from @${run.startedMs} ms, still running at the end` : `@${run.startedMs}–${run.endedMs} ms`
    parts.push(`<rect x="${x}" y="${y + 1}" width="${w}" height="${jobRowHeight - 2}" rx="2" fill="none" stroke="${at.color(run.hostId)}" stroke-width="1.5">${title(`${run.jobId}: handler on ${run.hostId} for claim ${run.claimToken}, ${ran}`)}</rect>`)
  }
  for (const jobId of highlight) {
    const y = at.rowY.get(jobId)
    if (y !== undefined) parts.push(`<rect x="0.5" y="${y + 0.5}" width="${at.plotWidth - 1}" height="${jobRowHeight - 1}" fill="none" stroke="#d00" stroke-width="1.5">${title(`${jobId}: named by a violation`)}</rect>`)
  }
  for (const mark of data.marks) {
    const x = at.x(mark.order)
    const hostTop = hostLaneTop(at, mark.hostId)
    if (hostTop !== undefined) parts.push(markShape(mark, x, mark.hostId === undefined ? hostTop + worldLaneHeight / 2 : hostTop + hostRow(mark)))
    const jobTop = mark.jobId === undefined ? undefined : at.rowY.get(mark.jobId)
    if (jobTop !== undefined) parts.push(markShape(mark, x, jobTop + jobRowHeight / 2))
  }
  return parts
}

// The job rows' labels, with a header that says how many rows were left out.
function labels(data: JobsTimelineData, at: PageLayout): string {
  const shown = Math.min(jobRowsMax, data.jobs.length)
  const header = shown === data.jobs.length ? `jobs (${shown})` : `jobs: first ${shown} of ${data.jobs.length}`
  const rowLabels = data.jobs.slice(0, shown).map((life) => `<text x="8" y="${(at.rowY.get(life.id) ?? 0) + 11}" class="queue">${escape(`${life.queue} ${life.id}`)}${title(`${life.id}: ${life.end}`)}</text>`)
  return labelsSvg(at, 'world (clock)', header, rowLabels)
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

/** What the page says above the drawing; `highlightJobIds` are the jobs the violations name. */
export type JobsTimelinePage = TimelinePageText<JobsTimelineData>

/** The page, as one self-contained HTML string. */
export function renderJobsTimelineHtml(page: JobsTimelinePage): string {
  const { data } = page
  const at = pageLayout(data.hosts, data.jobs.slice(0, jobRowsMax).map((life) => life.id), jobRowHeight, data.orderEnd)
  const plot = plotSvg(at, data, 'heal → final phase: ack, claim and ack everything, sweep', [], rows(data, at, new Set(page.highlightJobIds ?? [])))
  return renderTimelinePage({ title: page.title, summary: page.summary, violations: page.violations, legend: legend(), labels: labels(data, at), plot })
}
