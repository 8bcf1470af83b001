/**
 * `matchbox inspect` — what a store holds, per physical queue: canonical key, range id, ack
 * level per subqueue, last task id, stored rows (total and per subqueue), then the stored tasks
 * (bounded by `--tasks-max`, read in pages), then gauges.
 *
 * The gauges are honest about what a store can know: stored rows include dispatched
 * rows kept above an acknowledgement gap, so they are not the deliveries still outstanding;
 * only the loaded owner knows those, and the metadata cannot even say whether one is loaded.
 *
 * A data directory a running store holds is refused, not opened a second time: the embedded
 * driver's lock answers `DataDirInUse`, printed as one line naming the holder's pid (exit 1).
 * Inspect such a store from its own process, or after it closed.
 *
 * Does not: change anything — it creates and migrates no schema, and a database or schema
 * without Matchbox is refused naming what it looked for (exit 2) — or print connection strings,
 * which may hold passwords.
 */
import { type Command, InvalidArgumentError } from 'commander'
import type { Store } from '../persistence/queues/Store.ts'
import { openCliStore } from './CliStore.ts'
import { describeDirective, formatBySubqueue, type PersistedQueue, readPersistedQueue } from './PersistedQueue.ts'
import type { Terminal } from './Terminal.ts'

/** Default of `--tasks-max`: a screenful or two per queue. */
export const inspectTasksMaxDefault = 50

/** Ceiling of `--tasks-max`: output stays something a person (or a pipe) can take. */
export const inspectTasksMaxLimit = 10_000

/** What the store alone cannot tell, said once for text and JSON. */
export const outstandingNote =
  'only the loaded owner of a queue knows its outstanding deliveries: stored rows include dispatched rows kept above an acknowledgement gap, and the store cannot tell whether an owner is loaded'

/** Options of `matchbox inspect`, as commander parses them. */
export interface InspectOptions {
  readonly databaseUrl?: string
  readonly dataDir?: string
  readonly schema?: string
  readonly namespace?: string
  readonly family?: string
  readonly tasksMax: number
  readonly json?: boolean
}

/** What `inspect` found. */
export interface InspectReport {
  readonly store: Store['kind']
  readonly schema: string
  readonly filter: { readonly namespace?: string; readonly family?: string }
  readonly tasksMax: number
  readonly queues: ReadonlyArray<PersistedQueue>
  readonly gauges: {
    readonly queues: number
    readonly storedRows: number
    /** Always null: see `outstandingNote`. */
    readonly outstanding: null
    readonly outstandingNote: string
  }
}

/** Reads the report from an open store. */
export async function readInspectReport(store: Store, options: InspectOptions): Promise<InspectReport> {
  const filter = {
    ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
    ...(options.family === undefined ? {} : { family: options.family }),
  }
  const queues: PersistedQueue[] = []
  for (const inspection of await store.list(filter)) queues.push(await readPersistedQueue(store, inspection, options.tasksMax))
  return {
    store: store.kind,
    schema: options.schema ?? 'matchbox',
    filter,
    tasksMax: options.tasksMax,
    queues,
    gauges: { queues: queues.length, storedRows: queues.reduce((sum, queue) => sum + queue.storedRows, 0), outstanding: null, outstandingNote },
  }
}

function table(rows: ReadonlyArray<ReadonlyArray<string>>): string[] {
  const widths = (rows[0] ?? []).map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)))
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd())
}

function renderQueue(terminal: Terminal, queue: PersistedQueue): void {
  const { colors: c } = terminal
  const bySubqueue = Object.entries(queue.storedRowsBySubqueue).map(([subqueue, rows]) => `subqueue ${subqueue}: ${rows}`)
  terminal.line(c.cyan(queue.queue))
  terminal.line(`  range ${queue.rangeId} · last task id ${queue.lastTaskId} · ack level per subqueue ${formatBySubqueue(queue.ackLevels)}`)
  terminal.line(`  stored rows ${queue.storedRows}${bySubqueue.length === 0 ? '' : ` (${bySubqueue.join(', ')})`}`)
  if (queue.tasks.length > 0) {
    const header = ['task id', 'subqueue', 'job id', 'kind', 'version directive', 'priority']
    const rows = queue.tasks.map((task) => [String(task.taskId), String(task.subqueue), task.jobId, task.kind, describeDirective(task.versionDirective), String(task.priority)])
    const [head, ...body] = table([header, ...rows])
    terminal.line(`  ${c.dim(head ?? '')}`)
    for (const line of body) terminal.line(`  ${line}`)
  }
  if (queue.tasksOmitted > 0) terminal.line(`  … and ${queue.tasksOmitted} more`)
  terminal.line(`  gauges: storedRows ${queue.storedRows} · outstanding ${c.dim('unknown to the store')}`)
  terminal.line()
}

/** Prints an inspect report as text. */
export function renderInspect(terminal: Terminal, report: InspectReport): void {
  const { colors: c } = terminal
  const where = report.store === 'postgres' ? 'PostgreSQL' : report.store === 'embedded' ? 'embedded (PGlite)' : report.store
  const filter = Object.entries(report.filter).map(([name, value]) => `${name} ${value}`)
  terminal.line(c.bold(`Matchbox inspect — ${where} store, schema ${report.schema}${filter.length === 0 ? '' : `, ${filter.join(', ')}`}`))
  terminal.line(`${report.queues.length} physical ${report.queues.length === 1 ? 'queue' : 'queues'}`)
  terminal.line()
  for (const queue of report.queues) renderQueue(terminal, queue)
  terminal.line(c.bold('Gauges'))
  terminal.line(`  storedRows ${report.gauges.storedRows} across ${report.gauges.queues} ${report.gauges.queues === 1 ? 'queue' : 'queues'}`)
  terminal.line(`  outstanding unknown — ${report.gauges.outstandingNote} (\`matchbox lifecycle\` shows an owner's count)`)
}

function parseTasksMax(value: string): number {
  const parsed = Number(value)
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(parsed) || parsed > inspectTasksMaxLimit) {
    throw new InvalidArgumentError(`must be an integer in 0…${inspectTasksMaxLimit}`)
  }
  return parsed
}

/** Registers `matchbox inspect`. */
export function registerInspect(program: Command, terminal: Terminal): void {
  program
    .command('inspect')
    .description('show what a store holds per physical queue: range, ack levels, last task id, stored rows and tasks, gauges')
    .option('--database-url <url>', 'PostgreSQL connection string (postgres store)')
    .option('--data-dir <dir>', 'PGlite data directory (embedded store) that no running store holds, used when no --database-url is given')
    .option('--schema <schema>', 'schema holding the Matchbox tables (default matchbox)')
    .option('--namespace <namespace>', 'only queues of this namespace')
    .option('--family <family>', 'only queues of this queue family')
    .option('--tasks-max <n>', `list at most n stored tasks per queue (0…${inspectTasksMaxLimit})`, parseTasksMax, inspectTasksMaxDefault)
    .option('--json', 'print the report as JSON')
    .action(async (options: InspectOptions) => {
      const store = await openCliStore(options, 'read')
      try {
        const report = await readInspectReport(store, options)
        if (options.json === true) terminal.json(report)
        else renderInspect(terminal, report)
      } finally {
        await store.close()
      }
    })
}
