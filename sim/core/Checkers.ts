/**
 * Checkers — the simulator's judges of the queue Store, outside the system under test, in every
 * workload (both the Matching world and the jobs world run Matching over one). They read only the store
 * boundary log (what committed, in commit order), History's record and the clients' outcomes —
 * never the runtime's own beliefs. Each violation is a sentence a person can act on.
 *
 * - fencing: no append, checkpoint or relocate commits under a range below the queue's current
 *   range (raised by a committed acquire), and a checkpoint refused for its range deletes nothing;
 * - id uniqueness: no task id of a physical queue is allocated twice;
 * - ack safety: a subqueue's ack level never moves backwards, a checkpoint saves exactly the
 *   level it asked for (or keeps a higher one: never more than the owner's handled prefix), and
 *   of the rows that actually disappeared while it ran (read before and after, every subqueue)
 *   none lies above the ack level it asked for in its subqueue, and none is of a task whose
 *   delivery History has not handled;
 * - relocation: the rows that left the source are exactly the asked-for rows it held, and each
 *   arrives in the destination once, under a fresh id (Store.relocate's contract);
 * - ownership loss (OwnershipLossChecker.ts): no write attempted by an instance after it heard
 *   OwnershipLost, no re-acquire by a host inside the restart back-off;
 * - user data: every committed update expected the version before it (a linearizable CAS);
 * - at-least-once (at the end): every task whose add returned success was started or found
 *   obsolete. Duplicated starts are allowed and counted (Jepsen's categories).
 */
import type { BoundaryRecord, RowRef } from './Boundary.ts'
import { OwnershipLossChecker } from './OwnershipLossChecker.ts'
import type { HistoryRecord } from './HistoryRecord.ts'

/** How a client's add ended. `unknown`: its host crashed before answering (an ambiguous add). */
export type AddOutcome = 'accepted' | 'failed' | 'unknown'

/** Jepsen-style delivery report. */
export interface DeliveryReport {
  readonly accepted: number
  readonly delivered: number
  /** Accepted but never started nor obsolete: the at-least-once violation. */
  readonly lost: ReadonlyArray<string>
  /** Started more than once (allowed at-least-once, counted). */
  readonly duplicated: number
  /** Started but never added by any client. */
  readonly unexpected: ReadonlyArray<string>
  /** Adds that failed or whose host crashed, yet were delivered (the write had committed). */
  readonly recovered: number
}

/** The online checkers plus the final delivery check. */
export class Checkers {
  readonly violations: string[] = []
  readonly #ranges = new Map<string, number>()
  readonly #taskIds = new Map<string, Set<number>>()
  readonly #ackLevels = new Map<string, number>()
  readonly #userData = new Map<string, number>()
  readonly #history: HistoryRecord
  readonly #queueOfJob = new Map<string, string>()
  /** The attempt checkers; the world tells it when a retirement is in flight. */
  readonly ownershipLoss: OwnershipLossChecker

  constructor(history: HistoryRecord) {
    this.#history = history
    this.ownershipLoss = new OwnershipLossChecker((message) => this.#fail(message))
  }

  /** Checks one store call at the boundary, at world time `nowMs`. */
  observe(record: BoundaryRecord, nowMs: number): void {
    switch (record.op) {
      case 'attempt':
      case 'answered':
      case 'unloaded':
        this.ownershipLoss.observe(record, nowMs)
        return
      case 'acquire': {
        const previous = this.#ranges.get(record.queue) ?? 0
        if (record.metadata.rangeId <= previous) this.#fail(`${record.queue}: acquire returned range ${record.metadata.rangeId}, not above ${previous}`)
        this.#ranges.set(record.queue, record.metadata.rangeId)
        for (const [subqueue, level] of Object.entries(record.metadata.ackLevels)) this.#checkAck(record.queue, Number(subqueue), level)
        return
      }
      case 'append': {
        this.#fence(record.queue, record.rangeId, 'appended')
        const ids = this.#taskIds.get(record.queue) ?? new Set<number>()
        for (const id of record.taskIds) {
          if (ids.has(id)) this.#fail(`${record.queue}#${id}: task id allocated twice (range ${record.rangeId})`)
          ids.add(id)
        }
        this.#taskIds.set(record.queue, ids)
        for (const jobId of record.jobIds) this.#queueOfJob.set(jobId, record.queue)
        return
      }
      case 'checkpoint': {
        this.#fence(record.queue, record.rangeId, 'checkpointed')
        // A row may go only if it lies at or below its subqueue's ack level: the one asked for,
        // or one saved earlier (rows there should already be gone).
        const deletable = new Map<number, number>()
        for (const level of record.ackLevels) deletable.set(level.subqueue, Math.max(level.ackLevel, this.#ackLevels.get(`${record.queue}/${level.subqueue}`) ?? 0))
        for (const row of record.deletedRows) {
          const limit = deletable.get(row.subqueue) ?? this.#ackLevels.get(`${record.queue}/${row.subqueue}`) ?? 0
          if (row.taskId > limit) this.#fail(`${record.queue} subqueue ${row.subqueue}: range ${record.rangeId} checkpoint deleted row #${row.taskId} (${row.jobId}) above the ack level it asked for (${limit})`)
        }
        for (const level of record.ackLevels) {
          const saved = record.metadata.ackLevels[level.subqueue] ?? 0
          const previous = this.#ackLevels.get(`${record.queue}/${level.subqueue}`) ?? 0
          if (saved > Math.max(previous, level.ackLevel)) this.#fail(`${record.queue} subqueue ${level.subqueue}: range ${record.rangeId} checkpoint asked for ack level ${level.ackLevel} but ${saved} was saved, past the handled prefix`)
          this.#checkAck(record.queue, level.subqueue, saved)
        }
        for (const jobId of record.deletedJobIds) {
          if (!this.#history.isHandled(jobId)) this.#fail(`${record.queue}: range ${record.rangeId} checkpoint deleted the row of ${jobId}, whose delivery was never handled`)
        }
        return
      }
      case 'refusedCheckpoint':
        this.#fail(`${record.queue}: range ${record.rangeId} checkpoint was refused for its range, yet deleted the rows of ${record.deletedJobIds.slice(0, 3).join(', ')}${record.deletedJobIds.length > 3 ? ` and ${record.deletedJobIds.length - 3} more` : ''}`)
        return
      case 'relocate':
        this.#fence(record.from, record.fromRangeId, 'relocated from')
        this.#fence(record.to, record.toRangeId, 'relocated into')
        this.#checkRelocation(record)
        return
      case 'userData': {
        const current = this.#userData.get(record.family) ?? 0
        if (record.outcome === 'conflict') {
          if (record.expectedVersion === current) this.#fail(`user data ${record.family}: update expecting the current version ${current} was refused`)
        } else if (record.expectedVersion !== current || record.outcome !== current + 1) {
          this.#fail(`user data ${record.family}: update expecting ${record.expectedVersion} committed as ${record.outcome} while the version was ${current}`)
        } else {
          this.#userData.set(record.family, record.outcome)
        }
        return
      }
    }
  }

  /** The final at-least-once check over the clients' outcomes. */
  deliveries(adds: ReadonlyMap<string, AddOutcome>): DeliveryReport {
    const lost: string[] = []
    let accepted = 0
    let delivered = 0
    let recovered = 0
    for (const [jobId, outcome] of adds) {
      const handled = this.#history.isHandled(jobId)
      if (outcome === 'accepted') {
        accepted++
        if (handled) delivered++
        else lost.push(jobId)
      } else if (handled) recovered++
    }
    let duplicated = 0
    const unexpected: string[] = []
    for (const [jobId, count] of this.#history.started) {
      if (count > 1) duplicated++
      if (!adds.has(jobId)) unexpected.push(jobId)
    }
    for (const jobId of lost.slice(0, 5)) this.#fail(`task ${this.#queueOfJob.get(jobId) ?? '(never appended)'} ${jobId} never delivered`)
    if (lost.length > 5) this.#fail(`… and ${lost.length - 5} more tasks never delivered`)
    for (const jobId of unexpected.slice(0, 5)) this.#fail(`task ${jobId} started but never added`)
    return { accepted, delivered, lost, duplicated, unexpected, recovered }
  }

  #fence(queue: string, rangeId: number, verb: string): void {
    const current = this.#ranges.get(queue) ?? 0
    if (rangeId < current) this.#fail(`${queue}: range ${rangeId} ${verb} after range ${current} was acquired`)
    if (rangeId > current) this.#fail(`${queue}: range ${rangeId} ${verb} but no acquire ever returned it (current ${current})`)
  }

  // The rows a relocation moved, judged from the rows themselves.
  #checkRelocation(record: Extract<BoundaryRecord, { op: 'relocate' }>): void {
    const what = `relocate ${record.from} (r${record.fromRangeId}) → ${record.to} (r${record.toRangeId})`
    const asked = new Set(record.sourceRows.map((row) => row.taskId))
    for (const row of record.removedRows) if (!asked.has(row.taskId)) this.#fail(`${what} removed row #${row.taskId} (${row.jobId}) it was not asked to move`)
    const removed = new Set(record.removedRows.map((row) => row.taskId))
    for (const row of record.sourceRows) if (!removed.has(row.taskId)) this.#fail(`${what} left row #${row.taskId} (${row.jobId}) in the source though it was asked to move it`)
    const arrivals = countJobs(record.addedRows)
    for (const [jobId, count] of countJobs(record.sourceRows)) {
      const arrived = arrivals.get(jobId) ?? 0
      if (arrived < count) this.#fail(`${what} lost the row of ${jobId}: it left the source but never arrived`)
      if (arrived > count) this.#fail(`${what} duplicated the row of ${jobId}: ${arrived} rows arrived for ${count} moved`)
      arrivals.delete(jobId)
    }
    for (const jobId of arrivals.keys()) this.#fail(`${what} added a row of ${jobId} that it did not move`)
    if (record.moved !== record.sourceRows.length) this.#fail(`${what} reported ${record.moved} rows moved, but ${record.sourceRows.length} asked-for rows were stored`)
    const ids = this.#taskIds.get(record.to) ?? new Set<number>()
    for (const row of record.addedRows) {
      if (ids.has(row.taskId)) this.#fail(`${record.to}#${row.taskId}: task id allocated twice (relocated into range ${record.toRangeId})`)
      ids.add(row.taskId)
      this.#queueOfJob.set(row.jobId, record.to)
    }
    this.#taskIds.set(record.to, ids)
  }

  #checkAck(queue: string, subqueue: number, level: number): void {
    const key = `${queue}/${subqueue}`
    const previous = this.#ackLevels.get(key) ?? 0
    if (level < previous) this.#fail(`${queue} subqueue ${subqueue}: ack level moved backwards from ${previous} to ${level}`)
    this.#ackLevels.set(key, Math.max(previous, level))
  }

  #fail(message: string): void {
    // Bounded: a broken run can produce thousands; the first ones tell the story.
    if (this.violations.length < 50) this.violations.push(message)
  }
}

// How many rows of each job a set of rows holds.
function countJobs(rows: ReadonlyArray<RowRef>): Map<string, number> {
  const counts = new Map<string, number>()
  for (const row of rows) counts.set(row.jobId, (counts.get(row.jobId) ?? 0) + 1)
  return counts
}
