/**
 * SimProgress — what `matchbox sim` shows while seeds run. On a TTY: a progress bar
 * (cli-progress) with each seed's header and result logged above it. Elsewhere (pipes, CI,
 * tests): the same header and one result line per seed, and no bar. `--json` shows nothing.
 *
 * With `--parallel` seeds finish out of order; the batch hands them on in seed order, so the
 * lines read as a serial run's.
 *
 * Does not: run seeds or decide what a seed's lines say (SimSummary.ts).
 */
import cliProgress from 'cli-progress'
import type { DeterminismCheck, SeedOutcome, SimBatchObserver, SwarmOptions } from '../../sim/index.ts'
import { determinismLine, renderFailure, seedHeader, seedLine } from './SimSummary.ts'
import type { Terminal } from './Terminal.ts'

/** An observer that prints nothing (`--json`). */
export const silentProgress: SimBatchObserver = { seedStarting: () => {}, seedFinished: () => {}, determinismChecked: () => {} }

/** Progress for `total` seeds on `terminal`; call `stop()` before printing the summary. */
export function makeSimProgress(terminal: Terminal, total: number): SimBatchObserver & { stop(): void } {
  const lines = (text: string[]): void => terminal.line(text.join('\n'))
  let failed = 0
  if (terminal.io.stdout.isTTY !== true) {
    return {
      seedStarting: (seed: number, index: number, options: SwarmOptions) => lines(seedHeader(seed, index, total, options)),
      seedFinished: (outcome: SeedOutcome) => {
        terminal.line(seedLine(outcome))
        if (!outcome.ok) renderFailure(terminal, outcome)
      },
      determinismChecked: (check: DeterminismCheck) => terminal.line(determinismLine(check.seed)),
      stop: () => {},
    }
  }
  // cli-progress redraws through readline on a stream; this one forwards to our writer.
  const stream = { isTTY: true, columns: 100, write: (text: string) => (terminal.io.stdout.write(text), true) }
  const bars = new cliProgress.MultiBar(
    {
      stream: stream as unknown as NodeJS.WritableStream,
      // Short enough for an 80-column terminal, so the logged option lines can keep wrapping.
      format: '{bar} {value}/{total} seeds · seed {seed} · {failed} failed · eta {eta_formatted}',
      barsize: 20,
      linewrap: true,
      hideCursor: true,
      clearOnComplete: true,
      autopadding: true,
    },
    cliProgress.Presets.shades_classic,
  )
  const bar = bars.create(total, 0, { seed: '-', failed: 0 })
  const log = (text: string[]): void => bars.log(`${text.join('\n')}\n`)
  return {
    seedStarting: (seed: number, index: number, options: SwarmOptions) => {
      log(seedHeader(seed, index, total, options))
      bar.update({ seed })
    },
    seedFinished: (outcome: SeedOutcome) => {
      if (!outcome.ok) failed++
      log([seedLine(outcome)])
      if (!outcome.ok) {
        const failure: string[] = []
        renderFailure({ ...terminal, line: (text = '') => void failure.push(text) }, outcome)
        log(failure)
      }
      bar.increment(1, { failed })
    },
    determinismChecked: (check: DeterminismCheck) => log([determinismLine(check.seed)]),
    stop: () => bars.stop(),
  }
}
