/**
 * QueueStepper — steps physical queue machines the way XState's pure `initialTransition()` /
 * `transition()` do, through one actor scope made once and reused for every step of every
 * queue, and returns each step's commands as data (PhysicalQueueProtocol.ts).
 *
 * Why not call `transition()`: it builds a throwaway actor, system and snapshot around every
 * call, which costs more than the step itself on a busy queue (and an actor per queue still
 * shows when queues load and unload often). The scope here is inert like theirs — nothing is
 * deferred, emitted, spawned or executed; actions only reach `actionExecutor`, which keeps the
 * commands — so the snapshots and commands are the same.
 *
 * Sharing one scope is safe because a step is synchronous and calls nothing outside the
 * machine: no step starts inside another. Each step's commands are a fresh array the caller owns.
 */
import type { AnyActorScope, ExecutableActionObject } from 'xstate'
import { makeInertScope } from './InertScope.ts'
import { physicalQueueMachine, type QueueSnapshot } from './PhysicalQueueMachine.ts'
import { isQueueCommandType, type QueueCommand, type QueueEvent } from './PhysicalQueueProtocol.ts'
import type { QueueInput } from './QueueContext.ts'

/** A snapshot and the commands its step asks for, in order. */
export type QueueStep = readonly [snapshot: QueueSnapshot, commands: QueueCommand[]]

// The commands of the step running now.
let commands: QueueCommand[] = []

const scope: AnyActorScope = makeInertScope(physicalQueueMachine, { queue: '', nowMs: 0 }, (action: ExecutableActionObject) => {
  if (isQueueCommandType(action.type)) commands.push({ type: action.type, params: action.params } as QueueCommand)
})

function collected(snapshot: QueueSnapshot): QueueStep {
  const step = [snapshot, commands] as const
  commands = []
  return step
}

/** A new machine's first snapshot and its commands (the acquire). */
export function startQueueMachine(input: QueueInput): QueueStep {
  commands = []
  return collected(physicalQueueMachine.getInitialSnapshot(scope, input))
}

/** The snapshot after `event`, and the commands the step asks for. */
export function stepQueueMachine(snapshot: QueueSnapshot, event: QueueEvent): QueueStep {
  commands = []
  return collected(physicalQueueMachine.transition(snapshot, event, scope))
}
