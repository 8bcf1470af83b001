/**
 * JobsTimelineRecorder — listens to one end-to-end run (the JobStore boundary and the world's
 * events) and keeps what its timeline draws: each job's life from its enqueue to its end (acked,
 * cancelled or dead), with every delivery (History's claim call, whatever it answered), the
 * claims it granted and until when each was valid, heartbeats, claims that lapsed (the job was
 * claimed again after a deadline passed unacked), retries and deaths; beside them each host's
 * membership views, when it was down, and every fault; and each run of a `work` handler (which
 * claim it was given, on which host, from its start to its return), so a claim that never
 * reached a handler, a handler that outlived its claim or a stop that left a claim behind shows.
 *
 * The x axis is the order in which these records arrived (one store call at a time, so commit
 * order), each keeping its virtual time for labels and hover text, as in the Matching timeline.
 *
 * Does not: render (JobsTimelineHtml.ts) or judge (JobCheckers.ts); it never reads wall time.
 */
import { DownSpans, type DownSpan } from '../core/TimelinePage.ts'
import { epochMs } from '../core/Turns.ts'
import type { JobBoundaryRecord } from './JobBoundary.ts'
import type { JobsWorldEvent } from './JobsWorld.ts'

/** What a mark on a jobs timeline stands for. */
export type JobsMarkKind = 'enqueue' | 'delivery' | 'claim' | 'heartbeat' | 'lapse' | 'retry' | 'ack' | 'fail' | 'dead' | 'cancel' | 'sweep' | 'pause' | 'fault' | 'view'

/** One mark: a committed job call, a lapse the recorder inferred, a fault or a view. */
export interface JobsMark {
  readonly order: number
  /** Virtual ms since the world's epoch (the trace's `@ms`). */
  readonly nowMs: number
  readonly kind: JobsMarkKind
  readonly hostId?: string
  readonly jobId?: string
  /** A one-word flavour: a delivery's answer, a fault's name. */
  readonly tag?: string
  readonly detail: string
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

/** A span when a host was down (crashed, not yet restarted). */
export type JobsDownSpan = DownSpan

/** Everything one jobs timeline draws. */
export interface JobsTimelineData {
  readonly hosts: ReadonlyArray<string>
  readonly jobs: ReadonlyArray<JobsLife>
  readonly claims: ReadonlyArray<JobsClaimSpan>
  readonly handlers: ReadonlyArray<JobsHandlerSpan>
  readonly marks: ReadonlyArray<JobsMark>
  readonly down: ReadonlyArray<JobsDownSpan>
  readonly healOrder: number | null
  /** One past the last record's order. */
  readonly orderEnd: number
  /** Virtual time of each order, for axis labels. */
  readonly timeAt: ReadonlyArray<number>
}

/** Collects one run; pass `onJobs` and `onEvent` to `runJobsSeed`, then call `data()`. */
export class JobsTimelineRecorder {
  readonly #hosts: ReadonlyArray<string>
  readonly #jobs = new Map<string, JobsLife>()
  readonly #claims: JobsClaimSpan[] = []
  // The claim each job holds now, by job id.
  readonly #held = new Map<string, JobsClaimSpan>()
  readonly #handlers: JobsHandlerSpan[] = []
  // The handler runs still going, by `host/job/claim token`.
  readonly #running = new Map<string, JobsHandlerSpan>()
  readonly #marks: JobsMark[] = []
  readonly #down = new DownSpans()
  readonly #timeAt: number[] = []
  #healOrder: number | null = null

  /** @param hosts the run's host ids, in lane order. */
  constructor(hosts: ReadonlyArray<string>) {
    this.#hosts = hosts
  }

  /** The JobStore boundary listener for `runJobsSeed({ onJobs })`. */
  readonly onJobs = (record: JobBoundaryRecord, nowMs: number): void => {
    if (record.op === 'getJob' || record.op === 'reserve' || record.op === 'confirm' || record.op === 'unreserve') return
    const order = this.#tick(nowMs)
    const at = nowMs - epochMs
    const host = record.hostId
    switch (record.op) {
      case 'enqueue': {
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
        return
      }
      case 'claim': {
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
        return
      }
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
    const order = this.#tick(nowMs)
    const at = nowMs - epochMs
    if (event.kind === 'heal') {
      this.#healOrder = order
      for (const host of this.#hosts) this.#down.up(host, order)
      return
    }
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
    if (event.kind === 'view') {
      this.#mark({ order, nowMs: at, kind: 'view', hostId: event.hostId, detail: `${event.hostId} sees workers [${event.hosts.join(', ')}]` })
      return
    }
    this.#mark({ order, nowMs: at, kind: 'fault', ...(event.hostId === undefined ? {} : { hostId: event.hostId }), tag: event.name, detail: `${event.name}: ${event.detail}` })
    if (event.hostId !== undefined) this.#down.fault(event.name, event.hostId, order)
  }

  /** What was recorded; spans still open end at the last record. */
  data(): JobsTimelineData {
    const orderEnd = this.#timeAt.length
    for (const life of this.#jobs.values()) if (life.end === 'open') life.toOrder = Math.max(life.toOrder, orderEnd)
    for (const span of this.#held.values()) span.toOrder = Math.max(span.toOrder, orderEnd)
    for (const span of this.#running.values()) span.toOrder = Math.max(span.toOrder, orderEnd)
    return { hosts: this.#hosts, jobs: [...this.#jobs.values()], claims: this.#claims, handlers: this.#handlers, marks: this.#marks, down: this.#down.spans(orderEnd), healOrder: this.#healOrder, orderEnd, timeAt: this.#timeAt }
  }

  #tick(nowMs: number): number {
    this.#timeAt.push(nowMs - epochMs)
    return this.#timeAt.length - 1
  }

  #mark(mark: JobsMark): void {
    this.#marks.push(mark)
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
