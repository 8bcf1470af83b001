/**
 * JobsHistory — Jobs in the History role (DESIGN.md §1, §7): Matching delivers a task that names
 * a job (`task.jobId`, kind `job`); `recordTaskStarted` is the claim, performed atomically by the
 * JobStore. Claims asked for in the same turn share one statement per partition they come from
 * (`claimMany`, MicroBatcher.ts), fenced by that partition's range id: a delivery that outlives
 * its partition's ownership (Matching retries a claim the store refused while unreachable) writes
 * nothing once another engine has taken the partition.
 *
 * Answers: `started` with the claimed job (claim token and deadline included) as the response;
 * `already-started` when the job is processing under a live claim (a duplicate task);
 * `obsolete` when it is gone, dead, not yet due, expired, or was just dead-lettered for its
 * budget; `retryable` when the store is unavailable (Matching keeps the delivery and retries) or
 * refused the fence (the partition moved: its new owner delivers the task, and this one's retries
 * end when the partition unloads here).
 *
 * Invariants: every claim attempt draws a fresh claim token from the seeded Random; a claim
 * tells the owner's due-time driver about the new deadline, so a lapse is delivered on time.
 *
 * Does not: pick which job to claim (the task names it) or know about pollers beyond tracing.
 */
import type { History, RecordStartResult, StartOrigin } from '../actors/History.ts'
import { isMatchboxError } from '../domain/errors.ts'
import type { JsonValue } from '../domain/Json.ts'
import { assert } from '../kernel/assert.ts'
import type { Clock } from '../kernel/Clock.ts'
import { randomId } from '../kernel/Ids.ts'
import type { Random } from '../kernel/Random.ts'
import { encodeQueueKey } from '../domain/QueueKey.ts'
import type { ClaimFence, ClaimOutcome, ClaimRef, JobRecord, JobStore } from '../persistence/jobs/JobStore.ts'
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
  /** Called with the queue of every claim refused for a limit (the job is due again later: the engine arms its driver then). */
  readonly onLimited?: (queue: string) => void
  /**
   * Called with the queue of every delivery whose job another claim started first (a claim
   * straight from the store took the row the task was added for) or that is gone (acked,
   * cancelled, dead, not due, expired): the poll it was for still waits, and only a due-time pass
   * gives it one of the rows due behind. Not for a refusal by a limit (`onLimited`) or a pause.
   */
  readonly onStale?: (queue: string) => void
}

/** The task kind Jobs adds to Matching; other kinds are obsolete to this History. */
export const jobTaskKind = 'job'

/** Makes the History that claims jobs. */
export function makeJobsHistory(options: JobsHistoryOptions): History {
  // Claims of one turn (a pump dispatching to several waiting pollers) travel in one statement
  // per partition: the fence is the statement's.
  const claim = makeMicroBatcher<FencedClaim, ClaimOutcome | Error>({
    run: (claims) => claimFenced(options, claims),
    sizeMax: jobBatchSizeMax,
    inFlightMax: jobBatchesInFlightMax,
  })
  return {
    async recordTaskStarted(task, _poller, origin): Promise<RecordStartResult> {
      if (task.kind !== jobTaskKind) return { kind: 'obsolete' }
      let outcome
      try {
        const answer = await claim({ claim: { id: task.jobId, claimToken: randomId(options.random) }, fence: fenceOf(origin) })
        if (answer instanceof Error) throw answer
        outcome = answer
      } catch (error) {
        if (isMatchboxError(error) && (error.retryable || error._tag === 'OwnershipLost')) return { kind: 'retryable', reason: error.message }
        throw error
      }
      switch (outcome.kind) {
        case 'claimed':
          options.onClaimed?.(outcome.job)
          return { kind: 'started', response: outcome.job as unknown as JsonValue }
        case 'already-started':
          options.onStale?.(origin.key.family)
          return { kind: 'already-started' }
        case 'obsolete':
          if (outcome.reason === 'limited') options.onLimited?.(origin.key.family)
          // A paused queue claims nothing, so a pass could serve nobody.
          else if (outcome.reason !== 'paused') options.onStale?.(origin.key.family)
          return { kind: 'obsolete' }
      }
    },
  }
}

interface FencedClaim {
  readonly claim: ClaimRef
  readonly fence: ClaimFence
}

function fenceOf(origin: StartOrigin): ClaimFence {
  return { queueKey: origin.key, rangeId: origin.rangeId }
}

// One `claimMany` per fence among the claims of a batch (almost always one), answers in order. A
// fence refused fails only its own claims.
async function claimFenced(options: JobsHistoryOptions, claims: ReadonlyArray<FencedClaim>): Promise<ReadonlyArray<ClaimOutcome | Error>> {
  const nowMs = Math.floor(options.clock.now())
  const groups = new Map<string, { fence: ClaimFence; at: number[] }>()
  claims.forEach(({ fence }, at) => {
    const name = `${encodeQueueKey(fence.queueKey)}@${fence.rangeId}`
    const group = groups.get(name)
    if (group === undefined) groups.set(name, { fence, at: [at] })
    else group.at.push(at)
  })
  const answers: Array<ClaimOutcome | Error> = Array.from({ length: claims.length })
  await Promise.all(
    [...groups.values()].map(async ({ fence, at }) => {
      try {
        const outcomes = await options.jobStore.claimMany({ claims: at.map((i) => (claims[i] as FencedClaim).claim), nowMs, fence })
        at.forEach((i, k) => (answers[i] = outcomes[k] as ClaimOutcome))
      } catch (error) {
        for (const i of at) answers[i] = error instanceof Error ? error : new Error(String(error))
      }
    }),
  )
  return answers
}

/** The claimed job carried by a `started` response; asserts it is one. */
export function claimedJobOf(response: JsonValue): JobRecord {
  const job = response as unknown as JobRecord
  assert(typeof job === 'object' && job !== null && job.state === 'processing' && typeof job.claimToken === 'string', 'a started job task did not carry a claimed job')
  return job
}
