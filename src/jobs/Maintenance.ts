/**
 * Maintenance — housekeeping in one line, started by the user: `mb.startMaintenance({
 * schedulesEveryMs, sweepEveryMs, queues })` runs `runSchedules` every `schedulesEveryMs` and
 * `sweepExpired` on each of `queues` every `sweepEveryMs`, on the engine's injected clock. It
 * packages the usual recipe (a schedule plus a worker that sweeps) as a helper: the engine has
 * no ambient sweeper, so nothing runs unless the user starts it, and every engine may start it — `runSchedules` is
 * leader-elected and a sweep is one atomic statement per queue, so several hosts doing it is safe.
 *
 * A pass starts only after the previous one of its kind finished (no overlap); a failed pass
 * (the store unavailable) is logged and the next one runs on time. The returned function stops
 * the loops and resolves after a pass in flight; `close` stops them too.
 *
 * Does not: discover queues (name the ones to sweep), or sweep more often than asked.
 */
import { InvalidInput } from '../domain/errors.ts'
import { validateName } from '../domain/QueueKey.ts'
import type { CancelTimer } from '../kernel/Clock.ts'
import { ackBatchSizeMax, jobDurationSMax } from '../kernel/Limits.ts'
import type { Logger } from './Events.ts'
import type { JobsRuntime } from './Runtime.ts'
import { runSchedules } from './Schedules.ts'

/** Options of `startMaintenance`; give at least one cadence. */
export interface MaintenanceOptions {
  /** Run `runSchedules` this often, ms (≥ 1). */
  readonly schedulesEveryMs?: number
  /** Sweep `queues` this often, ms (≥ 1); needs `queues`. */
  readonly sweepEveryMs?: number
  /** The queues to sweep (outboxes as `outbox:<name>`). */
  readonly queues?: ReadonlyArray<string>
}

const optionKeys = ['schedulesEveryMs', 'sweepEveryMs', 'queues']

function everyMs(field: string, value: unknown): number | null {
  if (value === undefined) return null
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > jobDurationSMax * 1000) {
    throw new InvalidInput({ field, reason: `must be a whole number of ms in 1…${jobDurationSMax * 1000}` })
  }
  return value
}

/** Validates the options: cadences, and the queues a sweep needs. */
function resolveMaintenanceOptions(options: unknown): { schedulesEveryMs: number | null; sweepEveryMs: number | null; queues: ReadonlyArray<string> } {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new InvalidInput({ field: 'options', reason: 'must be an object' })
  for (const key of Object.keys(options)) if (!optionKeys.includes(key)) throw new InvalidInput({ field: `options.${key}`, reason: `is not an option (known: ${optionKeys.join(', ')})` })
  const given = options as MaintenanceOptions
  const schedulesEveryMs = everyMs('options.schedulesEveryMs', given.schedulesEveryMs)
  const sweepEveryMs = everyMs('options.sweepEveryMs', given.sweepEveryMs)
  if (schedulesEveryMs === null && sweepEveryMs === null) throw new InvalidInput({ field: 'options', reason: 'must give schedulesEveryMs, sweepEveryMs or both' })
  const queues = given.queues === undefined ? [] : given.queues
  if (!Array.isArray(queues) || queues.length > ackBatchSizeMax) throw new InvalidInput({ field: 'options.queues', reason: `must be an array of at most ${ackBatchSizeMax} queue names` })
  const valid = queues.map((queue, index) => validateName(`options.queues[${index}]`, queue))
  if (sweepEveryMs !== null && valid.length === 0) throw new InvalidInput({ field: 'options.queues', reason: 'must name the queues to sweep when sweepEveryMs is given' })
  if (sweepEveryMs === null && valid.length > 0) throw new InvalidInput({ field: 'options.sweepEveryMs', reason: 'must be given to sweep the named queues' })
  return { schedulesEveryMs, sweepEveryMs, queues: valid }
}

/** Starts the loops; returns `stop` (also registered with the engine's `close`). */
export function startMaintenance(runtime: JobsRuntime, options: MaintenanceOptions, logger: Logger | undefined): () => Promise<void> {
  runtime.refuseIfClosed()
  const { schedulesEveryMs, sweepEveryMs, queues } = resolveMaintenanceOptions(options)
  let stopped = false
  const cancels = new Set<CancelTimer>()
  const inFlight = new Set<Promise<void>>()

  const loop = (intervalMs: number, what: string, pass: () => Promise<unknown>): void => {
    const cancel = runtime.clock.setTimer(intervalMs, () => {
      cancels.delete(cancel)
      if (stopped || runtime.isClosed()) return
      const running = pass()
        .then(
          () => {},
          (error: unknown) => logger?.warn({ err: error, task: what }, `matchbox maintenance: ${what} failed; it runs again in ${intervalMs} ms`),
        )
        .finally(() => {
          inFlight.delete(running)
          if (!stopped && !runtime.isClosed()) loop(intervalMs, what, pass)
        })
      inFlight.add(running)
    })
    cancels.add(cancel)
  }

  if (schedulesEveryMs !== null) loop(schedulesEveryMs, 'runSchedules', () => runSchedules(runtime))
  if (sweepEveryMs !== null) {
    loop(sweepEveryMs, 'sweepExpired', async () => {
      for (const queue of queues) await runtime.jobStore.sweepExpired({ queue, nowMs: runtime.now() })
    })
  }

  const stop = async (): Promise<void> => {
    stopped = true
    for (const cancel of cancels) cancel()
    cancels.clear()
    await Promise.all(inFlight)
    runtime.workers.delete(stop)
  }
  runtime.workers.add(stop)
  return stop
}
