/**
 * ClaimOrderModel — where each job stood in its queue's claim order just before its current
 * claim, rebuilt from the JobStore boundary alone (JobBoundary.ts), for the dispatch checker's
 * `no head kept` (DispatchChecker.ts). Claim order is priority first, then the claim order key
 * (a row whose task is with Matching first, else its due time), then the order rows became due
 * in (JobStore.ts; MemoryClaimOrder.ts spells it for the memory store); this model follows the
 * due time and that order through every committed call, as the stores change them:
 *
 * - an enqueue makes a job due at the later of its run time and the call's time, last in order;
 *   a job inserted claimed for a waiter is claimed from that place at once;
 * - a claim remembers the place it took the job from (a due time still ahead is a reservation,
 *   not a place), and puts the claimed row last in order, due at its deadline; a heartbeat moves
 *   that deadline, and puts it last again; a retry makes it due at its run time, last;
 * - a release gives the job back its remembered place, due by the release at the latest;
 * - a due-time pass's reservation makes a row due at the reservation's end; its confirmation
 *   (the task is with Matching) puts it first, its give-back makes it due at the given time —
 *   each only if nothing touched the row since the reservation, as the stores judge by revision;
 * - a resume makes the queue's rows with Matching due at the resume (a claimed one at its deadline).
 *
 * The place is unknown (null) for a job whose order a fair pass or a concurrency slot decides
 * (a claim its key's limit refuses moves it without a record), and for a claim taken from a lapsed
 * claim (claims of one statement may take their order from the store in any order).
 *
 * Does not: judge anything (DispatchChecker.ts does), or know priorities' effect beyond
 * comparing them; rows the boundary never saw (a schedule's occurrences) are not modelled.
 */
import type { JobBoundaryRecord } from './JobBoundary.ts'

/** A job's place in claim order within its priority: its claim order key (-Infinity: its task was with Matching), then the order it became due in. */
export interface JobPlace {
  readonly dueMs: number
  readonly seq: number
}

/** A job's priority, and the place it was claimed from within it when the model knows it. */
export interface JobOrder {
  readonly priority: number
  readonly place: JobPlace | null
}

/** True when `a` comes before `b` in claim order within one priority. */
export const placedBefore = (a: JobPlace, b: JobPlace): boolean => a.dueMs < b.dueMs || (a.dueMs === b.dueMs && a.seq < b.seq)

interface Row {
  readonly queue: string
  readonly priority: number
  // False when a fair pass or a concurrency slot decides its order.
  readonly modelled: boolean
  processing: boolean
  // The current claim's deadline, while processing.
  deadlineMs: number | null
  // Null while its task is with Matching.
  dueMs: number | null
  seq: number
  revision: number
  // The revision a reservation left, while no other change followed it.
  reservedAt: number | null
  // The place the current claim took it from, which a release gives back (due null: a reservation, or with Matching).
  unclaimed: { readonly dueMs: number | null; readonly seq: number } | null
  claimedFrom: JobPlace | null
}

/** Follows every committed JobStore call of a world (see the header). */
export class ClaimOrderModel {
  readonly #rows = new Map<string, Row>()
  #seq = 0

  /** Where job `id` stood just before its current claim (null place: unknown); undefined for a job the model never saw. */
  claimedFrom(id: string): JobOrder | undefined {
    const row = this.#rows.get(id)
    return row === undefined ? undefined : { priority: row.priority, place: row.modelled ? row.claimedFrom : null }
  }

  /** One committed call, in commit order. */
  observe(record: JobBoundaryRecord): void {
    switch (record.op) {
      case 'enqueue': {
        const { job } = record
        const modelled = record.fairPass === undefined && record.slot === undefined
        const row: Row = { queue: job.queue, priority: job.priority, modelled, processing: false, deadlineMs: null, dueMs: Math.max(job.runAtMs, record.nowMs), seq: ++this.#seq, revision: 1, reservedAt: null, unclaimed: null, claimedFrom: null }
        this.#rows.set(job.id, row)
        if (job.state === 'processing' && job.deadlineMs !== null) this.#claim(row, record.nowMs, job.deadlineMs)
        return
      }
      case 'claim': {
        const row = this.#rows.get(record.id)
        if (row !== undefined && record.outcome.kind === 'claimed' && record.outcome.job.deadlineMs !== null) this.#claim(row, record.nowMs, record.outcome.job.deadlineMs)
        return
      }
      case 'heartbeat':
        return this.#touch(record.renewed === null ? undefined : this.#rows.get(record.id), (row) => {
          row.deadlineMs = record.renewed?.deadlineMs ?? row.deadlineMs
          row.dueMs = row.deadlineMs
          row.seq = ++this.#seq
        })
      case 'retry':
        if (record.outcome?.kind === 'dead') return void this.#rows.delete(record.id)
        return this.#touch(record.outcome === null ? undefined : this.#rows.get(record.id), (row) => {
          row.processing = false
          row.deadlineMs = null
          row.unclaimed = null
          row.dueMs = record.outcome?.kind === 'retried' ? record.outcome.runAtMs : row.dueMs
          row.seq = ++this.#seq
        })
      case 'release':
        for (const id of record.releasedIds) {
          this.#touch(this.#rows.get(id), (row) => {
            const back = row.unclaimed
            row.processing = false
            row.deadlineMs = null
            row.dueMs = back === null || back.dueMs === null ? record.nowMs : Math.min(back.dueMs, record.nowMs)
            row.seq = back?.seq ?? row.seq
            row.unclaimed = null
          })
        }
        return
      case 'reserve':
        for (const id of record.ids) {
          this.#touch(this.#rows.get(id), (row) => (row.dueMs = record.untilMs))
          const row = this.#rows.get(id)
          if (row !== undefined) row.reservedAt = row.revision
        }
        return
      case 'confirm':
      case 'unreserve':
        for (const id of record.ids) {
          const row = this.#rows.get(id)
          if (row === undefined || row.reservedAt !== row.revision) continue
          if (record.op === 'confirm') row.dueMs = null
          else if (row.dueMs !== null && record.untilMs !== null) row.dueMs = record.untilMs
        }
        return
      case 'resume':
        if (!record.changed) return
        for (const row of this.#rows.values()) {
          if (row.dueMs !== null || row.queue !== record.queue) continue
          this.#touch(row, (r) => (r.dueMs = r.processing ? Math.max(record.nowMs, r.deadlineMs ?? record.nowMs) : record.nowMs))
        }
        return
      case 'ack':
      case 'fail':
        if (record.ok) this.#rows.delete(record.id)
        return
      case 'ackBatch':
        for (const id of record.ackedIds) this.#rows.delete(id)
        return
      case 'cancel':
        if (record.ok) this.#rows.delete(record.id)
        return
      default:
        return
    }
  }

  // A claim at `nowMs` until `deadlineMs`: the place it took the row from (unknown for a lapsed
  // claim's, and for a reservation's, which is on its way to Matching), then the row last in
  // order, due at its deadline.
  #claim(row: Row, nowMs: number, deadlineMs: number): void {
    const reserved = row.dueMs !== null && row.dueMs > nowMs
    row.claimedFrom = row.processing || reserved ? null : { dueMs: row.dueMs ?? Number.NEGATIVE_INFINITY, seq: row.seq }
    row.unclaimed = { dueMs: reserved ? null : row.dueMs, seq: row.seq }
    this.#touch(row, (r) => {
      r.processing = true
      r.deadlineMs = deadlineMs
      r.dueMs = deadlineMs
      r.seq = ++this.#seq
    })
  }

  // A change to `row` (when known) that moves its revision on, as every store change but a delivery's does.
  #touch(row: Row | undefined, change: (row: Row) => void): void {
    if (row === undefined) return
    change(row)
    row.revision++
    row.reservedAt = null
  }
}
