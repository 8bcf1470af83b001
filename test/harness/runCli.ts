/**
 * runCli — runs the `matchbox` command in-process with captured output, for CLI tests.
 */
import { run } from '../../src/cli/main.ts'

/** What one CLI run produced. */
export interface Ran {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs `matchbox <argv>` with stdout/stderr captured (`isTTY` switches colours and progress bars). */
export async function cli(argv: ReadonlyArray<string>, isTTY = false): Promise<Ran> {
  const out: string[] = []
  const err: string[] = []
  const code = await run(argv, {
    stdout: { write: (text) => void out.push(text), isTTY },
    stderr: { write: (text) => void err.push(text), isTTY },
  })
  return { code, stdout: out.join(''), stderr: err.join('') }
}
