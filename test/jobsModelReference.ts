/**
 * jobsModelReference — the reference model of the jobs model-based test (test/jobsModel.ts):
 * jobs with their state, stamps, claim token and deadline, the contract's predicates written
 * independently of the implementation, and the snapshot `getJob` must return.
 *
 * Ordering keys: the ready time (max(runAt, enqueue time) for a fresh job, the new runAt after a
 * retry, the deadline of a lapsed claim) and the ready sequence (the order in which jobs became
 * ready: enqueue, retry, claim, heartbeat). Claim order is priority DESC, ready time, sequence.
 */
import type { Job, JobHandle, JobQueue, Matchbox, ManualClock, QueueOptions } from '../src/index.ts'

export type State = 'pending' | 'processing' | 'dead'

export interface ModelJob {
  id: string
  queue: string
  state: State | 'gone'
  payload: unknown
  priority: number
  attempts: number
  maxAttempts: number
  visMs: number
  backoffMs: number
  retentionMs: number | null
  createdAt: number
  runAt: number
  claimedAt: number | null
  expiresAt: number | null
  deadline: number | null
  token: string | null
  lastError: string | null
  diedAt: number | null
  readyAt: number
  readySeq: number
}

/** The reference model. */
export interface Model {
  now: number
  seq: number
  jobs: ModelJob[]
  /** Claims taken, by handle index: the job and the token. */
  claims: Array<{ job: ModelJob; token: string }>
}

/** The system under test. */
export interface Real {
  mb: Matchbox
  clock: ManualClock
  queues: Record<string, JobQueue[]>
  handles: JobHandle[]
}

export const queueNames = ['a', 'b'] as const
/** Queue option variants a command picks from (index 0: the defaults). */
export const variants: ReadonlyArray<QueueOptions | undefined> = [
  undefined,
  { visibilityTimeoutS: 10, maxAttempts: 1, backoffBaseS: 1, deadLetterRetentionS: 60 },
  { visibilityTimeoutS: 45, maxAttempts: 2, backoffBaseS: 0.5, deadLetterRetentionS: 0 },
]
export const stampsOf = (variant: number) => {
  const options = variants[variant] ?? {}
  return {
    visMs: (options.visibilityTimeoutS ?? 300) * 1000,
    maxAttempts: options.maxAttempts ?? 3,
    backoffMs: (options.backoffBaseS ?? 5) * 1000,
    retentionMs: options.deadLetterRetentionS === undefined || options.deadLetterRetentionS === null ? null : options.deadLetterRetentionS * 1000,
  }
}

export const isLive = (job: ModelJob) => job.state === 'pending' || job.state === 'processing'
export const isExpired = (job: ModelJob, now: number) => job.expiresAt !== null && job.expiresAt <= now
export const isValid = (job: ModelJob, token: string, now: number) => job.state === 'processing' && job.token === token && now < (job.deadline as number)
export const isClaimable = (job: ModelJob, now: number) =>
  isLive(job) && !isExpired(job, now) && job.attempts < job.maxAttempts && ((job.state === 'pending' && job.runAt <= now) || (job.state === 'processing' && (job.deadline as number) <= now))
export const isExhausted = (job: ModelJob, now: number) =>
  job.state === 'processing' && (job.deadline as number) <= now && job.attempts >= job.maxAttempts && (job.expiresAt === null || job.expiresAt > (job.deadline as number))

export const die = (job: ModelJob, lastError: string, diedAt: number) => Object.assign(job, { state: 'dead', lastError, diedAt, token: null, deadline: null })

export function applyExhaustion(model: Model): void {
  for (const job of model.jobs) if (isExhausted(job, model.now)) die(job, 'max attempts exceeded', job.deadline as number)
}

export function snapshot(job: ModelJob): Job | null {
  if (job.state === 'gone') return null
  return {
    id: job.id,
    queue: job.queue,
    state: job.state,
    payload: job.payload as never,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    priority: job.priority,
    createdAt: job.createdAt,
    runAt: job.runAt,
    claimedAt: job.claimedAt,
    expiresAt: job.expiresAt,
    visibilityTimeoutS: job.visMs / 1000,
    backoffBaseS: job.backoffMs / 1000,
    deadLetterRetentionS: job.retentionMs === null ? null : job.retentionMs / 1000,
    ...(job.lastError === null ? {} : { lastError: job.lastError }),
    ...(job.diedAt === null ? {} : { diedAt: job.diedAt }),
  }
}
