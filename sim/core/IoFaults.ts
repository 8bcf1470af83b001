/**
 * IoFaults — the faults that strike one parked call when the world runs it, the same for every
 * workload: before the call, latency (the virtual clock moves) and an outage (refused, nothing
 * committed); after a write ran, its host crashes and never hears the outcome (an ambiguous
 * commit), or the write committed and the connection dropped (the caller hears `Unavailable`
 * with `maybeCommitted`). Each chance is one decision, drawn in that order, so a seed replays
 * the same faults.
 *
 * The world runs the call itself between the two checks (`runParked`):
 *
 *   if (faultBeforeRun(io, chances, world)) return
 *   const outcome = await runParked(io)
 *   if (faultAfterRun(io, outcome, chances, world)) return
 *
 * Does not: choose which call runs, decide the chances (the workload's swarm does), or hand a
 * surviving outcome to its caller (the world does, after looking at it).
 */
import { Unavailable } from '../../src/domain/errors.ts'
import type { ManualClock } from '../../src/kernel/Clock.ts'
import type { Decisions } from './Decisions.ts'
import type { PendingIo } from './IoGate.ts'
import type { IoOutcome } from './Turns.ts'

/** The chances that strike one call, and the fault names they are counted under. */
export interface IoFaultChances<Name extends string> {
  /** The call is slow: the clock moves by 1…`msMax` ms before it runs. */
  readonly slow: { readonly name: Name; readonly chance: number; readonly msMax: number }
  /** The call is refused before it runs; null for calls that cannot be (History's). */
  readonly unavailable: { readonly name: Name; readonly chance: number } | null
  /** After a write ran, its host crashes: one chance after another until one strikes. */
  readonly crash: { readonly name: Name; readonly chances: ReadonlyArray<number> }
  /** After a write committed, the connection drops and the caller cannot tell. */
  readonly maybeCommitted: { readonly name: Name; readonly chance: number }
}

/** What the faults need of the world. */
export interface IoFaultWorld<Name extends string> {
  readonly decide: Decisions
  readonly clock: ManualClock
  /** Counts and logs one injected fault. */
  fault(name: Name, line: string, hostId: string): void
  isAlive(hostId: string): boolean
  /** Crashes a host; returns how many of its parked calls were dropped with it. */
  crash(hostId: string): number
}

/**
 * The faults that strike a taken call before it runs (none when `chances` is undefined: faults
 * are off). True when one settled the call, which then must not run.
 */
export function faultBeforeRun<Name extends string>(io: PendingIo, chances: IoFaultChances<Name> | undefined, world: IoFaultWorld<Name>): boolean {
  if (chances === undefined) return false
  const { decide } = world
  if (decide.chance(chances.slow.chance)) {
    const delay = decide.int(1, chances.slow.msMax)
    world.clock.advance(delay)
    world.fault(chances.slow.name, `${io.hostId} ${io.label} takes ${delay} ms`, io.hostId)
  }
  if (chances.unavailable === null || !decide.chance(chances.unavailable.chance)) return false
  world.fault(chances.unavailable.name, `${io.hostId} ${io.label} refused`, io.hostId)
  io.reject(new Unavailable({ operation: operationOf(io), detail: 'simulated outage', maybeCommitted: false }))
  return true
}

/**
 * The faults that strike a write after it ran (none when `chances` is undefined). True when one
 * settled the call or left its caller waiting forever; false when the world delivers `outcome`.
 * Synchronous, like `faultBeforeRun`, so a caller hears a fault in the same turn it would have
 * heard the outcome.
 */
export function faultAfterRun<Name extends string>(io: PendingIo, outcome: IoOutcome, chances: IoFaultChances<Name> | undefined, world: IoFaultWorld<Name>): boolean {
  if (chances === undefined || !io.isWrite || !world.isAlive(io.hostId)) return false
  const { decide } = world
  if (chances.crash.chances.some((chance) => decide.chance(chance))) {
    const dropped = world.crash(io.hostId)
    world.fault(chances.crash.name, `${io.hostId} crashes after ${io.label} ${outcome.ok ? 'committed' : 'failed'}; it never hears (${dropped} more dropped)`, io.hostId)
    return true
  }
  if (!outcome.ok || !decide.chance(chances.maybeCommitted.chance)) return false
  world.fault(chances.maybeCommitted.name, `${io.hostId} ${io.label} committed but the connection dropped`, io.hostId)
  io.reject(new Unavailable({ operation: operationOf(io), detail: 'connection lost mid-commit', maybeCommitted: true }))
  return true
}

// The store operation a call's label names (`append default/…` → `append`), for its error.
function operationOf(io: PendingIo): string {
  return io.label.split(' ')[0] as string
}
