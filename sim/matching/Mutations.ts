/**
 * Mutations — the mutation menu: a Store that wraps the real store (wrap, don't fork) and adds
 * one named, deliberate bug. The simulator must catch each one within 100 seeds on memory
 * (sim/matching/mutations.test.ts): that is the evidence that its checkers can fail.
 *
 * Store-side mutants wrap the shared store, under the boundary log (a broken database);
 * host-side mutants wrap each host process's gated store, above it (a broken client in the
 * host: the boundary log records what the store answered, the host hears the mutant); the one
 * book mutant replaces each host's book of waiting polls.
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
 *   re-issuing the checkpoint under the current range) (fencing at the boundary);
 * - `relocateLosesRow`: a relocation moves its rows but the last one never arrives (on memory
 *   it is removed from the destination; elsewhere it is left in the source while reported
 *   moved) (relocation);
 * - `checkpointDeletesOneMore`: a checkpoint also deletes the first row above the ack level it
 *   asked for (memory only: a snapshot edit) (ack safety from rows);
 * - `writeAfterOwnershipLost` (host-side): the host hears `OwnershipLost` on an append or
 *   checkpoint as a retryable `Unavailable` (nothing committed), so the instance retries its
 *   stale writes instead of unloading (ownership loss: writes after the loss);
 * - `reacquireWithoutBackoff` (host-side): on hearing `OwnershipLost` on an append or checkpoint
 *   the host takes the queue back at once, as a host that forgot its restart delay would
 *   (ownership loss: restart back-off);
 * - `idleMovesOffReady` (host-side, the host's book of waiting polls): a poll idle in its
 *   version's queue moves to another partition although its partition's default queue, where it
 *   waits too, has a task ready; it chooses its partition again for that task and is moved again,
 *   at one instant without end (BoundedMoves.ts reports the livelock);
 * - `relocateHeardRefused` (host-side): the host hears every relocation that committed as an
 *   outage that wrote nothing (`Unavailable`, not maybe committed), as a client that lost the
 *   answer and guessed wrong would: a version's retirement fails without telling the default
 *   queue about the rows it moved there, and a default queue that has read that subqueue to its
 *   end never reads them while it stays loaded (at-least-once).
 *
 * Mutant state (counters, reported ids) lives in the wrapper: on memory the world shares one
 * wrapper, on PostgreSQL each host's pool gets its own, so cross-host mutants see only their
 * host's calls there.
 *
 * Does not: change reads, acquire results or user data.

 */
import { type OwnershipLost, Unavailable } from '../../src/domain/errors.ts'
import { encodeQueueKey, type QueueKey } from '../../src/domain/QueueKey.ts'
import type { MemoryStore } from '../../src/persistence/queues/MemoryStore.ts'
import type { MemorySnapshotTask } from '../../src/persistence/queues/MemorySnapshot.ts'
import type { AppendResult, CheckpointResult, Store } from '../../src/persistence/queues/Store.ts'
import { type HostWaitingPolls, makeHostWaitingPolls } from '../../src/actors/MatchingHostWaiting.ts'

/** The deliberate bugs, by name. */
export const mutationNames = [
  'skipRangeCheck',
  'checkpointPastPrefix',
  'dropAppend',
  'reuseIdsAfterTakeover',
  'staleCheckpointDeletes',
  'relocateLosesRow',
  'checkpointDeletesOneMore',
  'writeAfterOwnershipLost',
  'reacquireWithoutBackoff',
  'idleMovesOffReady',
  'relocateHeardRefused',
] as const

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

/** A store that forwards every call to `inner`. */
function forwarding(inner: Store): Store {
  return {
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
}

/** Wraps `inner` (the shared store) with one store-side bug; host-side mutations leave it as is. */
export function makeMutantStore(inner: Store, mutation: MutationName): Store {
  const base = forwarding(inner)
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
    case 'relocateLosesRow':
      return {
        ...base,
        async relocate(params) {
          if (!isMemoryStore(inner)) return [...(await inner.relocate({ ...params, taskIds: params.taskIds.slice(0, -1) })), ...params.taskIds.slice(-1).map((id) => ({ fromTaskId: id, toTaskId: 0 }))]
          const moved = await inner.relocate(params)
          const lost = moved.at(-1)
          const to = encodeQueueKey(params.to)
          if (lost !== undefined) removeRows(inner, (row) => row.queue === to && row.taskId === lost.toTaskId)
          return moved
        },
      }
    case 'checkpointDeletesOneMore':
      return {
        ...base,
        async checkpoint(params): Promise<CheckpointResult> {
          const result = await inner.checkpoint(params)
          if (!isMemoryStore(inner)) return result
          for (const level of params.ackLevels) {
            const [next] = await inner.read({ key: params.key, subqueue: level.subqueue, afterTaskId: level.ackLevel, limit: 1 })
            if (next === undefined) continue
            const queue = encodeQueueKey(params.key)
            removeRows(inner, (row) => row.queue === queue && row.taskId === next.taskId)
            break
          }
          return result
        },
      }
    case 'writeAfterOwnershipLost':
    case 'reacquireWithoutBackoff':
    case 'idleMovesOffReady':
    case 'relocateHeardRefused':
      return inner
  }
}

/** Wraps the gated store of one host process with one host-side bug; store-side mutations leave it as is. */
export function makeMutantHostStore(gated: Store, mutation: MutationName): Store {
  switch (mutation) {
    case 'writeAfterOwnershipLost': {
      const asOutage = (operation: string) => (error: unknown) => {
        throw isOwnershipLost(error) ? new Unavailable({ operation, detail: 'mutant: OwnershipLost heard as an outage', maybeCommitted: false }) : error
      }
      return { ...forwarding(gated), append: (params) => gated.append(params).catch(asOutage('append')), checkpoint: (params) => gated.checkpoint(params).catch(asOutage('checkpoint')) }
    }
    case 'reacquireWithoutBackoff': {
      const takeBack = (key: QueueKey, nowMs: number) => (error: unknown) => {
        if (isOwnershipLost(error)) void gated.acquire({ key, nowMs }).catch(() => undefined)
        throw error
      }
      return { ...forwarding(gated), append: (params) => gated.append(params).catch(takeBack(params.key, params.nowMs)), checkpoint: (params) => gated.checkpoint(params).catch(takeBack(params.key, params.nowMs)) }
    }
    case 'relocateHeardRefused':
      return {
        ...forwarding(gated),
        async relocate(params) {
          await gated.relocate(params)
          throw new Unavailable({ operation: 'relocate', detail: 'mutant: a committed relocation heard as one that wrote nothing', maybeCommitted: false })
        },
      }
    default:
      return gated
  }
}

/** For `runSeed({ ...mutate(mutation) })`: the store wrappers (and host's book of waiting polls) that plant `mutation`. */
export function mutate(mutation: MutationName): {
  readonly wrapStore: (store: Store) => Store
  readonly wrapHostStore: (hostId: string, store: Store) => Store
  readonly waitingPolls?: () => HostWaitingPolls
} {
  return {
    wrapStore: (store) => makeMutantStore(store, mutation),
    wrapHostStore: (_hostId, store) => makeMutantHostStore(store, mutation),
    ...(mutation === 'idleMovesOffReady' ? { waitingPolls: movesOffReady } : {}),
  }
}

// The host's book, blind to a task ready in a poll's other queue on its partition: an idle poll
// moves to another partition even so, where it chooses its own partition again for that task.
function movesOffReady(): HostWaitingPolls {
  const book = makeHostWaitingPolls()
  return { ...book, add: (key, poll) => book.add(key, { ...poll, readyHere: () => false }) }
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
  removeRows(inner, (row) => row.queue === queue && row.taskId <= (levels.get(row.task.priority) ?? 0))
}

// Removes the rows `doomed` picks from a memory store, as a DELETE outside any fence would.
function removeRows(inner: MemoryStore, doomed: (row: MemorySnapshotTask) => boolean): void {
  const snapshot = inner.exportSnapshot()
  const tasks = snapshot.tasks.filter((row) => !doomed(row))
  if (tasks.length !== snapshot.tasks.length) inner.importSnapshot({ ...snapshot, tasks })
}
