/**
 * AckWindow — the ordered-acknowledgement window of one subqueue of a loaded physical queue
 * (upstream Matching's `ack_manager`): read level, outstanding deliveries, and the ack level through the
 * fully handled prefix.
 *
 * Invariants (checked by the property test against a trivially correct model):
 * - ids are read in strictly increasing order; the read level is the highest id read;
 * - the ack level never moves backwards and never passes an id that was read but not handled;
 * - with nothing outstanding, the ack level equals the read level.
 *
 * Values are immutable: every operation returns a new window, so a machine snapshot holding one
 * is never changed behind its back. Costs are O(outstanding) per call, and outstanding is bounded
 * by the read page size.
 *
 * Does not: persist. Saving the ack level is a checkpoint, which the queue actor requests.
 */
import { assert } from '../kernel/assert.ts'

/** An immutable acknowledgement window. */
export interface AckWindow {
  /** Highest id through which every read delivery is handled (durable once checkpointed). */
  readonly ackLevel: number
  /** Highest id read by this window (memory only). */
  readonly readLevel: number
  /** Ids read and not yet handled, ascending. */
  readonly unhandled: ReadonlyArray<number>
  /** Ids handled above the ack level (completions above a gap), ascending. */
  readonly handledAboveAck: ReadonlyArray<number>
}

/** A window resuming above a saved ack level: nothing read yet. */
export function makeAckWindow(ackLevel: number): AckWindow {
  assert(Number.isSafeInteger(ackLevel) && ackLevel >= 0, `bad ack level ${ackLevel}`)
  return { ackLevel, readLevel: ackLevel, unhandled: [], handledAboveAck: [] }
}

/** Records deliveries read, in increasing id order, all above the read level. */
export function markRead(window: AckWindow, taskIds: ReadonlyArray<number>): AckWindow {
  if (taskIds.length === 0) return window
  let previous = window.readLevel
  for (const id of taskIds) {
    assert(Number.isSafeInteger(id) && id > previous, `read id ${id} not above ${previous}`)
    previous = id
  }
  return settle({ ...window, readLevel: previous, unhandled: [...window.unhandled, ...taskIds] })
}

/**
 * Moves the read level to `readLevel` with nothing outstanding in between: a read page that
 * found no (live) rows up to there, e.g. only expired tasks, which are dropped but still
 * advance the read level.
 */
export function skipTo(window: AckWindow, readLevel: number): AckWindow {
  if (readLevel <= window.readLevel) return window
  return settle({ ...window, readLevel })
}

/** Marks a read delivery handled (started, already started or obsolete). Handling twice is a no-op. */
export function markHandled(window: AckWindow, taskId: number): AckWindow {
  const index = window.unhandled.indexOf(taskId)
  if (index < 0) {
    assert(
      taskId <= window.ackLevel || window.handledAboveAck.includes(taskId),
      `handled id ${taskId} was never read (read level ${window.readLevel})`,
    )
    return window
  }
  const unhandled = window.unhandled.filter((_, i) => i !== index)
  const handledAboveAck = insertSorted(window.handledAboveAck, taskId)
  return settle({ ...window, unhandled, handledAboveAck })
}

/** Number of read deliveries not yet handled. */
export function outstandingCount(window: AckWindow): number {
  return window.unhandled.length
}

// Advances the ack level through the handled prefix and drops completions at or below it.
function settle(window: AckWindow): AckWindow {
  const first = window.unhandled[0]
  const ackLevel = first === undefined ? window.readLevel : Math.max(window.ackLevel, first - 1)
  if (ackLevel === window.ackLevel) return window
  return { ...window, ackLevel, handledAboveAck: window.handledAboveAck.filter((id) => id > ackLevel) }
}

function insertSorted(ids: ReadonlyArray<number>, id: number): ReadonlyArray<number> {
  let at = ids.length
  while (at > 0 && (ids[at - 1] as number) > id) at--
  return [...ids.slice(0, at), id, ...ids.slice(at)]
}
