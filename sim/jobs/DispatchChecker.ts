/**
 * DispatchChecker — the judge of what a queue's line polls cost and of the jobs its dispatch
 * keeps, read from each engine's dispatch steps (the event each dispatch machine took and the commands it asked for, as
 * `makeMatchbox({ onDispatchStep })` reports them). A line poll that Matching matched a job no
 * claim waits for made a claim for nobody: the job is kept and given back to the store at the
 * next pass. That costs statements, not time, so no delivery checker sees it; a poll left
 * running after it would take every job the queue's next pass adds to Matching, for nobody
 * again, ahead of the polls that wait for them (forwarded from other engines).
 *
 * - `poll for nobody ends`: after a step in which a line poll's job found no claim (the step
 *   keeps it), the queue's line polls running on that engine do not outnumber its claims parked
 *   on them (a claim handed a job stays parked until its wait ends, so a poll may stay for it).
 * - `moved queue lets go`: once the last instance of a queue's partitions loaded on an engine
 *   unloaded (membership moved them away, or the engine's fence was refused), every claim parked
 *   in that engine's line for the queue then stops waiting there, and every job kept there then
 *   goes back to the store, within `letGoBoundMs`: the engine no longer delivers the queue, so a
 *   claim left parked waits out its own wait while jobs wait at the new owner, and a kept job
 *   waits for the next pass. The partition's move itself may be invisible to every delivery
 *   checker (a worker whose view changed first already claims at the new owner), so it is judged
 *   from the steps.
 * - `no head kept`: when a claim of an engine is answered a job of a queue with one partition
 *   (`answered`: a lone claim's answer, or a loop without a local queue starting its handler; the
 *   order holds per partition), no job ahead of it in claim order is kept on that engine's
 *   incarnation for the queue: the job ahead would wait for a later claim, or the next pass, while
 *   the one behind it runs. A claim can hold two jobs at once (its own statement's and one handed
 *   to it meanwhile). Ahead means a higher priority, or within one, claimed from a place before
 *   the other's (ClaimOrderModel.ts; compared only where the model knows both places, and not
 *   between two jobs claimed from Matching, whose order is Matching's backlog's). A claim that
 *   was to settle its two jobs at the store (both back, one statement for the head) and could
 *   not (the give-back failed: the store unreachable) answers one by priority alone; within a
 *   priority that answer is not judged against the other, which only the store could rank.
 *
 * - `dropped line held nothing`: an engine drops a queue's dispatch only once it has held nothing
 *   a while, so when the steps of a newer dispatch of the queue begin (the listener numbers them),
 *   no claim is parked in the one before it and no job kept there: a claim stranded in a dropped
 *   line waits out its own wait, heard by no pass, and a kept job waits for its claim to lapse.
 *
 * Polls, parked claims, kept jobs and loaded partition instances are counted per host
 * incarnation and queue, from the steps alone: a poll runs from its `linePoll.start` command
 * until its `linePoll.end` command or its `linePoll.stopped` or `linePoll.failed` event; a claim
 * is parked from `claim.parked` until `claim.unparked`; a job is kept from its `job.kept`
 * command until a `claim.handOver` or `job.release` command names it; an instance is loaded from
 * `partition.loaded` until `partition.unloaded`. A newer dispatch of the queue counts from zero
 * (its instances are sent to it again when it is made); steps of the one before it are not
 * counted any more.
 *
 * Does not: judge who gets a job or when (the delivery checkers in JobsWorld.ts and
 * HandlerCheckers.ts do), or read the machine's context.
 */
import type { DispatchCommand, DispatchEvent } from '../../src/machines/DispatchProtocol.ts'
import { type JobOrder, type JobPlace, placedBefore } from './ClaimOrderModel.ts'

/** The names this checker reports under (JobCheckers.ts lists them with the others). */
export const dispatchCheckerNames = ['poll for nobody ends', 'moved queue lets go', 'no head kept', 'dropped line held nothing'] as const

/** One dispatch checker's name. */
export type DispatchCheckerName = (typeof dispatchCheckerNames)[number]

/** What the checker needs from the world. */
export interface DispatchCheckerDeps {
  readonly fail: (checker: DispatchCheckerName, sentence: string) => void
  /** Where a job stood in claim order just before its current claim (ClaimOrderModel.ts's `claimedFrom`). */
  readonly orderOf: (id: string) => JobOrder | undefined
}

/**
 * How long after the last partition instance of a queue unloaded on an engine a claim may stay
 * parked there, or a job kept there, in virtual time. The dispatch wakes the parked claims and
 * gives the kept jobs back in the very step that hears the unload (`claims.reroute`,
 * `job.release`), and a woken claim leaves the line polls within the same instant; on memory seeds
 * 1…300 none took any virtual time. Far below a claim's own wait (a second) and the bound a kept
 * job waits for a pass (`jobKeptHoldMs`), which is what a dispatch that never heard the unload
 * costs.
 */
export const letGoBoundMs = 50

// One engine incarnation's queue: the line polls running, the claims parked on them, the jobs
// kept, the partition instances loaded, and what an unload of the last of those left to let go
// (claim id or job id → by when).
interface QueueLine {
  // The number of the dispatch these are counted from (DispatchStepListener's `dispatch`).
  readonly dispatch: number
  readonly polls: Set<number>
  readonly parked: Set<number>
  readonly kept: Set<string>
  readonly partitions: Set<string>
  readonly claimsToLetGo: Map<number, { readonly byMs: number; readonly sinceMs: number }>
  readonly jobsToLetGo: Map<string, { readonly byMs: number; readonly sinceMs: number }>
  // Pairs a claim holding two was to settle at the store (`claim.settleHead`), by the claim's own job's id.
  readonly settling: Map<string, string>
  // A kept job → the job answered beside it when the claim could not settle the pair at the store.
  readonly unsettled: Map<string, string>
}

/** Judges the dispatch steps of every engine of a world (see the header). */
export class DispatchChecker {
  readonly #deps: DispatchCheckerDeps
  readonly #lines = new Map<string, QueueLine>()

  constructor(deps: DispatchCheckerDeps) {
    this.#deps = deps
  }

  /**
   * One step of `queue`'s dispatch number `dispatch` on host `hostId`'s incarnation
   * `incarnation`, at world time `nowMs`.
   */
  step(hostId: string, incarnation: number, queue: string, event: DispatchEvent, commands: ReadonlyArray<DispatchCommand>, nowMs: number, dispatch = 1): void {
    const key = `${hostId}/${incarnation}/${queue}`
    let line = this.#lines.get(key)
    if (line !== undefined && dispatch < line.dispatch) return
    if (line !== undefined && dispatch > line.dispatch && line.parked.size + line.kept.size > 0) {
      this.#deps.fail(
        'dropped line held nothing',
        `${hostId} made a new dispatch of ${queue} at ${nowMs} while the one before it still held ${line.parked.size} claim${line.parked.size === 1 ? '' : 's'} parked (${[...line.parked].join(', ')}) and ${line.kept.size} job${line.kept.size === 1 ? '' : 's'} kept: a claim stranded in a dropped line waits out its own wait, heard by no pass`,
      )
    }
    if (line === undefined || dispatch > line.dispatch) {
      line = { dispatch, polls: new Set(), parked: new Set(), kept: new Set(), partitions: new Set(), claimsToLetGo: new Map(), jobsToLetGo: new Map(), settling: new Map(), unsettled: new Map() }
      this.#lines.set(key, line)
    }
    if (event.type === 'claim.parked') line.parked.add(event.claimId)
    if (event.type === 'claim.unparked') {
      line.parked.delete(event.claimId)
      this.#letGo(line.claimsToLetGo, event.claimId, nowMs, (since) => `claim ${event.claimId} of ${hostId} stayed parked in ${queue}'s line from ${since} until ${nowMs}${event.handed ? ' (then handed a job there)' : ''}, though the last of the queue's partition instances on ${hostId} had unloaded at ${since}: a claim left parked on an engine that no longer delivers the queue waits out its own wait while jobs wait at the new owner`)
    }
    if (event.type === 'linePoll.stopped' || event.type === 'linePoll.failed') line.polls.delete(event.pollId)
    if (event.type === 'partition.loaded') line.partitions.add(event.instance)
    let keptJob: string | null = null
    // The same two jobs again, with no pass beside: their give-back failed, and the claim answers
    // the one the records rank first (`unsettled`, see `answered`).
    const fallback = event.type === 'claim.heldTwo' && !event.passBeside && line.settling.get(event.own.id) === event.handed.id
    if (event.type === 'claim.heldTwo') line.settling.delete(event.own.id)
    for (const command of commands) {
      if (command.type === 'linePoll.start') line.polls.add(command.params.pollId)
      else if (command.type === 'linePoll.end') line.polls.delete(command.params.pollId)
      else if (command.type === 'claim.settleHead') line.settling.set(command.params.own.id, command.params.handed.id)
      else if (command.type === 'job.kept') {
        keptJob = command.params.job.id
        line.kept.add(keptJob)
        if (fallback && event.type === 'claim.heldTwo') line.unsettled.set(keptJob, keptJob === event.own.id ? event.handed.id : event.own.id)
      } else if (command.type === 'claim.handOver' || command.type === 'job.release') {
        const id = command.params.job.id
        line.kept.delete(id)
        line.unsettled.delete(id)
        this.#letGo(line.jobsToLetGo, id, nowMs, (since) => `job ${id} stayed kept on ${hostId} for ${queue} from ${since} until ${nowMs} (then ${command.type === 'job.release' ? 'given back to the store' : 'handed to a claim there'}), though the last of the queue's partition instances on ${hostId} had unloaded at ${since}: a kept job of a queue that moved away waits for a pass instead of going back to the store at once`)
      }
    }
    if (event.type === 'partition.unloaded' && line.partitions.delete(event.instance) && line.partitions.size === 0) {
      // Judged after the step's commands: the step that hears the unload is the one that lets go.
      for (const claimId of line.parked) line.claimsToLetGo.set(claimId, { byMs: nowMs + letGoBoundMs, sinceMs: nowMs })
      for (const id of line.kept) line.jobsToLetGo.set(id, { byMs: nowMs + letGoBoundMs, sinceMs: nowMs })
    }
    if (event.type !== 'linePoll.matched' || keptJob === null || line.polls.size <= line.parked.size) return
    this.#deps.fail(
      'poll for nobody ends',
      `job ${keptJob} of ${queue}, matched to line poll ${event.pollId} of ${hostId} at ${nowMs} with no claim waiting, was kept while ${line.polls.size} line poll${line.polls.size === 1 ? '' : 's'} ran on ${line.parked.size} claim${line.parked.size === 1 ? '' : 's'} parked: a poll left running takes the next jobs for nobody`,
    )
  }

  /**
   * A claim of host `hostId`'s incarnation `incarnation` was answered job `id` of `queue` (a lone
   * claim's answer, or a work loop's handler starting it), at world time `nowMs`.
   */
  answered(hostId: string, incarnation: number, queue: string, id: string, nowMs: number): void {
    const line = this.#lines.get(`${hostId}/${incarnation}/${queue}`)
    const order = this.#deps.orderOf(id)
    if (line === undefined || order === undefined) return
    for (const kept of line.kept) {
      const keptOrder = this.#deps.orderOf(kept)
      if (keptOrder === undefined) continue
      const placesAhead = keptOrder.place !== null && order.place !== null && !(fromMatching(keptOrder.place) && fromMatching(order.place)) && placedBefore(keptOrder.place, order.place)
      // A claim whose two jobs could not go back to the store (the give-back failed) answers one
      // and keeps the other, ranked by priority alone: within a priority only the store knows.
      const withinUnsettled = line.unsettled.get(kept) === id && keptOrder.priority === order.priority
      if (keptOrder.priority < order.priority || (keptOrder.priority === order.priority && !placesAhead) || withinUnsettled) continue
      this.#deps.fail(
        'no head kept',
        `a claim of ${hostId} was answered job ${id} of ${queue} (${described(order)}) at ${nowMs} while job ${kept} (${described(keptOrder)}), claimed for that engine, was kept there for a later claim: the job ahead in claim order waits while the one behind it runs`,
      )
      return
    }
  }

  // `id` let go at `nowMs`: fails when an unload had asked for that by an earlier time.
  #letGo<K>(toLetGo: Map<K, { readonly byMs: number; readonly sinceMs: number }>, id: K, nowMs: number, sentence: (sinceMs: number) => string): void {
    const due = toLetGo.get(id)
    if (due === undefined) return
    toLetGo.delete(id)
    if (nowMs > due.byMs) this.#deps.fail('moved queue lets go', sentence(due.sinceMs))
  }
}

// Claimed from Matching: among such jobs the order is Matching's backlog's (appended by due-time
// passes, in the order each pass reserved them), which the store boundary does not show.
const fromMatching = (place: JobPlace): boolean => place.dueMs === Number.NEGATIVE_INFINITY

// A job's order, in words: its priority, and the place it was claimed from when known.
function described(order: JobOrder): string {
  const place: JobPlace | null = order.place
  if (place === null) return `priority ${order.priority}`
  return `priority ${order.priority}, claimed from ${place.dueMs === Number.NEGATIVE_INFINITY ? 'Matching' : `due ${place.dueMs}`}, #${place.seq} in due order`
}
