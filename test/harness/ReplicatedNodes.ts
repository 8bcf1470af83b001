/**
 * ReplicatedNodes — PostgreSQL servers in streaming replication on this machine, for the failover
 * test and bench: a primary from `initdb`, standbys cloned from any running node with
 * `pg_basebackup -R`, synchronous replication switched on at a primary (`ALTER SYSTEM SET
 * synchronous_standby_names = '*'`, a reload, and a wait until a standby reports `sync`),
 * `pg_ctl promote`, a SIGKILL of a node's every process (the postmaster and its children at
 * once, as a machine that dies), and an immediate stop.
 *
 * Every node listens on a Unix socket in a directory of its own (no TCP port), so a test reaches
 * it only through what it chooses: a direct client for checks, a TcpProxy for engines. Servers
 * run as `postgres` through `setpriv` when we are root (PostgresCluster's helpers).
 *
 * `synchronous_commit = on` on every node; `fsync = off`, which is safe here because a node dies
 * by SIGKILL (the kernel keeps what was written), never by power loss. Synchronous replication is
 * set with ALTER SYSTEM after the standby was cloned, so the clone does not inherit it: a promoted
 * standby with no standby of its own then commits without waiting.
 *
 * Does not: clean up after itself on a crash of the caller — `removeAll` deletes the root.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { findBinaries, ownDirectory, ownerArgv } from './PostgresCluster.ts'

// One socket name per directory; the directories tell the nodes apart.
const port = 5432
const serverOptions = (dir: string): string =>
  [
    `-k ${dir}`,
    "-c listen_addresses=''",
    `-c port=${port}`,
    '-c fsync=off',
    '-c synchronous_commit=on',
    '-c wal_level=replica',
    '-c max_wal_senders=5',
    '-c wal_keep_size=64MB',
    // A standby whose primary died retries streaming after this; promote waits out the retry.
    '-c wal_retrieve_retry_interval=200ms',
    '-c max_connections=100',
    '-c shared_buffers=32MB',
  ].join(' ')
// Bound on a sync standby showing up in pg_stat_replication (a clone replays its backup first).
const syncWaitMs = 60_000

/** One PostgreSQL server of the set. */
export interface PgNode {
  readonly name: string
  /** The server's Unix socket file, what a proxy connects to. */
  readonly socketPath: string
  /** A direct connection string to `database` as superuser, for checks beside the engines. */
  url(database: string): string
  /** SIGKILL to the postmaster and all its children, at once. */
  kill(): void
  /** `pg_ctl promote -w`: a standby becomes a primary that accepts writes. */
  promote(): void
  /** `pg_ctl stop -m immediate`. */
  stop(): void
}

/** A place for nodes; `removeAll` stops what is still running and deletes every directory. */
export interface NodeSet {
  /** initdb and start a primary. */
  primary(name: string): PgNode
  /** Clones `from` with `pg_basebackup -R` and starts the clone as its standby. */
  standby(name: string, from: PgNode): PgNode
  removeAll(): void
}

function run(argv: string[], cwd: string): string {
  const [command, ...args] = argv as [string, ...string[]]
  const result = spawnSync(command, args, { encoding: 'utf8', cwd })
  if (result.status !== 0) throw new Error(`${argv.join(' ')} failed (${result.status}): ${result.stderr || result.stdout}`)
  return result.stdout
}

function childrenOf(pid: number): number[] {
  const path = `/proc/${pid}/task/${pid}/children`
  if (!existsSync(path)) return []
  return readFileSync(path, 'utf8').trim().split(/\s+/).filter((text) => text !== '').map(Number)
}

/** Makes a node set under a fresh temp directory. */
export function makeNodeSet(): NodeSet {
  const bin = findBinaries()
  const root = mkdtempSync(join(tmpdir(), 'matchbox-failover-'))
  ownDirectory(root)
  const nodes: Array<{ node: PgNode; running: () => boolean }> = []

  // Starts the server of a data directory already in place and keeps it for removeAll.
  const makeNode = (name: string, dir: string): PgNode => {
    const dataDir = join(dir, 'data')
    const pidOf = (): number | null => {
      const file = join(dataDir, 'postmaster.pid')
      return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : null
    }
    let running = false
    const node: PgNode = {
      name,
      socketPath: join(dir, `.s.PGSQL.${port}`),
      url: (database) => `postgresql://postgres@localhost:${port}/${database}?host=${encodeURIComponent(dir)}`,
      kill() {
        const pid = pidOf()
        if (pid === null) throw new Error(`${name}: no postmaster.pid`)
        const victims = [pid, ...childrenOf(pid)]
        for (const victim of victims) {
          try {
            process.kill(victim, 'SIGKILL')
          } catch {
            // Already gone.
          }
        }
        running = false
      },
      promote() {
        run(ownerArgv(bin, 'pg_ctl', ['-D', dataDir, '-w', '-t', '60', 'promote']), dir)
      },
      stop() {
        if (!running) return
        running = false
        run(ownerArgv(bin, 'pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']), dir)
      },
    }
    run(ownerArgv(bin, 'pg_ctl', ['-D', dataDir, '-o', serverOptions(dir), '-l', join(dir, 'server.log'), '-w', '-t', '60', 'start']), dir)
    running = true
    nodes.push({ node, running: () => running })
    return node
  }

  const nodeDir = (name: string): string => {
    const dir = join(root, name)
    mkdirSync(dir)
    ownDirectory(dir)
    return dir
  }

  return {
    primary(name) {
      const dir = nodeDir(name)
      run(ownerArgv(bin, 'initdb', ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']), dir)
      return makeNode(name, dir)
    },
    standby(name, from) {
      const dir = nodeDir(name)
      const fromDir = from.socketPath.slice(0, from.socketPath.lastIndexOf('/'))
      run(ownerArgv(bin, 'pg_basebackup', ['-D', join(dir, 'data'), '-h', fromDir, '-p', String(port), '-U', 'postgres', '-R', '-X', 'stream', '-c', 'fast', '--no-sync']), dir)
      return makeNode(name, dir)
    },
    removeAll() {
      for (const { node, running } of nodes) if (running()) node.stop()
      rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
    },
  }
}

/**
 * Makes every commit on `primary` wait for a standby's flush (`synchronous_standby_names = '*'`
 * with `synchronous_commit = on`) and resolves once a standby reports `sync_state = 'sync'`.
 */
export async function makeSynchronous(primary: PgNode): Promise<void> {
  const client = new pg.Client({ connectionString: primary.url('postgres') })
  await client.connect()
  try {
    await client.query("ALTER SYSTEM SET synchronous_standby_names = '*'")
    await client.query('SELECT pg_reload_conf()')
    const deadline = performance.now() + syncWaitMs
    for (;;) {
      const { rows } = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'")
      if ((rows[0]?.n ?? 0) > 0) return
      if (performance.now() > deadline) throw new Error(`${primary.name}: no synchronous standby within ${syncWaitMs} ms`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  } finally {
    await client.end()
  }
}
