/**
 * TraceLog — a simulated run's trace: every line goes into a SHA-256 hash (the determinism
 * checks compare hashes), and the lines themselves are kept whole (`keepAll`, for --trace and
 * divergence reports) or as a bounded tail (for failure files).
 *
 * Lines reach the hash in chunks of several kilobytes: a hash update per line costs more than
 * the hashing itself, and the digest of the concatenation is the same however it is chunked.
 */
import { createHash, type Hash } from 'node:crypto'

// The tail a failure file keeps: enough to read the last moments of a run.
const tailLinesMax = 200

// Characters of trace text gathered before they go into the hash: large enough that the cost of
// an update call vanishes, small enough to stay a cheap string to build.
const hashChunkCharsMax = 16_384

/** A run's trace lines and their hash. */
export class TraceLog {
  readonly lines: string[] = []
  readonly #hash: Hash = createHash('sha256')
  readonly #keepAll: boolean
  // Lines not yet hashed, each followed by a newline.
  #unhashed = ''

  constructor(keepAll: boolean) {
    this.#keepAll = keepAll
  }

  /** Appends one line. */
  add(line: string): void {
    this.#unhashed += `${line}\n`
    if (this.#unhashed.length >= hashChunkCharsMax) this.#flush()
    this.lines.push(line)
    if (!this.#keepAll && this.lines.length > tailLinesMax * 2) this.lines.splice(0, this.lines.length - tailLinesMax)
  }

  /** The hash of every line so far (call once, at the end). */
  digest(): string {
    this.#flush()
    return this.#hash.digest('hex')
  }

  #flush(): void {
    this.#hash.update(this.#unhashed)
    this.#unhashed = ''
  }
}
