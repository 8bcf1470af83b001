/**
 * Claimer — how an engine claims the next job of a queue, wherever the queue's partitions are
 * served. Both `queue.claim()` and the `work` loops use it.
 *
 * - **Local** (this engine owns every partition): due jobs stay in the store until a claim wants
 *   one (the jobs table is the backlog). A claim first takes the head of the due rows straight
 *   from the store (StoreClaims.ts's `claimDirect`: the claims of one turn in one statement), waiting
 *   in the queue's line meanwhile so that an enqueue of this engine may hand it a job inserted
 *   already claimed (eager dispatch; the line is the queue's dispatch machine, Dispatch.ts). Finding none due, a
 *   worker stays parked in line, where the queue's one Matching poll for this engine's workers
 *   runs meanwhile (`waitInLine`), and a lazy claim waits
 *   (`pollDeliverable`): the due-time pass that makes a job due later claims it straight for the
 *   claims in line (`claimForWaitingWorkers`), and adds to Matching only as many due jobs as
 *   polls wait there that the store cannot serve (`deliveryDemand`: polls other engines
 *   forwarded here, and this engine's own while those come first). A lazy claim (`queue.claim()`)
 *   first runs the due-time driver at the clock's time, so a job whose runAt arrived or whose
 *   claim lapsed is found even if no timer fired; it takes a job kept on this engine for the
 *   next claim, and otherwise polls Matching only when the store shows more jobs with Matching
 *   than lazy polls in flight. History's claim decides a Matching task;
 *   the poll hands back the claimed job.
 * - **Remote** (another engine owns the partitions): the poll is forwarded to the owner, which
 *   claims a due job straight from the store or else waits for a task in its partition, claims
 *   the job on this engine's behalf, and hands it over (Forwarding.ts). Owners are taken in turn when the queue has several.
 * - **Mixed** (this engine owns some partitions): turns alternate between the two, each local
 *   turn bounded by `workerClaimWaitMs` so remote partitions are not starved.
 *
 * Order: a claim from the store takes the head in claim order, a job with Matching in its place
 * (first within its priority: its task, delivered later, finds it started), and it waits for a
 * due-time pass in progress, which may be reserving older jobs for Matching. A claim handed a
 * job while its own statement was out holds two, and answers the head of the two, never the job
 * behind it (the dispatch machine's `claim.heldTwo`): the higher priority; within one, a job that
 * came through Matching (first within its priority), else its own — unless a pass starting
 * meanwhile claimed the other beside its statement, when only the store knows, and it decides.
 *
 * Invariants: a claim never waits past its own deadline, except that Matching counts a poll's
 * wait only once the queue has loaded and read its backlog (`claim({ waitMs: 0 })` returns
 * after that, and at most one forwarded round trip); a stop (`isStopped`) ends the wait.
 */
import { isMatchboxError } from '../domain/errors.ts'
import { claimPollWaitMs, claimRetryDelayMs, workerClaimWaitMs } from '../kernel/Limits.ts'
import type { JobRecord } from '../persistence/jobs/JobStore.ts'
import { type JobHandle, makeJobHandle } from './JobHandle.ts'
import { claimedJobOf } from './JobsHistory.ts'
import { jobsNamespace, jobTaskType } from './QueueRouting.ts'
import type { PlaceInLine, QueueDispatch } from './Dispatch.ts'
import type { JobsRuntime } from './Runtime.ts'
import { armNextToken, claimDirect, claimDirectNow, claimTokensFor, fenced, refillShort } from './StoreClaims.ts'

/**
 * Claims the next job of `queue`; null when none came within `waitMs`. `lazy` (the public
 * `claim`) runs a due-time pass first; workers pass false and rely on the driver's timers, due
 * signals and scan, which wake them, so they do not queue a pass per job. `partitions` is the
 * calling handle's partition count, if it names one (stored by the first use of a new queue).
 */
export async function claimNext(
  runtime: JobsRuntime,
  queue: string,
  waitMs: number,
  lazy: boolean,
  isStopped: () => boolean = () => false,
  signal?: AbortSignal,
  partitions?: number,
): Promise<JobHandle | null> {
  const deadlineMs = runtime.now() + waitMs
  // With the handle's partition count: the first use of a new queue stores it, whichever comes first.
  await runtime.routing.load(queue, partitions)
  for (let turn = 0; ; turn++) {
    runtime.refuseIfClosed()
    if (isStopped()) return null
    const route = runtime.routing.route(queue)
    const hasRemote = runtime.forwarding !== null && route.remote.length > 0
    const mixed = hasRemote && route.owned.length > 0
    // A mixed claim tries both sides at least once, even with no time to wait.
    const overdue = () => isStopped() || (runtime.now() >= deadlineMs && (!mixed || turn >= 1))
    if (!hasRemote && route.owned.length === 0) {
      // Nobody serves the queue yet (membership is settling): wait a little and look again.
      if (overdue()) return null
      await runtime.driver.waitForOwner(queue, Math.min(deadlineMs, runtime.now() + claimRetryDelayMs))
      continue
    }
    if (!hasRemote || (mixed && turn % 2 === 0)) {
      const untilMs = mixed ? Math.min(deadlineMs, runtime.now() + workerClaimWaitMs) : deadlineMs
      const job = await claimLocal(runtime, queue, untilMs, lazy, isStopped, signal)
      // The queue's partitions left this engine while the claim waited in line: route it again.
      if (job === partitionsLeft) continue
      if (job !== null || !mixed || overdue()) return job
      continue
    }
    const owner = route.remote[Math.floor(turn / (mixed ? 2 : 1)) % route.remote.length] as { readonly hostId: string }
    const pollWaitMs = Math.max(0, Math.min(claimPollWaitMs, deadlineMs - runtime.now()))
    const result = await (runtime.forwarding as NonNullable<JobsRuntime['forwarding']>).poll(queue, owner.hostId, pollWaitMs, lazy)
    if (result.kind === 'claimed') return makeJobHandle(runtime, result.job)
    if (overdue()) return null
    // A refused poll (ownership moving, the owner closing or busy): look again shortly.
    if (result.kind === 'refused') await runtime.driver.waitForOwner(queue, Math.min(deadlineMs, runtime.now() + claimRetryDelayMs))
  }
}

/** What a claim in line answers when the queue's partitions left this engine while it waited. */
const partitionsLeft = Symbol('partitions left')

// The local path for a claim of this engine: a worker waits in the queue's line; a lazy claim
// polls only for a deliverable job.
async function claimLocal(runtime: JobsRuntime, queue: string, deadlineMs: number, lazy: boolean, isStopped: () => boolean, signal: AbortSignal | undefined): Promise<JobHandle | null | typeof partitionsLeft> {
  const job = lazy ? await pollDeliverable(runtime, queue, deadlineMs, true, isStopped, runtime.hostId, true) : await waitInLine(runtime, queue, deadlineMs, isStopped, signal)
  return job === null || job === partitionsLeft ? job : makeJobHandle(runtime, job)
}

/**
 * A worker of this engine waits for a job of a queue it delivers: it first takes a job kept
 * from an earlier hand-over, then the head of the due rows straight from the store, and finding
 * none parks in the queue's line (Dispatch.ts) until an enqueue of this engine, a due-time pass,
 * or the line's one Matching poll hands it a job already claimed, its wait ends, or `signal`
 * aborts (the worker stopping). No store statement per idle wait. When the queue's last
 * partition instance on this engine unloads while it is parked (membership moved the queue), it
 * answers `partitionsLeft` — unless this engine delivers the queue again by then — so that its
 * claim goes to the queue's new owner at once.
 */
async function waitInLine(runtime: JobsRuntime, queue: string, deadlineMs: number, isStopped: () => boolean, signal: AbortSignal | undefined): Promise<JobRecord | null | typeof partitionsLeft> {
  const ended = (): boolean => isStopped() || signal?.aborted === true
  const dispatch = runtime.dispatch.of(queue)
  for (;;) {
    runtime.refuseIfClosed()
    if (ended()) return null
    // Joining the line takes a job kept from an earlier hand-over first.
    const place = dispatch.join()
    if (place.job() !== null) return place.job()
    // Due rows are not with Matching unless a poll waits there for them: take the head directly.
    const direct = await claimDirectInLine(runtime, dispatch, place)
    // Out of line with nothing (both its jobs went back and another claim took them): join again.
    if (direct === leftLine) continue
    if (direct !== null) return direct
    // Registered as a waiter, an enqueue on another engine may hand it a job (HandOvers.ts).
    const registration = runtime.handOvers?.register(queue, place, deadlineMs)
    try {
      await dispatch.park(place, deadlineMs, signal)
    } finally {
      place.leave()
      registration?.withdraw()
    }
    const offered = place.job()
    if (offered !== null) return offered
    if (ended() || runtime.now() >= deadlineMs) return null
    if (place.wasRerouted() && !runtime.routing.owns(queue)) return partitionsLeft
  }
}

/**
 * A poll another engine forwarded here for a worker, as upstream Matching pollers do it: parked
 * in this engine's Matching partitions until a task arrives (a new task sync-matches it without
 * touching the backlog), its wait ends, or `signal` aborts, so that Matching serves it in its
 * turn. No store statement per poll. Once the queue's partitions have left this engine it
 * answers null at once, so the poller routes its claim to the new owner.
 */
export async function pollParked(runtime: JobsRuntime, queue: string, deadlineMs: number, isStopped: () => boolean, identity: string, signal: AbortSignal | undefined): Promise<JobRecord | null> {
  const ended = (): boolean => isStopped() || signal?.aborted === true
  const dispatch = runtime.dispatch.of(queue)
  for (;;) {
    runtime.refuseIfClosed()
    if (ended()) return null
    const pollWaitMs = Math.max(0, Math.min(claimPollWaitMs, deadlineMs - runtime.now()))
    const pollDeadlineMs = runtime.now() + pollWaitMs
    const polled = await runtime.matching.poll({ namespace: jobsNamespace, family: queue, type: jobTaskType, identity, waitMs: pollWaitMs, ...(signal === undefined ? {} : { signal }) })
    if (polled !== null) {
      const job = claimedJobOf(polled.response)
      dispatch.matchingReached()
      return job
    }
    if (ended() || runtime.now() >= deadlineMs) return null
    // Back before its deadline, the poll was refused (its partition unloading or changing owner;
    // Matching itself waits out a queue's idle unload). The queue's partitions left this engine:
    // the poller routes its claim again, to the new owner. Otherwise pause rather than spin.
    if (!runtime.dispatch.of(queue).isDeliveredHere() && !runtime.routing.owns(queue)) return null
    if (runtime.now() < pollDeadlineMs) await runtime.driver.waitForDelivery(queue, Math.min(deadlineMs, runtime.now() + claimRetryDelayMs))
  }
}

/**
 * Eager dispatch from the delivery side: for each queue of a due-time pass (null: every queue)
 * on which workers of this engine wait, claims up to that many due jobs straight from the store
 * (`claimDue`, claim order, one statement per queue) and hands them over as an eager enqueue
 * does. Those jobs skip the Matching round (reserve, add, dispatch, claim, confirm): a waiting
 * worker means Matching had no task ready for it, and the store's head (a job with Matching
 * included, in its place) is the next job in claim order. Answers the queues it claimed some but fewer jobs of than it asked for: none of
 * their other rows is due now (or another transaction holds it).
 */
export async function claimForWaitingWorkers(runtime: JobsRuntime, queues: ReadonlyArray<string> | null, nowMs: number): Promise<ReadonlyArray<string>> {
  const wanted = [...runtime.dispatch.all()].filter((dispatch) => queues === null || queues.includes(dispatch.queue))
  // A pass may find rows due that a direct claim did not: claims of those queues try the store
  // again, and a direct claim still in flight no longer drains them.
  for (const dispatch of wanted) dispatch.passStarted()
  const drained = await Promise.all(
    wanted.map(async (dispatch) => {
      const { queue } = dispatch
      // Only an engine that delivers the queue claims its due rows (its view may have moved on
      // since the pass chose its queues), and only while no other engine's poll waits here for
      // it: Matching serves those and this engine's workers in the order they came.
      if (dispatch.waitingCount() === 0 || !runtime.routing.owns(queue) || dispatch.isMatchingHolding()) return null
      const generation = dispatch.generation()
      const claimTokens = claimTokensFor(runtime.random, dispatch.waitingCount())
      const out = runtime.passClaimsOut
      let answered = (): void => {}
      const claiming = new Promise<void>((resolve) => (answered = resolve))
      out.set(queue, claiming)
      let claimed: ReadonlyArray<JobRecord>
      const head = dispatch.headOut()
      try {
        // Stamped when it goes out (the fence may have taken a load), so its deadlines count from then.
        const first = await fenced(runtime, queue, (fence) => runtime.jobStore.claimDue({ queue, nowMs: Math.max(nowMs, runtime.now()), claimTokens, fence }), async () => [])
        claimed = runtime.limitedQueues.has(queue) ? await refillShort(runtime, queue, claimTokens.length, first) : first
        for (const job of claimed) {
          runtime.driver.notifyDue(job.deadlineMs as number, queue)
          dispatch.handOver(job)
        }
        // Fewer than asked: the claims that come back for their next job skip the store until the
        // next pass (as after a short claim of their own).
        head.answered(generation, claimTokens.length, claimed.length)
      } finally {
        head.ended()
        if (out.get(queue) === claiming) out.delete(queue)
        answered()
      }
      if (claimed.length < claimTokens.length && runtime.rateLimited.has(queue)) await armNextToken(runtime, queue)
      // Some but not all: no other row is due.
      return claimed.length > 0 && claimed.length < claimTokens.length ? queue : null
    }),
  )
  return drained.filter((queue): queue is string => queue !== null)
}

/**
 * Serves a poll another engine forwarded here (`identity` names the poller), through this
 * engine's Matching partitions of `queue`: a lazy one as `pollDeliverable`, a worker's as
 * `pollParked`. It counts in the queue's `forwardedWaiting` while it waits, so that due jobs go
 * through Matching, which serves it and this engine's workers in the order they came.
 */
export async function serveForwardedPoll(runtime: JobsRuntime, queue: string, deadlineMs: number, lazy: boolean, identity: string, cancelled: AbortSignal): Promise<JobRecord | null> {
  const dispatch = runtime.dispatch.of(queue)
  const isCancelled = (): boolean => cancelled.aborted
  dispatch.forwardedArrived()
  try {
    const direct = await claimDirect(runtime, dispatch)
    if (direct !== null) return direct
    return await (lazy ? pollDeliverable(runtime, queue, deadlineMs, true, isCancelled, identity) : pollParked(runtime, queue, deadlineMs, isCancelled, identity, cancelled))
  } finally {
    dispatch.forwardedLeft()
  }
}

/**
 * Claims through this engine's own Matching partitions of `queue`, for a local claim or for a
 * poll another engine forwarded here (`identity` names the poller). Polls Matching only when
 * the store shows more deliverable jobs than polls already in flight on this engine — local and
 * forwarded ones alike — so every poll has a task to take and none is left waiting on a task
 * another poll took; otherwise waits for the driver to deliver — or, for this engine's own
 * claim (`eager`), for an enqueue of this engine to hand it a job already claimed. Null at
 * `deadlineMs` or stop.
 */
export async function pollDeliverable(runtime: JobsRuntime, queue: string, deadlineMs: number, lazy: boolean, isStopped: () => boolean, identity: string, eager = false): Promise<JobRecord | null> {
  const dispatch = runtime.dispatch.of(queue)
  let passNeeded = true
  for (;;) {
    runtime.refuseIfClosed()
    // Woken by a delivery, the pass that delivered has just run: no need for another.
    if (passNeeded && lazy) await runtime.driver.run()
    else await runtime.driver.runIfDue()
    const inFlight = dispatch.lazyPolls()
    const deliverable = await runtime.jobStore.deliverableCount({ queue, nowMs: runtime.now(), limit: inFlight + 1 })
    // A job kept on this engine for its next claim (handed over while its claimant left) goes to
    // this engine's own claim first, as it does to a worker's: polling Matching instead would
    // answer a job behind it while it waits for a pass to give it back.
    if (eager && !isStopped() && dispatch.hasSpare()) {
      const place = dispatch.join()
      const kept = place.job()
      if (kept !== null) return kept
      place.leave()
    }
    if (deliverable > inFlight && !isStopped()) {
      dispatch.lazyPollStarted()
      // Never wait on Matching past the claim's own deadline: claim({ waitMs: 0 }) returns promptly.
      const pollWaitMs = Math.max(0, Math.min(claimPollWaitMs, deadlineMs - runtime.now()))
      let polled
      try {
        polled = await runtime.matching.poll({ namespace: jobsNamespace, family: queue, type: jobTaskType, identity, waitMs: pollWaitMs })
      } finally {
        dispatch.lazyPollEnded()
        // One claim may have been waiting for this poll's slot.
        runtime.driver.wake(queue, 1)
      }
      if (polled !== null) {
        const job = claimedJobOf(polled.response)
        dispatch.matchingReached()
        return job
      }
      if (runtime.now() >= deadlineMs || isStopped()) return null
      passNeeded = (await runtime.driver.waitForDelivery(queue, Math.min(deadlineMs, runtime.now() + claimRetryDelayMs))) !== 'delivered'
      continue
    }
    // Nothing with Matching for this claim. This engine's own claim takes the head of the due rows
    // straight from the store, already in line so that an enqueue or a pass meanwhile may hand it
    // one (eager dispatch); otherwise it waits for either, or for a delivery. Joining the line
    // takes a job kept from an earlier hand-over first.
    const line = eager && !isStopped() ? dispatch.join(() => runtime.driver.wake(queue)) : null
    if (line !== null && line.job() !== null) return line.job()
    let woken
    try {
      const answer = line === null ? null : await claimDirectInLine(runtime, dispatch, line)
      const direct = answer === leftLine ? null : answer
      if (direct !== null) return direct
      if (runtime.now() >= deadlineMs || isStopped()) return line?.job() ?? null
      woken = await runtime.driver.waitForDelivery(queue, deadlineMs)
    } finally {
      line?.leave()
    }
    const offered = line?.job() ?? null
    if (offered !== null) return offered
    passNeeded = woken !== 'delivered'
  }
}

/**
 * The delivery demand of this engine (DueDriver.ts): per queue, how many claims wait in its
 * Matching partitions for a task — this engine's claims in line since before the pass started
 * that it did not serve straight from the store (a claim that joined since claims from the store
 * itself), polls other engines forwarded here, and lazy polls in flight. A pass
 * adds at most that many due jobs of a queue to Matching; every other due row stays in the store,
 * where the next claim takes it directly.
 */
export function deliveryDemand(runtime: JobsRuntime): ReadonlyMap<string, number> {
  const demand = new Map<string, number>()
  for (const dispatch of runtime.dispatch.all()) {
    const count = dispatch.waitingSincePass() + dispatch.forwardedWaiting() + dispatch.lazyPolls()
    if (count > 0) demand.set(dispatch.queue, count)
  }
  return demand
}

/** What `claimDirectInLine` answers when its claim left the line with no job (`headOfBoth` found none). */
const leftLine = Symbol('left the line with no job')

// Claims the head due job of `queue` straight from the store for this engine's claim, which is
// already in line: a job handed to it before the claim is taken instead; a pass that started
// meanwhile and is still claiming for it is waited for; a job handed to it during the claim goes
// on to the next claim in line, or, with none, both go back to the store, which answers the head
// (`headOfBoth`). Null (still in line) when none was claimed; `leftLine` when the
// store answered none after both went back; a store failure takes it out of line.
async function claimDirectInLine(runtime: JobsRuntime, dispatch: QueueDispatch, line: PlaceInLine): Promise<JobRecord | null | typeof leftLine> {
  const generation = dispatch.generation()
  let direct: JobRecord | null
  try {
    direct = await claimDirect(runtime, dispatch, () => line.job() !== null)
  } catch (error) {
    line.leave()
    const offered = line.job()
    if (offered !== null) dispatch.returnJob(offered)
    throw error
  }
  // A pass that started while the statement was out may still be claiming for this claim: its
  // answer may hold the head (the statements ran side by side), so wait for it in line.
  if (line.job() === null && dispatch.generation() !== generation) await runtime.passClaimsOut.get(dispatch.queue)
  const offered = line.job()
  if (direct === null && offered === null) return null
  line.leave()
  if (direct === null) return offered
  if (offered === null) return direct
  // Holding two, the claim answers the one the dispatch judges ahead, and the other goes on to the
  // next claim or is kept; or, when only the store knows which is ahead (a due-time pass that
  // started while the statement was out claimed the one handed to it) and no claim waits, the
  // head comes from the store.
  return dispatch.heldTwo(direct, offered, dispatch.generation() !== generation) ?? (await headOfBoth(runtime, dispatch, direct, offered)) ?? leftLine
}

// A claim that a due-time pass starting while its own statement was out also claimed a job for
// (`offered`), with no other claim waiting to take one of the two: the two statements ran side
// by side, and on a store where a claim passes over rows another transaction holds either may
// have taken the head — kept for the next claim, the head would come after the job behind it.
// Both go back to the store in their places (`release`), and one claim statement, out of line
// and without waiting for passes (the one that claimed `offered` has served the line), takes the
// head; the other is due again (null if another claim took both meanwhile). If the release fails,
// the claim answers the one ahead as far as the two records tell (the dispatch judges by priority),
// and the other goes to the next claim or is kept, as a job handed too late is.
async function headOfBoth(runtime: JobsRuntime, dispatch: QueueDispatch, direct: JobRecord, offered: JobRecord): Promise<JobRecord | null> {
  try {
    await runtime.jobStore.release({ claims: [direct, offered].map((job) => ({ id: job.id, claimToken: job.claimToken as string })), nowMs: runtime.now() })
  } catch (error) {
    if (!isMatchboxError(error)) throw error
    // Without a pass beside it, the dispatch always names the job to answer.
    return dispatch.heldTwo(direct, offered, false) as JobRecord
  }
  runtime.announceDue(dispatch.queue, runtime.now(), false)
  return claimDirectNow(runtime, dispatch)
}
