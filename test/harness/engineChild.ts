/**
 * engineChild — one Matchbox engine in a process of its own, on PostgreSQL and the real clock,
 * driven by its parent over the IPC channel (engineProcess.ts spawns it and holds the protocol
 * types). Shared by test/multiEngine.kill.postgres.test.ts and bench/multihost.ts.
 *
 * Protocol: `loaded` once the modules are in (a standby), then commands: `open` (role worker or producer), `work` (handlers on one or more queues),
 * `enqueue` (a paced or unpaced stream of jobs), `stopEnqueue`, `stopWork`, `close`.
 * Events: `opened`, `hosts` (whenever the engine's view of its group changes), `handled`
 * (batched: job id, queue, and enqueue → handler-start time when the payload carries the
 * enqueue time), `enqueued` (batched ids of enqueues that resolved), `enqueueDone`, `error`.
 *
 * A handler with `table` set records the job id in that table (`INSERT … ON CONFLICT DO
 * NOTHING`; columns job_id, host_id, enqueued_at_ms, handled_at_ms) before it returns, so a record exists for every handler that ran, whether or not
 * its ack made it before a kill. Times are wall-clock (`performance.timeOrigin + now()`), so a
 * parent on the same machine can compare them with its own.
 *
 * Does not: decide when to die. The parent SIGKILLs it; it exits by itself when the parent goes
 * away (the IPC channel closes) or on `close`.
 */
import pg from 'pg'
import { type JobQueue, type Matchbox, open } from '../../src/index.ts'
import type { ChildCommand, ChildEvent, HandledJob } from './engineProcess.ts'

// Batches (and changes of the group view) go out this often: events carry their own times, so
// the delay costs no precision.
const flushIntervalMs = 10

const wallMs = (): number => performance.timeOrigin + performance.now()
const send = (event: ChildEvent): void => {
  if (process.connected) process.send?.(event)
}
const messageOf = (error: unknown): string => (error instanceof Error ? (error.stack ?? error.message) : String(error))

let mb: Matchbox | null = null
let recorder: pg.Pool | null = null
let stopWork: Array<() => Promise<void>> = []
let enqueueStopped = false
let handled: HandledJob[] = []
let enqueued: string[] = []
let lastHosts = ''

function flush(): void {
  if (handled.length > 0) {
    send({ type: 'handled', jobs: handled })
    handled = []
  }
  if (enqueued.length > 0) {
    send({ type: 'enqueued', ids: enqueued })
    enqueued = []
  }
  if (mb !== null) {
    const hosts = mb.hosts().join(',')
    if (hosts !== lastHosts) {
      lastHosts = hosts
      send({ type: 'hosts', hosts: mb.hosts(), atMs: wallMs() })
    }
  }
}

function engine(): Matchbox {
  if (mb === null) throw new Error('engineChild: no engine open')
  return mb
}

async function enqueueStream(queue: JobQueue, count: number, ratePerS: number, inflightMax: number): Promise<{ count: number; failed: number }> {
  const startMs = wallMs()
  let inflight = 0
  let done = 0
  let failed = 0
  let freed: (() => void) | null = null
  for (let n = 0; n < count && !enqueueStopped; n++) {
    if (ratePerS > 0) {
      // Open loop: job n is due at a fixed time, whatever the earlier enqueues cost.
      const dueMs = startMs + (n * 1000) / ratePerS
      const waitMs = dueMs - wallMs()
      if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs))
    }
    while (inflight >= inflightMax) await new Promise<void>((resolve) => (freed = resolve))
    inflight++
    queue.enqueue({ n, sentAtMs: wallMs() }).then(
      (id) => enqueued.push(id),
      (error: unknown) => {
        failed++
        send({ type: 'error', message: `enqueue: ${messageOf(error)}` })
      },
    ).finally(() => {
      inflight--
      done++
      freed?.()
      freed = null
    })
  }
  while (inflight > 0) await new Promise<void>((resolve) => (freed = resolve))
  return { count: done - failed, failed }
}

async function handle(command: ChildCommand): Promise<void> {
  switch (command.type) {
    case 'open': {
      mb = await open({ store: { databaseUrl: command.url }, hostId: command.hostId, role: command.role, seed: command.seed })
      setInterval(flush, flushIntervalMs)
      send({ type: 'opened', hostId: mb.hostId, hosts: mb.hosts(), atMs: wallMs() })
      return
    }
    case 'work': {
      const hostId = engine().hostId
      if (command.table !== undefined && recorder === null) recorder = new pg.Pool({ connectionString: command.url, max: Math.min(command.concurrency * command.queues.length, 8) })
      const table = command.table
      for (const name of command.queues) {
        const stop = engine()
          .queue(name, command.queueOptions)
          .work(
            async (job) => {
              const startedMs = wallMs()
              const sentAtMs = (job.payload as { sentAtMs?: unknown } | null)?.sentAtMs
              if (table !== undefined && recorder !== null) {
                await recorder.query(`INSERT INTO ${table} (job_id, host_id, enqueued_at_ms, handled_at_ms) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [
                  job.id,
                  hostId,
                  typeof sentAtMs === 'number' ? sentAtMs : null,
                  startedMs,
                ])
              }
              handled.push({ id: job.id, queue: job.queue, startedMs, latencyMs: typeof sentAtMs === 'number' ? startedMs - sentAtMs : null })
            },
            { concurrency: command.concurrency, onError: (error) => send({ type: 'error', message: `work ${name}: ${messageOf(error)}` }) },
          )
        stopWork.push(stop)
      }
      return
    }
    case 'enqueue': {
      enqueueStopped = false
      const result = await enqueueStream(engine().queue(command.queue, command.queueOptions), command.count, command.ratePerS, command.inflightMax)
      flush()
      send({ type: 'enqueueDone', count: result.count, failed: result.failed })
      return
    }
    case 'stopEnqueue':
      enqueueStopped = true
      return
    case 'stopWork': {
      const stops = stopWork
      stopWork = []
      await Promise.all(stops.map((stop) => stop()))
      flush()
      send({ type: 'workStopped' })
      return
    }
    case 'close': {
      await mb?.close()
      await recorder?.end()
      flush()
      send({ type: 'closed' })
      process.exit(0)
    }
  }
}

process.on('message', (command: ChildCommand) => {
  handle(command).catch((error: unknown) => {
    send({ type: 'error', message: `${command.type}: ${messageOf(error)}`, fatal: true })
    process.exitCode = 1
  })
})
process.on('disconnect', () => process.exit(0))
send({ type: 'loaded' })
process.on('uncaughtException', (error) => {
  send({ type: 'error', message: `uncaught: ${messageOf(error)}`, fatal: true })
  process.stderr.write(`engineChild: uncaught ${messageOf(error)}\n`)
  process.exit(1)
})
process.on('unhandledRejection', (error) => {
  send({ type: 'error', message: `unhandled rejection: ${messageOf(error)}`, fatal: true })
})
