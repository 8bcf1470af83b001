/**
 * TraceLog — a simulated run's trace: every line goes into a SHA-256 hash (the determinism
 * checks compare hashes), and the lines themselves are kept whole (`keepAll`, for --trace and
 * divergence reports) or as a bounded tail (for failure files).
 */
import { createHash, type Hash } from 'node:crypto'

// The tail a failure file keeps: enough to read the last moments of a run.
const tailLinesMax = 200

/** A run's trace lines and their hash. */
export class TraceLog {
  readonly lines: string[] = []
  readonly #hash: Hash = createHash('sha256')
  readonly #keepAll: boolean

  constructor(keepAll: boolean) {
    this.#keepAll = keepAll
  }

  /** Appends one line. */
  add(line: string): void {
    this.#hash.update(line)
    this.#hash.update('\n')
    this.lines.push(line)
    if (!this.#keepAll && this.lines.length > tailLinesMax * 2) this.lines.splice(0, this.lines.length - tailLinesMax)
  }

  /** The hash of every line so far (call once, at the end). */
  digest(): string {
    return this.#hash.digest('hex')
  }
}
