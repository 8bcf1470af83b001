/**
 * Matchbox — one embedded job engine (DESIGN.md §10): a Matching host whose History is Jobs,
 * the due-time driver, and the queue, outbox and schedule faces over a Store and a JobStore.
 *
 * Wiring: jobs of queue `q` are delivered through Matching family `q` in namespace `jobs`, with
 * ONE partition per family — claim order (priority DESC, runAt ASC, enqueue order) holds only
 * within one partition's backlog. This host owns every partition it serves (no membership):
 * hosts sharing a database all deliver, and their Matching queues are fenced by range ids.
 *
 * Invariants: every time comes from the injected clock and every draw from the seeded Random
 * (ids, claim tokens, jitter and Matching's choices on separate forks); `close` stops workers
 * (waiting for handlers in flight), the driver, the Matching host (final checkpoints), then the
 * stores; afterwards every operation refuses with `ShuttingDown`.
 *
 * Does not: open stores (open.ts does), or sweep, or run schedules on its own.
 */
import { makeMatchingHost } from '../actors/MatchingHost.ts'
import { validateName } from '../domain/QueueKey.ts'
import type { Scheduler } from 'effect/Scheduler'
import type { Clock } from '../kernel/Clock.ts'
import { partitionCountDefault } from '../kernel/Limits.ts'
import type { Random } from '../kernel/Random.ts'
import type { QueueLimits } from '../machines/QueueContext.ts'
import type { JobStore } from '../persistence/jobs/JobStore.ts'
import type { Store } from '../persistence/Store.ts'
import { jobsNamespace, makeDueDriver } from './DueDriver.ts'
import { type JobQueue, makeJobQueue } from './JobQueue.ts'
import { makeJobsHistory } from './JobsHistory.ts'
import { outboxPrefix, outboxStamps, type QueueOptions, resolveQueueOptions, validateQueueName } from './QueueOptions.ts'
import { makeRuntime } from './Runtime.ts'
import { registerSchedule, runSchedules } from './Schedules.ts'

/** An open engine. */
export interface Matchbox {
  /** This host's id (lease holder, poller identity). */
  readonly hostId: string
  /** A handle on queue `name`; jobs enqueued through it carry `options` (defaults 300 s / 3 / 5 s / forever). */
  queue(name: string, options?: QueueOptions): JobQueue
  /** The outbox `name`: a queue with fixed options (visibility 60 s, 5 attempts, backoff base 5 s). */
  outbox(name: string): JobQueue
  /** Registers a recurring enqueue: `@every <n>s|m|h` or 5-field cron (UTC); a bad spec is `InvalidSpec`. */
  schedule(name: string, spec: string, queue: string, payload: unknown): Promise<void>
  /** Enqueues every due occurrence exactly once across hosts (leader-elected); returns how many. */
  runSchedules(): Promise<number>
  /** Resolves once no due-time pass is running or requested: for tests and simulators on a ManualClock. */
  idle(): Promise<void>
  /** Stops workers (waiting for handlers in flight), delivery and Matching, then closes the stores. */
  close(): Promise<void>
}

/** What an engine is built from. The engine owns them: `close` closes them through `closeStores`. */
export interface MatchboxParts {
  readonly hostId: string
  readonly store: Store
  readonly jobStore: JobStore
  readonly clock: Clock
  readonly random: Random
  /** Closes the stores (once; a shared driver is closed once). */
  readonly closeStores: () => Promise<void>
  /** Matching queue limits (tests and simulators; default: DESIGN.md §9). */
  readonly matchingLimits?: Partial<QueueLimits>
  /** The Effect scheduler of Matching's fibers (simulators pass a synchronous one); default: Effect's. */
  readonly scheduler?: Scheduler
  /** Defects (bugs) in Matching queues and delivery passes; default: rethrown asynchronously. */
  readonly onDefect?: (where: string, defect: unknown) => void
}

/** Builds an engine over opened stores. */
export function makeMatchbox(parts: MatchboxParts): Matchbox {
  let closed = false
  let closing: Promise<void> | null = null
  const ids = parts.random.fork()
  const jitter = parts.random.fork()
  const tokens = parts.random.fork()
  let driverRef: ReturnType<typeof makeDueDriver> | null = null
  const history = makeJobsHistory({
    jobStore: parts.jobStore,
    clock: parts.clock,
    random: tokens,
    onClaimed: (job) => driverRef?.notifyDue(job.deadlineMs as number),
  })
  const matching = makeMatchingHost({
    hostId: parts.hostId,
    store: parts.store,
    history,
    clock: parts.clock,
    random: parts.random.fork(),
    partitionCount: (namespace) => (namespace === jobsNamespace ? 1 : partitionCountDefault),
    ...(parts.matchingLimits === undefined ? {} : { limits: parts.matchingLimits }),
    ...(parts.scheduler === undefined ? {} : { scheduler: parts.scheduler }),
    ...(parts.onDefect === undefined ? {} : { onDefect: parts.onDefect }),
  })
  const onDriverDefect = parts.onDefect
  const driver = makeDueDriver({ jobStore: parts.jobStore, matching, clock: parts.clock, ...(onDriverDefect === undefined ? {} : { onDefect: (defect: unknown) => onDriverDefect('due-time driver', defect) }) })
  driverRef = driver
  const runtime = makeRuntime({
    hostId: parts.hostId,
    clock: parts.clock,
    random: jitter,
    ids,
    jobStore: parts.jobStore,
    matching,
    driver,
    isClosed: () => closed,
  })

  return {
    hostId: parts.hostId,
    queue(name, options) {
      runtime.refuseIfClosed()
      return makeJobQueue(runtime, validateQueueName('name', name), resolveQueueOptions(options))
    },
    outbox(name) {
      runtime.refuseIfClosed()
      return makeJobQueue(runtime, `${outboxPrefix}${validateName('name', name)}`, outboxStamps)
    },
    schedule: (name, spec, queue, payload) => registerSchedule(runtime, name, spec, queue, payload),
    runSchedules: () => runSchedules(runtime),
    idle: () => driver.idle(),
    close() {
      closing ??= (async () => {
        closed = true
        // Workers first, while the stores still answer their handlers' acks.
        await Promise.all([...runtime.workers].map((stop) => stop()))
        await driver.close()
        await matching.close()
        await parts.closeStores()
      })()
      return closing
    },
  }
}
