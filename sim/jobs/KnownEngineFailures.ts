/**
 * KnownEngineFailures — what the end-to-end checkers find on the current job engine with no
 * planted bug, written down so that the suite stays green honestly: each entry names a
 * checker, the mechanism in the engine (file and path), and seeds on memory that show it (`npx matchbox sim --jobs --store memory --seed N` replays one).
 *
 * A checker listed here is counted and printed but does not fail a seed (any seed: the property
 * tests and `sim --jobs` draw seeds freely); every other checker fails a seed as before. The
 * seed lists are the mutation test's: it hunts only over seeds of 1…100 on no list, so a seed
 * that catches a planted bug is one that passes every checker without it (jobsWorld.mutations.test.ts).
 * Once the engine mends a mechanism, its entry goes and its checker fails seeds again.
 *
 * Does not: judge anything (JobCheckers.ts, HandlerCheckers.ts and JobsWorld.ts do).
 */
import type { SimStoreKind } from '../core/Determinism.ts'
import type { JobCheckerName } from './JobCheckers.ts'

/** One mechanism of the engine that a checker catches on seeds with no planted bug. */
export interface KnownEngineFailure {
  readonly checker: JobCheckerName
  /** The stores it shows on: its checker does not fail a seed there (it still does on the others). */
  readonly stores: ReadonlyArray<SimStoreKind>
  /** Seeds on the memory store that show it, those of 1…100 first (none: its mechanism names where it shows). */
  readonly seeds: ReadonlyArray<number>
  /** What happens in the engine, and where, in a sentence a summary prints. */
  readonly mechanism: string
}

/** The known failures of the current engine (see the header): none today. */
export const knownEngineFailures: ReadonlyArray<KnownEngineFailure> = []

/** The checkers on the list for `store`: counted, not failing a seed there. */
export function knownFailingCheckersOn(store: SimStoreKind): ReadonlyArray<JobCheckerName> {
  return [...new Set(knownEngineFailures.filter((failure) => failure.stores.includes(store)).map((failure) => failure.checker))]
}

/** Seeds among 1…100 that show a known failure (the mutation test skips them). */
export const knownFailingSeeds: ReadonlySet<number> = new Set(knownEngineFailures.flatMap((failure) => failure.seeds))
