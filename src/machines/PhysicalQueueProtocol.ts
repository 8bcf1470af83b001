/**
 * PhysicalQueueProtocol — the events a physical queue machine accepts and the commands it asks
 * its runner to carry out. The machine is pure; the runner (actors/PhysicalQueueActor.ts)
 * performs each command's I/O and feeds the outcome back as an event. Commands are named XState
 * actions without an implementation (`queueCommandActions`), so a `transition()` step returns
 * them as data and `commandsOf` picks them out of the step's actions (QueueStepper.ts does the
 * same while it steps).
 *
 * Every event carries `nowMs`, read by the runner from the kernel clock, so the machine never
 * reads time. Random draws (retry jitter) are made by the runner and arrive inside events.
 */
import type { MatchboxError, OwnershipLost, Unavailable } from '../domain/errors.ts'
import type { JsonValue } from '../domain/Json.ts'
import type { StoredTask, Task } from '../domain/Task.ts'
import type { QueueMetadata, SubqueueAckLevel } from '../persistence/queues/Store.ts'

/** What History answered to `recordTaskStarted`, as the machine sees it. */
export type StartOutcome =
  | { readonly kind: 'started'; readonly response: JsonValue }
  | { readonly kind: 'already-started' }
  | { readonly kind: 'obsolete' }
  | { readonly kind: 'retryable'; readonly reason: string; readonly retryDelayMs: number }

/** How an add ended. `matched`: handed to a waiting poller with no insert; `spooled`: appended. */
export type AddResult =
  | { readonly kind: 'matched' }
  | { readonly kind: 'spooled'; readonly taskId: number }
  | { readonly kind: 'failed'; readonly error: MatchboxError }

/** How a poll ended: a started task, nothing by its deadline, or refused. */
export type PollResult =
  | { readonly kind: 'task'; readonly task: Task; readonly taskId: number | null; readonly response: JsonValue }
  | { readonly kind: 'none' }
  | { readonly kind: 'failed'; readonly error: MatchboxError }

/** Named one-shot timers; arming one replaces its previous due time. */
export type TimerName = 'acquire' | 'retry' | 'checkpoint' | 'idle' | 'drain' | 'ownership'

/** Events, dotted and lowercase: facts in past tense, commands imperative. */
export type QueueEvent =
  | { readonly type: 'queue.acquired'; readonly nowMs: number; readonly metadata: QueueMetadata }
  | { readonly type: 'queue.acquire.failed'; readonly nowMs: number; readonly error: MatchboxError }
  | { readonly type: 'task.added'; readonly nowMs: number; readonly requestId: string; readonly task: Task }
  | { readonly type: 'poll.arrived'; readonly nowMs: number; readonly pollId: string; readonly identity: string }
  | { readonly type: 'poll.cancelled'; readonly nowMs: number; readonly pollId: string }
  | { readonly type: 'append.completed'; readonly nowMs: number; readonly batchId: string; readonly firstTaskId: number }
  | { readonly type: 'append.failed'; readonly nowMs: number; readonly batchId: string; readonly error: MatchboxError }
  | { readonly type: 'read.completed'; readonly nowMs: number; readonly subqueue: number; readonly tasks: ReadonlyArray<StoredTask>; readonly limit: number }
  | { readonly type: 'read.failed'; readonly nowMs: number; readonly subqueue: number; readonly error: MatchboxError }
  | { readonly type: 'dispatch.completed'; readonly nowMs: number; readonly deliveryId: string; readonly outcome: StartOutcome }
  | { readonly type: 'checkpoint.completed'; readonly nowMs: number; readonly metadata: QueueMetadata }
  | { readonly type: 'checkpoint.failed'; readonly nowMs: number; readonly error: MatchboxError }
  | { readonly type: 'timer.fired'; readonly nowMs: number; readonly name: TimerName }
  | { readonly type: 'backlog.grew'; readonly nowMs: number; readonly subqueues: ReadonlyArray<number> }
  | { readonly type: 'ownership.checked'; readonly nowMs: number; readonly rangeId: number | null }
  | { readonly type: 'ownership.check.failed'; readonly nowMs: number; readonly error: MatchboxError }
  | { readonly type: 'drain.requested'; readonly nowMs: number; readonly reason: string }

/** Why a queue unloaded, and what it had done: the machine's output. */
export interface QueueProgress {
  readonly reason: UnloadReason
  readonly rangeId: number
  /** Ack level per subqueue as last saved by a checkpoint. */
  readonly savedAckLevels: Readonly<Record<number, number>>
  /** Ack level per subqueue in memory at unload (may be ahead of saved if the final write failed). */
  readonly ackLevels: Readonly<Record<number, number>>
  readonly readLevels: Readonly<Record<number, number>>
  /** Deliveries read but not handled at unload (they stay stored and are re-read by the next owner). */
  readonly outstanding: number
}

/** Why a queue left service. */
export type UnloadReason =
  | { readonly kind: 'drained'; readonly cause: string }
  | { readonly kind: 'ownership-lost'; readonly error: OwnershipLost }
  | { readonly kind: 'final-checkpoint-failed'; readonly error: MatchboxError }
  | { readonly kind: 'acquire-failed'; readonly error: MatchboxError }

/** Commands the machine requests; the runner executes each and answers with an event. */
export type QueueCommand =
  | { readonly type: 'store.acquire'; readonly params: Record<string, never> }
  | { readonly type: 'store.append'; readonly params: { readonly batchId: string; readonly tasks: ReadonlyArray<Task> } }
  | { readonly type: 'store.checkOwnership'; readonly params: Record<string, never> }
  | { readonly type: 'store.read'; readonly params: { readonly subqueue: number; readonly afterTaskId: number; readonly limit: number } }
  | { readonly type: 'store.checkpoint'; readonly params: { readonly ackLevels: ReadonlyArray<SubqueueAckLevel>; readonly final: boolean } }
  | {
      readonly type: 'history.recordStart'
      readonly params: { readonly deliveryId: string; readonly task: Task; readonly taskId: number | null; readonly pollId: string; readonly identity: string }
    }
  | { readonly type: 'add.reply'; readonly params: { readonly requestId: string; readonly result: AddResult } }
  | { readonly type: 'poll.reply'; readonly params: { readonly pollId: string; readonly result: PollResult } }
  | { readonly type: 'timer.set'; readonly params: { readonly name: TimerName; readonly atMs: number | null } }
  | { readonly type: 'queue.unloaded'; readonly params: QueueProgress }

/** The command type names, for runners that switch on them. */
export type QueueCommandType = QueueCommand['type']

type ParamsOf<T extends QueueCommandType> = Extract<QueueCommand, { type: T }>['params']

// A command only names an effect: nothing runs during a step; the runner reads it off the result.
const command =
  <T extends QueueCommandType>() =>
  (_args: unknown, _params: ParamsOf<T>): void => {}

/** The commands as the machine's named actions, typed by their params and doing nothing when stepped. */
export const queueCommandActions = {
  'store.acquire': command<'store.acquire'>(),
  'store.append': command<'store.append'>(),
  'store.read': command<'store.read'>(),
  'store.checkOwnership': command<'store.checkOwnership'>(),
  'store.checkpoint': command<'store.checkpoint'>(),
  'history.recordStart': command<'history.recordStart'>(),
  'add.reply': command<'add.reply'>(),
  'poll.reply': command<'poll.reply'>(),
  'timer.set': command<'timer.set'>(),
  'queue.unloaded': command<'queue.unloaded'>(),
}
const commandTypes: ReadonlySet<string> = new Set(Object.keys(queueCommandActions))

/** True for the name of a command (as opposed to one of the machine's own actions). */
export function isQueueCommandType(type: string): type is QueueCommandType {
  return commandTypes.has(type)
}

/** The commands among the actions a `transition()` / `initialTransition()` step returned, in order. */
export function commandsOf(actions: ReadonlyArray<{ readonly type: string; readonly params?: unknown }>): QueueCommand[] {
  return actions.filter((action) => isQueueCommandType(action.type)).map((action) => ({ type: action.type, params: action.params }) as QueueCommand)
}

/** Errors that end ownership: a fenced write was refused. */
export function isOwnershipLost(error: MatchboxError): error is OwnershipLost {
  return error._tag === 'OwnershipLost'
}

/** Errors worth retrying in place. */
export function isTransient(error: MatchboxError): error is Unavailable {
  return error._tag === 'Unavailable'
}
