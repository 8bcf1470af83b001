/**
 * main — the `matchbox` command: builds the commander program from one registration per
 * subcommand (`registerCommands`), runs it against caller-given writers (`run`), and maps every
 * outcome to an exit code: 0 ok, 1 failure, 2 bad usage. Errors are one typed line on stderr
 * (`matchbox: <Tag>: <message>`), never a stack trace.
 *
 * When loaded as the program (bin/matchbox.mjs) it runs on `process.argv` and sets
 * `process.exitCode`; when imported (tests) it only exports.
 *
 * Does not: hold command logic (each subcommand's file does) or call `process.exit`, so open
 * handles are closed by the commands themselves and output is never cut short.
 */
import { readFileSync, realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Command, CommanderError } from 'commander'
import { isMatchboxError } from '../domain/errors.ts'
import { registerDashboard } from './dashboard.ts'
import { registerInspect } from './inspect.ts'
import { registerJobs } from './jobs.ts'
import { registerLifecycle } from './lifecycle.ts'
import { registerSim } from './sim.ts'
import { type Io, makeTerminal, processIo, type Terminal } from './Terminal.ts'
import { UsageError } from './UsageError.ts'

/** Adds one subcommand (and its options and action) to the program. */
export type CommandRegistration = (program: Command, terminal: Terminal) => void

/** Every subcommand, in help order. A new command is one file and one entry here. */
export const registerCommands: ReadonlyArray<CommandRegistration> = [registerLifecycle, registerInspect, registerJobs, registerDashboard, registerSim]

/** Exit codes. */
export const exitCodes = { ok: 0, failure: 1, usage: 2 } as const

const packageVersion = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version

// Commander reports help and version displays as errors too; these are successful exits.
const displayCodes = new Set(['commander.helpDisplayed', 'commander.version'])

/** The program, wired to `terminal`; commander never exits the process. */
export function makeProgram(terminal: Terminal): Command {
  const { io } = terminal
  const program = new Command('matchbox')
    .description('Matchbox: a durable task-queue runtime for Node.js, built like Temporal Matching')
    .version(packageVersion)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      // Commander's own error lines are replaced by the one typed line `run` prints.
      outputError: () => {},
      getOutHasColors: () => io.stdout.isTTY === true,
      getErrHasColors: () => io.stderr.isTTY === true,
    })
  for (const register of registerCommands) register(program, terminal)
  return program
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? ''
}

// Reports a failure as one typed line and chooses the exit code.
function report(terminal: Terminal, error: unknown): number {
  if (error instanceof CommanderError) {
    if (displayCodes.has(error.code)) return exitCodes.ok
    if (error.code === 'commander.help') {
      // `matchbox help` asked for it; `matchbox` alone got the help on stderr, as a usage error.
      if (error.exitCode === 0) return exitCodes.ok
      terminal.error('UsageError', 'no command given; the commands are listed above')
      return exitCodes.usage
    }
    terminal.error('UsageError', firstLine(error.message).replace(/^error: /, ''))
    return exitCodes.usage
  }
  if (error instanceof UsageError) {
    terminal.error(error._tag, error.message)
    return exitCodes.usage
  }
  if (isMatchboxError(error)) {
    terminal.error(error._tag, error.message)
    return error._tag === 'InvalidInput' ? exitCodes.usage : exitCodes.failure
  }
  if (error instanceof Error) terminal.error(error.name, firstLine(error.message))
  else terminal.error('Error', String(error))
  return exitCodes.failure
}

/** Runs `matchbox` with `argv` (arguments only, no node or script path); resolves with the exit code. */
export async function run(argv: ReadonlyArray<string>, io: Io): Promise<number> {
  const terminal = makeTerminal(io)
  try {
    await makeProgram(terminal).parseAsync([...argv], { from: 'user' })
    return exitCodes.ok
  } catch (error) {
    return report(terminal, error)
  }
}

// True when this process was started as bin/matchbox.mjs (directly, via npx or a symlink).
function isProgram(): boolean {
  const script = process.argv[1]
  if (script === undefined) return false
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(new URL('../../bin/matchbox.mjs', import.meta.url)))
  } catch {
    return false
  }
}

if (isProgram()) process.exitCode = await run(process.argv.slice(2), processIo())
