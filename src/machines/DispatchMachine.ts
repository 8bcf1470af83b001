/**
 * DispatchMachine — how the claims of one engine meet the due jobs of one job queue, as a pure
 * XState 5 machine: the claim protocol of the queue's owner (DESIGN.md §1). The jobs table is
 * the queue's backlog; this machine decides who is handed a job, when the store is asked, and
 * when Matching is. It does no I/O: hand-overs, line polls and due-time passes are commands
 * (DispatchProtocol.ts) that its runner (jobs/DispatchRunner.ts) carries out, answering with events.
 *
 * Context: the claims waiting in line (first come, first served), the claims set aside for a
 * job an enqueue is inserting already claimed (with the pass generation they were set aside in:
 * one that comes back to the line after a pass passed it by asks for another), the jobs claimed for a claimant that left (kept
 * for the next claim to join, and given back to the store at the next due-time pass, which the
 * runner has run within a short bound of the keeping: `job.kept`), the claims
 * parked on the line polls, the line polls running, the polls other engines forwarded here, the
 * lazy claims polling Matching, and the generation of due-time passes.
 *
 * Six regions, in parallel:
 * - **store** — `serving`: a claim may take the head of the due rows straight from the store;
 *   `drained`: the last such claim found fewer rows than it asked for, and no due-time pass has
 *   started since, so claims skip the store until one does (an idle claim costs no statement).
 *   A job that came through Matching leaves `drained`: while it was with Matching the store
 *   claimed nothing behind it, so if claims still wait, a pass runs now for them (otherwise
 *   they would wait for the next scan). A short answer from a statement that ran beside another
 *   head statement of this engine on the queue may have passed over rows that one held (the
 *   store skips rows another statement has locked) and did not take: they are due again when it
 *   ends, and nothing announces that, so once no head statement is out (`store.quiet`) a pass
 *   runs for the claims still waiting.
 * - **line** — `onePoll`: the parked claims share one Matching poll (tasks of the queue come
 *   from the store, and an idle worker costs no queue-machine step), which stays through the
 *   handler of a job handed to a parked claim while the store serves the queue, so the worker's
 *   next claim parks on it again; `pollPerWorker`: a task
 *   came through Matching, so there is a poll per parked claim and the next tasks sync-match
 *   side by side. A job handed over from the store, or a poll that waited its whole time for
 *   nothing, goes back to `onePoll`.
 * - **route** — `storeServes`: due jobs go straight from the store to this engine's claims;
 *   `matchingHolds`: polls of other engines wait here, so due jobs go through Matching, which
 *   serves every poller in arrival order.
 * - **delivery** — `here`: an instance of one of the queue's partitions is loaded on this
 *   engine (each instance tells the machine when it loads and unloads: it carries a companion,
 *   PartitionActor.ts, which the runner binds to this machine); `away`: none is. When the last
 *   one unloads — membership moved the partitions to another engine, or this engine's fence was
 *   refused — the claims parked here are woken to be routed again, jobs kept here go back to the
 *   store, and the store region serves again: this engine no longer delivers the queue, and
 *   whoever does next starts from the store.
 * - **engine** — `open`, then `closing` once the engine began closing: its workers take nothing
 *   more and its passes stop, so kept jobs go back to the store at once, and so does a job handed
 *   here from then on (an enqueue's job inserted claimed for a claim set aside here, or a
 *   hand-over from another engine's enqueue) or passed on by a claim that got another, rather
 *   than wait out its claim.
 * - **use** — `holding`: a claim, a kept job, a line poll (running, or ended but not yet
 *   answered) or a forwarded or lazy poll is here; `empty`: nothing is, so the runner may drop
 *   the dispatch once it has stayed empty a while (a queue used again gets a new one, which
 *   serves from the store: always safe). Judged after every step (`isHoldingNothing`).
 *
 * Holding two: a claim whose own store statement answered while it was handed a job too answers
 * the one ahead (the higher priority; within one, a job that came through Matching, else its
 * own), and the other goes to the next claim or is kept — unless a due-time pass beside
 * its statement claimed the one handed (only the store then knows which is ahead within a
 * priority) and no claim waits: then both go back and one statement claims the head.
 *
 * Invariants: a claim is in at most one of the line, the set-aside list; a job handed over
 * reaches exactly one claim, or is kept and then reaches one or is released; a job kept never
 * outranks the one its claimant answered in the same step; line polls never outnumber the parked claims
 * except between a hand-over and its handler's start (`handler.started` ends the extra ones),
 * and except the line's one poll, which stays while the store serves the queue and no poll of
 * another engine waits here (until a task it is matched finds nobody, or it waits its whole time).
 *
 * Named guards and actions are the seams where the simulator plants its dispatch bugs
 * (`provide`), so each planted bug is one named piece of this protocol gone wrong.
 *
 * Length: past 400 lines because the six regions share one context and one set of named guards
 * and actions (a step of one region reads what another's actions wrote); split by region, each
 * file would re-declare the context and the seams the simulator plants into.
 */
import { and, not, setup, type SnapshotFrom, stateIn } from 'xstate'
import type { JobRecord } from '../persistence/jobs/JobStore.ts'
import { type DispatchCommand, dispatchCommandActions, type DispatchEvent } from './DispatchProtocol.ts'

/** What the machine remembers between steps. */
export interface DispatchContext {
  readonly queue: string
  /** Claims in line, first come first served. */
  readonly waiting: ReadonlyArray<number>
  /** Claims taken out of line for a job an enqueue is inserting already claimed for them. */
  readonly reserved: ReadonlyArray<SetAsideClaim>
  /**
   * Jobs claimed for this engine that found no claim waiting (their claimant left while the claim
   * was at the store): the next claim to join takes one; the next due-time pass, a poll forwarded
   * here or the line closing gives them back to the store.
   */
  readonly spare: ReadonlyArray<JobRecord>
  /** Claims waiting on the line polls, in the order they parked. */
  readonly parked: ReadonlyArray<number>
  /** Line polls running, oldest first. */
  readonly linePolls: ReadonlyArray<number>
  /**
   * Line polls ended whose loop has not stopped yet: until its Matching poll answers, an ended
   * poll may still be matched a task, which this dispatch must hand on.
   */
  readonly closingPolls: ReadonlyArray<number>
  /** The next line poll's id. */
  readonly nextPollId: number
  /** Polls other engines forwarded here, waiting. */
  readonly forwardedWaiting: number
  /** Lazy claims polling Matching for a job already with Matching. */
  readonly lazyPolls: number
  /** Counts the due-time passes over the queue, so a store claim knows whether one started meanwhile. */
  readonly generation: number
  /** The instances of the queue's partitions loaded on this engine (PartitionActor's companion), by name. */
  readonly partitions: ReadonlyArray<string>
  /**
   * A short answer came from a statement that ran beside another head statement of this engine on
   * the queue: the rows that one held and did not take may be due with nobody told, so once no
   * head statement is out (`store.quiet`) a pass runs for the claims still waiting.
   */
  readonly heldBehind: boolean
}

/**
 * A claim set aside for an enqueue's job, with the pass generation when it was: a pass that
 * starts meanwhile passes it by (it waits for no job then), so if it comes back to the line the
 * rows that pass found due are still there for it.
 */
export interface SetAsideClaim {
  readonly claimId: number
  readonly generation: number
}

/** What a new machine needs. */
export interface DispatchInput {
  readonly queue: string
}

// Where a helper puts the commands it asks for (a step's `enqueue`).
type Enqueue = (command: DispatchCommand) => void

const without = (list: ReadonlyArray<number>, id: number): ReadonlyArray<number> => (list.includes(id) ? list.filter((other) => other !== id) : list)
const isSetAside = (reserved: ReadonlyArray<SetAsideClaim>, id: number): boolean => reserved.some((claim) => claim.claimId === id)
const notSetAside = (reserved: ReadonlyArray<SetAsideClaim>, id: number): ReadonlyArray<SetAsideClaim> => (isSetAside(reserved, id) ? reserved.filter((claim) => claim.claimId !== id) : reserved)

// Gives `job` to `claimId` if it waits (in line or set aside), else to the claim waiting longest,
// else keeps it for the next claim to join: the context after, with the hand-over enqueued.
function handedOver(context: DispatchContext, job: JobRecord, claimId: number | null, enqueue: Enqueue): DispatchContext {
  let taker: number | undefined
  let { waiting, reserved } = context
  if (claimId !== null && isSetAside(reserved, claimId)) {
    taker = claimId
    reserved = notSetAside(reserved, claimId)
  } else if (claimId !== null && waiting.includes(claimId)) {
    taker = claimId
    waiting = without(waiting, claimId)
  } else if (waiting.length > 0) {
    taker = waiting[0]
    waiting = waiting.slice(1)
  }
  if (taker === undefined) {
    enqueue({ type: 'job.kept', params: { job } })
    return { ...context, spare: [...context.spare, job] }
  }
  enqueue({ type: 'claim.handOver', params: { claimId: taker, job } })
  return { ...context, waiting, reserved }
}

// A job a claim holding another passes on: to the claim waiting longest, else kept — but a closing
// engine's claims take nothing more and no pass of its gives a kept job back, so it goes back to
// the store at once.
function passedOn(context: DispatchContext, job: JobRecord, enqueue: Enqueue, closing: boolean): DispatchContext {
  if (!closing) return handedOver(context, job, null, enqueue)
  enqueue({ type: 'job.release', params: { job } })
  return context
}

// A claim holding two answers `answered` and passes `other` on: the context after.
function answering(context: DispatchContext, answered: JobRecord, other: JobRecord, enqueue: Enqueue, closing: boolean): DispatchContext {
  enqueue({ type: 'claim.answer', params: { job: answered } })
  return passedOn(context, other, enqueue, closing)
}

// Ends line polls beyond one per parked claim (all of them once none is parked).
function endingIdlePolls(context: DispatchContext, enqueue: Enqueue): DispatchContext {
  if (context.linePolls.length <= context.parked.length) return context
  const kept = context.linePolls.slice(0, context.parked.length)
  const ended = context.linePolls.slice(context.parked.length)
  for (const pollId of [...ended].reverse()) enqueue({ type: 'linePoll.end', params: { pollId } })
  return { ...context, linePolls: kept, closingPolls: [...context.closingPolls, ...ended] }
}

/**
 * True when the dispatch holds nothing: no claim in line or set aside, no job kept, no claim
 * parked, no line poll running or closing, no forwarded or lazy poll. Such a dispatch may be
 * dropped: a new one serves the queue from the store, which is always safe.
 */
export function holdsNothing(context: DispatchContext): boolean {
  return (
    context.waiting.length + context.reserved.length + context.spare.length + context.parked.length + context.linePolls.length + context.closingPolls.length + context.forwardedWaiting + context.lazyPolls === 0
  )
}

// Starts line polls until there are `count`.
function startingPolls(context: DispatchContext, count: number, enqueue: Enqueue): DispatchContext {
  let { linePolls, nextPollId } = context
  while (linePolls.length < count) {
    enqueue({ type: 'linePoll.start', params: { pollId: nextPollId } })
    linePolls = [...linePolls, nextPollId]
    nextPollId++
  }
  return linePolls === context.linePolls ? context : { ...context, linePolls, nextPollId }
}

const withCommands = setup({
  types: { context: {} as DispatchContext, events: {} as DispatchEvent, input: {} as DispatchInput },
  actions: dispatchCommandActions,
  guards: {
    /** A claim holds two jobs whose order only the store knows, and no claim waits to take one of them. */
    mustSettleHead: ({ context, event }) => event.type === 'claim.heldTwo' && event.passBeside && context.waiting.length === 0,
    /**
     * Of a claim's two jobs, the one handed to it is ahead: a higher priority; within one, only a
     * job that came through Matching (first within its priority, as the store orders one with
     * Matching). Otherwise its own was due first or beside it.
     */
    handedIsAhead: ({ event }) =>
      event.type === 'claim.heldTwo' && (event.handed.priority > event.own.priority || (event.handed.priority === event.own.priority && event.throughMatching)),
    /** A store claim found fewer rows than it asked for, and no pass started since it was made. */
    isShortOfCurrentGeneration: ({ context, event }) => event.type === 'store.answered' && event.claimed < event.asked && event.generation === context.generation,
    /** A short answer from a statement that ran beside another head statement of this engine on the queue. */
    isShortBesideHeads: ({ event }) => event.type === 'store.answered' && event.claimed < event.asked && event.overlapped,
    /** A short answer beside another head statement is noted (`heldBehind`). */
    isHeldBehind: ({ context }) => context.heldBehind,
    /** Claims of this engine, or polls forwarded here, still wait for a job. */
    hasClaimsWaiting: ({ context }) => context.waiting.length > 0 || context.forwardedWaiting > 0,
    /**
     * No claim of this engine waits for the job a line poll was matched (its claimant left, or the
     * claims it served were handed jobs whose handlers wait, in a local queue, for a slot), so no
     * handler will start for it.
     */
    nobodyWaitsForMatch: ({ context }) => context.waiting.length === 0,
    /** One line poll runs and no claim is parked on it. */
    isLonePoll: ({ context }) => context.linePolls.length === 1 && context.parked.length === 0,
    /** A due-time pass started while the claim coming back to the line was set aside. */
    passRanWhileSetAside: ({ context, event }) =>
      event.type === 'claim.released' && context.reserved.some((claim) => claim.claimId === event.claimId && claim.generation !== context.generation),
    /** The forwarded poll leaving is the last one waiting. */
    isLastForwarded: ({ context }) => context.forwardedWaiting <= 1,
    /** A pass started, so rows may be due that the last store claim did not find: the store serves again. */
    passReopensStore: () => true,
    /** Nothing is held (`holdsNothing`): the dispatch may be dropped once it stays so a while. */
    isHoldingNothing: ({ context }) => holdsNothing(context),
    /** The engine is closing (the `engine` region): nothing handed here reaches a worker. */
    isEngineClosing: stateIn('#dispatch.engine.closing'),
    /** The partition instance unloading is the last of the queue's on this engine. */
    isLastPartition: ({ context, event }) => event.type === 'partition.unloaded' && context.partitions.length === 1 && context.partitions[0] === event.instance,
  },
})
const { enqueueActions, raise } = withCommands

// A due-time pass for the queue, now. Each reason for one is an action of its own (below), a seam
// the simulator can plant a bug into without touching the others.
const askForPass = enqueueActions(({ enqueue }) => {
  enqueue({ type: 'pass.request', params: {} })
})

const machineSetup = withCommands.extend({
  actions: {
    /** A claim joins the line; a job kept from an earlier hand-over goes to it at once. */
    queueClaim: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'claim.queued') return
      const [job, ...rest] = context.spare
      if (job !== undefined) {
        enqueue({ type: 'claim.handOver', params: { claimId: event.claimId, job } })
        enqueue.assign({ spare: rest })
      } else enqueue.assign({ waiting: [...context.waiting, event.claimId] })
    }),
    /**
     * Jobs kept for the next claim go back to the store: no claim joined before a due-time pass
     * of this engine (keeping a job asks for one within a short bound, `job.kept`), a poll
     * another engine forwarded here (which claims from the store), or the workers stopping. So a
     * kept job waits at most that bound, never its visibility timeout.
     */
    releaseKept: enqueueActions(({ context, enqueue }) => {
      if (context.spare.length === 0) return
      for (const job of context.spare) enqueue({ type: 'job.release', params: { job } })
      enqueue.assign({ spare: [] })
    }),
    /** A claim set aside for an enqueue's job that was not inserted goes back to the head of the line. */
    releaseClaim: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'claim.released' || !isSetAside(context.reserved, event.claimId)) return
      enqueue.assign({ reserved: notSetAside(context.reserved, event.claimId), waiting: [event.claimId, ...context.waiting] })
    }),
    /**
     * A job handed to this closing engine (an enqueue's job inserted claimed for a claim set aside
     * here, or a hand-over from another engine's enqueue) goes back to the store; the claim it was
     * for goes back to the line, which its worker, stopping, leaves.
     */
    giveBackHanded: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'job.handed') return
      enqueue({ type: 'job.release', params: { job: event.job } })
      const { claimId } = event
      if (claimId !== null && isSetAside(context.reserved, claimId)) {
        enqueue.assign({ reserved: notSetAside(context.reserved, claimId), waiting: [claimId, ...context.waiting] })
      }
    }),
    /** A claim holding two jobs whose order only the store knows, with nobody to take one: it settles the head at the store. */
    settleHead: enqueueActions(({ event, enqueue }) => {
      if (event.type === 'claim.heldTwo') enqueue({ type: 'claim.settleHead', params: { own: event.own, handed: event.handed } })
    }),
    /** A claim holding two answers the one handed to it; its own goes to the next claim waiting, or is kept (`passedOn`). */
    answerHanded: enqueueActions(({ context, event, enqueue, check }) => {
      if (event.type === 'claim.heldTwo') enqueue.assign(answering(context, event.handed, event.own, enqueue, check('isEngineClosing')))
    }),
    /** A claim holding two answers its own; the one handed to it goes to the next claim waiting, or is kept (`passedOn`). */
    answerOwn: enqueueActions(({ context, event, enqueue, check }) => {
      if (event.type === 'claim.heldTwo') enqueue.assign(answering(context, event.own, event.handed, enqueue, check('isEngineClosing')))
    }),
    /** A job handed to a claim that had already got one goes to the next claim waiting, or is kept (`passedOn`). */
    returnJob: enqueueActions(({ context, event, enqueue, check }) => {
      if (event.type !== 'job.returned') return
      enqueue.assign(passedOn(context, event.job, enqueue, check('isEngineClosing')))
    }),
    /** A claim leaves the line and the set-aside list without a job. */
    dropClaim: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'claim.left') return
      enqueue.assign({ waiting: without(context.waiting, event.claimId), reserved: notSetAside(context.reserved, event.claimId) })
    }),
    /** The claim waiting longest is set aside for the job an enqueue is inserting for it. */
    reserveClaim: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'claim.reserved' || !context.waiting.includes(event.claimId)) return
      enqueue.assign({ waiting: without(context.waiting, event.claimId), reserved: [...context.reserved, { claimId: event.claimId, generation: context.generation }] })
    }),
    /** A job claimed from the store for this engine reaches a claim, or is kept. */
    handOver: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'job.handed') return
      enqueue.assign(handedOver(context, event.job, event.claimId, enqueue))
    }),
    /** A job a line poll was matched reaches the claim waiting longest, or is kept. */
    handOverMatched: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'linePoll.matched') return
      enqueue.assign(handedOver(context, event.job, null, enqueue))
    }),
    /** A claim parks on the line polls; one starts for it when none runs. */
    parkClaim: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'claim.parked') return
      enqueue.assign(startingPolls({ ...context, parked: [...context.parked, event.claimId] }, 1, enqueue))
    }),
    /** A claim parks on the line polls; one starts for it while there are fewer than the claims parked. */
    parkClaimWithPoll: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'claim.parked') return
      const parked = [...context.parked, event.claimId]
      enqueue.assign(startingPolls({ ...context, parked }, parked.length, enqueue))
    }),
    /** A parked claim stops waiting on the line polls; one that leaves with nothing ends the extra polls. */
    unparkClaim: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'claim.unparked') return
      const unparked = { ...context, parked: without(context.parked, event.claimId) }
      enqueue.assign(event.handed ? unparked : endingIdlePolls(unparked, enqueue))
    }),
    /** Line polls beyond the parked claims end, behind the handler that was handed a job. */
    endIdlePolls: enqueueActions(({ context, enqueue }) => {
      enqueue.assign(endingIdlePolls(context, enqueue))
    }),
    /** After a task came through Matching, a poll for every parked claim, while the matched poll runs. */
    pollForEveryParked: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'linePoll.matched' || !context.linePolls.includes(event.pollId)) return
      enqueue.assign(startingPolls(context, context.parked.length, enqueue))
    }),
    /** A poll that waited its whole time for nothing ends, unless it is the last and a claim is parked on it. */
    endIdledPoll: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'linePoll.idled' || !context.linePolls.includes(event.pollId)) return
      if (context.linePolls.length <= 1 && context.parked.length > 0) return
      enqueue({ type: 'linePoll.end', params: { pollId: event.pollId } })
      enqueue.assign({ linePolls: without(context.linePolls, event.pollId), closingPolls: [...context.closingPolls, event.pollId] })
    }),
    /** A line poll's loop ended. */
    forgetPoll: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'linePoll.stopped') return
      enqueue.assign({ linePolls: without(context.linePolls, event.pollId), closingPolls: without(context.closingPolls, event.pollId) })
    }),
    /** A line poll failed: every parked claim fails with it, as its own poll's failure would. */
    failParked: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'linePoll.failed') return
      enqueue({ type: 'claims.fail', params: { claimIds: context.parked, error: event.error } })
      enqueue.assign({ linePolls: without(context.linePolls, event.pollId), closingPolls: without(context.closingPolls, event.pollId) })
    }),
    countForwarded: enqueueActions(({ context, event, enqueue }) => {
      enqueue.assign({ forwardedWaiting: context.forwardedWaiting + (event.type === 'forwarded.arrived' ? 1 : -1) })
    }),
    countLazyPoll: enqueueActions(({ context, event, enqueue }) => {
      enqueue.assign({ lazyPolls: context.lazyPolls + (event.type === 'lazyPoll.started' ? 1 : -1) })
    }),
    /**
     * A pass started: a claim made before it no longer marks the queue drained, and the rows a
     * statement beside a short answer held are the pass's to find (if that statement is still
     * out, the pass's own claim passes over them and notes it again).
     */
    countPass: enqueueActions(({ context, enqueue }) => {
      enqueue.assign(context.heldBehind ? { generation: context.generation + 1, heldBehind: false } : { generation: context.generation + 1 })
    }),
    /** A claim came back to the line after a pass passed it by: a pass serves it the rows that one found. */
    passForSetAside: askForPass,
    /** Claims wait behind a job that was with Matching: a pass serves them now. */
    requestPass: askForPass,
    /** A delivery's row was taken or gone while claims or forwarded polls wait: a pass serves them the rows due behind. */
    passForStale: askForPass,
    /** The head statements beside a short answer all ended while claims wait: a pass serves them the rows those held. */
    passForHeld: askForPass,
    /** Notes a short answer beside another head statement (a no-op for any other answer). */
    noteHeldBehind: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'store.answered' || context.heldBehind || !(event.claimed < event.asked && event.overlapped)) return
      enqueue.assign({ heldBehind: true })
    }),
    clearHeldBehind: enqueueActions(({ enqueue }) => {
      enqueue.assign({ heldBehind: false })
    }),
    /** A slot freed: the owner's pass serves the claims its key's limit held off, here or forwarded there. */
    announceSlot: enqueueActions(({ enqueue }) => {
      enqueue({ type: 'slot.announce', params: {} })
    }),
    /** The job of a line poll reached its claim: the store may serve what is behind it. */
    reachedThroughMatching: raise({ type: 'matching.reached' }),
    addPartition: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'partition.loaded' || context.partitions.includes(event.instance)) return
      enqueue.assign({ partitions: [...context.partitions, event.instance] })
    }),
    removePartition: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'partition.unloaded' || !context.partitions.includes(event.instance)) return
      enqueue.assign({ partitions: context.partitions.filter((instance) => instance !== event.instance) })
    }),
    /**
     * The queue's last partition instance here unloaded: the claims parked on its line polls are
     * woken to be routed again (to the partitions' new owners), rather than wait out their polls
     * on an engine that no longer delivers the queue.
     */
    rerouteParked: enqueueActions(({ context, enqueue }) => {
      if (context.parked.length > 0) enqueue({ type: 'claims.reroute', params: { claimIds: context.parked } })
    }),
  },
})

/** The dispatch machine of one job queue on one engine. */
export const dispatchMachine = machineSetup.createMachine({
  id: 'dispatch',
  type: 'parallel',
  context: ({ input }) => ({
    queue: input.queue,
    waiting: [],
    reserved: [],
    spare: [],
    parked: [],
    linePolls: [],
    closingPolls: [],
    nextPollId: 1,
    forwardedWaiting: 0,
    lazyPolls: 0,
    generation: 0,
    partitions: [],
    heldBehind: false,
  }),
  on: {
    'claim.queued': { actions: 'queueClaim' },
    'claim.left': { actions: 'dropClaim' },
    'claim.reserved': { actions: 'reserveClaim' },
    // A pass that ran while the claim was set aside passed it by: another runs for it now.
    'claim.released': [{ guard: 'passRanWhileSetAside', actions: ['releaseClaim', 'passForSetAside'] }, { actions: 'releaseClaim' }],
    'job.returned': { actions: 'returnJob' },
    'claim.heldTwo': [{ guard: 'mustSettleHead', actions: 'settleHead' }, { guard: 'handedIsAhead', actions: 'answerHanded' }, { actions: 'answerOwn' }],
    'claim.unparked': { actions: 'unparkClaim' },
    // While the store serves the queue, the line's one poll stays through the handler: the
    // worker's next claim parks on it again, and no queue machine is stepped to end it and start
    // another per job. Polls beyond it (a task came through Matching) end.
    'handler.started': [{ guard: and([stateIn('#dispatch.route.storeServes'), 'isLonePoll']), actions: [] }, { actions: 'endIdlePolls' }],
    'worker.stopping': { actions: 'endIdlePolls' },
    'linePoll.stopped': { actions: 'forgetPoll' },
    'linePoll.failed': { actions: 'failParked' },
    'lazyPoll.started': { actions: 'countLazyPoll' },
    'lazyPoll.ended': { actions: 'countLazyPoll' },
    'kept.expired': { actions: 'releaseKept' },
    'slot.freed': { actions: 'announceSlot' },
    // Only a pass adds the rows due behind it to Matching for the polls still waiting.
    'delivery.stale': { guard: 'hasClaimsWaiting', actions: 'passForStale' },
    // The rows a statement beside a short answer held are due again, and nothing announced them.
    'store.quiet': [{ guard: and(['isHeldBehind', 'hasClaimsWaiting']), actions: ['passForHeld', 'clearHeldBehind'] }, { guard: 'isHeldBehind', actions: 'clearHeldBehind' }],
  },
  states: {
    store: {
      initial: 'serving',
      states: {
        serving: {
          on: {
            'pass.started': { actions: ['countPass', 'releaseKept'] },
            'store.answered': [
              { guard: 'isShortOfCurrentGeneration', target: 'drained', actions: 'noteHeldBehind' },
              { guard: 'isShortBesideHeads', actions: 'noteHeldBehind' },
            ],
          },
        },
        drained: {
          on: {
            'pass.started': [{ guard: 'passReopensStore', target: 'serving', actions: ['countPass', 'releaseKept'] }, { actions: ['countPass', 'releaseKept'] }],
            'matching.reached': [{ guard: 'hasClaimsWaiting', target: 'serving', actions: 'requestPass' }, { target: 'serving' }],
            'store.answered': { guard: 'isShortBesideHeads', actions: 'noteHeldBehind' },
            // Whoever delivers the queue next starts from the store, not from this engine's last answer.
            'partition.unloaded': { guard: 'isLastPartition', target: 'serving' },
          },
        },
      },
    },
    line: {
      initial: 'onePoll',
      on: {
        'job.handed': [{ guard: 'isEngineClosing', actions: 'giveBackHanded' }, { target: '.onePoll', actions: 'handOver' }],
        // Matched for nobody: the job is kept, and the polls beyond the parked claims end now (left
        // running, one would take every job the queue's next pass adds to Matching, for nobody).
        'linePoll.matched': [
          { guard: 'nobodyWaitsForMatch', target: '.onePoll', actions: ['handOverMatched', 'endIdlePolls'] },
          { target: '.pollPerWorker', actions: ['handOverMatched', 'pollForEveryParked', 'reachedThroughMatching'] },
        ],
        'linePoll.idled': { target: '.onePoll', actions: 'endIdledPoll' },
      },
      states: {
        onePoll: { on: { 'claim.parked': { actions: 'parkClaim' } } },
        pollPerWorker: { on: { 'claim.parked': { actions: 'parkClaimWithPoll' } } },
      },
    },
    route: {
      initial: 'storeServes',
      states: {
        // A line poll with no claim parked on it ends once polls of other engines wait here: it
        // would take tasks Matching holds for them.
        storeServes: { on: { 'forwarded.arrived': { target: 'matchingHolds', actions: ['countForwarded', 'releaseKept', 'endIdlePolls'] } } },
        matchingHolds: {
          on: {
            'forwarded.arrived': { actions: ['countForwarded', 'releaseKept'] },
            'forwarded.left': [{ guard: 'isLastForwarded', target: 'storeServes', actions: 'countForwarded' }, { actions: 'countForwarded' }],
          },
        },
      },
    },
    delivery: {
      initial: 'away',
      states: {
        away: { on: { 'partition.loaded': { target: 'here', actions: 'addPartition' } } },
        here: {
          on: {
            'partition.loaded': { actions: 'addPartition' },
            'partition.unloaded': [{ guard: 'isLastPartition', target: 'away', actions: ['removePartition', 'rerouteParked', 'releaseKept'] }, { actions: 'removePartition' }],
          },
        },
      },
    },
    engine: {
      initial: 'open',
      states: {
        // Kept jobs go back now: no pass of a closing engine will give them back.
        open: { on: { 'engine.closing': { target: 'closing', actions: 'releaseKept' } } },
        closing: {},
      },
    },
    use: {
      initial: 'empty',
      states: {
        empty: { always: { guard: not('isHoldingNothing'), target: 'holding' } },
        holding: { always: { guard: 'isHoldingNothing', target: 'empty' } },
      },
    },
  },
})

/** The dispatch machine's type, for runners given a variant of it (`provide`). */
export type DispatchMachine = typeof dispatchMachine

/** A dispatch machine's snapshot. */
export type DispatchSnapshot = SnapshotFrom<typeof dispatchMachine>

/** True while the store may serve claims of the queue straight (not drained, no forwarded poll waiting). */
export function isStoreServing(snapshot: DispatchSnapshot): boolean {
  const value = snapshot.value as { readonly store: string; readonly route: string }
  return value.store === 'serving' && value.route === 'storeServes'
}

/** True when the last store claim found no more due rows and no pass has started since. */
export function isDrained(snapshot: DispatchSnapshot): boolean {
  return (snapshot.value as { readonly store: string }).store === 'drained'
}

/** True when the dispatch holds nothing (its `use` region is `empty`): its runner may drop it once it has stayed so a while. */
export function isEmpty(snapshot: DispatchSnapshot): boolean {
  return (snapshot.value as { readonly use: string }).use === 'empty'
}

/** True while an instance of the queue's partitions is loaded on this engine (the machine's `delivery` region is `here`). */
export function isDeliveredHere(snapshot: DispatchSnapshot): boolean {
  return (snapshot.value as { readonly delivery: string }).delivery === 'here'
}

/**
 * True when a handler's start (`handler.started`) would end line polls: more run than claims
 * are parked, beyond the line's one poll that stays while the store serves the queue. A runner
 * sends the event only then, so a worker's job costs no step for it.
 */
export function hasPollsToEndAtHandlerStart(snapshot: DispatchSnapshot): boolean {
  const { linePolls, parked } = snapshot.context
  if (linePolls.length <= parked.length) return false
  return !(linePolls.length === 1 && parked.length === 0 && (snapshot.value as { readonly route: string }).route === 'storeServes')
}

/** True while polls forwarded by other engines wait here (Matching serves in arrival order). */
export function isMatchingHolding(snapshot: DispatchSnapshot): boolean {
  return (snapshot.value as { readonly route: string }).route === 'matchingHolds'
}

/** The commands type, re-exported for runners. */
export type { DispatchCommand }
