/**
 * peerTable — the outcome of one measured step of bench/peers.ts, and the tables it prints: per
 * workload each library's median over the rounds and the raw-SQL floor's (drains only), flagged
 * `busy k/n` when k rounds had no attempt on a quiet machine, and Matchbox ÷ the best peer
 * (highest jobs/s, lowest ms or statements), Matchbox ÷ graphile-worker and Matchbox ÷ the floor.
 *
 * Does not: measure; a cell prints what it was given.
 */
import type { Load } from './machineLoad.ts'
import { type ContenderName, floorName, libraryNames } from './peerLibraries.ts'

/** One measured step. */
export interface Outcome {
  /** jobs/s for throughput, p50 ms for latency. */
  readonly value: number
  /** p99 ms, latency only. */
  readonly p99?: number
  readonly statementsPerJob: number
  /** The jobs the step counted (enqueued, handled, or whose latency was seen): CPU per job is the load's over these. */
  readonly jobs: number
  readonly load: Load
  readonly note?: string
}

/** A number as the tables print it: whole jobs/s from 100 up, ms to 2 decimals under 10, CPU ms per job to 3. */
export function format(value: number, unit: Unit = 'jobs/s'): string {
  if (!Number.isFinite(value)) return 'n/a'
  if (unit === 'cpu ms') return value.toFixed(3)
  if (unit === 'ms') return value < 10 ? value.toFixed(2) : value.toFixed(1)
  return value >= 100 ? value.toFixed(0) : value.toFixed(1)
}

/** The median (the mean of the middle two for an even count); NaN for none. */
export const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length === 0 ? Number.NaN : sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

/** One library's outcomes in one workload, or why it has none. */
export interface Cell {
  readonly outcomes: Array<Outcome & { busy: boolean }>
  readonly unavailable: string | null
}

/** What a table's number is. */
export type Unit = 'jobs/s' | 'ms' | 'cpu ms'

/** One line of a table: which number of an outcome it shows, in what unit, and which way is better. */
export interface Row {
  readonly title: string
  readonly unit: Unit
  readonly pick: (outcome: Outcome) => number
  readonly cells: ReadonlyMap<ContenderName, Cell>
  readonly higherIsBetter: boolean
}

function cellText(cell: Cell | undefined, pick: (outcome: Outcome) => number, unit: Unit): string {
  if (cell === undefined) return '—'
  if (cell.unavailable !== null) return 'n/a'
  const busy = cell.outcomes.filter((outcome) => outcome.busy).length
  const capped = cell.outcomes.some((outcome) => outcome.note !== undefined)
  return `${format(median(cell.outcomes.map(pick)), unit)}${busy > 0 ? ` busy ${busy}/${cell.outcomes.length}` : ''}${capped ? ' !' : ''}`
}

// A contender's median, NaN when it has none in this row.
function valueOf(cells: ReadonlyMap<ContenderName, Cell>, name: ContenderName, pick: (outcome: Outcome) => number): number {
  const cell = cells.get(name)
  return cell === undefined || cell.unavailable !== null || cell.outcomes.length === 0 ? Number.NaN : median(cell.outcomes.map(pick))
}

// Matchbox ÷ `against` (the best peer when `against` is 'best peer'), flagged busy when a round of either side was.
function ratioText(cells: ReadonlyMap<ContenderName, Cell>, pick: (outcome: Outcome) => number, higherIsBetter: boolean, against: ContenderName | 'best peer'): string {
  const theirs =
    against === 'best peer'
      ? libraryNames.filter((name) => name !== 'Matchbox').map((name) => valueOf(cells, name, pick)).filter(Number.isFinite)
      : [valueOf(cells, against, pick)].filter(Number.isFinite)
  const ours = valueOf(cells, 'Matchbox', pick)
  if (theirs.length === 0 || !Number.isFinite(ours)) return 'n/a'
  const best = higherIsBetter ? Math.max(...theirs) : Math.min(...theirs)
  const sides = against === 'best peer' ? [...cells.values()] : [cells.get('Matchbox'), cells.get(against)]
  const busy = sides.some((cell) => cell?.outcomes.some((outcome) => outcome.busy) === true)
  return `${(ours / best).toFixed(2)}${busy ? ' busy' : ''}`
}

/** Prints `rows` under `title`: one column per library and the floor, and Matchbox ÷ the best peer, ÷ graphile-worker and ÷ the floor. */
export function printTable(title: string, rows: ReadonlyArray<Row>): void {
  const columns: ReadonlyArray<ContenderName> = [...libraryNames, floorName]
  const header = ['workload', ...columns, 'Matchbox ÷ best peer', 'Matchbox ÷ graphile-worker', 'Matchbox ÷ floor']
  const lines = rows.map((row) => [
    row.title,
    ...columns.map((name) => cellText(row.cells.get(name), row.pick, row.unit)),
    ratioText(row.cells, row.pick, row.higherIsBetter, 'best peer'),
    ratioText(row.cells, row.pick, row.higherIsBetter, 'graphile-worker'),
    ratioText(row.cells, row.pick, row.higherIsBetter, floorName),
  ])
  const widths = header.map((heading, column) => Math.max(heading.length, ...lines.map((line) => (line[column] ?? '').length)))
  console.log(`\n${title}`)
  const render = (line: ReadonlyArray<string>): string => line.map((text, column) => (column === 0 ? text.padEnd(widths[column] ?? 0) : text.padStart(widths[column] ?? 0))).join('  ')
  console.log(render(header))
  console.log(widths.map((width) => '─'.repeat(width)).join('  '))
  for (const line of lines) console.log(render(line))
}
