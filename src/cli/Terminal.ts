/**
 * Terminal — where the command line writes: two writers (stdout, stderr) passed in by the
 * caller, and colours that are on only when the writer is a TTY.
 *
 * Owns: the `Io` seam that lets tests run commands in-process and capture their output, and
 * the one-line error format every command uses (`matchbox: <Tag>: <message>`).
 *
 * Does not: decide exit codes (main.ts) or format any command's report.
 */
import pc from 'picocolors'

/** Somewhere to write text: `process.stdout`, or a buffer in tests. */
export interface Writer {
  write(text: string): void
  /** True when a person is looking at it; colours are used only then. */
  readonly isTTY?: boolean
}

/** The two output streams of one command run. */
export interface Io {
  readonly stdout: Writer
  readonly stderr: Writer
}

/** picocolors' colour functions (identity functions when colours are off). */
export type Colors = ReturnType<typeof pc.createColors>

/** Line-oriented output with TTY-only colours. */
export interface Terminal {
  readonly io: Io
  /** Colours for stdout. */
  readonly colors: Colors
  /** Writes one line (or several joined by newlines) to stdout. */
  line(text?: string): void
  /** Writes a value as pretty JSON to stdout. */
  json(value: unknown): void
  /** Writes the one-line typed error `matchbox: <tag>: <message>` to stderr. */
  error(tag: string, message: string): void
}

/** A Terminal over `io`. */
export function makeTerminal(io: Io): Terminal {
  const colors = pc.createColors(io.stdout.isTTY === true)
  const errorColors = pc.createColors(io.stderr.isTTY === true)
  return {
    io,
    colors,
    line: (text = '') => io.stdout.write(`${text}\n`),
    json: (value) => io.stdout.write(`${JSON.stringify(value, null, 2)}\n`),
    error: (tag, message) => {
      // One line, always: a multi-line cause (a driver's stack, say) is folded.
      const oneLine = message.replace(/\s*\n\s*/g, ' ').trim()
      io.stderr.write(`${errorColors.red('matchbox:')} ${errorColors.bold(tag)}: ${oneLine}\n`)
    },
  }
}

/** The process's own stdout and stderr. */
export function processIo(): Io {
  return {
    stdout: { write: (text) => void process.stdout.write(text), isTTY: process.stdout.isTTY === true },
    stderr: { write: (text) => void process.stderr.write(text), isTTY: process.stderr.isTTY === true },
  }
}
