/**
 * QueueAdmin — what an operator asks of one queue: how many jobs are in each state, which ones
 * (keyset pages by id, dead ones with their errors), bringing a dead job back, and pausing and
 * resuming the queue (the store keeps the pause and every claim statement honours it).
 *
 * `retryDead(id)` does what reading a dead job and enqueueing it afresh would, as ONE store
 * operation, so the job is never lost or doubled in between: the dead row moves back to live storage as a fresh pending job with the SAME id —
 * attempts 0, runnable now, payload, priority, options and key unchanged, its last handler error
 * kept for reference, an expiry already passed dropped. It is refused, changing nothing, while
 * another live job holds the dead job's key.
 *
 * Invariants: inputs are validated before anything is read or written (`InvalidInput` naming
 * the field); a revived job is announced to the due-time driver like an enqueue.
 */
import { InvalidInput } from '../domain/errors.ts'
import type { JsonValue } from '../domain/Json.ts'
import { validateName } from '../domain/QueueKey.ts'
import { jobListLimitMax } from '../kernel/Limits.ts'
import type { JobCounts, JobState } from '../persistence/jobs/JobStore.ts'
import { type Job, toJob } from './JobHandle.ts'
import type { JobsRuntime } from './Runtime.ts'

/** Options of `queue.list`. */
export interface ListOptions {
  /** Which jobs (default 'pending'). */
  readonly state?: JobState
  /** Page size, 1…1000 (default 100). */
  readonly limit?: number
  /** The `next` of the previous page: jobs with a greater id (default: from the start). */
  readonly after?: string
}

/** One page of `queue.list`, in id order. */
export interface JobPage<T = JsonValue> {
  readonly jobs: ReadonlyArray<Job<T>>
  /** Pass as `after` for the next page; null when this page was the last. */
  readonly next: string | null
}

/** What `queue.retryDead` did. */
export type RetryDeadResult<T = JsonValue> =
  | { readonly retried: true; readonly job: Job<T> }
  | { readonly retried: false; readonly reason: 'not-dead' }
  | { readonly retried: false; readonly reason: 'key-taken'; readonly liveId: string }

/** The admin operations of one queue. */
export interface QueueAdmin<T = JsonValue> {
  /** How many jobs are pending, processing (lapsed claims included) and dead. */
  counts(): Promise<JobCounts>
  /** One page of the jobs in `state`, by id; dead jobs carry `lastError` and `lastHandlerError`. */
  list(options?: ListOptions): Promise<JobPage<T>>
  /**
   * Moves dead job `id` back as a fresh pending job with the same id, atomically. `not-dead`
   * when no dead job has that id in this queue; `key-taken` when a live job holds its key.
   */
  retryDead(id: string): Promise<RetryDeadResult<T>>
  /**
   * Pauses the queue, for every engine on the store: it keeps accepting enqueues, and no engine
   * claims a job of it from the moment this resolves — the store checks the pause inside every
   * claim statement, so the bound across processes is one claim statement already in flight.
   * Handlers already running finish (their acks, retries and heartbeats still apply). True
   * when the queue was running; pausing a paused queue changes nothing.
   */
  pause(): Promise<boolean>
  /** Ends the pause: its jobs are delivered again at once (the due signal reaches every engine). True when it was paused. */
  resume(): Promise<boolean>
  /** Whether the queue is paused now (by any process). */
  isPaused(): Promise<boolean>
}

/** Default page size of `list`. */
const listLimitDefault = 100

const listKeys = ['state', 'limit', 'after']

/** Validates `list`'s options. */
function resolveListOptions(options: unknown): { state: JobState; limit: number; afterId: string | null } {
  if (options === undefined) return { state: 'pending', limit: listLimitDefault, afterId: null }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new InvalidInput({ field: 'options', reason: 'must be an object' })
  for (const key of Object.keys(options)) if (!listKeys.includes(key)) throw new InvalidInput({ field: `options.${key}`, reason: `is not an option (known: ${listKeys.join(', ')})` })
  const given = options as ListOptions
  // Left out means the default; null is refused like any other value that is not an option's.
  const state = given.state === undefined ? 'pending' : given.state
  if (state !== 'pending' && state !== 'processing' && state !== 'dead') throw new InvalidInput({ field: 'options.state', reason: "must be 'pending', 'processing' or 'dead'" })
  const limit = given.limit === undefined ? listLimitDefault : given.limit
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > jobListLimitMax) {
    throw new InvalidInput({ field: 'options.limit', reason: `must be an integer in 1…${jobListLimitMax}` })
  }
  return { state, limit, afterId: given.after === undefined ? null : validateName('options.after', given.after) }
}

/** The admin operations of queue `name`. */
export function makeQueueAdmin<T = JsonValue>(runtime: JobsRuntime, name: string): QueueAdmin<T> {
  const { jobStore } = runtime
  return {
    async counts() {
      runtime.refuseIfStoresClosed()
      return jobStore.countJobs({ queue: name })
    },

    async list(options) {
      runtime.refuseIfStoresClosed()
      const { state, limit, afterId } = resolveListOptions(options)
      const records = await jobStore.listJobs({ queue: name, state, limit, afterId })
      const last = records.at(-1)
      return { jobs: records.map((record) => toJob<T>(record)), next: records.length === limit && last !== undefined ? last.id : null }
    },

    async retryDead(id) {
      runtime.refuseIfClosed()
      const outcome = await jobStore.retryDead({ queue: name, id: validateName('id', id), nowMs: runtime.now() })
      switch (outcome.kind) {
        case 'retried':
          runtime.announceDue(name, outcome.job.runAtMs, true)
          return { retried: true, job: toJob<T>(outcome.job) }
        case 'not-dead':
          return { retried: false, reason: 'not-dead' }
        case 'key-taken':
          return { retried: false, reason: 'key-taken', liveId: outcome.liveId }
      }
    },

    async pause() {
      runtime.refuseIfClosed()
      return jobStore.pauseQueue({ queue: name, nowMs: runtime.now() })
    },

    async resume() {
      runtime.refuseIfClosed()
      const nowMs = runtime.now()
      const resumed = await jobStore.resumeQueue({ queue: name, nowMs })
      if (resumed) runtime.announceDue(name, nowMs, true)
      return resumed
    },

    async isPaused() {
      runtime.refuseIfStoresClosed()
      return (await jobStore.queuePause({ queue: name })) !== null
    },
  }
}
