/**
 * PostgresCluster — a throwaway PostgreSQL server for tests, benches and the simulator.
 *
 * Starts the local server binaries (`PG_BIN`, else the newest /usr/lib/postgresql/N/bin) on a
 * Unix socket in a fresh temp directory, with `fsync=off` (or the durable profile on request), and stops it (deleting the data) on
 * `stop()`, or when the process exits without calling it (an uncaught error, `process.exit`), so a
 * script that dies leaves no server behind. PostgreSQL refuses to run as root, so when we are root the cluster runs as the
 * `postgres` user through `setpriv`. `restart()` bounces the server in place, for fault tests
 * (a test that restarts must start a cluster of its own: the global one is shared by every file).
 *
 * Does not: skip anything. If no server can be had, `start` throws a message that says how to
 * provide one (`DATABASE_URL`).
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const howToProvide =
  'Set DATABASE_URL to a PostgreSQL ≥ 15 server where this user may CREATE DATABASE, or install the server binaries ' +
  '(Debian: apt-get install postgresql-15) so the harness can start a throwaway cluster (PG_BIN=/path/to/bin overrides the search).'

/** The directory of the server binaries: `PG_BIN`, else the newest /usr/lib/postgresql/N/bin. */
export function findBinaries(): string {
  const fromEnv = process.env.PG_BIN
  if (fromEnv !== undefined && existsSync(join(fromEnv, 'pg_ctl'))) return fromEnv
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => existsSync(join(root, name, 'bin', 'pg_ctl')))
        .sort((a, b) => Number(b) - Number(a))
    : []
  const newest = versions[0]
  if (newest === undefined) throw new Error(`no PostgreSQL server binaries found. ${howToProvide}`)
  return join(root, newest, 'bin')
}

const isRoot = process.getuid?.() === 0

/** The argv that runs server binary `command` of `bin`: as `postgres` through `setpriv` when we are root (the server refuses root). */
export function ownerArgv(bin: string, command: string, args: ReadonlyArray<string>): string[] {
  return isRoot ? ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', '--', join(bin, command), ...args] : [join(bin, command), ...args]
}

/** Makes `dir` private (0700) and, when we are root, owned by `postgres`, as the server requires of its directories. */
export function ownDirectory(dir: string): void {
  if (isRoot) {
    const uid = execFileSync('id', ['-u', 'postgres']).toString().trim()
    const gid = execFileSync('id', ['-g', 'postgres']).toString().trim()
    chownSync(dir, Number(uid), Number(gid))
  }
  chmodSync(dir, 0o700)
}

/** A running throwaway cluster. */
export interface RunningCluster {
  /** Connection string for the `postgres` database as superuser. */
  readonly url: string
  /**
   * Restarts the server in place (same socket, same data): `immediate` kills it as a crash
   * would (recovery replays the log), `fast` rolls back open transactions and shuts down
   * cleanly. Resolves once it accepts connections again; the event loop runs meanwhile, so
   * clients live through the outage.
   */
  restart(mode?: 'immediate' | 'fast'): Promise<void>
  stop(): void
}

/** How a throwaway cluster is started. */
export interface ClusterOptions {
  /**
   * True: the durable profile, as a production server runs (`fsync`, `synchronous_commit` and
   * `full_page_writes` on), for benches that measure what a commit costs on this disk. Default
   * false: the fast profile tests use, where a commit never waits for the disk.
   */
  readonly durable?: boolean
}

/** Starts a throwaway cluster; throws with instructions if it cannot. */
export function startCluster(clusterOptions: ClusterOptions = {}): RunningCluster {
  const bin = findBinaries()
  const dir = mkdtempSync(join(tmpdir(), 'matchbox-pg-'))
  const dataDir = join(dir, 'data')
  const asOwner = (command: string, args: string[]): string[] => ownerArgv(bin, command, args)
  ownDirectory(dir)
  const run = (argv: string[]): void => {
    const [command, ...args] = argv as [string, ...string[]]
    const result = spawnSync(command, args, { encoding: 'utf8', cwd: dir })
    if (result.status !== 0) {
      throw new Error(`${argv.join(' ')} failed (${result.status}): ${result.stderr || result.stdout}\n${howToProvide}`)
    }
  }
  run(asOwner('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']))
  const options = [
    `-k ${dir}`,
    "-c listen_addresses=''",
    ...(clusterOptions.durable === true ? ['-c fsync=on', '-c synchronous_commit=on', '-c full_page_writes=on'] : ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off']),
    '-c max_connections=300',
    '-c shared_buffers=128MB',
  ].join(' ')
  run(asOwner('pg_ctl', ['-D', dataDir, '-o', options, '-l', join(dir, 'server.log'), '-w', '-t', '60', 'start']))
  let stopped = false
  const stop = (): void => {
    if (stopped) return
    stopped = true
    process.removeListener('exit', stop)
    const [command, ...args] = asOwner('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']) as [string, ...string[]]
    spawnSync(command, args, { cwd: dir })
    // Backends of an immediate shutdown may still be exiting (and writing) as the removal runs.
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
  }
  // Synchronous, so it runs inside 'exit' too (a signal's default action ends the process without
  // 'exit'; the test harness stops its cluster itself then).
  process.once('exit', stop)
  return {
    url: `postgresql://postgres@localhost/postgres?host=${encodeURIComponent(dir)}`,
    restart(mode = 'immediate') {
      const [command, ...args] = asOwner('pg_ctl', ['-D', dataDir, '-o', options, '-l', join(dir, 'server.log'), '-m', mode, '-w', '-t', '60', 'restart']) as [string, ...string[]]
      return new Promise<void>((resolve, reject) => {
        execFile(command, args, { cwd: dir }, (error, stdout, stderr) => (error === null ? resolve() : reject(new Error(`pg_ctl restart failed: ${stderr || stdout || error.message}`))))
      })
    },
    stop,
  }
}

export { howToProvide }
