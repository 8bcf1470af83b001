/**
 * MemoryJobPauses — pausing and resuming queues on the memory job store (JobStore.ts's "Paused
 * queues"). The map of paused queues belongs to the store's state record (MemoryJobRows.ts),
 * which every claim reads in the same synchronous step as the claim; this module only changes
 * and lists it.
 *
 * Invariants: inputs validated first; each operation completes synchronously inside its promise.
 */
import { checkListLimit, checkName, checkTime } from './JobInput.ts'
import type { JobStore } from './JobStore.ts'

/**
 * The pause operations over `paused` (queue → paused at). `rearm(queue, nowMs)` makes the
 * queue's pending rows whose task went to Matching due at `nowMs` (the store's rows, its to change).
 */
export function makeMemoryJobPauses(paused: Map<string, number>, rearm: (queue: string, nowMs: number) => void): Pick<JobStore, 'pauseQueue' | 'resumeQueue' | 'queuePause' | 'pausedQueues'> {
  return {
    async pauseQueue(params) {
      const queue = checkName('queue', params.queue)
      const nowMs = checkTime('nowMs', params.nowMs)
      if (paused.has(queue)) return false
      paused.set(queue, nowMs)
      return true
    },
    async resumeQueue(params) {
      const queue = checkName('queue', params.queue)
      const nowMs = checkTime('nowMs', params.nowMs)
      if (!paused.delete(queue)) return false
      rearm(queue, nowMs)
      return true
    },
    async queuePause(params) {
      const pausedAtMs = paused.get(checkName('queue', params.queue))
      return pausedAtMs === undefined ? null : { pausedAtMs }
    },
    async pausedQueues(params) {
      const limit = checkListLimit('limit', params.limit)
      return [...paused]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .slice(0, limit)
        .map(([queue, pausedAtMs]) => ({ queue, pausedAtMs }))
    },
  }
}
