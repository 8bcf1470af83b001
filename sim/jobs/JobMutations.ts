/**
 * JobMutations — the job mutation menu: a JobStore that wraps the real one (wrap, don't fork),
 * and for bugs of the group a tap on the world's bus, a wrapper of the bus or of the membership
 * view an engine routes by, or a wrapper of the job store one engine sees above the I/O gate,
 * adding one named, deliberate bug. The end-to-end simulator must catch each one within 100
 * seeds on memory (sim/jobs/jobsWorld.mutations.test.ts): the evidence that the job checkers
 * can fail. A bug planted in the store applies to the batched statements too (each has its
 * batched version here), since the engine's drains run those.
 *
 * - `ackAfterDeadline`: a refused ack, heartbeat, retry or fail (alone or in a batch) is
 *   re-issued as if a minute earlier, so a claim that lapsed (and was not taken since) still
 *   accepts it (deadline);
 * - `doubleGrant`: a claim refused because another claim is live is re-issued a day later, so
 *   the job gets a second claim while the first is still valid (one valid claim);
 * - `dropEnqueue`: every fifth enqueued job reports the row it would have written without
 *   writing it, so an accepted job is never seen again (none stranded);
 * - `dropHandOver`: the bus loses every hand-over of a job an owner claimed for a forwarded poll
 *   (legal on its own: the claim lapses and the job is delivered again) AND the due-time
 *   bookkeeping believes the lapse was delivered: when a driver reserves such a job it is
 *   confirmed delivered without a Matching task, so the claimed job nobody holds is never
 *   offered again (none stranded);
 * - `stealPartitions`: every engine routes as if it owned every partition of every queue
 *   (membership ignored), while its membership view says otherwise: engines deliver queues they
 *   do not own (owner delivers);
 * - `ridingAckIgnoresToken`: the riding ack (`ackAndClaimDue`) acks the job whoever holds it
 *   now — the statement's token check dropped, on either store, as the store wrapper swaps in
 *   the current token — so a handler whose claim lapsed and was taken again acks the new
 *   holder's job (holder settles);
 * - `handOverTwice`: the owner's hand-over of a job claimed for a forwarded poll is sent twice;
 *   the second finds its poll settled and is kept for the next claim of the queue, so two
 *   workers run one claim (handler once per claim);
 * - `handOverLost`: every hand-over vanishes on its way to the poller — the observable bug of a
 *   poller dropping a hand-over whose poll was aborted, since a tap cannot tell the two apart —
 *   so a claim made while faults are healed reaches no worker and waits for its visibility
 *   timeout (claims reach a worker);
 * - `enqueueManyDuplicateKey`: `enqueueMany` checks a key only against live jobs, not against
 *   the jobs of its own batch (each later duplicate is written under a key of its own), so one
 *   batch writes two live jobs for one key (one live per key);
 * - `stopAbandonsLocalQueue`: once `stop()` was called on an engine's work loops, the claims
 *   that engine's statements make are written but not handed back to it — the observable bug of
 *   a local queue dropping its claimed jobs on stop (the local queue itself, LocalQueue.ts, is
 *   engine code the menu does not fork); they wait for their visibility timeout (claims reach a
 *   worker);
 * - `historyClaimUnfenced`: History's claims for Matching's deliveries (`claimMany`) reach the
 *   store without the fence of the partition they come from, so a delivery retried after
 *   another engine took the partition still claims (owner sees nobody, one valid claim);
 * - `claimFenceIgnored`: the store takes every claim as if it carried no fence (`claim`,
 *   `claimMany`, `claimDue`, `ackAndClaimDue`, a claiming `enqueue`), so an engine whose
 *   partition another engine took still claims (claims fenced);
 * - `heartbeatOnce`: each claim's heartbeats after its first are answered as renewed without
 *   reaching the store — what the store sees of a work loop whose heartbeat timer is not
 *   re-armed after one beat (Heartbeats.ts is engine code; the wrapper of the job store one
 *   engine sees gives the same observable bug); long handlers lose their claims (heartbeat
 *   keeps the claim);
 * - `lapseFromClaimTime`: a heartbeat moves the deadline the store keeps only as far as the claim
 *   time plus the visibility timeout (the lapse computed from the claim time, not from the
 *   deadline a beat moved), while answering the deadline the beat asked for: the job is taken
 *   again while its holder's claim is valid (one valid claim);
 * - `dueSignalLost`: the bus loses every due signal, so a job written while a worker waits is
 *   found only by the next one-second due scan (prompt delivery);
 * - `pauseIgnored`: pausing a queue answers that it paused without writing the pause, so every
 *   engine goes on claiming its jobs (paused claims nothing);
 * - `cancelKeepsClaim`: cancelling a job a handler is running answers true but leaves the job and
 *   its claim in place, so the handler's ack is accepted afterwards (cancelled never acked);
 * - `refusalKeepsSignal`: a heartbeat the store refused is answered to the engine as a renewal
 *   (the job handle's bug of not aborting `job.signal` on a refusal, planted in the wrapper of the
 *   job store one engine sees, as `heartbeatOnce` is), so a handler whose job was cancelled
 *   never hears it (abort reaches handler);
 * - `matchingFirstBlocksQueue`: a claim straight from the store (`claimDue`, `ackAndClaimDue`)
 *   claims nothing while a claimable job of the queue has its task with Matching, so one task
 *   that no poll reaches holds up the whole queue until a scan, a lapse or a poll of its
 *   partition moves it (prompt delivery);
 * - `refusedAddWaits`: a due-time pass gives the jobs Matching refused back a second later than
 *   it asks (the job store one engine sees moves `releaseDelivered`'s due time), so a job whose
 *   partition waits out its restart delay is out of every claim's reach meanwhile, though idle
 *   workers elsewhere could take it straight from the store, while the due signal that follows
 *   the give-back announces it due at once (give-back as announced);
 * - `limitNotInStore`: the store is told no concurrency limit a user would notice (every enqueue's
 *   limit is raised to 10,000 below the boundary log), so a key's limit holds only as far as each
 *   engine's own claims happen to keep it — the observable bug of a limit checked by each engine
 *   instead of by the store: engines together run more of a key at once than its limit
 *   (concurrency per key);
 * - `rateNotInStore`: the store is told no rate limit a world reaches (every enqueue's rate limits
 *   are raised to a million a second below the boundary log) — the observable bug of a rate
 *   checked by each engine instead of by the store: engines together start more jobs than the
 *   limit allows (rate limit);
 * - `weightIgnored`: the store is told no fairness weight (every keyed enqueue's weight is dropped
 *   below the boundary log, so each key steps by the stride of weight 1) — the observable bug of
 *   a pass that ignores the weight: a heavy key's jobs wait behind a light key's, a light key's
 *   run ahead of their share (fair pass);
 * - `dedupStepsPass`: an enqueue answered by its job key's live holder still steps its fairness
 *   key's pass, as if a job had been written (the store underneath cannot be made to, so the
 *   key's next enqueue is given a weight that many strides lighter: the same pass) — the
 *   observable bug of a pass written before the duplicate is found: a key enqueued again and
 *   again under one job key is pushed behind the others (fair pass);
 * - `implicitKeyIgnored`: an unkeyed job of a queue with keys gets no pass, as in a queue without
 *   keys (KeyMutations.ts; emulated on reads of the job, not in the store's claim order) — the
 *   observable bug of a store that orders unkeyed jobs by their due time alone, ahead of the
 *   keys' turns, in a queue that mixes them (fair pass);
 * - `lapsedSlotKept`: a lapsed claim keeps its concurrency slot even from its own job, whose next
 *   claim by a Matching delivery then needs a slot of its own and is refused as `limited` while
 *   the key's processing jobs, the lapsed one among them, fill its limit (KeyMutations.ts) — the
 *   observable bug of a slot not handed over when its claim lapses: a crashed worker's job of a
 *   key at its limit never runs again (prompt delivery, none stranded);
 * - `shortBatchEndsQueue`: after a claim statement of a queue came back with some jobs but fewer
 *   than it asked for, the engine's next `claimDue` of that queue at the same instant answers
 *   none (the job store one engine sees, above the gate) — the observable bug of a batch that a
 *   key filled up within taken as the queue's end, without the claim for the rest that
 *   StoreClaims' `refillShort` makes; the jobs behind wait for a pass (prompt delivery);
 * - `batchLaterDueUnheard`: an `enqueueMany` is answered to the engine with every job due at the
 *   batch's earliest time (the job store each engine sees, above the gate) — the observable bug of
 *   a batch that announces its first due time alone: the owner arms no timer for the later jobs,
 *   which wait for the scan (prompt delivery);
 * - `shortReservationEndsPass`: a due-time pass's second reservation round on a queue limited per
 *   key (the one that names keys to pass over) finds nothing — the bug of a pass that stops at a
 *   reservation the head's key cut short, leaving a forwarded claim to its poll's timeout (prompt
 *   delivery);
 * - `pollsStayPut`: a Matching host never moves a poll waiting on one of its partitions to
 *   another that stored a task (MatchingHostWaiting.ts), so a task stored where no poll of the
 *   host waits sits there while an idle poll waits on another partition of its family until its
 *   wait runs out (prompt delivery);
 * - `idlePollsStayPut`: a Matching host never moves a poll that waits idle on a partition whose
 *   ready task turned out stale to another partition with a task ready (MatchingHostWaiting.ts
 *   `pollsIdle`), so the task waits while the poll waits out its wait (prompt delivery);
 * - `spentPollMoved`: a Matching host's book of waiting polls moves a poll whose wait is up (a
 *   poll of no wait, forwarded from another engine, stays in its queue until its deadline's timer
 *   fires at that same instant) as readily as one with time left (MatchingHostWaiting.ts
 *   `canMove`): the moved poll answers empty instead of polling again, the task's one move is
 *   spent on it, and a poll with its wait ahead stays idle on another partition while the task
 *   waits there (idle poll moves);
 * - `ownerByFirstPartition`: an engine that owns a queue's first partition sends no due signal
 *   for it (the bus each engine sends on), as if owning one partition made it the queue's owner:
 *   the owners of its other partitions, which may hold the claim that waits, hear nothing until
 *   their scan (prompt delivery);
 * - `releaseUnannounced`: a kept job given back to the store is announced to the releasing
 *   engine's own driver only (the bus signal that follows the release is dropped), so a claim
 *   waiting at another owner of the queue's partitions waits for that owner's scan (release announced);
 * - `enqueueHandOverUnsent`: an enqueue that handed its job to another engine's waiting claim
 *   (src/jobs/HandOvers.ts) never sends that engine the `handed` message, so the job, claimed for
 *   a claim that never hears of it, waits out its claim (claims reach a worker, prompt delivery);
 * - `waiterFenceIgnored`: an enqueue hands its job to a queue's first waiting claim whatever the
 *   waiter's fence says, so an engine that lost the queue's partition while its claim waited still
 *   gets jobs claimed for it (claims fenced);
 * - `takenWaiterKept`: an engine that takes its waiting claims back and finds one taken by an
 *   enqueue whose `handed` message has not come gives nothing back (`releaseHandedOver` writes
 *   nothing): an engine that leaves as a producer hands it a job never hears of it, and the job
 *   waits out its claim (claims reach a worker);
 * - `cancelUnheard`: the bus loses every cancel of a forwarded poll — the observable bug of an
 *   owner that answers a poll whose cancel reached it while its claim for that poll was at the
 *   store: a poller that left never takes the job, which waits out its claim (claims reach a
 *   worker);
 * - the sixteen bugs of the claim protocol itself (DispatchMutations.ts: `noPassBehindMatching`,
 *   `passIgnoresForwarded`, `setAsideClaimLost`, `drainedStaysDrained`, `parkedPollNotArmed`,
 *   `matchedPollLingers`, `droppedWithClaimsInLine`, `slotFreedSilent`, `partitionUnloadUnheard`,
 *   `setAsidePassedBy`, `closingKeepsHanded`, `staleDeliveryUnheard`, `headOfTwoKept`,
 *   `passBesideKept`, `matchedHandedKept`, `heldRowsUnheard`): every
 *   engine of the world runs its queues by the dispatch machine with that bug (prompt delivery,
 *   claims reach a worker, poll for nobody ends, moved queue lets go, no head kept).
 *
 * Does not: change reads or schedules.
 */
import { type HostWaitingPolls, makeHostWaitingPolls } from '../../src/actors/MatchingHostWaiting.ts'
import type { JsonValue } from '../../src/domain/Json.ts'
import type { EngineGroup } from '../../src/jobs/Matchbox.ts'
import { jobsNamespace, jobTaskType } from '../../src/jobs/QueueRouting.ts'
import type { Bus } from '../../src/persistence/bus/Bus.ts'
import { handedJobOf, isHandOverCandidate } from '../../src/persistence/jobs/HandOver.ts'
import type { BusTap } from '../../src/persistence/bus/MemoryBus.ts'
import type { ClaimFence, ClaimOutcome, ClaimRef, JobRecord, JobStore, RateLimit, Waiter } from '../../src/persistence/jobs/JobStore.ts'
import type { DispatchMachine } from '../../src/machines/DispatchMachine.ts'
import { type DispatchMutation, dispatchMutations, mutatedDispatchMachine } from './DispatchMutations.ts'
import { dedupStepsPassStore, implicitKeyIgnoredStore, type KeyedJob, lapsedSlotKeptStore, weightIgnoredStore } from './KeyMutations.ts'

/** The deliberate bugs, by name. */
export const jobMutationNames = [
  'ackAfterDeadline', 'doubleGrant', 'dropEnqueue', 'dropHandOver', 'stealPartitions',
  'ridingAckIgnoresToken', 'handOverTwice', 'handOverLost', 'enqueueManyDuplicateKey', 'stopAbandonsLocalQueue', 'heartbeatOnce', 'lapseFromClaimTime', 'dueSignalLost',
  'pauseIgnored', 'cancelKeepsClaim', 'refusalKeepsSignal', 'historyClaimUnfenced', 'claimFenceIgnored', 'matchingFirstBlocksQueue',
  'refusedAddWaits', 'limitNotInStore', 'rateNotInStore', 'weightIgnored', 'dedupStepsPass', 'implicitKeyIgnored', 'lapsedSlotKept', 'shortBatchEndsQueue', 'batchLaterDueUnheard',
  'shortReservationEndsPass', 'pollsStayPut', 'idlePollsStayPut', 'ownerByFirstPartition', 'releaseUnannounced', 'enqueueHandOverUnsent', 'waiterFenceIgnored', 'takenWaiterKept', 'spentPollMoved', 'cancelUnheard', ...dispatchMutations,
] as const

/** One job mutation's name. */
export type JobMutationName = (typeof jobMutationNames)[number]

// Far enough back that every drawn visibility timeout (≤ 30 s) covers a recent lapse.
const backdateMs = 60_000
const dayMs = 24 * 3_600_000
// Rare enough that the run stays healthy to everything but the checkers.
// How long refusalKeepsSignal's made-up renewal lasts (a second, as the shortest drawn visibility timeout).
const refusedRenewalMs = 1_000
const dropEnqueueEvery = 5
// The concurrency limit limitNotInStore gives the store, and the rate rateNotInStore does: none a world reaches.
const liftedLimit = 10_000
const liftedRate: RateLimit = { perSecond: 1_000_000, burst: 1_000_000 }
// How much later refusedAddWaits gives refused jobs back (the refusal retry of a queue that waits).
const refusedAddDelayMs = 1_000

/** A mutation as one world applies it: its job store wrapper and, for bugs of the group, the rest. */
export interface JobsMutant {
  readonly wrapJobStore: (store: JobStore) => JobStore
  readonly busTap?: BusTap
  /** Wraps the membership view host `hostId`'s engine routes by (the world judges by the unwrapped one). */
  readonly wrapMembership?: (hostId: string, membership: EngineGroup['membership']) => EngineGroup['membership']
  /** Wraps the bus host `hostId`'s engine sends on (below the gate). */
  readonly wrapBus?: (hostId: string, bus: Bus) => Bus
  /** Wraps the job store host `hostId`'s engine sees, above the gate (the boundary log sees what passes it). */
  readonly wrapEngineJobStore?: (hostId: string, store: JobStore) => JobStore
  /** Hears the world call `stop()` on a host's work loops (and start them again). */
  readonly onWorkStopped?: (hostId: string, stopped: boolean) => void
  /** The dispatch machine every engine runs its queues' claims by (a planted dispatch bug, DispatchMutations.ts). */
  readonly dispatchMachine?: DispatchMachine
  /** Makes every engine's Matching book of waiting polls (a planted bug in how a host's partitions meet). */
  readonly matchingWaitingPolls?: () => HostWaitingPolls
}

// The job a hand-over message names, or null for any other message.
function handedOverJob(message: JsonValue): string | null {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return null
  const record = message as { readonly [key: string]: JsonValue }
  return record.kind === 'claimed' && typeof record.jobId === 'string' ? record.jobId : null
}

function isPollCancel(message: JsonValue): boolean {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return false
  const record = message as { readonly [key: string]: JsonValue }
  return record.kind === 'cancel' && typeof record.pollId === 'string'
}

/** One world's instance of `mutation` (state shared by its store wrappers and its bus tap). */
export function makeJobsMutant(mutation: JobMutationName): JobsMutant {
  const lostHandOvers = new Set<string>()
  const plain = (store: JobStore) => store
  if ((dispatchMutations as ReadonlyArray<string>).includes(mutation)) return { wrapJobStore: plain, dispatchMachine: mutatedDispatchMachine(mutation as DispatchMutation) }
  switch (mutation) {
    case 'stealPartitions':
      return { wrapJobStore: plain, wrapMembership: (hostId, membership) => ({ ownerOf: () => hostId, subscribe: (listener) => membership.subscribe(listener), hosts: () => membership.hosts() }) }
    case 'batchLaterDueUnheard':
      // The engine hears every job of a batch due at the batch's earliest time, so it announces that one alone.
      return {
        wrapJobStore: plain,
        wrapEngineJobStore: (_hostId, store) => ({
          ...passThrough(store),
          async enqueueMany(params, tx) {
            const stored = await store.enqueueMany(params, tx)
            const firstMs = Math.min(...stored.map((job) => job.runAtMs))
            return stored.map((job) => ({ ...job, runAtMs: firstMs }))
          },
        }),
      }
    case 'ownerByFirstPartition': {
      // An engine that owns a queue's first partition counts itself as the queue's owner and
      // sends no due signal, though the owners of its other partitions may hold the waiting claim.
      const views = new Map<string, EngineGroup['membership']>()
      return {
        wrapJobStore: plain,
        wrapMembership: (hostId, membership) => (views.set(hostId, membership), membership),
        wrapBus: (hostId, bus) => ({
          ...bus,
          kind: bus.kind,
          subscribe: (subscriber, handlers) => bus.subscribe(subscriber, handlers),
          close: () => bus.close(),
          send: (to, message) => bus.send(to, message),
          signalDue: (queue, dueMs) => {
            const first = { namespace: jobsNamespace, family: queue, type: jobTaskType, partition: 0 } as const
            return views.get(hostId)?.ownerOf(first) === hostId ? Promise.resolve() : bus.signalDue(queue, dueMs)
          },
        }),
      }
    }
    case 'releaseUnannounced': {
      // A kept job given back to the store is announced to the releasing engine's driver only:
      // the due signal its release sends next on the bus (no store call between) is dropped.
      const released = new Set<string>()
      return {
        wrapJobStore: plain,
        // Any other store call of the host first forgets the release, so only its own signal drops.
        wrapEngineJobStore: (hostId, store) =>
          new Proxy(passThrough(store), {
            get(target, name, receiver) {
              const value: unknown = Reflect.get(target, name, receiver)
              if (typeof value !== 'function') return value
              if (name !== 'release') {
                return (...args: unknown[]) => {
                  released.delete(hostId)
                  return (value as (...args: unknown[]) => unknown).apply(target, args)
                }
              }
              return async (params: Parameters<JobStore['release']>[0]) => {
                released.delete(hostId)
                const answer = await store.release(params)
                released.add(hostId)
                return answer
              }
            },
          }),
        wrapBus: (hostId, bus) => ({
          ...bus,
          kind: bus.kind,
          subscribe: (subscriber, handlers) => bus.subscribe(subscriber, handlers),
          close: () => bus.close(),
          send: (to, message) => bus.send(to, message),
          signalDue: (queue, dueMs) => (released.delete(hostId) ? Promise.resolve() : bus.signalDue(queue, dueMs)),
        }),
      }
    }
    case 'pollsStayPut':
      // A Matching host never moves a poll: a task stored on one of its partitions waits while its idle poll waits on another.
      return { wrapJobStore: plain, matchingWaitingPolls: () => ({ add: () => () => {}, taskStored: () => {}, pollsIdle: () => {}, size: () => 0 }) }
    case 'idlePollsStayPut':
      // A partition's idle polls stay where they are, though another partition of the family has a task ready.
      return {
        wrapJobStore: plain,
        matchingWaitingPolls: () => {
          const book = makeHostWaitingPolls()
          return { ...book, pollsIdle: () => {} }
        },
      }
    case 'spentPollMoved':
      // Every waiting poll looks movable to the book, one whose wait is up too: moved, it answers where it is.
      return {
        wrapJobStore: plain,
        matchingWaitingPolls: () => {
          const book = makeHostWaitingPolls()
          return { ...book, add: (key, poll) => book.add(key, { ...poll, canMove: () => true }) }
        },
      }
    case 'shortReservationEndsPass':
      // A pass's second reservation round (the one that names keys to pass over) finds nothing.
      return { wrapJobStore: plain, wrapEngineJobStore: (_hostId, store) => ({ ...passThrough(store), takeDue: (params) => (params.skipConcurrencyKeys === undefined ? store.takeDue(params) : Promise.resolve([])) }) }
    case 'lapsedSlotKept': {
      const keys = new Map<string, KeyedJob>()
      return { wrapJobStore: (store) => lapsedSlotKeptStore(passThrough(store), store, keys) }
    }
    case 'dropHandOver':
      return {
        wrapJobStore: (store) => makeMutantJobStore(store, mutation, lostHandOvers),
        busTap(message) {
          const jobId = message.kind === 'host' ? handedOverJob(message.message) : null
          if (jobId === null) return 'deliver'
          lostHandOvers.add(jobId)
          return 'drop'
        },
      }
    case 'handOverLost':
      return { wrapJobStore: plain, busTap: (message) => (message.kind === 'host' && handedOverJob(message.message) !== null ? 'drop' : 'deliver') }
    case 'enqueueHandOverUnsent':
      return { wrapJobStore: plain, busTap: (message) => (message.kind === 'host' && handedJobOf(message.message) !== null ? 'drop' : 'deliver') }
    case 'dueSignalLost':
      return { wrapJobStore: plain, busTap: (message) => (message.kind === 'due' ? 'drop' : 'deliver') }
    case 'cancelUnheard':
      return { wrapJobStore: plain, busTap: (message) => (message.kind === 'host' && isPollCancel(message.message) ? 'drop' : 'deliver') }
    case 'handOverTwice':
      return {
        wrapJobStore: plain,
        wrapBus: (_hostId, bus) => ({
          ...bus,
          kind: bus.kind,
          signalDue: (queue, dueMs) => bus.signalDue(queue, dueMs),
          subscribe: (hostId, handlers) => bus.subscribe(hostId, handlers),
          close: () => bus.close(),
          async send(to, message) {
            await bus.send(to, message)
            if (handedOverJob(message) !== null) await bus.send(to, message)
          },
        }),
      }
    case 'historyClaimUnfenced':
      return {
        wrapJobStore: plain,
        wrapEngineJobStore: (_hostId, store) => ({
          ...store,
          claimMany: ({ claims, nowMs }) => store.claimMany({ claims, nowMs }),
        }),
      }
    case 'shortBatchEndsQueue': {
      // Per engine and queue: the stamp of its last claim statement that came back short but not empty.
      const shortAt = new Map<string, number>()
      const heard = (hostId: string, queue: string, nowMs: number, asked: number, got: number): void => {
        if (got > 0 && got < asked) shortAt.set(`${hostId}/${queue}`, nowMs)
      }
      return {
        wrapJobStore: plain,
        wrapEngineJobStore: (hostId, store) => ({
          ...store,
          async claimDue(params) {
            if (shortAt.get(`${hostId}/${params.queue}`) === params.nowMs) return []
            const claimed = await store.claimDue(params)
            heard(hostId, params.queue, params.nowMs, params.claimTokens.length, claimed.length)
            return claimed
          },
          async ackAndClaimDue(params) {
            const answer = await store.ackAndClaimDue(params)
            heard(hostId, params.queue, params.nowMs, params.claimTokens.length, answer.claimed.length)
            return answer
          },
        }),
      }
    }
    case 'refusedAddWaits':
      return {
        wrapJobStore: plain,
        wrapEngineJobStore: (_hostId, store) => ({
          ...store,
          releaseDelivered: ({ deliveries, dueMs }) => store.releaseDelivered({ deliveries, dueMs: dueMs + refusedAddDelayMs }),
        }),
      }
    case 'heartbeatOnce': {
      const beaten = new Set<string>()
      // Which queue a job id was enqueued on (a heartbeat names only the job).
      const queueOfHeartbeat = new Map<string, string>()
      return {
        wrapJobStore: plain,
        wrapEngineJobStore: (_hostId, store) => ({
          ...store,
          async heartbeat(params) {
            const claim = `${params.id}:${params.claimToken}`
            if (!beaten.has(claim)) {
              beaten.add(claim)
              return store.heartbeat(params)
            }
            const job = await store.getJob({ queue: queueOfHeartbeat.get(params.id) ?? '', id: params.id })
            return job === null ? null : { ...job, deadlineMs: params.nowMs + (params.extendMs ?? job.visibilityTimeoutMs) }
          },
          enqueue: async (params, tx) => (queueOfHeartbeat.set(params.job.id, params.job.queue), store.enqueue(params, tx)),
          enqueueMany: async (params, tx) => {
            for (const job of params.jobs) queueOfHeartbeat.set(job.id, job.queue)
            return store.enqueueMany(params, tx)
          },
        }),
      }
    }
    case 'refusalKeepsSignal':
      return {
        wrapJobStore: plain,
        wrapEngineJobStore: (_hostId, store) => ({
          ...store,
          async heartbeat(params) {
            const renewed = await store.heartbeat(params)
            // The handle reads only the deadline of a renewal.
            return renewed ?? ({ id: params.id, claimToken: params.claimToken, deadlineMs: params.nowMs + (params.extendMs ?? refusedRenewalMs) } as unknown as JobRecord)
          },
        }),
      }
    case 'stopAbandonsLocalQueue': {
      const stopping = new Set<string>()
      return {
        wrapJobStore: plain,
        onWorkStopped: (hostId, stopped) => void (stopped ? stopping.add(hostId) : stopping.delete(hostId)),
        wrapEngineJobStore: (hostId, store) => ({
          ...store,
          claimDue: async (params) => {
            const jobs = await store.claimDue(params)
            return stopping.has(hostId) ? [] : jobs
          },
          ackAndClaimDue: async (params) => {
            const answer = await store.ackAndClaimDue(params)
            return stopping.has(hostId) ? { acked: answer.acked, claimed: [] } : answer
          },
        }),
      }
    }
    default:
      return { wrapJobStore: (store) => makeMutantJobStore(store, mutation) }
  }
}

/**
 * Wraps `inner` with one deliberate bug; `lostHandOvers` is what `dropHandOver`'s bus half
 * dropped (empty when the store is wrapped alone).
 */
export function makeMutantJobStore(inner: JobStore, mutation: JobMutationName, lostHandOvers: ReadonlySet<string> = new Set()): JobStore {
  return mutateJobStore(inner, mutation, lostHandOvers)
}

// The acks of `claims` that `acked` missed, re-issued a minute earlier (ackAfterDeadline's batched half).
async function ackMissedEarlier(inner: JobStore, claims: ReadonlyArray<ClaimRef>, acked: ReadonlyArray<string>, nowMs: number): Promise<string[]> {
  const missed = claims.filter((claim) => !acked.includes(claim.id))
  return missed.length === 0 ? [...acked] : [...acked, ...(await inner.ackMany({ claims: missed, nowMs: nowMs - backdateMs }))]
}

// Every call passed on to `inner` unchanged: the base each mutant overrides a few calls of.
function passThrough(inner: JobStore): JobStore {
  return {
    kind: inner.kind,
    enqueue: (params, tx) => inner.enqueue(params, tx),
    enqueueMany: (params, tx) => inner.enqueueMany(params, tx),
    addWaiters: (params) => inner.addWaiters(params),
    removeWaiters: (params) => inner.removeWaiters(params),
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
    releaseHandedOver: (params) => inner.releaseHandedOver(params),
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
}

function mutateJobStore(inner: JobStore, mutation: JobMutationName, lostHandOvers: ReadonlySet<string>): JobStore {
  const base = passThrough(inner)
  switch (mutation) {
    case 'waiterFenceIgnored':
      return waiterFenceIgnoredStore(base, inner)
    case 'takenWaiterKept':
      return { ...base, releaseHandedOver: async () => [] }
    case 'matchingFirstBlocksQueue': {
      const blocked = async (queue: string, nowMs: number): Promise<boolean> => (await inner.deliverableCount({ queue, nowMs, limit: 1 })) > 0
      return {
        ...base,
        claimDue: async (params) => ((await blocked(params.queue, params.nowMs)) ? [] : inner.claimDue(params)),
        ackAndClaimDue: async (params) =>
          (await blocked(params.queue, params.nowMs)) ? { acked: await inner.ackMany({ claims: params.acks, nowMs: params.nowMs }), claimed: [] } : inner.ackAndClaimDue(params),
      }
    }
    case 'ackAfterDeadline': {
      const earlier = <P extends { readonly nowMs: number }>(params: P): P => ({ ...params, nowMs: params.nowMs - backdateMs })
      return {
        ...base,
        ack: async (params) => (await inner.ack(params)) || inner.ack(earlier(params)),
        heartbeat: async (params) => (await inner.heartbeat(params)) ?? inner.heartbeat(earlier(params)),
        retry: async (params) => (await inner.retry(params)) ?? inner.retry(earlier(params)),
        fail: async (params) => (await inner.fail(params)) || inner.fail(earlier(params)),
        ackMany: async (params) => ackMissedEarlier(inner, params.claims, await inner.ackMany(params), params.nowMs),
        async ackAndClaimDue(params) {
          const answer = await inner.ackAndClaimDue(params)
          return { acked: await ackMissedEarlier(inner, params.acks, answer.acked, params.nowMs), claimed: answer.claimed }
        },
      }
    }
    case 'doubleGrant': {
      const again = async (params: { readonly id: string; readonly claimToken: string; readonly nowMs: number }, outcome: ClaimOutcome) => (outcome.kind === 'already-started' ? inner.claim({ ...params, nowMs: params.nowMs + dayMs }) : outcome)
      return {
        ...base,
        claim: async (params) => again(params, await inner.claim(params)),
        async claimMany(params) {
          const outcomes = await inner.claimMany(params)
          return Promise.all(outcomes.map((outcome, i) => again({ ...(params.claims[i] as ClaimRef), nowMs: params.nowMs }, outcome)))
        },
      }
    }
    case 'dropEnqueue': {
      let enqueues = 0
      const dropped = () => ++enqueues % dropEnqueueEvery === 0
      return {
        ...base,
        async enqueue(params, tx) {
          if (!dropped()) return inner.enqueue(params, tx)
          const job: JobRecord = { ...params.job, state: 'pending', attempts: 0, createdAtMs: params.nowMs, claimedAtMs: null, claimToken: null, deadlineMs: null, key: params.job.key ?? null, lastError: null, diedAtMs: null, lastHandlerError: null, lastHandlerStack: null, attemptErrors: [], progress: null }
          return job
        },
        async enqueueMany(params, tx) {
          const kept = params.jobs.filter(() => !dropped())
          const answers = await inner.enqueueMany({ ...params, jobs: kept }, tx)
          const byId = new Map(kept.map((job, i) => [job.id, answers[i]]))
          return params.jobs.map((job) => byId.get(job.id) ?? { id: job.id, runAtMs: job.runAtMs })
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
    case 'ridingAckIgnoresToken':
      return {
        ...base,
        async ackAndClaimDue(params) {
          const acks = await Promise.all(params.acks.map(async (ack) => ({ id: ack.id, claimToken: (await inner.getJob({ queue: params.queue, id: ack.id }))?.claimToken ?? ack.claimToken })))
          return inner.ackAndClaimDue({ ...params, acks })
        },
      }
    case 'enqueueManyDuplicateKey':
      return {
        ...base,
        enqueueMany(params, tx) {
          const seen = new Set<string>()
          const jobs = params.jobs.map((job, i) => {
            if (job.key == null) return job
            const key = `${job.queue}\u0000${job.key}`
            if (!seen.has(key)) return seen.add(key), job
            return { ...job, key: `${job.key}#${i}` }
          })
          return inner.enqueueMany({ ...params, jobs }, tx)
        },
      }
    case 'pauseIgnored':
      return { ...base, pauseQueue: async () => true }
    case 'rateNotInStore': {
      const lifted = <J extends { readonly rateLimit?: RateLimit | null; readonly rateLimitPerKey?: RateLimit | null }>(job: J): J => ({
        ...job,
        ...(job.rateLimit == null ? {} : { rateLimit: liftedRate }),
        ...(job.rateLimitPerKey == null ? {} : { rateLimitPerKey: liftedRate }),
      })
      return {
        ...base,
        enqueue: (params, tx) => inner.enqueue({ ...params, job: lifted(params.job) }, tx),
        enqueueMany: (params, tx) => inner.enqueueMany({ ...params, jobs: params.jobs.map(lifted) }, tx),
      }
    }
    case 'claimFenceIgnored': {
      const unfenced = <P extends { readonly fence?: ClaimFence }>({ fence: _ignored, ...rest }: P): Omit<P, 'fence'> => rest
      return {
        ...base,
        claim: (params) => inner.claim(unfenced(params)),
        claimMany: (params) => inner.claimMany(unfenced(params)),
        claimDue: (params) => inner.claimDue(unfenced(params)),
        ackAndClaimDue: (params) => inner.ackAndClaimDue(unfenced(params)),
        enqueue: (params, tx) => inner.enqueue(unfenced(params), tx),
      }
    }
    case 'weightIgnored':
      return weightIgnoredStore(base, inner)
    case 'dedupStepsPass':
      return dedupStepsPassStore(base, inner)
    case 'implicitKeyIgnored':
      return implicitKeyIgnoredStore(base, inner)
    case 'limitNotInStore': {
      const lifted = <J extends { readonly concurrencyLimit?: number }>(job: J): J => (job.concurrencyLimit === undefined ? job : { ...job, concurrencyLimit: liftedLimit })
      return {
        ...base,
        enqueue: (params, tx) => inner.enqueue({ ...params, job: lifted(params.job) }, tx),
        enqueueMany: (params, tx) => inner.enqueueMany({ ...params, jobs: params.jobs.map(lifted) }, tx),
      }
    }
    case 'cancelKeepsClaim':
      return {
        ...base,
        async cancel(params) {
          const job = await inner.getJob(params)
          return job?.state === 'processing' ? true : inner.cancel(params)
        },
      }
    case 'lapseFromClaimTime': {
      const queueOf = new Map<string, string>()
      return {
        ...base,
        enqueue: async (params, tx) => (queueOf.set(params.job.id, params.job.queue), inner.enqueue(params, tx)),
        enqueueMany: async (params, tx) => {
          for (const job of params.jobs) queueOf.set(job.id, job.queue)
          return inner.enqueueMany(params, tx)
        },
        async heartbeat(params) {
          const job = await inner.getJob({ queue: queueOf.get(params.id) ?? '', id: params.id })
          if (job === null || job.claimedAtMs === null) return inner.heartbeat(params)
          const fromClaimMs = Math.max(1, job.claimedAtMs + job.visibilityTimeoutMs - params.nowMs)
          const renewed = await inner.heartbeat({ ...params, extendMs: fromClaimMs })
          return renewed === null ? null : { ...renewed, deadlineMs: params.nowMs + (params.extendMs ?? job.visibilityTimeoutMs) }
        },
      }
    }
    default:
      return base
  }
}

/** For `runJobsSeed({ wrapJobStore })`: wraps each job store the world opens with `mutation` (store bugs; `makeJobsMutant` for all). */
export function wrapJobsWith(mutation: JobMutationName): (store: JobStore) => JobStore {
  return (store) => makeMutantJobStore(store, mutation)
}

// The store of `waiterFenceIgnored`: it keeps its own list of waiters and, when an enqueue to a
// waiter hands nothing over, gives the job to the queue's first waiter still waiting anyway — its
// fence unchecked (nor the queue's older rows or pause: a developer who dropped the guard).
function waiterFenceIgnoredStore(base: JobStore, inner: JobStore): JobStore {
  const waiters = new Map<string, Waiter>()
  return {
    ...base,
    async addWaiters(params) {
      await inner.addWaiters(params)
      const { claimTokens, nowMs: _nowMs, ...waiter } = params
      for (const claimToken of claimTokens) waiters.set(claimToken, { ...waiter, claimToken })
    },
    async removeWaiters(params) {
      for (const claimToken of params.claimTokens) waiters.delete(claimToken)
      return inner.removeWaiters(params)
    },
    async enqueue(params, tx) {
      const answer = await inner.enqueue(params, tx)
      if (answer.handedTo !== undefined) waiters.delete(answer.claimToken as string)
      const candidate = isHandOverCandidate(params.job, params.nowMs, JSON.stringify(params.job.payload).length)
      if (params.toWaiter !== true || !candidate || answer.handedTo !== undefined || answer.id !== params.job.id || answer.state !== 'pending') return answer
      const waiter = [...waiters.values()].find((known) => known.queue === params.job.queue && known.untilMs > params.nowMs)
      if (waiter === undefined || (await inner.removeWaiters({ claimTokens: [waiter.claimToken] })).length === 0) return answer
      waiters.delete(waiter.claimToken)
      const outcome = await inner.claim({ id: answer.id, claimToken: waiter.claimToken, nowMs: params.nowMs })
      return outcome.kind === 'claimed' ? { ...outcome.job, handedTo: { hostId: waiter.hostId, fence: waiter.fence } } : answer
    },
  }
}
