/**
 * Turns — the moves every simulated world makes between decisions, shared by the Matching world
 * (World.ts) and the end-to-end world (JobsWorld.ts): let the hosts run until quiescent, run one
 * parked call and learn its outcome, hand an outcome to its caller, and move virtual time.
 *
 * Does not: decide which call runs or which fault strikes (the worlds do).
 */
import type { ManualClock } from '../../src/kernel/Clock.ts'
import type { Decisions } from './Decisions.ts'
import type { PendingIo } from './IoGate.ts'

/** Where every world's virtual clock starts; traces print time since then (`@ms`). */
export const epochMs = 1_700_000_000_000

/** Lets the hosts run until quiescent: their fibers are microtasks and their I/O is parked, so one event-loop turn drains all work. */
export const quiesce = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** How a parked call ended when it ran. */
export type IoOutcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown }

/** Runs one parked call for real; its caller hears nothing until `deliver`. */
export async function runParked(io: PendingIo): Promise<IoOutcome> {
  try {
    return { ok: true, value: await io.run() }
  } catch (error) {
    return { ok: false, error }
  }
}

/** Hands a call's outcome to its caller; returns the trace line that says so. */
export function deliver(io: PendingIo, outcome: IoOutcome): string {
  if (outcome.ok) io.resolve(outcome.value)
  else io.reject(outcome.error)
  return `io ${io.hostId} ${io.label} → ${outcome.ok ? 'ok' : errorTag(outcome.error)}`
}

/**
 * Moves time: to the next timer if it is due within 10 s, otherwise by a drawn 1–1,000 ms (so
 * waiting callers time out only when nothing else can happen). Logs the move before the timers
 * it fires can log anything.
 */
export function advanceTime(clock: ManualClock, decide: Decisions, log: (line: string) => void): void {
  const next = clock.nextDueMs()
  const now = clock.now()
  const target = next !== undefined && next - now <= 10_000 ? Math.max(now, next) : now + decide.int(1, 1_000)
  log(`time +${target - now}`)
  clock.advanceTo(target)
}

/** An error's tag for traces (`Unavailable`), or `defect` for anything untagged. */
export function errorTag(error: unknown): string {
  return typeof error === 'object' && error !== null && '_tag' in error ? String((error as { _tag: unknown })._tag) : 'defect'
}
