/**
 * DispatchProtocol — the events a job queue's dispatch machine accepts and the commands it asks
 * its runner to carry out (DispatchMachine.ts; the runner is jobs/DispatchRunner.ts). As with the
 * physical queue (PhysicalQueueProtocol.ts), commands are named XState actions without an
 * implementation, so a step returns them as data.
 *
 * Ids: every claim waiting on this engine has an explicit number drawn by the runner from its
 * own counter, and every line poll one drawn by the machine from its context's counter, so
 * traces name them the same way on every run of a seed.
 *
 * Does not: carry time. The dispatch machine decides who gets a job and when the store or
 * Matching is asked; the deadlines of waits are the runner's timers on the injected clock.
 */
import type { JobRecord } from '../persistence/jobs/JobStore.ts'

/** Events, dotted and lowercase: facts in past tense. */
export type DispatchEvent =
  /** A claim of this engine joined the queue's line (it is handed a job kept for it, if any). */
  | { readonly type: 'claim.queued'; readonly claimId: number }
  /** A claim left the line without a job (its wait ended, it stopped, or its store claim answered). */
  | { readonly type: 'claim.left'; readonly claimId: number }
  /** The first claim in line was set aside for a job an enqueue is inserting already claimed. */
  | { readonly type: 'claim.reserved'; readonly claimId: number }
  /** A claim set aside for an enqueue's job goes back to the head of the line: nothing was inserted for it. */
  | { readonly type: 'claim.released'; readonly claimId: number }
  /** A job handed to a claim that had meanwhile got another one is handed on (next claim, else kept). */
  | { readonly type: 'job.returned'; readonly job: JobRecord }
  /**
   * A claim that has left the line holds two jobs: `own`, which its own store statement
   * answered, and `handed`, handed to it while that statement was out. `passBeside`: `handed` came
   * from a due-time pass that started while the statement was out; the two statements ran side by
   * side and either may have passed over rows the other held, so within a priority only the store
   * knows which of the two is ahead. `throughMatching`: `handed` came through Matching (a line
   * poll's task, claimed by History); a job with Matching is first within its priority in claim
   * order, so it is ahead of the claim's own within one.
   */
  | { readonly type: 'claim.heldTwo'; readonly own: JobRecord; readonly handed: JobRecord; readonly passBeside: boolean; readonly throughMatching: boolean }
  /** A claim in line parked: it now waits on the queue's line polls. */
  | { readonly type: 'claim.parked'; readonly claimId: number }
  /** A parked claim stopped waiting on the line polls; `handed`: because it was handed a job. */
  | { readonly type: 'claim.unparked'; readonly claimId: number; readonly handed: boolean }
  /**
   * A job claimed for this engine from the store (an enqueue, a due-time pass) is handed over:
   * to `claimId` when given and still waiting, else to the claim waiting longest, else kept for the next claim.
   */
  | { readonly type: 'job.handed'; readonly job: JobRecord; readonly claimId: number | null }
  /** A job handed to a parked claim reached its handler: line polls beyond the parked claims end (but the line's one poll while the store serves). */
  | { readonly type: 'handler.started' }
  /** A worker of the queue on this engine is stopping: every line poll beyond the parked claims ends. */
  | { readonly type: 'worker.stopping' }
  /** A line poll was matched a task whose job History claimed for this engine. */
  | { readonly type: 'linePoll.matched'; readonly pollId: number; readonly job: JobRecord }
  /** A line poll waited its whole time for nothing. */
  | { readonly type: 'linePoll.idled'; readonly pollId: number }
  /** A line poll's loop ended (it was ended, or the runner stopped it). */
  | { readonly type: 'linePoll.stopped'; readonly pollId: number }
  /** A line poll failed (a Matching or store error): the parked claims fail with it. */
  | { readonly type: 'linePoll.failed'; readonly pollId: number; readonly error: unknown }
  /** A poll another engine forwarded here started waiting, or ended. */
  | { readonly type: 'forwarded.arrived' }
  | { readonly type: 'forwarded.left' }
  /** A lazy claim's Matching poll for a job already with Matching started, or ended. */
  | { readonly type: 'lazyPoll.started' }
  | { readonly type: 'lazyPoll.ended' }
  /**
   * Jobs kept for the next claim go back to the store: a due-time pass of this engine ran over
   * other queues (this one may no longer be delivered here), or the queue's workers are stopping.
   */
  | { readonly type: 'kept.expired' }
  /** A due-time pass over the queue started: rows may be due that a claim did not find (and kept jobs go back). */
  | { readonly type: 'pass.started' }
  /**
   * A claim statement straight from the store, made in pass generation `generation`, asked for
   * `asked` due rows and got `claimed` (one event per statement: the claims of a turn step once).
   * `overlapped`: another head statement of this engine on the queue (a claim, or a pass's claim
   * or reservation) was at the store beside it, so a short answer may have passed over rows that
   * one held and did not take.
   */
  | { readonly type: 'store.answered'; readonly generation: number; readonly asked: number; readonly claimed: number; readonly overlapped: boolean }
  /**
   * No head statement of this engine on the queue is at the store any more, after a short answer
   * that overlapped one: the rows it held and did not take are claimable again, and nothing
   * announced them. Sent only while the machine notes such an answer (`heldBehind`).
   */
  | { readonly type: 'store.quiet' }
  /** A job that came through Matching reached its claimant: the store may serve rows behind it again. */
  | { readonly type: 'matching.reached' }
  /**
   * A Matching delivery of the queue found its job already claimed or gone (a claim straight from
   * the store took the row its task was added for, or the job ended meanwhile): the poll it was
   * for waits on, a row short of what the pass reserved for the polls waiting.
   */
  | { readonly type: 'delivery.stale' }
  /**
   * A job of the queue, which is limited per key, left processing on this engine (acked, retried or
   * failed): the slot it freed may let a due job of its key run, which a claim the full keys sent
   * back short (the store drained) does not look for on its own.
   */
  | { readonly type: 'slot.freed' }
  /** An instance of one of the queue's partitions was loaded on this engine (`instance`: its name and generation). */
  | { readonly type: 'partition.loaded'; readonly instance: string }
  /** That instance unloaded. */
  | { readonly type: 'partition.unloaded'; readonly instance: string }
  /**
   * The engine began closing: its workers take nothing more and its passes stop, so a job kept
   * or handed here from now on goes back to the store at once (no claim here will take it).
   */
  | { readonly type: 'engine.closing' }

/** The event type names. */
export type DispatchEventType = DispatchEvent['type']

/** Commands the machine asks for; the runner executes each at once. */
export type DispatchCommand =
  /** Give `job` (claimed for this engine already) to claim `claimId`, which has left the line. */
  | { readonly type: 'claim.handOver'; readonly params: { readonly claimId: number; readonly job: JobRecord } }
  /** Fail the parked claims `claimIds` with `error` (their line poll failed). */
  | { readonly type: 'claims.fail'; readonly params: { readonly claimIds: ReadonlyArray<number>; readonly error: unknown } }
  /** Give the claim of `job` back to the store (due now, the attempt uncounted): no claim waits for it. */
  | { readonly type: 'job.release'; readonly params: { readonly job: JobRecord } }
  /**
   * `job` found no claim and is kept for the next one to join: have a due-time pass run soon
   * enough (the runner's bound, on its clock) that the pass gives it back before its claim lapses.
   */
  | { readonly type: 'job.kept'; readonly params: { readonly job: JobRecord } }
  /** The claimant holding two jobs (`claim.heldTwo`) answers `job`; the step hands the other on, or keeps it. */
  | { readonly type: 'claim.answer'; readonly params: { readonly job: JobRecord } }
  /**
   * The claimant holding two jobs whose order only the store knows, with no claim waiting to take
   * one, gives both back to the store and claims the head with one statement: kept for the next
   * claim, the head could wait while the job behind it runs.
   */
  | { readonly type: 'claim.settleHead'; readonly params: { readonly own: JobRecord; readonly handed: JobRecord } }
  /** Start line poll `pollId`: poll Matching for the parked claims until it is ended. */
  | { readonly type: 'linePoll.start'; readonly params: { readonly pollId: number } }
  /** End line poll `pollId` (abort its Matching poll). */
  | { readonly type: 'linePoll.end'; readonly params: { readonly pollId: number } }
  /** Run a due-time pass for the queue now: claims wait that found nothing behind a Matching job. */
  | { readonly type: 'pass.request'; readonly params: Record<string, never> }
  /** Have the queue's owner run a due-time pass now (this engine's driver, or the owner's over the bus): a slot freed. */
  | { readonly type: 'slot.announce'; readonly params: Record<string, never> }
  /** Wake the parked claims `claimIds` with no job, to be routed again: the queue's partitions left this engine. */
  | { readonly type: 'claims.reroute'; readonly params: { readonly claimIds: ReadonlyArray<number> } }

/** The command type names. */
export type DispatchCommandType = DispatchCommand['type']

type ParamsOf<T extends DispatchCommandType> = Extract<DispatchCommand, { type: T }>['params']

// A command only names an effect: nothing runs during a step; the runner reads it off the result.
const command =
  <T extends DispatchCommandType>() =>
  (_args: unknown, _params: ParamsOf<T>): void => {}

/** The commands as the machine's named actions, typed by their params and doing nothing when stepped. */
export const dispatchCommandActions = {
  'claim.handOver': command<'claim.handOver'>(),
  'claims.fail': command<'claims.fail'>(),
  'job.release': command<'job.release'>(),
  'job.kept': command<'job.kept'>(),
  'claim.answer': command<'claim.answer'>(),
  'claim.settleHead': command<'claim.settleHead'>(),
  'linePoll.start': command<'linePoll.start'>(),
  'linePoll.end': command<'linePoll.end'>(),
  'pass.request': command<'pass.request'>(),
  'slot.announce': command<'slot.announce'>(),
  'claims.reroute': command<'claims.reroute'>(),
}
const commandTypes: ReadonlySet<string> = new Set(Object.keys(dispatchCommandActions))

/** True for the name of a dispatch command (as opposed to one of the machine's own actions). */
export function isDispatchCommandType(type: string): type is DispatchCommandType {
  return commandTypes.has(type)
}

/** The commands among the actions a `transition()` step returned, in order. */
export function dispatchCommandsOf(actions: ReadonlyArray<{ readonly type: string; readonly params?: unknown }>): DispatchCommand[] {
  return actions.filter((action) => isDispatchCommandType(action.type)).map((action) => ({ type: action.type, params: action.params }) as DispatchCommand)
}
