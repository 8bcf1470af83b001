/**
 * EngineInternals — what an opened engine keeps beside its public face for the operator's tools
 * in this package (the dashboard) and its tests: the raw job store, and, on the SQL stores, the
 * driver and schema its tables live in; on PostgreSQL, its membership beats. `open` attaches
 * them; nothing outside this package can reach them, since the registry is not exported from the
 * package entry.
 *
 * Invariant: the registry holds engines weakly, so a closed and dropped engine is collected.
 *
 * Does not: extend the engine's lifetime or close anything; the engine owns its stores.
 */
import type { JobStore } from '../persistence/jobs/JobStore.ts'
import type { Driver } from '../persistence/sql/Driver.ts'
import type { Schema } from '../persistence/sql/Schema.ts'
import type { Matchbox } from './Matchbox.ts'

/** An engine's stores, as `open` built them. */
export interface EngineInternals {
  readonly jobStore: JobStore
  /** The SQL driver and schema, absent on the memory store. */
  readonly sql: { readonly driver: Driver; readonly schema: Schema } | null
  /** The engine's clock, in whole ms. */
  readonly now: () => number
  /**
   * On a PostgreSQL store, the engine's membership beats: `settled` resolves once none is in
   * flight (Membership.ts), for tests that advance a ManualClock a beat at a time. Absent on the
   * stores one engine owns alone.
   */
  readonly membership?: { readonly settled: () => Promise<void> }
}

const registry = new WeakMap<Matchbox, EngineInternals>()

/** Records `internals` for `engine` and returns the engine. */
export function attachInternals<E extends Matchbox>(engine: E, internals: EngineInternals): E {
  registry.set(engine, internals)
  return engine
}

/** The internals of an engine `open` made; null for anything else. */
export function internalsOf(engine: Matchbox): EngineInternals | null {
  return registry.get(engine) ?? null
}
