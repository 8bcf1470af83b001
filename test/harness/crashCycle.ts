/**
 * crashCycle — crash recovery on real PostgreSQL, shared by the test and the
 * bench. One cycle: run matchingChild.ts (a Matching host on the real clock; each child process
 * is started three cycles ahead, so it has loaded when its cycle comes), read its
 * `added <jobId>` lines until a seeded random count, SIGKILL it at that moment, then take over
 * in this process with a new host on a ManualClock and the same database, and check:
 * - a queue the child wrote to (last task id or ack levels moved) has a range above the one the
 *   previous takeover left, and no range moves backwards (a child killed after a few adds may
 *   never have loaded some partitions);
 * - the takeover's acquires returned ranges above those the child left (the range increased);
 * - the saved ack levels never moved backwards across cycles and never exceed the last task id
 *   (the kill cannot be observed atomically, so "intact" is checked as monotone);
 * - every job id any child reported as added has a recorded start (by a child before its kill,
 *   or by the takeover host) — at least once, as History's table says.
 *
 * Checks return violation lines instead of throwing, so the bench can run hundreds of cycles
 * and report them all. Does not: use vitest (the bench runs it too).
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { makeMatchingHost } from '../../src/actors/MatchingHost.ts'
import { encodeQueueKey } from '../../src/domain/QueueKey.ts'
import { ManualClock } from '../../src/kernel/Clock.ts'
import { Random } from '../../src/kernel/Random.ts'
import { openPostgresStore } from '../../src/persistence/queues/sql/openSqlStore.ts'
import type { QueueInspection, Store } from '../../src/persistence/queues/Store.ts'
import { crashFamily, crashPartitionCount, crashQueueLimits } from './crashFamily.ts'
import { driveUntil, Pending } from './drive.ts'
import { makeStoreRecorder } from './recordingStore.ts'
import { ensureStartedTable, makeTableHistory, startedJobIds } from './tableHistory.ts'

const childPath = fileURLToPath(new URL('./matchingChild.ts', import.meta.url))
const repoRoot = fileURLToPath(new URL('../..', import.meta.url))

/** What to run. */
export interface CrashRunOptions {
  readonly url: string
  readonly cycles: number
  readonly seed: number
  /** The kill comes after 1 … this many reported adds (default 60). */
  readonly addsMax?: number
  readonly log?: (line: string) => void
}

/** What happened. */
export interface CrashRunReport {
  readonly cycles: number
  readonly reported: number
  readonly startedByChildren: number
  readonly startedByTakeover: number
  readonly acquiresByTakeover: number
  readonly violations: ReadonlyArray<string>
}

interface ChildRun {
  readonly reported: ReadonlyArray<string>
  readonly exitSignal: NodeJS.Signals | null
  readonly stderr: string
}

// Children started ahead of need, loading while the cycles before theirs run: starting Node
// and loading the child's modules takes a second or two on a busy machine, a cycle about as long.
const childrenAhead = 3

/** A child process that has loaded its modules and waits for its run (matchingChild.ts). */
interface LoadedChild {
  /** Starts the run and SIGKILLs the child the moment its `target`-th add is reported. */
  readonly run: (url: string, prefix: string, seed: number, target: number) => Promise<ChildRun>
  /** Ends a child that was never run (it exits when its stdin closes). */
  readonly discard: () => Promise<void>
}

function startChild(): LoadedChild {
  const child = spawn(process.execPath, ['--import', 'tsx', childPath], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] })
  const reported: string[] = []
  let stderr = ''
  let target = Number.POSITIVE_INFINITY
  let killed = false
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  // A write to a child that already died fails here; its end and stderr tell why.
  child.stdin.on('error', () => {})
  createInterface({ input: child.stdout }).on('line', (line) => {
    if (!line.startsWith('added ')) return
    // Lines read after the kill were written before it: they are promises too.
    reported.push(line.slice('added '.length))
    if (!killed && reported.length >= target) {
      killed = true
      child.kill('SIGKILL')
    }
  })
  const closed = new Promise<ChildRun>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (_code, signal) => resolve({ reported, exitSignal: signal, stderr }))
  })
  // Observed here so a child that fails to start is never an unhandled rejection; awaited by run.
  closed.catch(() => {})
  return {
    run: (url, prefix, seed, wanted) => {
      target = wanted
      child.stdin.write(`${JSON.stringify([url, prefix, seed])}\n`)
      return closed
    },
    discard: async () => {
      child.stdin.end()
      await closed.catch(() => {})
    },
  }
}

const levelsText = (levels: Readonly<Record<number, number>>) => JSON.stringify(levels)

/** Runs `cycles` kill-and-take-over cycles on the database at `url` (schema `matchbox`). */
export async function runCrashCycles(options: CrashRunOptions): Promise<CrashRunReport> {
  const log = options.log ?? (() => {})
  const random = Random.make(options.seed)
  const pool = new pg.Pool({ connectionString: options.url, max: 4 })
  const store: Store = await openPostgresStore({ connectionString: options.url })
  const violations: string[] = []
  const reportedAll = new Set<string>()
  let previous = new Map<string, QueueInspection>()
  let startedByTakeover = 0
  let acquiresByTakeover = 0
  const crashQueues = async () => new Map((await store.list({ namespace: crashFamily.namespace, family: crashFamily.family })).map((inspection) => [encodeQueueKey(inspection.metadata.key), inspection]))
  const loaded: LoadedChild[] = []
  try {
    await ensureStartedTable(pool)
    for (let ahead = 0; ahead < Math.min(childrenAhead, options.cycles); ahead++) loaded.push(startChild())
    for (let cycle = 0; cycle < options.cycles; cycle++) {
      const fail = (message: string) => violations.push(`cycle ${cycle}: ${message}`)
      const target = random.int(1, options.addsMax ?? 60)
      const next = loaded.shift() as LoadedChild
      if (cycle + childrenAhead < options.cycles) loaded.push(startChild())
      const child = await next.run(options.url, `c${cycle}`, random.int(0, 0x7fff_ffff), target)
      if (child.exitSignal !== 'SIGKILL') fail(`child ended by itself (${child.exitSignal ?? 'exit'}) after ${child.reported.length} adds: ${child.stderr.trim()}`)
      for (const jobId of child.reported) reportedAll.add(jobId)

      // The state the child left: ack levels monotone across cycles, within the last id.
      const left = await crashQueues()
      for (const [queue, inspection] of left) {
        const { ackLevels, lastTaskId, rangeId } = inspection.metadata
        const before = previous.get(queue)?.metadata
        // A child killed after a few adds may never have loaded some partitions: such a queue is
        // left as the last takeover left it. Any queue the child wrote to, it acquired first.
        if (before !== undefined) {
          const untouched = lastTaskId === before.lastTaskId && JSON.stringify(ackLevels) === JSON.stringify(before.ackLevels)
          if (rangeId < before.rangeId) fail(`${queue}: the range moved backwards (${before.rangeId} → ${rangeId})`)
          else if (rangeId === before.rangeId && !untouched) fail(`${queue}: the child wrote without raising the range (${before.rangeId} → ${rangeId})`)
        }
        for (const [subqueue, ackLevel] of Object.entries(ackLevels)) {
          if (ackLevel > lastTaskId) fail(`${queue}/${subqueue}: ack level ${ackLevel} above last task id ${lastTaskId}`)
          const earlier = before?.ackLevels[Number(subqueue)] ?? 0
          if (ackLevel < earlier) fail(`${queue}/${subqueue}: ack level moved backwards ${earlier} → ${ackLevel}`)
        }
      }

      // Take over on a virtual clock and deliver everything ever reported.
      const clock = new ManualClock(2_000_000_000_000 + cycle * 10_000_000)
      const recorder = makeStoreRecorder(() => clock.now())
      const history = makeTableHistory(pool, `takeover-${cycle}`)
      const host = makeMatchingHost({
        hostId: `takeover-${cycle}`,
        store: recorder.wrap(store, 'takeover'),
        history: { recordTaskStarted: (task, poller, origin) => recorder.trackIo(history.recordTaskStarted(task, poller, origin)) },
        clock,
        random: random.fork(),
        partitionCount: crashPartitionCount,
        limits: crashQueueLimits,
      })
      const pending = new Pending()
      let started = await startedJobIds(pool)
      // At least one round, so the takeover loads (acquires) every partition even when the
      // children already started everything they reported.
      for (let round = 0; round < 200 && (round === 0 || [...reportedAll].some((jobId) => !started.has(jobId))); round++) {
        const polls = Array.from({ length: 4 }, () => pending.track(host.poll({ ...crashFamily, identity: 'takeover', waitMs: 100 })))
        await driveUntil(clock, recorder, () => pending.open === 0, 'takeover polls to answer')
        startedByTakeover += (await Promise.all(polls)).filter((polled) => polled !== null).length
        started = await startedJobIds(pool)
      }
      const missing = [...reportedAll].filter((jobId) => !started.has(jobId))
      if (missing.length > 0) fail(`${missing.length} reported adds never started: ${missing.slice(0, 5).join(', ')}`)
      const acquired = new Set(recorder.calls.filter((call) => call.operation === 'acquire' && call.ok).map((call) => call.queue))
      for (const queue of left.keys()) if (!acquired.has(queue)) fail(`${queue}: the takeover never acquired it`)
      for (const acquire of recorder.calls.filter((call) => call.operation === 'acquire')) {
        acquiresByTakeover++
        const leftRange = left.get(acquire.queue)?.metadata.rangeId ?? 0
        if (!acquire.ok) fail(`takeover acquire of ${acquire.queue} failed: ${acquire.errorTag}`)
        else if ((acquire.rangeId ?? 0) <= leftRange) fail(`${acquire.queue}: takeover range ${acquire.rangeId} not above the child's ${leftRange}`)
      }
      await host.close()
      const after = await crashQueues()
      for (const [queue, inspection] of after) {
        for (const [subqueue, ackLevel] of Object.entries(inspection.metadata.ackLevels)) {
          const earlier = left.get(queue)?.metadata.ackLevels[Number(subqueue)] ?? 0
          if (ackLevel < earlier) fail(`${queue}/${subqueue}: takeover moved the ack level backwards ${earlier} → ${ackLevel}`)
        }
      }
      const summary = [...after].map(([queue, inspection]) => `p${inspection.metadata.key.partition} range ${left.get(queue)?.metadata.rangeId ?? 0}→${inspection.metadata.rangeId} ack ${levelsText(left.get(queue)?.metadata.ackLevels ?? {})}→${levelsText(inspection.metadata.ackLevels)} rows ${inspection.storedRows}`)
      log(`cycle ${cycle}: killed at ${target} reported adds (${child.reported.length} read); ${summary.join('; ')}`)
      previous = after
    }
    const { rows } = await pool.query<{ count: string }>("SELECT count(*) FROM crash_test.started WHERE started_by NOT LIKE 'takeover-%'")
    return { cycles: options.cycles, reported: reportedAll.size, startedByChildren: Number(rows[0]?.count ?? 0), startedByTakeover, acquiresByTakeover, violations }
  } finally {
    await Promise.all(loaded.map((child) => child.discard()))
    await store.close()
    await pool.end()
  }
}
