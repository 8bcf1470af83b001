/**
 * settle — lets every promise chain that is already resolvable run to completion, without
 * advancing any clock: tests drive time with ManualClock and wait on conditions, never sleep.
 */

/** Yields to the event loop until `rounds` consecutive turns made no visible progress. */
export async function settle(rounds = 3): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve))
}

/** Yields until `condition()` holds; fails after `turnsMax` event-loop turns. */
export async function until(condition: () => boolean, what: string, turnsMax = 10_000): Promise<void> {
  for (let turn = 0; turn < turnsMax; turn++) {
    if (condition()) return
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  throw new Error(`condition never held: ${what}`)
}
