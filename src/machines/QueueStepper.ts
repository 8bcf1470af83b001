/**
 * QueueStepper — steps one physical queue machine the way XState's pure `initialTransition()` /
 * `transition()` do, through one actor scope made once and reused for every step, and returns
 * the step's commands as data (PhysicalQueueProtocol.ts).
 *
 * Why not call `transition()`: it builds a throwaway actor, system and snapshot around every
 * call, which costs more than the step itself on a busy queue. The scope here is inert like
 * theirs — nothing is deferred, emitted, spawned or executed; actions only reach
 * `actionExecutor`, which keeps the commands — so the snapshots and commands are the same.
 *
 * A stepper is synchronous and not re-entrant: a step runs to completion before it returns,
 * and each step's commands are a fresh array the caller owns.
 */
import { type AnyActorScope, createActor, type ExecutableActionObject } from 'xstate'
import { physicalQueueMachine, type QueueSnapshot } from './PhysicalQueueMachine.ts'
import { isQueueCommandType, type QueueCommand, type QueueEvent } from './PhysicalQueueProtocol.ts'
import type { QueueInput } from './QueueContext.ts'

/** A snapshot and the commands its step asks for, in order. */
export type QueueStep = readonly [snapshot: QueueSnapshot, commands: QueueCommand[]]

/** Steps one queue's machine; make one per queue. */
export interface QueueStepper {
  /** The machine's first snapshot and its commands (the acquire). */
  readonly start: (input: QueueInput) => QueueStep
  /** The next snapshot after `event`, and its commands. */
  readonly step: (snapshot: QueueSnapshot, event: QueueEvent) => QueueStep
}

/** A stepper with its own inert actor scope. */
export function makeQueueStepper(): QueueStepper {
  // Never started: it only lends the scope an actor reference and a system, as transition() does.
  const self = createActor(physicalQueueMachine, { input: { queue: '', nowMs: 0 } })
  let commands: QueueCommand[] = []
  const scope: AnyActorScope = {
    self,
    system: self.system,
    id: '',
    sessionId: '',
    logger: () => {},
    defer: () => {},
    emit: () => {},
    stopChild: () => {},
    actionExecutor: (action: ExecutableActionObject) => {
      if (isQueueCommandType(action.type)) commands.push({ type: action.type, params: action.params } as QueueCommand)
    },
  }
  const collect = (snapshot: QueueSnapshot): QueueStep => {
    const step = [snapshot, commands] as const
    commands = []
    return step
  }
  return {
    start: (input) => {
      commands = []
      return collect(physicalQueueMachine.getInitialSnapshot(scope, input))
    },
    step: (snapshot, event) => {
      commands = []
      return collect(physicalQueueMachine.transition(snapshot, event, scope))
    },
  }
}
