/**
 * InertScope — the actor scope the steppers (QueueStepper.ts, DispatchStepper.ts) step a machine
 * through: made once per machine and reused, inert the way XState's pure `transition()` scope is.
 * Nothing is deferred, emitted, spawned or executed; every action reaches `onAction`, which keeps
 * the commands, so a step gives the same snapshot and commands as `transition()`.
 *
 * Sharing one scope is safe because a step is synchronous and calls nothing outside the machine:
 * no step starts inside another.
 */
import { type AnyActorLogic, type AnyActorScope, createActor, type ExecutableActionObject } from 'xstate'

/** An inert scope for `machine`; `onAction` hears every action a step resolves. */
export function makeInertScope(machine: AnyActorLogic, input: unknown, onAction: (action: ExecutableActionObject) => void): AnyActorScope {
  // Never started: it only lends the scope an actor reference and a system, as transition() does.
  const self = createActor(machine, { input })
  return {
    self,
    system: self.system,
    id: '',
    sessionId: '',
    logger: () => {},
    defer: () => {},
    emit: () => {},
    stopChild: () => {},
    actionExecutor: onAction,
  }
}
