/**
 * fencingChecker — judges recorded fencing races (fencingRace.ts), apart from the code that
 * ran them. It knows nothing about SQL; it reads only what the two owners observed.
 *
 * Soundness: B is the only other writer and writes nothing after its acquire, so after B's
 * acquire commits, the contested queue may not change at all. The acquire's own result is the
 * committed state at that instant (RETURNING under the row lock): any later-allocated id (last
 * id above it), moved ack level, or checkpoint stamp (A stamps its own `nowMs`, distinct from
 * B's) proves an old-range write committed after the acquire. Stored rows B read right after
 * its acquire must equal the final rows (catches deletions). Nothing here can fire on a correct
 * store: every check compares states that only an old-range write could make differ.
 *
 * Also checked: every write that reported success is readable by the new owner (appended ids
 * present with their job, relocated rows at their new ids and gone from the source), every
 * seeded task is in exactly one place, and every refused write was refused with OwnershipLost.
 */
import type { QueueMetadata } from '../../src/persistence/queues/Store.ts'

/** What one owner's write reported. */
export type WriteOutcome =
  | { readonly kind: 'append'; readonly queue: string; readonly ok: true; readonly firstTaskId: number; readonly lastTaskId: number; readonly jobIds: ReadonlyArray<string> }
  | { readonly kind: 'checkpoint'; readonly queue: string; readonly ok: true; readonly ackLevel: number }
  | { readonly kind: 'relocate'; readonly queue: string; readonly to: string; readonly ok: true; readonly moved: ReadonlyArray<{ fromTaskId: number; toTaskId: number }> }
  | { readonly kind: 'append' | 'checkpoint' | 'relocate'; readonly queue: string; readonly ok: false; readonly errorTag: string; readonly detail: string }

/** A queue's stored rows: task id → job id. */
export type StoredRows = ReadonlyMap<number, string>

/** Everything observed in one race. */
export interface RaceRecord {
  readonly variant: 'append' | 'checkpoint' | 'relocate'
  readonly iteration: number
  /** The queue B acquired. */
  readonly contested: string
  /** B's acquire result and the `nowMs` it stamped. */
  readonly acquired: QueueMetadata
  readonly acquireNowMs: number
  /** Rows of every involved queue, read by B right after its acquire returned. */
  readonly afterAcquire: ReadonlyMap<string, StoredRows>
  /** Every A write, in the order they were issued. */
  readonly writes: ReadonlyArray<WriteOutcome>
  /** Final metadata and rows of every involved queue, after every write settled. */
  readonly finalMetadata: ReadonlyMap<string, QueueMetadata>
  readonly finalRows: ReadonlyMap<string, StoredRows>
  /** Jobs seeded before the race (checkpoint and relocate variants), by queue and id. */
  readonly seeded: ReadonlyMap<string, StoredRows>
}

/** Returns one line per violation (empty when the race was fenced correctly). */
export function checkRace(record: RaceRecord): string[] {
  const violations: string[] = []
  const at = `${record.variant} #${record.iteration}`
  const fail = (message: string) => violations.push(`${at}: ${message}`)
  const { contested, acquired } = record
  const finalContested = record.finalMetadata.get(contested)
  if (finalContested === undefined) return [`${at}: contested queue ${contested} vanished`]

  // 1. Nothing under the old range committed after B's acquire.
  if (finalContested.rangeId !== acquired.rangeId) fail(`range moved from ${acquired.rangeId} to ${finalContested.rangeId}`)
  if (finalContested.lastTaskId !== acquired.lastTaskId) {
    fail(`last task id was ${acquired.lastTaskId} at B's acquire and is ${finalContested.lastTaskId} now: ids were allocated after the acquire`)
  }
  if (JSON.stringify(finalContested.ackLevels) !== JSON.stringify(acquired.ackLevels)) {
    fail(`ack levels were ${JSON.stringify(acquired.ackLevels)} at B's acquire and are ${JSON.stringify(finalContested.ackLevels)} now`)
  }
  if (finalContested.updatedAtMs !== record.acquireNowMs) fail(`updatedAtMs is ${finalContested.updatedAtMs}, not B's ${record.acquireNowMs}: a checkpoint landed after the acquire`)
  const seen = record.afterAcquire.get(contested)
  const now = record.finalRows.get(contested)
  if (seen !== undefined && now !== undefined && !sameRows(seen, now)) fail(`stored rows changed after B's acquire: ${describeDiff(seen, now)}`)
  for (const write of record.writes) {
    if (!write.ok) continue
    if (write.kind === 'append' && write.queue === contested && write.lastTaskId > acquired.lastTaskId) {
      fail(`append of ids ${write.firstTaskId}…${write.lastTaskId} succeeded above B's acquired last id ${acquired.lastTaskId}`)
    }
    if (write.kind === 'relocate' && write.to === contested && write.moved.some((move) => move.toTaskId > acquired.lastTaskId)) {
      fail(`relocate into ${contested} allocated ids above B's acquired last id ${acquired.lastTaskId}`)
    }
    if (write.kind === 'checkpoint' && write.queue === contested && write.ackLevel > (acquired.ackLevels[0] ?? 0)) {
      fail(`checkpoint to ${write.ackLevel} succeeded above B's acquired ack level ${acquired.ackLevels[0] ?? 0}`)
    }
  }

  // 2. Every success is readable by the new owner.
  for (const write of record.writes) {
    if (!write.ok) {
      if (write.errorTag !== 'OwnershipLost') fail(`${write.kind} failed with ${write.errorTag}, not OwnershipLost: ${write.detail}`)
      continue
    }
    if (write.kind === 'append') {
      const rows = record.finalRows.get(write.queue)
      const ackLevel = record.finalMetadata.get(write.queue)?.ackLevels[0] ?? 0
      write.jobIds.forEach((jobId, index) => {
        const taskId = write.firstTaskId + index
        if (taskId > ackLevel && rows?.get(taskId) !== jobId) fail(`appended task ${taskId} (${jobId}) is not readable: found ${rows?.get(taskId) ?? 'nothing'}`)
      })
    }
    if (write.kind === 'relocate') {
      for (const move of write.moved) {
        const jobId = record.seeded.get(write.queue)?.get(move.fromTaskId)
        if (record.finalRows.get(write.to)?.get(move.toTaskId) !== jobId) fail(`relocated task ${move.fromTaskId} → ${move.toTaskId} is not readable at the destination`)
        if (record.finalRows.get(write.queue)?.has(move.fromTaskId) === true) fail(`relocated task ${move.fromTaskId} is still at the source`)
      }
    }
  }

  // Seeded rows above the final ack level must still be there (only a checkpoint may delete them).
  if (record.variant !== 'relocate') {
    for (const [queue, rows] of record.seeded) {
      const ackLevel = record.finalMetadata.get(queue)?.ackLevels[0] ?? 0
      for (const [taskId, jobId] of rows) {
        if (taskId > ackLevel && record.finalRows.get(queue)?.get(taskId) !== jobId) fail(`seeded task ${taskId} above ack level ${ackLevel} is not readable`)
      }
    }
  }

  // 3. Relocation conserves tasks: each seeded job is stored exactly once across the queues.
  if (record.variant === 'relocate') {
    const seededJobs = [...record.seeded.values()].flatMap((rows) => [...rows.values()]).sort()
    const storedJobs = [...record.finalRows.values()].flatMap((rows) => [...rows.values()]).sort()
    if (JSON.stringify(seededJobs) !== JSON.stringify(storedJobs)) fail(`relocation lost or duplicated tasks: seeded ${seededJobs.join(',')} stored ${storedJobs.join(',')}`)
  }
  return violations
}

function sameRows(a: StoredRows, b: StoredRows): boolean {
  return a.size === b.size && [...a].every(([id, job]) => b.get(id) === job)
}

function describeDiff(before: StoredRows, after: StoredRows): string {
  const gone = [...before.keys()].filter((id) => !after.has(id))
  const added = [...after.keys()].filter((id) => !before.has(id))
  return `removed ${gone.join(',') || 'none'}, added ${added.join(',') || 'none'}`
}
