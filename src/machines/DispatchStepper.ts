/**
 * DispatchStepper — steps a dispatch machine (DispatchMachine.ts, or a variant of it made with
 * `provide`) the way XState's pure `initialTransition()` / `transition()` do, through one inert
 * actor scope made once per machine, and returns each step's commands as data.
 *
 * Why not call `transition()`: it builds a throwaway actor and system around every call, which
 * costs more than the step itself; a claim path steps on every hand-over. The scope is inert as
 * theirs is — nothing is deferred, emitted, spawned or executed; actions only reach
 * `actionExecutor`, which keeps the commands — so snapshots and commands are the same
 * (DispatchMachine.test.ts checks it against `transition()`).
 *
 * Sharing a scope is safe because a step is synchronous and calls nothing outside the machine.
 *
 * A step that changed nothing (XState answers the very snapshot it was given, and no command) is
 * remembered against that snapshot: the same event again — one whose fields are the same values —
 * answers at once, without stepping. A step is a pure function of snapshot and event, so this
 * changes no answer; it spares the steps a worker's claim loop repeats for every job (each claim
 * statement's answer, which only a short answer acts on), which cost a walk of every region.
 */
import type { ExecutableActionObject } from 'xstate'
import { makeInertScope } from './InertScope.ts'
import type { DispatchMachine, DispatchSnapshot } from './DispatchMachine.ts'
import { type DispatchCommand, type DispatchEvent, isDispatchCommandType } from './DispatchProtocol.ts'

/** A snapshot and the commands its step asks for, in order. */
export type DispatchStep = readonly [snapshot: DispatchSnapshot, commands: DispatchCommand[]]

/** Steps one dispatch machine definition. */
export interface DispatchStepper {
  /** A new machine's first snapshot (it asks for nothing). */
  start(queue: string): DispatchSnapshot
  /** The snapshot after `event`, and the commands the step asks for. */
  step(snapshot: DispatchSnapshot, event: DispatchEvent): DispatchStep
}

// Two events with the same fields, each holding the same value (records compared by identity).
function isSameEvent(a: DispatchEvent, b: DispatchEvent): boolean {
  if (a === b) return true
  if (a.type !== b.type) return false
  const left = a as unknown as Readonly<Record<string, unknown>>
  const right = b as unknown as Readonly<Record<string, unknown>>
  for (const key in left) if (left[key] !== right[key]) return false
  for (const key in right) if (!(key in left)) return false
  return true
}

/** Makes the stepper of `machine`. */
export function makeDispatchStepper(machine: DispatchMachine): DispatchStepper {
  let commands: DispatchCommand[] = []
  // Per snapshot, the last event whose step left it as it was and asked for nothing.
  const unchangedBy = new WeakMap<DispatchSnapshot, DispatchEvent>()
  const scope = makeInertScope(machine, { queue: '' }, (action: ExecutableActionObject) => {
    if (isDispatchCommandType(action.type)) commands.push({ type: action.type, params: action.params } as DispatchCommand)
  })
  return {
    start(queue) {
      commands = []
      return machine.getInitialSnapshot(scope, { queue })
    },
    step(snapshot, event) {
      const unchanged = unchangedBy.get(snapshot)
      if (unchanged !== undefined && isSameEvent(unchanged, event)) return [snapshot, []]
      commands = []
      const next = machine.transition(snapshot, event, scope)
      const step = [next, commands] as const
      if (next === snapshot && commands.length === 0) unchangedBy.set(snapshot, event)
      commands = []
      return step
    },
  }
}
