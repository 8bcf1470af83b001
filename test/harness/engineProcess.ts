/**
 * engineProcess — the parent's side of engineChild.ts: spawns a Matchbox engine in a process
 * of its own (Node with tsx, an IPC channel), sends it commands, and lets the caller wait on its
 * events. Holds the protocol types both sides share.
 *
 * Two steps, so a caller can keep a process standing by: `startEngineProcess` resolves once the
 * child has loaded its modules (Node + tsx: the slow second or two), `open` then opens its
 * engine (connect, membership: fast); `spawnEngine` does both.
 *
 * Invariants: every wait is bounded and its failure names what was awaited and the child's
 * stderr tail; `kill` is SIGKILL (no goodbye from the child); a child's stderr is kept (bounded).
 *
 * Does not: judge anything. Tests and benches decide what the events mean.
 */
import { type ChildProcess, fork, spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { QueueOptions } from '../../src/index.ts'

const childPath = fileURLToPath(new URL('./engineChild.ts', import.meta.url))
const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
// engineChild compiled beside the package build (buildCompiledChild), run by plain Node.
const compiledChildPath = join(repoRoot, 'dist', 'test', 'harness', 'engineChild.js')
// Enough of a child's stderr to show a stack trace or two.
const stderrKeptMax = 20_000

/** A job a child's handler started. */
export interface HandledJob {
  readonly id: string
  readonly queue: string
  /** Wall-clock ms at handler start. */
  readonly startedMs: number
  /** Handler start minus the enqueue time carried in the payload; null without one. */
  readonly latencyMs: number | null
}

/** Parent → child. */
export type ChildCommand =
  | { readonly type: 'open'; readonly url: string; readonly hostId: string; readonly role: 'worker' | 'producer'; readonly seed: number }
  | {
      readonly type: 'work'
      readonly url: string
      readonly queues: ReadonlyArray<string>
      readonly queueOptions?: QueueOptions
      readonly concurrency: number
      /** Record each handled job in this table: job_id text primary key, host_id text, enqueued_at_ms and handled_at_ms double precision (first handler wins). */
      readonly table?: string
    }
  | { readonly type: 'enqueue'; readonly queue: string; readonly queueOptions?: QueueOptions; readonly count: number; readonly ratePerS: number; readonly inflightMax: number }
  | { readonly type: 'stopEnqueue' }
  | { readonly type: 'stopWork' }
  | { readonly type: 'close' }

/** Child → parent. */
export type ChildEvent =
  | { readonly type: 'loaded' }
  | { readonly type: 'opened'; readonly hostId: string; readonly hosts: ReadonlyArray<string>; readonly atMs: number }
  | { readonly type: 'hosts'; readonly hosts: ReadonlyArray<string>; readonly atMs: number }
  | { readonly type: 'handled'; readonly jobs: ReadonlyArray<HandledJob> }
  | { readonly type: 'enqueued'; readonly ids: ReadonlyArray<string> }
  | { readonly type: 'enqueueDone'; readonly count: number; readonly failed: number }
  | { readonly type: 'workStopped' }
  | { readonly type: 'closed' }
  | { readonly type: 'error'; readonly message: string; readonly fatal?: boolean }

/** How a child ended. */
export interface ChildExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/** A running engine process. */
export interface EngineProcess {
  /** The host id it was opened with ('' before `open`). */
  readonly hostId: string
  readonly pid: number
  /** Opens the engine in the child; resolves once it is open. */
  open(options: OpenEngineOptions): Promise<void>
  /** The engine's latest view of its group. */
  hosts(): ReadonlyArray<string>
  send(command: ChildCommand): void
  /** Calls `listener` on every event from now on; returns the unsubscribe function. */
  on(listener: (event: ChildEvent) => void): () => void
  /** Resolves with the first non-undefined `pick(event)`; rejects after `timeoutMs` or if the child ends first. */
  waitFor<T>(pick: (event: ChildEvent) => T | undefined, what: string, timeoutMs: number): Promise<T>
  /** Settles when the process has ended. */
  readonly exited: Promise<ChildExit>
  /** SIGKILL, then waits for the end. */
  kill(): Promise<ChildExit>
  /** Asks the engine to close and waits for the process to end (SIGKILL after `timeoutMs`). */
  close(timeoutMs?: number): Promise<ChildExit>
  /** The child's stderr so far (its tail when long). */
  stderr(): string
}

/** How to open the engine of a process. */
export interface OpenEngineOptions {
  readonly url: string
  readonly hostId: string
  readonly role: 'worker' | 'producer'
  readonly seed: number
  /** Bound on `open` (default 30 s). */
  readonly openTimeoutMs?: number
}

// Bound on a process start: tsx compiles the sources on a busy machine.
const startTimeoutMs = 60_000

/** Spawns an engine process and resolves once it is open. */
export async function spawnEngine(options: OpenEngineOptions): Promise<EngineProcess> {
  const engine = await startEngineProcess()
  await engine.open(options)
  return engine
}

/**
 * Builds the package (dist/) and compiles engineChild.ts beside it (dist/test/harness/), so that
 * `startEngineProcess({ compiled: true })` starts plain Node on JavaScript: about a third of the
 * CPU of Node with tsx on the sources, which is what a soak that restarts engines a thousand
 * times spends most on. A later `npm run build` (or `npm pack`) starts from an empty dist/.
 */
export function buildCompiledChild(): void {
  const build = spawnSync(process.execPath, [join(repoRoot, 'bin', 'build.mjs')], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'inherit'] })
  if (build.status !== 0) throw new Error(`engineProcess: npm run build failed (${build.status ?? build.signal})`)
  const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc')
  const compiled = spawnSync(process.execPath, [tsc, '-p', join(repoRoot, 'test', 'harness', 'tsconfig.engineChild.json')], { cwd: repoRoot, stdio: ['ignore', 'inherit', 'inherit'] })
  if (compiled.status !== 0) throw new Error(`engineProcess: compiling engineChild.ts failed (${compiled.status ?? compiled.signal})`)
}

/** How to start an engine process. */
export interface StartOptions {
  /** Run the compiled child (built by `buildCompiledChild`) on plain Node instead of the sources through tsx. */
  readonly compiled?: boolean
}

/** Spawns an engine process and resolves once it has loaded, before any engine opens (a standby). */
export async function startEngineProcess(options: StartOptions = {}): Promise<EngineProcess> {
  const child: ChildProcess =
    options.compiled === true
      ? fork(compiledChildPath, [], { cwd: repoRoot, execArgv: [], stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
      : fork(childPath, [], { cwd: repoRoot, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
  const listeners = new Set<(event: ChildEvent) => void>()
  let stderr = ''
  let hosts: ReadonlyArray<string> = []
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-stderrKeptMax)
  })
  child.on('message', (event: ChildEvent) => {
    if (event.type === 'hosts' || event.type === 'opened') hosts = event.hosts
    // A snapshot: a listener added while this event is handled hears only later events.
    for (const listener of Array.from(listeners)) listener(event)
  })
  const exited = new Promise<ChildExit>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  let ended: ChildExit | null = null
  void exited.then((exit) => {
    ended = exit
  })

  let hostId = ''
  const engine: EngineProcess = {
    get hostId() {
      return hostId
    },
    pid: child.pid ?? -1,
    async open(options) {
      hostId = options.hostId
      const opened = engine.waitFor((event) => (event.type === 'opened' ? event : undefined), 'the engine to open', options.openTimeoutMs ?? 30_000)
      engine.send({ type: 'open', url: options.url, hostId: options.hostId, role: options.role, seed: options.seed })
      await opened
    },
    hosts: () => hosts,
    send(command) {
      if (child.connected) child.send(command)
    },
    on(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    waitFor(pick, what, timeoutMs) {
      return new Promise((resolve, reject) => {
        let settled = false
        const finish = (): boolean => {
          if (settled) return false
          settled = true
          clearTimeout(timer)
          unsubscribe()
          return true
        }
        const fail = (why: string) => {
          if (finish()) reject(new Error(`${hostId || 'standby'} (pid ${child.pid}): ${why} while waiting for ${what}\n--- stderr tail ---\n${stderr.slice(-4_000)}`))
        }
        const timer = setTimeout(() => fail(`no answer within ${timeoutMs} ms`), timeoutMs)
        const unsubscribe = engine.on((event) => {
          if (event.type === 'error' && event.fatal === true) return fail(`fatal error: ${event.message}`)
          const picked = pick(event)
          if (picked !== undefined && finish()) resolve(picked)
        })
        void exited.then((exit) => fail(`exited (code ${exit.code}, signal ${exit.signal})`))
      })
    },
    exited,
    async kill() {
      child.kill('SIGKILL')
      return exited
    },
    async close(timeoutMs = 30_000) {
      if (ended !== null) return ended
      engine.send({ type: 'close' })
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
      const exit = await exited
      clearTimeout(timer)
      return exit
    },
    stderr: () => stderr,
  }
  const loaded = engine.waitFor((event) => (event.type === 'loaded' ? event : undefined), 'the process to load', startTimeoutMs)
  try {
    await loaded
  } catch (error) {
    child.kill('SIGKILL')
    throw error
  }
  return engine
}
