/**
 * MemoryJobAdmin — the admin reads of the memory job store (MemoryJobStore.ts): counts per queue
 * and state, and keyset pages of one state, as persistence/jobs/sql/SqlJobAdmin.ts answers them.
 * Reads only: it sees the store's rows through the two functions it is given and copies what it
 * returns.
 */
import { checkListLimit, checkName, checkState } from './JobInput.ts'
import type { JobRecord, JobStore } from './JobStore.ts'
import { copy } from './MemoryJobRows.ts'

/** The admin reads over `live` (pending and processing jobs) and `dead` jobs. */
export function makeMemoryJobAdmin(live: () => ReadonlyArray<JobRecord>, dead: () => Iterable<JobRecord>): Pick<JobStore, 'countJobs' | 'countQueues' | 'listJobs'> {
  return {
    async countJobs(params) {
      const queue = checkName('queue', params.queue)
      const counts = { pending: 0, processing: 0, dead: 0 }
      for (const job of live()) if (job.queue === queue) counts[job.state as 'pending' | 'processing']++
      for (const job of dead()) if (job.queue === queue) counts.dead++
      return counts
    },

    async countQueues(params) {
      const limit = checkListLimit('limit', params.limit)
      const counts = new Map<string, { pending: number; processing: number; dead: number }>()
      const of = (queue: string) => {
        const known = counts.get(queue)
        if (known !== undefined) return known
        const fresh = { pending: 0, processing: 0, dead: 0 }
        counts.set(queue, fresh)
        return fresh
      }
      for (const job of live()) of(job.queue)[job.state as 'pending' | 'processing']++
      for (const job of dead()) of(job.queue).dead++
      return [...counts]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .slice(0, limit)
        .map(([queue, count]) => ({ queue, ...count }))
    },

    async listJobs(params) {
      const queue = checkName('queue', params.queue)
      const state = checkState('state', params.state)
      const limit = checkListLimit('limit', params.limit)
      const afterId = params.afterId === null ? null : checkName('afterId', params.afterId)
      const pool = state === 'dead' ? [...dead()] : live()
      return pool
        .filter((job) => job.queue === queue && job.state === state && (afterId === null || job.id > afterId))
        .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        .slice(0, limit)
        .map(copy)
    },
  }
}
