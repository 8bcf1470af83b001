/**
 * StoreClaims — the claims an engine takes straight from the store for the queues it delivers
 * (the jobs table is the backlog; Claimer.ts says when a claim goes this way), and the acks that
 * ride on them:
 *
 * - `claimDirect`: the head due job for one claim; the claims of one turn share one statement,
 *   and so do the acks of work loops whose next claim goes this way (`ackAndClaimNext`);
 * - `claimSeveral`: up to a local queue's free room in one statement, with the acks of the jobs
 *   its handlers finished meanwhile (`work({ batch })`, LocalQueue.ts).
 *
 * Every path keeps Claimer.ts's ordering rules: nothing is claimed while the queue is drained or
 * while a due-time pass is on its way; a short answer
 * marks the queue drained unless a pass started meanwhile. An ack that rides behaves as
 * `job.ack()` (JobHandle.ts's `ackWith`); a failed statement fails its acks with its claims.
 */
import { randomId } from '../kernel/Ids.ts'
import { jobBatchesInFlightMax, jobBatchSizeMax } from '../kernel/Limits.ts'
import { makeMicroBatcher } from '../kernel/MicroBatcher.ts'
import { isMatchboxError } from '../domain/errors.ts'
import type { ClaimFence, ClaimRef, JobRecord } from '../persistence/jobs/JobStore.ts'
import type { Random } from '../kernel/Random.ts'
import { ackAlone, ackHookOf, ackWith, type JobHandle } from './JobHandle.ts'
import type { DirectClaims, HeadStatement, QueueDispatch } from './Dispatch.ts'
import { jobsNamespace, jobTaskType } from './QueueRouting.ts'
import type { AckHook, JobsRuntime } from './Runtime.ts'

/**
 * `count` claim tokens for one claim statement: one random id drawn for them all, and each token
 * that id and its index. They differ from each other by the index and from every other
 * statement's by the id (≈103 bits), at one draw instead of one per token: a due-time pass asks
 * for a token per waiting worker, and usually claims one job.
 */
export function claimTokensFor(random: Random, count: number): string[] {
  const base = randomId(random)
  return Array.from({ length: count }, (_, index) => `${base}.${index.toString(36)}`)
}

/**
 * The head due job of `queue`, claimed straight from the store for a claim this engine serves
 * (its own, or a poll forwarded here); the claims of one turn share one `claimDue` statement.
 * Null without a statement when this engine does not deliver the queue, when `served()` says
 * the claim got a job meanwhile, or while the queue is `drained`: the last direct claim found no
 * due row, and no due-time pass over the queue has started since. Rows become due through a pass
 * (a due time's timer, a due signal, the scan), which serves the claims waiting by then, so an
 * idle poll costs no statement.
 */
export async function claimDirect(runtime: JobsRuntime, dispatch: QueueDispatch, served: () => boolean = () => false): Promise<JobRecord | null> {
  const { queue } = dispatch
  if (dispatch.isDrained() || !runtime.routing.owns(queue)) return null
  // A pass on its way may be adding older jobs to Matching, which come first: let it finish
  // (only the passes asked for so far: under a stream of due signals there is always a next one).
  if (!runtime.driver.isQuiet()) await runtime.driver.settled()
  if (served()) return null
  return (await directOf(runtime, dispatch)(null)).job
}

/**
 * `claimDirect` without its waits: the head due job of `queue` for a claim out of line, now,
 * unless this engine no longer delivers the queue. For a claim that has already waited for the
 * passes asked for before it and gives back what it was handed (Claimer.ts's `headOfBoth`).
 */
export async function claimDirectNow(runtime: JobsRuntime, dispatch: QueueDispatch): Promise<JobRecord | null> {
  if (!runtime.routing.owns(dispatch.queue)) return null
  return (await directOf(runtime, dispatch)(null)).job
}

// The queue's direct-claim batcher: the claims of one turn, and the acks riding on them, in one
// statement. An ack whose job is already in the batch (two claims of one job on this engine) and
// the acks of a batch that cannot claim (ownership moved while it waited) go alone; one of those
// that fails answers false (its job lapses and is delivered again) rather than failing the
// claims beside it.
function directOf(runtime: JobsRuntime, dispatch: QueueDispatch): DirectClaims {
  const { queue } = dispatch
  return dispatch.directClaims(() => makeMicroBatcher<AckHook | null, { readonly acked: boolean; readonly job: JobRecord | null }>({
    async run(requests) {
      const ids = new Set<string>()
      const riding: AckHook[] = []
      const alone = new Set<AckHook>()
      for (const hook of requests) {
        if (hook === null) continue
        if (ids.has(hook.ref.id) || !runtime.routing.owns(queue)) alone.add(hook)
        else {
          ids.add(hook.ref.id)
          riding.push(hook)
        }
      }
      const answer = !runtime.routing.owns(queue)
        ? { acked: [], claimed: [] }
        : riding.length === 0
          ? await claimHead(runtime, dispatch, requests.length)
          : await ackWith(runtime, riding, (refs, nowMs) => claimHead(runtime, dispatch, requests.length, { refs, nowMs }))
      const acked = new Set(answer.acked)
      const answers: Array<{ readonly acked: boolean; readonly job: JobRecord | null }> = []
      for (const [index, hook] of requests.entries()) {
        const job = answer.claimed[index] ?? null
        if (hook === null || !alone.has(hook)) answers.push({ acked: hook !== null && acked.has(hook.ref.id), job })
        else answers.push({ acked: await ackAlone(runtime, hook).catch(() => false), job })
      }
      return answers
    },
    sizeMax: jobBatchSizeMax,
    inFlightMax: jobBatchesInFlightMax,
  }))
}

// Claims up to `count` head due rows of `queue` for this engine in one statement, with `acks` if
// given (the ids the statement deleted answer in `acked`). Fewer than asked: no other row is due
// (a job with Matching is claimed in its place too), so the queue is drained, unless a pass
// started meanwhile and may have found more (the machine compares generations). Beside another
// head statement of this engine, a short answer may have passed over rows that one held: the
// dispatch runs a pass once none is out (`headOut`).
async function claimHead(runtime: JobsRuntime, dispatch: QueueDispatch, count: number, acks?: Acks): Promise<AckedAndClaimed> {
  const generation = dispatch.generation()
  const claimTokens = claimTokensFor(runtime.random, count)
  // A statement that claims reads the queue's head, beside any other of this engine's.
  const head = count > 0 ? dispatch.headOut() : null
  try {
    return await claimHeadOut(runtime, dispatch, head, generation, claimTokens, acks)
  } finally {
    head?.ended()
  }
}

// `claimHead` once its statement is out as `head` (null: it only acks).
async function claimHeadOut(runtime: JobsRuntime, dispatch: QueueDispatch, head: HeadStatement | null, generation: number, claimTokens: ReadonlyArray<string>, acks: Acks | undefined): Promise<AckedAndClaimed> {
  const { queue } = dispatch
  const count = claimTokens.length
  // With no token the statement only acks, which no fence guards.
  const answer =
    count === 0 && acks !== undefined
      ? await runtime.jobStore.ackAndClaimDue({ acks: acks.refs, queue, nowMs: acks.nowMs, claimTokens })
      : await fenced(
          runtime,
          queue,
          async (fence) =>
            acks === undefined
              ? { acked: [], claimed: await runtime.jobStore.claimDue({ queue, nowMs: runtime.now(), claimTokens, fence }) }
              : // Judged no earlier than now: a later stamp can only refuse a late ack, and the claims' deadlines count from now.
                await runtime.jobStore.ackAndClaimDue({ acks: acks.refs, queue, nowMs: Math.max(acks.nowMs, runtime.now()), claimTokens, fence }),
          // Not the owner after all: nothing is claimed, and the acks go alone.
          async () => ({ acked: acks === undefined ? [] : await runtime.jobStore.ackMany({ claims: acks.refs, nowMs: acks.nowMs }), claimed: [] }),
        )
  const claimed = runtime.limitedQueues.has(queue) ? await refillShort(runtime, queue, count, answer.claimed) : answer.claimed
  for (const job of claimed) runtime.driver.notifyDue(job.deadlineMs as number, queue)
  head?.answered(generation, count, claimed.length)
  // Only a limited queue awaits here: an unlimited one's claims keep their turns as they were.
  if (claimed.length < count && runtime.rateLimited.has(queue)) await armNextToken(runtime, queue)
  return claimed === answer.claimed ? answer : { acked: answer.acked, claimed }
}

/**
 * A batch claim of a queue limited per key comes back short when a key fills up within it, while
 * other jobs may be due behind it: taken as the queue's end, it would leave them to the next pass
 * with workers idle. So the rest is claimed again (a key full now is out of the head) until a
 * claim comes back empty or the batch is full — at most `count` statements, each taking a job.
 * Answers `first` with the jobs claimed after it.
 */
export async function refillShort(runtime: JobsRuntime, queue: string, count: number, first: ReadonlyArray<JobRecord>): Promise<ReadonlyArray<JobRecord>> {
  const claimed = [...first]
  for (let last = first.length; last > 0 && claimed.length < count; ) {
    const more = await fenced(
      runtime,
      queue,
      (fence) => runtime.jobStore.claimDue({ queue, nowMs: runtime.now(), claimTokens: claimTokensFor(runtime.random, count - claimed.length), fence }),
      async () => [],
    )
    last = more.length
    claimed.push(...more)
  }
  return claimed
}

/**
 * After a claim of `queue` came back short: when a handle of this engine gave the queue rate
 * limits, arms the due-time driver at the queue's next due time, which includes the next token
 * of its buckets (JobStore.ts's "Rate limits"), so that the claims parked on the drained queue
 * are served when the token arrives, not at the next scan. One read, on limited queues only.
 */
export async function armNextToken(runtime: JobsRuntime, queue: string): Promise<void> {
  if (!runtime.rateLimited.has(queue)) return
  const next = await runtime.jobStore.nextDueMs({ nowMs: runtime.now(), queues: [queue] })
  if (next !== null) runtime.driver.notifyDue(next, queue)
}

/**
 * Runs `claim`, a claim this engine makes straight from the store as the owner of `queue`, with
 * the range fence of the queue's partition it owns (MatchingHost's `claimFence`): the store
 * refuses it with `OwnershipLost`, writing nothing, once another engine took that partition.
 * A refusal unloads the partition, as its own ownership check would, and the claim is tried once
 * more with the fence of the partition loaded anew (its acquire moves the range past the other
 * engine's when membership still gives this engine the queue), so the workers waiting on it do
 * not wait for the next scan. Without a fence to give (no partition owned, or its queue
 * unloading or waiting out a restart delay) and after a second refusal it runs `otherwise`
 * instead: the claim answers as if nothing were due, and the claims waiting go to Matching.
 */
export async function fenced<T>(runtime: JobsRuntime, queue: string, claim: (fence: ClaimFence) => Promise<T>, otherwise: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const fence = await fenceOf(runtime, queue)
    // The fence may have taken a load: claim only if this engine still delivers the queue, by its
    // membership view and by its partition instances (the one that lent the fence is loaded).
    if (fence === null || !runtime.routing.owns(queue) || !runtime.dispatch.of(queue).isDeliveredHere()) return otherwise()
    try {
      return await claim(fence)
    } catch (error) {
      if ((error as { readonly _tag?: unknown })?._tag !== 'OwnershipLost') throw error
      const unloaded = runtime.matching.fenceRefused(fence)
      if (attempt > 0) return otherwise()
      await unloaded
    }
  }
}

// The fence of `queue`'s partition this engine owns, or null when it cannot give one now.
async function fenceOf(runtime: JobsRuntime, queue: string): Promise<ClaimFence | null> {
  try {
    return await runtime.matching.claimFence(jobsNamespace, queue, jobTaskType)
  } catch (error) {
    if (!isMatchboxError(error)) throw error
    return null
  }
}

/**
 * A work loop's ack of `job` and claim of its next job of `queue` in one statement
 * (`ackAndClaimDue`, shared with the other loops' claims and acks of the turn), when that claim
 * would go straight to the store: `canClaimSeveral` holds and no due-time pass is on its way.
 * Undefined, with nothing done, otherwise: the loop then acks and claims apart. The next job is null when none
 * was due (the queue is then drained, as after any short claim, and the loop's next claim
 * parks). The ack behaves as `job.ack()`'s (JobHandle.ts's `ackWith`).
 */
export async function ackAndClaimNext(runtime: JobsRuntime, queue: string, job: JobHandle<unknown>): Promise<{ readonly acked: boolean; readonly next: JobRecord | null } | undefined> {
  if (runtime.isClosed() || !canClaimSeveral(runtime, queue) || !runtime.driver.isQuiet()) return undefined
  const answer = await directOf(runtime, runtime.dispatch.of(queue))(ackHookOf(job))
  return { acked: answer.acked, next: answer.job }
}

// Acks that ride on a claim statement, judged at `nowMs`.
interface Acks {
  readonly refs: ReadonlyArray<ClaimRef>
  readonly nowMs: number
}

/** What a claim statement with acks answered: the ids it deleted and the jobs it claimed, in claim order. */
export interface AckedAndClaimed {
  readonly acked: ReadonlyArray<string>
  readonly claimed: ReadonlyArray<JobRecord>
}

/**
 * True when `claimSeveral` may take jobs of `queue` straight from the store now: this engine
 * serves every partition of the queue, no poll of another engine waits here for it (Matching
 * serves those and this engine's claims in the order they came), no job kept for the next claim
 * waits (it comes first), and the queue is not drained. Otherwise a worker parks
 * polls (`claimNext`), which an enqueue or a due-time pass serves.
 */
export function canClaimSeveral(runtime: JobsRuntime, queue: string): boolean {
  const dispatch = runtime.dispatch.of(queue)
  return !dispatch.isDrained() && !dispatch.isMatchingHolding() && !dispatch.hasSpare() && runtime.routing.ownsEvery(queue)
}

/**
 * Up to `count` due jobs of `queue`, head first, claimed straight from the store in one statement
 * for a worker's local queue (`work({ batch })`), which also acks `acks` (jobs of this engine
 * with distinct ids; `job.ack()`'s rules, JobHandle.ts's `ackWith`). Undefined, without a
 * statement and with nothing acked, unless `canClaimSeveral` holds once the due-time passes
 * asked for so far have run. A short answer marks the queue drained, so the worker's claims then
 * park as usual.
 */
export async function claimSeveral(
  runtime: JobsRuntime,
  queue: string,
  count: number,
  partitions?: number,
  acks: ReadonlyArray<JobHandle<unknown>> = [],
): Promise<AckedAndClaimed | undefined> {
  await runtime.routing.load(queue, partitions)
  if ((count < 1 && acks.length === 0) || !canClaimSeveral(runtime, queue)) return undefined
  if (!runtime.driver.isQuiet()) await runtime.driver.settled()
  if (!canClaimSeveral(runtime, queue)) return undefined
  runtime.refuseIfClosed()
  const dispatch = runtime.dispatch.of(queue)
  const heads = Math.min(count, jobBatchSizeMax)
  if (acks.length === 0) return claimHead(runtime, dispatch, heads)
  return ackWith(runtime, acks.map(ackHookOf), (refs, nowMs) => claimHead(runtime, dispatch, heads, { refs, nowMs }))
}
