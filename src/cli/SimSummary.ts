/**
 * SimSummary — how `matchbox sim` puts a run into words: the header before each seed (the seed
 * and every option it drew), one line when a seed ends, the summary at the end (seeds, events,
 * speed, simulated vs wall time, faults by kind, each checker's verdict with Jepsen's delivery
 * categories, the determinism self-check, and for failures the violations and the commands that
 * replay them), the text of a `--trace` file and the page of a `--timeline` file.
 *
 * Does not: run seeds (sim/matching/Simulation.ts) or write files (sim.ts).
 */
import { describeOptions, renderTimelineHtml, type SeedOutcome, type SeedResult, type SeedRun, type SimBatchReport, type SwarmOptions, type TimelineData } from '../../sim/index.ts'
import type { Terminal } from './Terminal.ts'

/** A count as a person reads it: `12,345`. */
export const count = (value: number): string => value.toLocaleString('en-US')

/** Milliseconds as a person reads them: `840 ms`, `12.4 s`, `3 min 20 s`, `2 h 5 min`. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1_000)} s`
  return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} min`
}

/** The lines printed before a seed runs. */
export function seedHeader(seed: number, index: number, total: number, options: SwarmOptions): string[] {
  return [`seed ${seed} (${index + 1}/${total})`, ...describeOptions(options).map((line) => `  ${line}`)]
}

/** The line printed once the first seed ran a second time for the determinism check. */
export function determinismLine(seed: number): string {
  return `  determinism: seed ${seed} ran once more to compare traces`
}

/** The line printed when a seed ends. */
export function seedLine(outcome: SeedOutcome): string {
  const verdict = outcome.ok ? 'passed' : `FAILED (${outcome.violations.length} ${outcome.violations.length === 1 ? 'violation' : 'violations'})`
  return (
    `  → ${verdict} · ${count(outcome.events)} events · ${count(outcome.ioRuns)} calls · ${count(outcome.steps)}+${count(outcome.livenessSteps)} steps` +
    ` · simulated ${formatDuration(outcome.simulatedMs)} · wall ${formatDuration(outcome.wallMs)}`
  )
}

/** Prints a failed seed's violations and the commands that replay it. */
export function renderFailure(terminal: Terminal, outcome: SeedOutcome): void {
  const { colors: c } = terminal
  terminal.line(c.red(c.bold(`seed ${outcome.seed} failed:`)))
  for (const violation of outcome.violations) terminal.line(`  ${c.red('✗')} ${violation}`)
  if (outcome.failureFile !== undefined) {
    terminal.line(`  case written to ${outcome.failureFile}; replay it with`)
    terminal.line(`    npx matchbox sim replay ${outcome.failureFile}`)
    terminal.line(`    SIM_REPLAY=${outcome.failureFile} npx vitest run sim/matching/replay.test.ts`)
  }
}

/** Prints the summary of a batch. */
export function renderSummary(terminal: Terminal, report: SimBatchReport): void {
  const { colors: c } = terminal
  const seeds = report.seeds
  const range = seeds.length === 1 ? `seed ${seeds[0]?.seed}` : `seeds ${seeds[0]?.seed}…${seeds.at(-1)?.seed}`
  const pinned = Object.entries(report.overrides).map(([name, value]) => `${name}=${String(value)}`)
  terminal.line()
  terminal.line(c.bold(`Summary — ${range} on the ${report.store} store${pinned.length === 0 ? '' : ` (${pinned.join(', ')})`}`))
  const failed = report.failed === 0 ? c.green('0 failed') : c.red(`${report.failed} failed`)
  terminal.line(`  seeds        ${seeds.length} run · ${report.passed} passed · ${failed}`)
  terminal.line(`  events       ${count(report.events)} queue steps · ${count(report.ioRuns)} store and History calls`)
  terminal.line(`  speed        ${count(report.eventsPerSecond)} events/s`)
  const ratio = report.wallMs === 0 ? '' : ` (×${count(Math.round(report.simulatedMs / report.wallMs))})`
  terminal.line(`  time         simulated ${formatDuration(report.simulatedMs)} · wall ${formatDuration(report.wallMs)}${ratio}`)
  const fired = Object.entries(report.faults).filter(([, n]) => n > 0)
  const silent = Object.entries(report.faults).filter(([, n]) => n === 0).map(([name]) => name)
  const totalFaults = fired.reduce((sum, [, n]) => sum + n, 0)
  terminal.line(`  faults       ${count(totalFaults)} injected${fired.length === 0 ? '' : ':'}`)
  for (let i = 0; i < fired.length; i += 4) {
    terminal.line(`                 ${fired.slice(i, i + 4).map(([name, n]) => `${name} ${count(n)}`).join(' · ')}`)
  }
  if (silent.length > 0) terminal.line(c.dim(`               never fired: ${silent.join(', ')}`))
  terminal.line('  checkers')
  const d = report.deliveries
  for (const checker of report.checkers) {
    const verdict = checker.violations === 0 ? c.green(checker.verdict) : c.red(checker.verdict)
    const label = checker.name === 'other' ? 'defects, other' : checker.name
    terminal.line(`    ${label.padEnd(15)} ${verdict}`)
    if (checker.name === 'at-least-once') {
      terminal.line(`                    ${count(d.accepted)} adds accepted, ${count(d.delivered)} delivered (started or obsolete)`)
      terminal.line(
        `                    lost ${count(d.lost)} · duplicated ${count(d.duplicated)} (allowed) · unexpected ${count(d.unexpected)}` +
          ` · recovered from ambiguous adds ${count(d.recovered)}`,
      )
    }
  }
  const check = report.determinism
  if (check !== null) {
    const same = check.divergence === null ? c.green('same trace twice') : c.red('DIVERGED')
    terminal.line(`  determinism  seed ${check.seed} run twice: ${same}, trace hash ${check.hash}`)
    if (check.divergence !== null) for (const line of check.divergence.split('\n')) terminal.line(`               ${line}`)
  }
  for (const replay of report.replay) {
    terminal.line(c.red(`  seed ${replay.seed} failed → ${replay.file}`))
    for (const command of replay.commands) terminal.line(`    ${command}`)
  }
}

/** The text of a `--trace` file: a header saying how to read it, then every trace line. */
export function traceText(run: SeedRun, seeded: SeedResult): string {
  const { options, result } = seeded
  const header = [
    `# matchbox sim trace — seed ${run.seed} on the ${run.store} store`,
    ...describeOptions(options).map((line) => `#   ${line}`),
    `# ${result.ok ? 'passed' : `FAILED: ${result.violations.join(' | ')}`}`,
    `# ${result.events} queue steps, ${result.ioRuns} store and History calls, ${result.steps} safety steps, ${result.livenessSteps} liveness steps`,
    `# trace hash ${result.traceHash}`,
    '#',
    '# Each line: <safety step> @<virtual ms since the start> <what happened>. Lines read',
    '#   add / poll          a client call reaching a host',
    '#   io HOST CALL → R    one parked store or History call ran (R: ok or an error tag)',
    '#   HOST QUEUE EVENT → COMMANDS   a queue machine step',
    '#   FAULT NAME: …       a fault the world injected; HEAL starts the liveness phase',
    '#   time +MS            the virtual clock moved',
    '',
  ]
  return `${header.join('\n')}${result.trace.join('\n')}\n`
}

/** The page of a `--timeline` file. */
export function timelinePage(run: SeedRun, seeded: SeedResult, timeline: TimelineData): string {
  const { options, result } = seeded
  const fired = Object.entries(result.faults).filter(([, n]) => n > 0).map(([name, n]) => `${name} ${n}`)
  return renderTimelineHtml({
    title: `matchbox sim — seed ${run.seed} on the ${run.store} store: ${result.ok ? 'passed' : 'FAILED'}`,
    summary: [
      ...describeOptions(options),
      `${result.events} queue steps · ${result.ioRuns} calls · ${result.steps} safety + ${result.livenessSteps} liveness steps · simulated ${formatDuration(result.simulatedMs)}`,
      `accepted ${result.deliveries.accepted} · delivered ${result.deliveries.delivered} · lost ${result.deliveries.lost.length} · duplicated ${result.deliveries.duplicated} · recovered ${result.deliveries.recovered}`,
      `faults injected: ${fired.length === 0 ? 'none' : fired.join(' · ')}`,
      `trace hash ${result.traceHash}`,
    ],
    violations: result.violations,
    highlightJobIds: result.deliveries.lost,
    data: timeline,
  })
}
