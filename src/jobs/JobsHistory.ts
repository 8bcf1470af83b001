/**
 * JobsHistory — Jobs in the History role (DESIGN.md §1, §7): Matching delivers a task that names
 * a job (`task.jobId`, kind `job`); `recordTaskStarted` is the claim, performed atomically by the
 * JobStore. Claims asked for in the same turn share one statement (`claimMany`, MicroBatcher.ts).
 *
 * Answers: `started` with the claimed job (claim token and deadline included) as the response;
 * `already-started` when the job is processing under a live claim (a duplicate task);
 * `obsolete` when it is gone, dead, not yet due, expired, or was just dead-lettered for its
 * budget; `retryable` when the store is unavailable (Matching keeps the delivery and retries).
 *
 * Invariants: every claim attempt draws a fresh claim token from the seeded Random; a claim
 * tells the owner's due-time driver about the new deadline, so a lapse is delivered on time.
 *
 * Does not: pick which job to claim (the task names it) or know about pollers beyond tracing.
 */
import type { History, RecordStartResult } from '../actors/History.ts'
import { isMatchboxError } from '../domain/errors.ts'
import type { JsonValue } from '../domain/Json.ts'
import { assert } from '../kernel/assert.ts'
import type { Clock } from '../kernel/Clock.ts'
import { randomId } from '../kernel/Ids.ts'
import type { Random } from '../kernel/Random.ts'
import type { ClaimOutcome, ClaimRef, JobRecord, JobStore } from '../persistence/jobs/JobStore.ts'
import { jobBatchesInFlightMax, jobBatchSizeMax } from '../kernel/Limits.ts'
import { makeMicroBatcher } from '../kernel/MicroBatcher.ts'

/** What the History role needs. */
export interface JobsHistoryOptions {
  readonly jobStore: JobStore
  readonly clock: Clock
  /** Draws claim tokens. */
  readonly random: Random
  /** Called with every job this History claimed (the engine arms its lapse timer). */
  readonly onClaimed?: (job: JobRecord) => void
}

/** The task kind Jobs adds to Matching; other kinds are obsolete to this History. */
export const jobTaskKind = 'job'

/** Makes the History that claims jobs. */
export function makeJobsHistory(options: JobsHistoryOptions): History {
  // Claims of one turn (a pump dispatching to several waiting pollers) travel in one statement.
  const claim = makeMicroBatcher<ClaimRef, ClaimOutcome>({
    run: (claims) => options.jobStore.claimMany({ claims, nowMs: Math.floor(options.clock.now()) }),
    sizeMax: jobBatchSizeMax,
    inFlightMax: jobBatchesInFlightMax,
  })
  return {
    async recordTaskStarted(task): Promise<RecordStartResult> {
      if (task.kind !== jobTaskKind) return { kind: 'obsolete' }
      let outcome
      try {
        outcome = await claim({ id: task.jobId, claimToken: randomId(options.random) })
      } catch (error) {
        if (isMatchboxError(error) && error.retryable) return { kind: 'retryable', reason: error.message }
        throw error
      }
      switch (outcome.kind) {
        case 'claimed':
          options.onClaimed?.(outcome.job)
          return { kind: 'started', response: outcome.job as unknown as JsonValue }
        case 'already-started':
          return { kind: 'already-started' }
        case 'obsolete':
          return { kind: 'obsolete' }
      }
    },
  }
}

/** The claimed job carried by a `started` response; asserts it is one. */
export function claimedJobOf(response: JsonValue): JobRecord {
  const job = response as unknown as JobRecord
  assert(typeof job === 'object' && job !== null && job.state === 'processing' && typeof job.claimToken === 'string', 'a started job task did not carry a claimed job')
  return job
}
