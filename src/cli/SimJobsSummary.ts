/**
 * SimJobsSummary — how `matchbox sim --jobs` puts an end-to-end batch into words: the lines of
 * each seed (the seed, every option it drew, how it ended, its violations and the command that
 * replays it), the summary at the end (seeds, events, simulated vs wall time, faults by kind,
 * each job checker's verdict, where every enqueued job ended, the determinism self-check), and
 * the page of a `--timeline` file.
 *
 * Does not: run seeds (sim/jobs/JobsSimulation.ts) or write files (sim.ts).
 */
import { type JobsBatchObserver, type JobsBatchReport, type JobsSeedOutcome, type JobsTimelineData, knownEngineFailures, knownFailingCheckersOn, renderJobsTimelineHtml } from '../../sim/index.ts'
import { count, determinismLine, formatDuration } from './SimSummary.ts'
import type { Terminal } from './Terminal.ts'

/** The lines printed when a seed ends: its header, result, violations and replay command. */
export function jobsSeedLines(terminal: Terminal, outcome: JobsSeedOutcome, index: number, total: number): string[] {
  const { colors: c } = terminal
  const verdict = outcome.ok ? 'passed' : c.red(`FAILED (${outcome.violations.length})`)
  return [
    `seed ${outcome.seed} (${index + 1}/${total})`,
    ...outcome.options.map((line) => `  ${line}`),
    `  → ${verdict} · ${count(outcome.events)} events · ${count(outcome.steps)}+${count(outcome.livenessSteps)} steps · simulated ${formatDuration(outcome.simulatedMs)} · wall ${formatDuration(outcome.wallMs)}`,
    ...outcome.violations.map((violation) => `  ${c.red('✗')} ${violation}`),
    ...(outcome.knownFailing.length === 0 ? [] : [c.dim(`  known engine failure (${outcome.knownFailing.length}, not failing the seed): ${outcome.knownFailing[0]}`)]),
    ...(outcome.ok ? [] : [`  replay: ${outcome.replay}`]),
  ]
}

/** Prints each seed as the batch hands it on (nothing with `--json`). */
export function jobsProgress(terminal: Terminal, total: number, json: boolean): JobsBatchObserver {
  if (json) return { seedFinished: () => {}, determinismChecked: () => {} }
  return {
    seedFinished: (outcome, index) => terminal.line(jobsSeedLines(terminal, outcome, index, total).join('\n')),
    determinismChecked: (check) => terminal.line(determinismLine(check.seed)),
  }
}

/** Prints a `--jobs` batch's summary. */
export function renderJobsSummary(terminal: Terminal, report: JobsBatchReport): void {
  const { colors: c } = terminal
  const j = report.jobs
  terminal.line()
  terminal.line(c.bold(`Summary — end-to-end (jobs) mode, ${report.seeds.length} seeds from ${report.seeds[0]?.seed ?? '-'} on the ${report.store} store`))
  terminal.line(`  seeds        ${report.seeds.length} run · ${report.passed} passed · ${report.failed === 0 ? c.green('0 failed') : c.red(`${report.failed} failed`)}`)
  terminal.line(`  events       ${count(report.events)} client and store calls`)
  terminal.line(`  time         simulated ${formatDuration(report.simulatedMs)} · wall ${formatDuration(report.wallMs)}`)
  terminal.line(`  faults       ${Object.entries(report.faults).map(([name, n]) => `${name} ${count(n)}`).join(' · ')}`)
  terminal.line('  checkers')
  for (const checker of report.checkers) {
    const known = (knownFailingCheckersOn(report.store) as ReadonlyArray<string>).includes(checker.name) ? c.dim(' (known failing on the current engine: counted, not failing a seed)') : ''
    terminal.line(`    ${checker.name.padEnd(22)} ${checker.verdict === 'pass' ? c.green('pass') : c.red(checker.verdict)}${known}`)
  }
  const knownSeeds = report.seeds.filter((seed) => seed.knownFailing.length > 0).map((seed) => seed.seed)
  if (knownSeeds.length > 0) {
    terminal.line(`  known        ${knownSeeds.length} seeds show failures of the current engine (${knownSeeds.slice(0, 12).join(', ')}${knownSeeds.length > 12 ? ', …' : ''}); the mechanisms:`)
    for (const failure of knownEngineFailures.filter((known) => known.stores.includes(report.store))) terminal.line(c.dim(`    ${failure.checker}: ${failure.mechanism}`))
  }
  terminal.line(`  jobs         ${count(j.enqueued)} enqueued (+${count(j.recovered)} from ambiguous enqueues) · acked ${count(j.acked)} (+${count(j.ackedUnheard)} unheard) · cancelled ${count(j.cancelled)} (+${count(j.cancelledUnheard)} unheard)`)
  terminal.line(`               dead: failed ${count(j.dead.failed)} · max attempts ${count(j.dead.exhausted)} · expired ${count(j.dead.expired)} · stranded ${count(j.stranded)} · reclaimed ${count(j.reclaimed)} (allowed) · landed late ${count(j.landedLate)}`)
  const check = report.determinism
  if (check !== null) terminal.line(`  determinism  seed ${check.seed} run twice: ${check.divergence === null ? c.green('same trace twice') : c.red(`DIVERGED at ${check.divergence}`)}, trace hash ${check.hash}`)
}

/** The page of a `--jobs --timeline` file, for the batch's first seed. */
export function jobsTimelinePage(store: string, outcome: JobsSeedOutcome, timeline: JobsTimelineData): string {
  return renderJobsTimelineHtml({
    title: `matchbox sim --jobs — seed ${outcome.seed} on the ${store} store: ${outcome.ok ? 'passed' : 'FAILED'}`,
    summary: [
      ...outcome.options,
      `${outcome.events} client and store calls · ${outcome.steps} safety + ${outcome.livenessSteps} final steps · simulated ${formatDuration(outcome.simulatedMs)}`,
      `trace hash ${outcome.traceHash}`,
    ],
    violations: [...outcome.violations, ...outcome.knownFailing.map((violation) => `known engine failure (not failing the seed): ${violation}`)],
    highlightJobIds: jobIdsNamed([...outcome.violations, ...outcome.knownFailing]),
    data: timeline,
  })
}

/** The text of a `--jobs --trace` file, for the batch's first seed: a header, then its trace. */
export function jobsTraceText(store: string, outcome: JobsSeedOutcome, trace: ReadonlyArray<string>): string {
  const header = [
    `# matchbox sim --jobs trace — seed ${outcome.seed} on the ${store} store`,
    ...outcome.options.map((line) => `#   ${line}`),
    `# ${outcome.ok ? 'passed' : `FAILED: ${outcome.violations.join(' | ')}`}`,
    ...(outcome.knownFailing.length === 0 ? [] : [`# known engine failures (not failing the seed): ${outcome.knownFailing.join(' | ')}`]),
    `# ${outcome.events} client and store calls, ${outcome.steps} safety steps, ${outcome.livenessSteps} final steps; trace hash ${outcome.traceHash}`,
    '#',
    '# Each line: <world step> @<virtual ms since the start> <what happened>. Lines read',
    '#   enqueue / claim / ack … → HOST   a client call reaching a host, then what it returned',
    '#   io HOST CALL → R                 one parked job store, membership or bus call ran (R: ok or an error tag)',
    '#   handler starts / returns         a work loop\'s handler ran a job (its claim token in brackets)',
    '#   FAULT NAME: …                    a fault the world injected; HEAL starts the final phase',
    '#   time +MS                         the virtual clock moved',
    '',
  ]
  return `${header.join('\n')}${trace.join('\n')}\n`
}

// The jobs violation sentences name ("job <id> …", "job <id>'s claim …").
function jobIdsNamed(violations: ReadonlyArray<string>): string[] {
  return [...new Set(violations.flatMap((violation) => [...violation.matchAll(/\bjobs? ([0-9a-z]{20,})/g)].map((match) => match[1] as string)))]
}
