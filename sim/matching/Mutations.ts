/**
 * Mutations — the mutation menu: a Store that wraps the real store (wrap, don't fork) and adds
 * one named, deliberate bug. The simulator must catch each one within 100 seeds on memory
 * (sim/matching/mutations.test.ts): that is the evidence that its checkers can fail.
 *
 * Each bug fires deterministically (every eligible call, or every n-th by a counter), and is
 * shaped so the runtime keeps running and a checker — not an exception — reports it:
 *
 * - `skipRangeCheck`: a stale owner's append or checkpoint is re-issued under the queue's
 *   current range (read with inspect), so it commits anyway (fencing);
 * - `checkpointPastPrefix`: a checkpoint saves one past the handled prefix (ack level + 1,
 *   clamped to lastTaskId), deleting a row that may not have been delivered (ack safety);
 * - `dropAppend`: every few appends report plausible ids (lastTaskId + 1…) without writing;
 *   the next real append allocates those ids again (id uniqueness), and an accepted task is
 *   never delivered (at-least-once);
 * - `reuseIdsAfterTakeover`: the first append after an acquire writes normally but reports the
 *   ids an earlier range already reported (id uniqueness);
 * - `staleCheckpointDeletes`: a stale owner's checkpoint is refused, but its delete still runs
 *   (on memory exactly the rows it asked to delete, through a snapshot edit; elsewhere by
 *   re-issuing the checkpoint under the current range) (fencing at the boundary).
 *
 * Mutant state (counters, reported ids) lives in the wrapper: on memory the world shares one
 * wrapper, on PostgreSQL each host's pool gets its own, so cross-host mutants see only their
 * host's calls there.
 *
 * Does not: change reads, acquire results or user data.
 */
import type { OwnershipLost } from '../../src/domain/errors.ts'
import { encodeQueueKey, type QueueKey } from '../../src/domain/QueueKey.ts'
import type { MemoryStore } from '../../src/persistence/queues/MemoryStore.ts'
import type { AppendResult, CheckpointResult, Store } from '../../src/persistence/queues/Store.ts'

/** The deliberate bugs, by name. */
export const mutationNames = ['skipRangeCheck', 'checkpointPastPrefix', 'dropAppend', 'reuseIdsAfterTakeover', 'staleCheckpointDeletes'] as const

/** One mutation's name. */
export type MutationName = (typeof mutationNames)[number]

// Every third append is dropped: often enough that a few hundred steps meet one, rarely enough
// that most adds still flow and the run looks healthy to everything but the checkers.
const dropAppendEvery = 3

const isOwnershipLost = (error: unknown): error is OwnershipLost => (error as { _tag?: unknown } | null)?._tag === 'OwnershipLost'

const isMemoryStore = (store: Store): store is MemoryStore => store.kind === 'memory' && 'exportSnapshot' in store && 'importSnapshot' in store

/** The current range of a queue, or null if it was never acquired. */
async function currentRange(inner: Store, key: QueueKey): Promise<number | null> {
  return (await inner.inspect(key))?.metadata.rangeId ?? null
}

/** Wraps `inner` with one deliberate bug. */
export function makeMutantStore(inner: Store, mutation: MutationName): Store {
  const base: Store = {
    kind: inner.kind,
    acquire: (params) => inner.acquire(params),
    append: (params) => inner.append(params),
    read: (params) => inner.read(params),
    checkpoint: (params) => inner.checkpoint(params),
    relocate: (params) => inner.relocate(params),
    inspect: (key) => inner.inspect(key),
    list: (filter) => inner.list(filter),
    getUserData: (params) => inner.getUserData(params),
    updateUserData: (params) => inner.updateUserData(params),
    close: () => inner.close(),
  }
  switch (mutation) {
    case 'skipRangeCheck':
      return { ...base, append: (params) => reissueWhenStale(inner, params.key, params.rangeId, (rangeId) => inner.append({ ...params, rangeId })), checkpoint: (params) => reissueWhenStale(inner, params.key, params.rangeId, (rangeId) => inner.checkpoint({ ...params, rangeId })) }
    case 'checkpointPastPrefix':
      return {
        ...base,
        async checkpoint(params): Promise<CheckpointResult> {
          const lastTaskId = (await inner.inspect(params.key))?.metadata.lastTaskId ?? 0
          return inner.checkpoint({ ...params, ackLevels: params.ackLevels.map((level) => ({ subqueue: level.subqueue, ackLevel: Math.min(level.ackLevel + 1, lastTaskId) })) })
        },
      }
    case 'dropAppend': {
      let appends = 0
      return {
        ...base,
        async append(params): Promise<AppendResult> {
          const metadata = (await inner.inspect(params.key))?.metadata
          // A stale or unknown range still fails as the real store would: the bug is the silent drop.
          if (metadata === undefined || metadata.rangeId !== params.rangeId || params.tasks.length === 0 || ++appends % dropAppendEvery !== 0) return inner.append(params)
          return { firstTaskId: metadata.lastTaskId + 1, lastTaskId: metadata.lastTaskId + params.tasks.length }
        },
      }
    }
    case 'reuseIdsAfterTakeover':
      return makeIdReuser(base, inner)
    case 'staleCheckpointDeletes':
      return {
        ...base,
        async checkpoint(params): Promise<CheckpointResult> {
          try {
            return await inner.checkpoint(params)
          } catch (error) {
            if (isOwnershipLost(error)) await deleteAnyway(inner, params.key, params.ackLevels, params.nowMs)
            throw error
          }
        },
      }
  }
}

/** For `runSeed({ wrapStore })`: wraps each store the world opens with `mutation`. */
export function wrapWith(mutation: MutationName): (store: Store) => Store {
  return (store) => makeMutantStore(store, mutation)
}

// A stale write is retried under whatever range the queue has now, as a store that forgot its
// fence would let it through.
async function reissueWhenStale<T>(inner: Store, key: QueueKey, rangeId: number, write: (rangeId: number) => Promise<T>): Promise<T> {
  try {
    return await write(rangeId)
  } catch (error) {
    if (!isOwnershipLost(error)) throw error
    const current = await currentRange(inner, key)
    if (current === null) throw error
    return write(current)
  }
}

// Reports, for the first append after each acquire, the ids an earlier range reported first.
function makeIdReuser(base: Store, inner: Store): Store {
  const earlierFirstId = new Map<string, number>()
  const reportedThisRange = new Map<string, number>()
  const reuseNext = new Set<string>()
  return {
    ...base,
    async acquire(params) {
      const metadata = await inner.acquire(params)
      const queue = encodeQueueKey(params.key)
      const reported = reportedThisRange.get(queue)
      if (reported !== undefined && !earlierFirstId.has(queue)) earlierFirstId.set(queue, reported)
      reportedThisRange.delete(queue)
      if (earlierFirstId.has(queue)) reuseNext.add(queue)
      return metadata
    },
    async append(params) {
      const result = await inner.append(params)
      const queue = encodeQueueKey(params.key)
      if (!reportedThisRange.has(queue)) reportedThisRange.set(queue, result.firstTaskId)
      const reused = earlierFirstId.get(queue)
      if (!reuseNext.delete(queue) || reused === undefined) return result
      return { firstTaskId: reused, lastTaskId: reused + params.tasks.length - 1 }
    },
  }
}

// The delete half of a refused checkpoint. On memory it removes exactly the rows the checkpoint
// asked to delete (ack levels untouched), as a DELETE outside the fenced transaction would;
// on other stores it re-issues the checkpoint under the current range.
async function deleteAnyway(inner: Store, key: QueueKey, ackLevels: ReadonlyArray<{ subqueue: number; ackLevel: number }>, nowMs: number): Promise<void> {
  if (!isMemoryStore(inner)) {
    const current = await currentRange(inner, key)
    if (current !== null) await inner.checkpoint({ key, rangeId: current, ackLevels, nowMs }).catch(() => undefined)
    return
  }
  const queue = encodeQueueKey(key)
  const levels = new Map(ackLevels.map((level) => [level.subqueue, level.ackLevel]))
  const snapshot = inner.exportSnapshot()
  const tasks = snapshot.tasks.filter((row) => row.queue !== queue || row.taskId > (levels.get(row.task.priority) ?? 0))
  if (tasks.length !== snapshot.tasks.length) inner.importSnapshot({ ...snapshot, tasks })
}
