/**
 * depth — how many generated cases a property test runs. `npm test` runs the quick counts,
 * sized so the whole suite stays within minutes on a 2-core machine that is busy with other
 * work; `npm run test:deep` (MATCHBOX_DEEP=1) runs the deep counts. Every property is bounded
 * by its count, never by a wall-clock limit a slow machine could reach.
 */

/** True under `npm run test:deep`. */
export const deep = process.env.MATCHBOX_DEEP === '1'

/** The run count for this depth. */
export function runsFor(quick: number, deepRuns: number): number {
  return deep ? deepRuns : quick
}
