/**
 * SimStore — the Store one simulated host sees. Every call is parked in the IoGate until the
 * world runs it; when it commits, it is reported to the boundary log (for the checkers) before
 * the host hears back. Wrap, don't fork: the store underneath is the real one (memory, PGlite
 * or PostgreSQL), possibly wrapped by a mutant (sim/matching/Mutations.ts).
 */
import { encodeQueueKey, type QueueKey } from '../../src/domain/QueueKey.ts'
import type { Store } from '../../src/persistence/queues/Store.ts'
import type { BoundaryListener } from './Boundary.ts'
import type { IoGate } from '../core/IoGate.ts'

/** Rows a checkpoint is about to delete, read just before it runs (simulation only). */
async function rowsAtOrBelow(inner: Store, key: QueueKey, subqueue: number, ackLevel: number): Promise<string[]> {
  const jobIds: string[] = []
  let afterTaskId = 0
  for (;;) {
    const page = await inner.read({ key, subqueue, afterTaskId, limit: 1_000 })
    for (const stored of page) if (stored.taskId <= ackLevel) jobIds.push(stored.task.jobId)
    const last = page.at(-1)
    if (last === undefined || last.taskId >= ackLevel || page.length < 1_000) return jobIds
    afterTaskId = last.taskId
  }
}

/** A host's view of the shared store, through the gate. */
export function makeSimStore(hostId: string, inner: Store, gate: IoGate, record: BoundaryListener): Store {
  const q = encodeQueueKey
  return {
    kind: inner.kind,
    acquire: (params) =>
      gate.park(hostId, `acquire ${q(params.key)}`, true, async () => {
        const metadata = await inner.acquire(params)
        record({ op: 'acquire', hostId, queue: q(params.key), metadata })
        return metadata
      }),
    append: (params) =>
      gate.park(hostId, `append ${q(params.key)} r${params.rangeId} ×${params.tasks.length}`, true, async () => {
        const result = await inner.append(params)
        const taskIds = Array.from({ length: params.tasks.length }, (_, i) => result.firstTaskId + i)
        record({ op: 'append', hostId, queue: q(params.key), rangeId: params.rangeId, taskIds, jobIds: params.tasks.map((task) => task.jobId) })
        return result
      }),
    read: (params) =>
      gate.park(hostId, `read ${q(params.key)}/${params.subqueue} >${params.afterTaskId}`, false, () => inner.read(params)),
    checkpoint: (params) =>
      gate.park(hostId, `checkpoint ${q(params.key)} r${params.rangeId} ${params.ackLevels.map((l) => `${l.subqueue}:${l.ackLevel}`).join(',')}`, true, async () => {
        const doomed: string[] = []
        for (const level of params.ackLevels) doomed.push(...(await rowsAtOrBelow(inner, params.key, level.subqueue, level.ackLevel)))
        let result: Awaited<ReturnType<Store['checkpoint']>>
        try {
          result = await inner.checkpoint(params)
        } catch (error) {
          // A refused write must change nothing: look again at the rows it would have deleted.
          if ((error as { _tag?: string })._tag === 'OwnershipLost' && doomed.length > 0) {
            const kept = new Set<string>()
            for (const level of params.ackLevels) for (const jobId of await rowsAtOrBelow(inner, params.key, level.subqueue, level.ackLevel)) kept.add(jobId)
            const deletedJobIds = doomed.filter((jobId) => !kept.has(jobId))
            if (deletedJobIds.length > 0) record({ op: 'refusedCheckpoint', hostId, queue: q(params.key), rangeId: params.rangeId, deletedJobIds })
          }
          throw error
        }
        record({ op: 'checkpoint', hostId, queue: q(params.key), rangeId: params.rangeId, ackLevels: params.ackLevels, metadata: result.metadata, deletedJobIds: doomed })
        return result
      }),
    relocate: (params) =>
      gate.park(hostId, `relocate ${q(params.from)} → ${q(params.to)} ×${params.taskIds.length}`, true, async () => {
        const moved = await inner.relocate(params)
        record({ op: 'relocate', hostId, from: q(params.from), fromRangeId: params.fromRangeId, to: q(params.to), toRangeId: params.toRangeId, moved: moved.length })
        return moved
      }),
    inspect: (key) => gate.park(hostId, `inspect ${q(key)}`, false, () => inner.inspect(key)),
    list: (filter) => gate.park(hostId, 'list', false, () => inner.list(filter)),
    getUserData: (params) => gate.park(hostId, `userData.get ${params.namespace}/${params.family}`, false, () => inner.getUserData(params)),
    updateUserData: (params) =>
      gate.park(hostId, `userData.update ${params.namespace}/${params.family} v${params.expectedVersion}`, true, async () => {
        const family = `${params.namespace}/${params.family}`
        try {
          const updated = await inner.updateUserData(params)
          record({ op: 'userData', hostId, family, expectedVersion: params.expectedVersion, outcome: updated.version })
          return updated
        } catch (error) {
          if ((error as { _tag?: string })._tag === 'VersionConflict') record({ op: 'userData', hostId, family, expectedVersion: params.expectedVersion, outcome: 'conflict' })
          throw error
        }
      }),
    close: async () => {},
  }
}
