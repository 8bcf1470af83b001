/**
 * Sizes — what a long-lived component keeps in memory, counted by name, for diagnostics: the
 * long-soak bench and the tests that check an engine's per-queue structures go back to their
 * size once its queues went idle. A component registers a reader for the object it hands out;
 * `sizesOf` reads it, so no production interface grows a member for it.
 *
 * Invariant: readers are held weakly, by their owner: a dropped component is collected.
 *
 * Does not: keep counts itself, or time anything.
 */

/** Entries of each named collection a component keeps. */
export type Sizes = Readonly<Record<string, number>>

const readers = new WeakMap<object, () => Sizes>()

/** Registers `read` as the sizes of `owner`; returns `owner`. */
export function registerSizes<T extends object>(owner: T, read: () => Sizes): T {
  readers.set(owner, read)
  return owner
}

/** The sizes of `owner` now; empty for an object that registered none. */
export function sizesOf(owner: object): Sizes {
  return readers.get(owner)?.() ?? {}
}
