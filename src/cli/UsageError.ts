/**
 * UsageError — the command line was called wrongly (a missing or contradictory option). It is
 * the CLI's own entry in the error catalogue: printed as one typed line, exit code 2.
 *
 * Does not: cover malformed values the domain rejects (`InvalidInput`, also exit 2) or store
 * failures (`Unavailable`, exit 1); main.ts maps those.
 */
import { Data } from 'effect'

/** The command was called wrongly; nothing was done. */
export class UsageError extends Data.TaggedError('UsageError')<{
  /** What was wrong and what to pass instead, in words. */
  readonly reason: string
}> {
  readonly retryable = false
  override get message(): string {
    return this.reason
  }
}
