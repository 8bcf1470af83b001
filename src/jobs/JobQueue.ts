/**
 * JobQueue — the queue handle users hold (`mb.queue(name, options)`, `mb.outbox(name)`):
 * enqueue, claim, getJob, cancel, ackBatch, sweepExpired and work.
 *
 * Claim (lazy-correct): every claim first runs the due-time driver at the clock's current time,
 * so a job whose runAt arrived or whose claim lapsed has its task with Matching even if no timer
 * fired. It then polls Matching only when the store shows more deliverable jobs of this queue
 * than this engine already has polls in flight for — so a poll always has a task to take and
 * never waits on a timer — and otherwise waits (up to `waitMs`) for the driver to deliver.
 * History's claim decides; the poll hands back the claimed job.
 *
 * Invariants: every input is validated before anything is written (`InvalidInput`); every job
 * is stamped with this handle's resolved options at enqueue; with `tx` the insert is a plain
 * statement on the caller's transaction and the driver finds the row once it commits.
 *
 * Does not: sweep on its own (seed 004 §6: only `sweepExpired` does, when called).
 */
import { InvalidInput } from '../domain/errors.ts'
import { validateJson } from '../domain/Json.ts'
import { ackBatchSizeMax, claimPollWaitMs, claimRefusalsMax, claimRetryDelayMs, claimWaitMsMax } from '../kernel/Limits.ts'
import { randomId } from '../kernel/Ids.ts'
import type { JobStamps, NewJob } from '../persistence/jobs/JobStore.ts'
import { jobsNamespace } from './DueDriver.ts'
import { type Job, type JobHandle, makeJobHandle, toJob } from './JobHandle.ts'
import { claimedJobOf } from './JobsHistory.ts'
import { type EnqueueOptions, resolveEnqueueOptions } from './QueueOptions.ts'
import { claimStateOf, type JobsRuntime } from './Runtime.ts'
import { startWorkers, type WorkOptions } from './Worker.ts'

/** A queue handle. Every method rejects with a typed Matchbox error on bad input or an unavailable store. */
export interface JobQueue {
  /** The queue's name (an outbox's is `outbox:<name>`). */
  readonly name: string
  /** Enqueues `payload` (plain JSON); returns the new job's id. */
  enqueue(payload: unknown, options?: EnqueueOptions): Promise<string>
  /** Claims the next job in claim order (priority DESC, runAt ASC, enqueue order), waiting up to `waitMs` (default 0). */
  claim(options?: { readonly waitMs?: number }): Promise<JobHandle | null>
  /** The job in any state, dead included; null when acked, cancelled, purged or unknown. */
  getJob(id: string): Promise<Job | null>
  /** Deletes a pending or processing job, whoever holds it; false for dead or unknown jobs. */
  cancel(id: string): Promise<boolean>
  /** Acks many claims at once, each under the validity predicate; returns how many were acked. */
  ackBatch(jobs: ReadonlyArray<Pick<JobHandle, 'id' | 'claimToken'>>): Promise<number>
  /** Moves jobs past expiresAt (pending and processing) to dead and purges dead jobs past retention. */
  sweepExpired(): Promise<{ readonly dead: number; readonly purged: number }>
  /** Runs `handler` on claimed jobs: return → ack, throw → retry(err); heartbeats for it. Returns `stop`. */
  work(handler: (job: JobHandle) => Promise<unknown>, options?: WorkOptions): () => Promise<void>
}

/**
 * Claims the next job of `queue` (see the file header); null when none came within `waitMs`.
 * `lazy` (the public `claim`) runs a due-time pass first; workers pass false and rely on the
 * driver's timers and scan, which wake them, so they do not queue a pass per job.
 */
export async function claimNext(runtime: JobsRuntime, queue: string, waitMs: number, lazy: boolean, isStopped: () => boolean = () => false): Promise<JobHandle | null> {
  const deadlineMs = runtime.now() + waitMs
  const state = claimStateOf(runtime, queue)
  let refusals = 0
  let passNeeded = true
  for (;;) {
    runtime.refuseIfClosed()
    // Woken by a delivery, the pass that delivered has just run: no need for another.
    if (passNeeded && lazy) await runtime.driver.run()
    else await runtime.driver.runIfDue()
    const deliverable = await runtime.jobStore.deliverableCount({ queue, nowMs: runtime.now(), limit: state.inFlight + 1 })
    if (deliverable > state.inFlight && !isStopped()) {
      state.inFlight++
      // Never wait on Matching past the claim's own deadline: claim({ waitMs: 0 }) returns promptly.
      const pollWaitMs = Math.max(0, Math.min(claimPollWaitMs, deadlineMs - runtime.now()))
      const pollDeadlineMs = runtime.now() + pollWaitMs
      let polled
      try {
        polled = await runtime.matching.poll({ namespace: jobsNamespace, family: queue, type: 'activity', identity: runtime.hostId, waitMs: pollWaitMs })
      } finally {
        state.inFlight--
        // One claim may have been waiting for this poll's slot.
        runtime.driver.wake(queue, 1)
      }
      if (polled !== null) return makeJobHandle(runtime, claimedJobOf(polled.response))
      // Back before its deadline, the poll was refused: the physical queue was draining (idle
      // unload). Once it has unloaded, the next poll loads a fresh one that reads the backlog.
      if (runtime.now() < pollDeadlineMs && refusals++ < claimRefusalsMax && (await drained(runtime, queue))) continue
      if (runtime.now() >= deadlineMs) return null
      passNeeded = (await runtime.driver.waitForDelivery(queue, Math.min(deadlineMs, runtime.now() + claimRetryDelayMs))) !== 'delivered'
      continue
    }
    if (runtime.now() >= deadlineMs || isStopped()) return null
    passNeeded = (await runtime.driver.waitForDelivery(queue, deadlineMs)) !== 'delivered'
  }
}

// Waits for this family's draining physical queues to unload; false when none was draining.
async function drained(runtime: JobsRuntime, queue: string): Promise<boolean> {
  const draining = runtime.matching
    .loadedPartitions()
    .filter((partition) => partition.partition.namespace === jobsNamespace && partition.partition.family === queue)
    .flatMap((partition) => partition.loadedQueues())
    .filter((physical) => physical.state === 'draining')
  await Promise.all(draining.map((physical) => physical.unloaded))
  return draining.length > 0
}

/** Makes a queue handle over `name` whose jobs carry `stamps`. */
export function makeJobQueue(runtime: JobsRuntime, name: string, stamps: JobStamps): JobQueue {
  const { jobStore } = runtime
  const queue: JobQueue = {
    name,

    async enqueue(payload, options) {
      runtime.refuseIfClosed()
      const resolved = resolveEnqueueOptions(options)
      const nowMs = runtime.now()
      const job: NewJob = {
        id: randomId(runtime.ids),
        queue: name,
        payload: validateJson('payload', payload),
        priority: resolved.priority,
        runAtMs: resolved.runAtMs ?? nowMs,
        expiresAtMs: resolved.expiresAtMs,
        ...stamps,
        maxAttempts: resolved.maxAttempts ?? stamps.maxAttempts,
      }
      const stored = await jobStore.enqueue({ job, nowMs }, resolved.tx)
      // With tx the row is invisible until the caller commits; the driver's scan finds it then.
      runtime.driver.notifyDue(Math.max(stored.runAtMs, nowMs))
      return stored.id
    },

    async claim(options = {}) {
      if (typeof options !== 'object' || options === null) throw new InvalidInput({ field: 'options', reason: 'must be an object' })
      for (const key of Object.keys(options)) if (key !== 'waitMs') throw new InvalidInput({ field: `options.${key}`, reason: 'is not an option (known: waitMs)' })
      const waitMs = options.waitMs ?? 0
      if (typeof waitMs !== 'number' || !Number.isFinite(waitMs) || waitMs < 0 || waitMs > claimWaitMsMax) {
        throw new InvalidInput({ field: 'options.waitMs', reason: `must be a number of ms in 0…${claimWaitMsMax}` })
      }
      return claimNext(runtime, name, waitMs, true)
    },

    async getJob(id) {
      const record = await jobStore.getJob({ queue: name, id })
      return record === null ? null : toJob(record)
    },

    cancel: (id) => jobStore.cancel({ queue: name, id }),

    async ackBatch(jobs) {
      if (!Array.isArray(jobs) || jobs.length > ackBatchSizeMax) {
        throw new InvalidInput({ field: 'jobs', reason: `must be an array of at most ${ackBatchSizeMax} claimed jobs` })
      }
      return jobStore.ackBatch({ claims: jobs.map((job) => ({ id: job?.id, claimToken: job?.claimToken })), nowMs: runtime.now() })
    },

    sweepExpired: () => jobStore.sweepExpired({ queue: name, nowMs: runtime.now() }),

    work(handler, options) {
      runtime.refuseIfClosed()
      return startWorkers(runtime, name, handler, options)
    },
  }
  return queue
}
