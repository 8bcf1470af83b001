/**
 * assert — bugs crash. An assertion states something the code believes cannot be false; when
 * it is, the process (or the simulated seed) fails loudly instead of carrying on with a broken
 * invariant. Expected failures are never assertions: they are tagged errors (domain/errors.ts).
 */

/** Thrown when an invariant is violated: a defect, never an expected outcome. */
export class AssertionFailed extends Error {
  override readonly name = 'AssertionFailed'
}

/**
 * Crashes with `message` unless `condition` holds. On a hot path pass the message as a function:
 * it is then built only when the assertion fails.
 */
export function assert(condition: unknown, message: string | (() => string)): asserts condition {
  if (!condition) throw new AssertionFailed(typeof message === 'string' ? message : message())
}
