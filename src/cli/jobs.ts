/**
 * `matchbox jobs` — the job admin of a store, for operators: counts per queue, pages of a
 * queue's jobs by state (dead ones with their errors), one job in full, retrying a dead job and
 * cancelling a live one. Works on the embedded store (`--data-dir`, which no running engine may
 * hold) and on PostgreSQL (`--database-url`, beside running engines).
 *
 *   matchbox jobs counts
 *   matchbox jobs list <queue> [--state pending|processing|dead] [--limit n] [--after id]
 *   matchbox jobs show <queue> <id>
 *   matchbox jobs retry <queue> <id>     a dead job back as a fresh pending job, same id
 *   matchbox jobs cancel <queue> <id>    deletes a pending or processing job
 *
 * Every command takes `--json`. Exit codes: 0 done; 1 the job was not there (or its key is held)
 * or the store failed; 2 bad usage (a missing store, an unknown state, a bad number, a database
 * or schema where Matchbox never ran). No command creates a schema; the reads migrate nothing.
 *
 * Does not: hold job logic (the JobStore does) or print connection strings.
 */
import { type Command, InvalidArgumentError } from 'commander'
import { errorSummary } from '../domain/JobRules.ts'
import { RealClock } from '../kernel/Clock.ts'
import { jobListLimitMax } from '../kernel/Limits.ts'
import type { JobRecord, JobState, JobStore } from '../persistence/jobs/JobStore.ts'
import { type CliAccess, openCliJobStore, type StoreLocation } from './CliStore.ts'
import type { Terminal } from './Terminal.ts'

/** A job the command named is not in the state it needs; exit code 1. */
export class JobNotFound extends Error {
  override readonly name = 'JobNotFound'
}

/** Options every `jobs` command takes. */
export interface JobsCommandOptions extends StoreLocation {
  readonly json?: boolean
}

/** Options of `jobs list`. */
export interface JobsListOptions extends JobsCommandOptions {
  readonly state: JobState
  readonly limit: number
  readonly after?: string
}

/** Default page size of `jobs list`. */
export const jobsListLimitDefault = 50

const iso = (ms: number | null): string => (ms === null ? '-' : new Date(ms).toISOString())

function parseState(value: string): JobState {
  if (value !== 'pending' && value !== 'processing' && value !== 'dead') throw new InvalidArgumentError('must be pending, processing or dead')
  return value
}

function parseLimit(value: string): number {
  const parsed = Number(value)
  if (!/^\d+$/.test(value) || parsed < 1 || parsed > jobListLimitMax) throw new InvalidArgumentError(`must be an integer in 1…${jobListLimitMax}`)
  return parsed
}

function table(rows: ReadonlyArray<ReadonlyArray<string>>): string[] {
  const widths = (rows[0] ?? []).map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)))
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd())
}

// The error a person wants to see first: why it died and the handler's last error, on one line.
const errorOf = (job: JobRecord): string => errorSummary(job, 100)

/** Prints one job in full. */
export function renderJob(terminal: Terminal, job: JobRecord): void {
  const { colors: c } = terminal
  terminal.line(`${c.cyan(job.id)}  ${c.bold(job.state)}  queue ${job.queue}${job.key === null ? '' : `  key ${job.key}`}`)
  terminal.line(`  attempts ${job.attempts}/${job.maxAttempts} · priority ${job.priority} · visibility ${job.visibilityTimeoutMs / 1000} s · backoff base ${job.backoffBaseMs / 1000} s`)
  terminal.line(`  created ${iso(job.createdAtMs)} · run at ${iso(job.runAtMs)} · claimed ${iso(job.claimedAtMs)} · expires ${iso(job.expiresAtMs)}`)
  if (job.deadlineMs !== null) terminal.line(`  claim deadline ${iso(job.deadlineMs)}`)
  if (job.lastError !== null) terminal.line(`  died ${iso(job.diedAtMs)}: ${job.lastError}`)
  if (job.lastHandlerError !== null) terminal.line(`  last handler error: ${job.lastHandlerError}`)
  if (job.lastHandlerStack !== null) for (const line of job.lastHandlerStack.split('\n')) terminal.line(`    ${c.dim(line)}`)
  for (const entry of job.attemptErrors) terminal.line(`  attempt ${entry.attempt} at ${iso(entry.atMs)}: ${entry.error.split('\n')[0] ?? ''}`)
  if (job.progress !== null) terminal.line(`  progress ${JSON.stringify(job.progress)}`)
  terminal.line(`  payload ${JSON.stringify(job.payload)}`)
}

// Opens the job store (for `access`: CliStore.ts), runs `action`, closes the store.
async function withJobStore<T>(options: StoreLocation, access: CliAccess, action: (store: JobStore) => Promise<T>): Promise<T> {
  const store = await openCliJobStore(options, access)
  try {
    return await action(store)
  } finally {
    await store.close()
  }
}

function storeOptions(command: Command): Command {
  return command
    .option('--database-url <url>', 'PostgreSQL connection string (postgres store)')
    .option('--data-dir <dir>', 'PGlite data directory (embedded store) that no running engine holds')
    .option('--schema <schema>', 'schema holding the Matchbox tables (default matchbox)')
    .option('--json', 'print the result as JSON')
}

/** Registers `matchbox jobs` and its subcommands. */
export function registerJobs(program: Command, terminal: Terminal): void {
  const jobs = program.command('jobs').description('job admin: counts, lists by state, one job, retry a dead job, cancel a live one')

  storeOptions(jobs.command('counts').description('pending, processing and dead jobs per queue')).action(async (options: JobsCommandOptions) => {
    const counts = await withJobStore(options, 'read', (store) => store.countQueues({ limit: jobListLimitMax }))
    if (options.json === true) return terminal.json(counts)
    if (counts.length === 0) return terminal.line('no jobs')
    const rows = counts.map((queue) => [queue.queue, String(queue.pending), String(queue.processing), String(queue.dead)])
    const [head, ...body] = table([['queue', 'pending', 'processing', 'dead'], ...rows])
    terminal.line(terminal.colors.dim(head ?? ''))
    for (const line of body) terminal.line(line)
  })

  storeOptions(jobs.command('list').description("a page of a queue's jobs in one state, by id").argument('<queue>', 'queue name'))
    .option('--state <state>', 'pending, processing or dead', parseState, 'pending' as JobState)
    .option('--limit <n>', `jobs per page (1…${jobListLimitMax})`, parseLimit, jobsListLimitDefault)
    .option('--after <id>', 'start after this job id (the previous page’s last)')
    .action(async (queue: string, options: JobsListOptions) => {
      const page = await withJobStore(options, 'read', (store) => store.listJobs({ queue, state: options.state, limit: options.limit, afterId: options.after ?? null }))
      const next = page.length === options.limit ? (page.at(-1)?.id ?? null) : null
      if (options.json === true) return terminal.json({ queue, state: options.state, jobs: page, next })
      if (page.length === 0) return terminal.line(`no ${options.state} jobs in ${queue}`)
      const rows = page.map((job) => [job.id, String(job.attempts), String(job.priority), iso(job.state === 'dead' ? job.diedAtMs : job.runAtMs), errorOf(job)])
      const [head, ...body] = table([['id', 'attempts', 'priority', options.state === 'dead' ? 'died' : 'run at', 'error'], ...rows])
      terminal.line(terminal.colors.dim(head ?? ''))
      for (const line of body) terminal.line(line)
      if (next !== null) terminal.line(terminal.colors.dim(`more: --after ${next}`))
    })

  storeOptions(jobs.command('show').description('one job in full, dead ones with their errors').argument('<queue>', 'queue name').argument('<id>', 'job id')).action(
    async (queue: string, id: string, options: JobsCommandOptions) => {
      const job = await withJobStore(options, 'read', (store) => store.getJob({ queue, id }))
      if (job === null) throw new JobNotFound(`no job ${id} in queue ${queue} (acked, cancelled, purged or never there)`)
      if (options.json === true) terminal.json(job)
      else renderJob(terminal, job)
    },
  )

  storeOptions(
    jobs.command('retry').description('move a dead job back as a fresh pending job with the same id, runnable now').argument('<queue>', 'queue name').argument('<id>', 'job id'),
  ).action(async (queue: string, id: string, options: JobsCommandOptions) => {
    const outcome = await withJobStore(options, 'write', (store) => store.retryDead({ queue, id, nowMs: Math.floor(new RealClock().now()) }))
    if (outcome.kind === 'not-dead') throw new JobNotFound(`no dead job ${id} in queue ${queue}`)
    if (outcome.kind === 'key-taken') throw new JobNotFound(`dead job ${id} keeps its key, which live job ${outcome.liveId} holds; cancel or finish that one first`)
    if (options.json === true) terminal.json(outcome.job)
    else terminal.line(`retried ${id}: pending again in ${queue}, runnable now (attempts start over at 0)`)
  })

  storeOptions(jobs.command('cancel').description('delete a pending or processing job, whoever holds it').argument('<queue>', 'queue name').argument('<id>', 'job id')).action(
    async (queue: string, id: string, options: JobsCommandOptions) => {
      const cancelled = await withJobStore(options, 'write', (store) => store.cancel({ queue, id }))
      if (!cancelled) throw new JobNotFound(`no pending or processing job ${id} in queue ${queue} (dead jobs stay until retried or purged)`)
      if (options.json === true) terminal.json({ queue, id, cancelled })
      else terminal.line(`cancelled ${id} in ${queue}`)
    },
  )
}
