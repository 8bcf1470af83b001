/**
 * JobMutations — the job mutation menu: a JobStore that wraps the real one (wrap, don't fork),
 * and for bugs of the group a tap on the world's bus or a wrapper of the membership view an
 * engine routes by, adding one named, deliberate bug. The
 * end-to-end simulator must catch each one within 100 seeds on memory
 * (sim/jobs/jobsWorld.mutations.test.ts): the evidence that the job checkers can fail.
 *
 * - `ackAfterDeadline`: a refused ack, heartbeat, retry or fail is re-issued as if a minute
 *   earlier, so a claim that lapsed (and was not taken since) still accepts it (deadline);
 * - `doubleGrant`: a claim refused because another claim is live is re-issued a day later, so
 *   the job gets a second claim while the first is still valid (one valid claim);
 * - `dropEnqueue`: every fifth enqueue reports the row it would have written without writing
 *   it, so an accepted job is never seen again (none stranded);
 * - `dropHandOver`: the bus loses every hand-over of a job an owner claimed for a forwarded poll
 *   (legal on its own: the claim lapses and the job is delivered again) AND the due-time
 *   bookkeeping believes the lapse was delivered: when a driver reserves such a job it is
 *   confirmed delivered without a Matching task, so the claimed job nobody holds is never
 *   offered again (none stranded);
 * - `stealPartitions`: every engine routes as if it owned every partition of every queue
 *   (membership ignored), while its membership view says otherwise: engines deliver queues they
 *   do not own (owner delivers).
 *
 * Does not: change reads or schedules.
 */
import type { JsonValue } from '../../src/domain/Json.ts'
import type { EngineGroup } from '../../src/jobs/Matchbox.ts'
import type { BusTap } from '../../src/persistence/bus/MemoryBus.ts'
import type { JobRecord, JobStore } from '../../src/persistence/jobs/JobStore.ts'
import { withSequentialBatches } from './SequentialBatches.ts'

/** The deliberate bugs, by name. */
export const jobMutationNames = ['ackAfterDeadline', 'doubleGrant', 'dropEnqueue', 'dropHandOver', 'stealPartitions'] as const

/** One job mutation's name. */
export type JobMutationName = (typeof jobMutationNames)[number]

// Far enough back that every drawn visibility timeout (≤ 30 s) covers a recent lapse.
const backdateMs = 60_000
const dayMs = 24 * 3_600_000
// Rare enough that the run stays healthy to everything but the checkers.
const dropEnqueueEvery = 5

/** A mutation as one world applies it: its job store wrapper and, for bus bugs, the bus tap. */
export interface JobsMutant {
  readonly wrapJobStore: (store: JobStore) => JobStore
  readonly busTap?: BusTap
  /** Wraps the membership view host `hostId`'s engine routes by (the world judges by the unwrapped one). */
  readonly wrapMembership?: (hostId: string, membership: EngineGroup['membership']) => EngineGroup['membership']
}

// The job a hand-over message names, or null for any other message.
function handedOverJob(message: JsonValue): string | null {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return null
  const record = message as { readonly [key: string]: JsonValue }
  return record.kind === 'claimed' && typeof record.jobId === 'string' ? record.jobId : null
}

/** One world's instance of `mutation` (state shared by its store wrappers and its bus tap). */
export function makeJobsMutant(mutation: JobMutationName): JobsMutant {
  const lostHandOvers = new Set<string>()
  if (mutation === 'stealPartitions') {
    return {
      wrapJobStore: (store) => store,
      wrapMembership: (hostId, membership) => ({ ownerOf: () => hostId, subscribe: (listener) => membership.subscribe(listener), hosts: () => membership.hosts() }),
    }
  }
  if (mutation !== 'dropHandOver') return { wrapJobStore: (store) => makeMutantJobStore(store, mutation) }
  return {
    wrapJobStore: (store) => makeMutantJobStore(store, mutation, lostHandOvers),
    busTap(message) {
      const jobId = message.kind === 'host' ? handedOverJob(message.message) : null
      if (jobId === null) return 'deliver'
      lostHandOvers.add(jobId)
      return 'drop'
    },
  }
}

/**
 * Wraps `inner` with one deliberate bug; `lostHandOvers` is what `dropHandOver`'s bus half
 * dropped (empty when the store is wrapped alone).
 */
export function makeMutantJobStore(inner: JobStore, mutation: JobMutationName, lostHandOvers: ReadonlySet<string> = new Set()): JobStore {
  // Batched claims and acks go through the mutant's own claim and ack, so every planted bug applies to them.
  return withSequentialBatches(mutateJobStore(inner, mutation, lostHandOvers))
}

function mutateJobStore(inner: JobStore, mutation: JobMutationName, lostHandOvers: ReadonlySet<string>): JobStore {
  const base: JobStore = {
    kind: inner.kind,
    enqueue: (params, tx) => inner.enqueue(params, tx),
    enqueueMany: (params, tx) => inner.enqueueMany(params, tx),
    getJob: (params) => inner.getJob(params),
    claim: (params) => inner.claim(params),
    heartbeat: (params) => inner.heartbeat(params),
    ack: (params) => inner.ack(params),
    ackBatch: (params) => inner.ackBatch(params),
    claimMany: (params) => inner.claimMany(params),
    claimDue: (params) => inner.claimDue(params),
    ackAndClaimDue: (params) => inner.ackAndClaimDue(params),
    ackMany: (params) => inner.ackMany(params),
    release: (params) => inner.release(params),
    retry: (params) => inner.retry(params),
    fail: (params) => inner.fail(params),
    cancel: (params) => inner.cancel(params),
    sweepExpired: (params) => inner.sweepExpired(params),
    takeDue: (params) => inner.takeDue(params),
    confirmDelivered: (params) => inner.confirmDelivered(params),
    releaseDelivered: (params) => inner.releaseDelivered(params),
    nextDueMs: (params) => inner.nextDueMs(params),
    dueQueues: (params) => inner.dueQueues(params),
    deliverableCount: (params) => inner.deliverableCount(params),
    countJobs: (params) => inner.countJobs(params),
    countQueues: (params) => inner.countQueues(params),
    setProgress: (params) => inner.setProgress(params),
    pauseQueue: (params) => inner.pauseQueue(params),
    resumeQueue: (params) => inner.resumeQueue(params),
    queuePause: (params) => inner.queuePause(params),
    pausedQueues: (params) => inner.pausedQueues(params),
    listJobs: (params) => inner.listJobs(params),
    retryDead: (params) => inner.retryDead(params),
    putSchedule: (params) => inner.putSchedule(params),
    deleteSchedule: (params) => inner.deleteSchedule(params),
    listSchedules: () => inner.listSchedules(),
    acquireLease: (params) => inner.acquireLease(params),
    fireSchedule: (params) => inner.fireSchedule(params),
    close: () => inner.close(),
  }
  switch (mutation) {
    case 'ackAfterDeadline': {
      const earlier = <P extends { readonly nowMs: number }>(params: P): P => ({ ...params, nowMs: params.nowMs - backdateMs })
      return {
        ...base,
        ack: async (params) => (await inner.ack(params)) || inner.ack(earlier(params)),
        heartbeat: async (params) => (await inner.heartbeat(params)) ?? inner.heartbeat(earlier(params)),
        retry: async (params) => (await inner.retry(params)) ?? inner.retry(earlier(params)),
        fail: async (params) => (await inner.fail(params)) || inner.fail(earlier(params)),
      }
    }
    case 'doubleGrant':
      return {
        ...base,
        async claim(params) {
          const outcome = await inner.claim(params)
          return outcome.kind === 'already-started' ? inner.claim({ ...params, nowMs: params.nowMs + dayMs }) : outcome
        },
      }
    case 'dropEnqueue': {
      let enqueues = 0
      return {
        ...base,
        async enqueue(params, tx) {
          if (++enqueues % dropEnqueueEvery !== 0) return inner.enqueue(params, tx)
          const job: JobRecord = { ...params.job, state: 'pending', attempts: 0, createdAtMs: params.nowMs, claimedAtMs: null, claimToken: null, deadlineMs: null, key: params.job.key ?? null, lastError: null, diedAtMs: null, lastHandlerError: null, lastHandlerStack: null, attemptErrors: [], progress: null }
          return job
        },
      }
    }
    case 'dropHandOver':
      return {
        ...base,
        async takeDue(params) {
          const due = await inner.takeDue(params)
          const lost = due.filter((job) => lostHandOvers.has(job.id))
          if (lost.length === 0) return due
          await inner.confirmDelivered({ deliveries: lost.map((job) => ({ id: job.id, revision: job.revision })) })
          return due.filter((job) => !lostHandOvers.has(job.id))
        },
      }
    case 'stealPartitions':
      return base
  }
}

/** For `runJobsSeed({ wrapJobStore })`: wraps each job store the world opens with `mutation` (store bugs; `makeJobsMutant` for all). */
export function wrapJobsWith(mutation: JobMutationName): (store: JobStore) => JobStore {
  return (store) => makeMutantJobStore(store, mutation)
}
