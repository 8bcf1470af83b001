/**
 * `matchbox dashboard` — serves the web dashboard (src/dashboard/) over a store:
 *
 *   matchbox dashboard --database-url postgres://… | --data-dir DIR
 *                      [--port 4000] [--host 127.0.0.1] [--base-path /jobs] [--read-only] [--basic-auth user:password]
 *
 * On PostgreSQL the dashboard opens a producer engine (it joins no partition, so it never claims
 * or delivers a job, and running engines keep theirs); on a data directory it opens the embedded
 * engine, which no other engine may hold. It listens on 127.0.0.1 unless told otherwise, prints
 * its URL, and runs until SIGINT or SIGTERM, then closes the server and the engine. Its simulator
 * page replays failure files of the memory and embedded stores in process (a PostgreSQL case is
 * refused: replaying it would write to a database, which is what `matchbox sim replay` is for).
 *
 * Does not: hold dashboard logic (src/dashboard/ does) or print connection strings.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Command, InvalidArgumentError } from 'commander'
import { hostIdsOf, parseFailureCase, runOneSeed, seedRunOf, RangeTimelineRecorder } from '../../sim/index.ts'
import { InvalidInput } from '../domain/errors.ts'
import { dashboardHandler, type DashboardOptions } from '../dashboard/DashboardHandler.ts'
import type { SimulatorReplay } from '../dashboard/SystemPages.ts'
import type { Matchbox } from '../jobs/Matchbox.ts'
import { open } from '../jobs/open.ts'
import { resolveLocation, type StoreLocation } from './CliStore.ts'
import { timelinePage } from './SimSummary.ts'
import type { Terminal } from './Terminal.ts'

/** Options of `matchbox dashboard`. */
export interface DashboardCommandOptions extends StoreLocation {
  readonly port: number
  readonly host: string
  readonly basePath?: string
  readonly readOnly?: boolean
  readonly basicAuth?: string
}

/** A dashboard that is listening. */
export interface RunningDashboard {
  /** Its address, e.g. `http://127.0.0.1:4000/jobs/`. */
  readonly url: string
  readonly server: Server
  readonly mb: Matchbox
  /** Stops listening and closes the engine. */
  close(): Promise<void>
}

/** Default port of `matchbox dashboard`. */
export const dashboardPortDefault = 4000

function parsePort(value: string): number {
  const port = Number(value)
  if (!/^\d+$/.test(value) || port > 65_535) throw new InvalidArgumentError('must be an integer in 0…65535 (0: any free port)')
  return port
}

/** Replays a failure file of the memory or embedded store and draws its timeline. */
export async function replayFailureFile(text: string): Promise<SimulatorReplay> {
  let failure
  try {
    failure = parseFailureCase(text, 'the pasted file')
  } catch (error) {
    throw new InvalidInput({ field: 'failure', reason: error instanceof Error ? error.message : String(error) })
  }
  if (failure.store === 'postgres') throw new InvalidInput({ field: 'failure', reason: `a PostgreSQL case writes to a database when replayed; run: npx matchbox sim replay sim-failure-${failure.seed}.json --database-url …` })
  const run = seedRunOf(failure)
  const timeline = new RangeTimelineRecorder(hostIdsOf(run))
  const { outcome, seeded } = await runOneSeed(run, { keepTrace: false, timeline })
  return {
    seed: failure.seed,
    store: failure.store,
    ok: outcome.ok,
    violations: outcome.ok ? failure.violations : outcome.violations,
    replayCommand: `npx matchbox sim replay sim-failure-${failure.seed}.json`,
    timelineHtml: timelinePage(run, seeded, timeline.data()),
  }
}

/** Opens the engine, mounts the dashboard and listens; resolves once it is listening. */
export async function startDashboard(options: DashboardCommandOptions, onError: (error: unknown) => void = () => {}): Promise<RunningDashboard> {
  const where = resolveLocation(options)
  const withSchema = options.schema === undefined ? {} : { schema: options.schema }
  const mb = 'databaseUrl' in where ? await open({ store: { databaseUrl: where.databaseUrl }, role: 'producer', ...withSchema }) : await open({ store: { dataDir: where.dataDir }, ...withSchema })
  try {
    const handlerOptions: DashboardOptions = {
      ...(options.basePath === undefined ? {} : { basePath: options.basePath }),
      ...(options.readOnly === true ? { readOnly: true } : {}),
      ...(options.basicAuth === undefined ? {} : { basicAuth: options.basicAuth }),
      simulator: replayFailureFile,
      onError,
    }
    const server = createServer(dashboardHandler(mb, handlerOptions))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(options.port, options.host, () => resolve())
    })
    const { port } = server.address() as AddressInfo
    const host = options.host.includes(':') ? `[${options.host}]` : options.host
    return {
      url: `http://${host}:${port}${options.basePath?.replace(/\/+$/, '') ?? ''}/`,
      server,
      mb,
      async close() {
        await new Promise<void>((resolve) => server.close(() => resolve()))
        await mb.close()
      },
    }
  } catch (error) {
    await mb.close()
    throw error
  }
}

/** Registers `matchbox dashboard`. */
export function registerDashboard(program: Command, terminal: Terminal): void {
  program
    .command('dashboard')
    .description('serve the web dashboard: queues, jobs, schedules, engines, the simulator, and the operator’s actions')
    .option('--database-url <url>', 'PostgreSQL connection string (postgres store)')
    .option('--data-dir <dir>', 'PGlite data directory (embedded store) that no running engine holds')
    .option('--schema <schema>', 'schema holding the Matchbox tables (default matchbox)')
    .option('--port <port>', 'port to listen on', parsePort, dashboardPortDefault)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--base-path <path>', 'serve under this path prefix, e.g. /jobs')
    .option('--read-only', 'show no actions and accept none')
    .option('--basic-auth <user:password>', 'require this credential')
    .action(async (options: DashboardCommandOptions) => {
      const running = await startDashboard(options, (error) => terminal.error('DashboardError', error instanceof Error ? error.message.split('\n')[0] ?? '' : String(error)))
      terminal.line(`Matchbox dashboard on ${running.url}${options.readOnly === true ? ' (read-only)' : ''}; Ctrl-C stops it`)
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve())
        process.once('SIGTERM', () => resolve())
      })
      await running.close()
    })
}
