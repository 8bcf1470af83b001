/**
 * ScaleOptions — the shape of one run of the world at scale (ScaleWorld.ts): how many engines,
 * how many job queues of how many Matching partitions each (their product is the group's
 * partition count), the enqueue rate, who works which queue, the phase lengths and the fault
 * chances. Sizes are given by the caller (the bench, the tests, the CLI); what varies per seed
 * is drawn at run time from the seed's decisions.
 *
 * Does not: draw anything (Decisions.ts does), or run anything.
 */
import { jobQueuePartitionsMax } from '../../src/kernel/Limits.ts'

/** The stamps every queue of the run is opened with. */
export interface ScaleQueueOptions {
  readonly visibilityTimeoutS: number
  readonly maxAttempts: number
  readonly backoffBaseS: number
  readonly partitions: number
}

/** The faults the scale world injects, each a chance per store, membership or bus call (bus: per message). */
export interface ScaleFaultChances {
  /** The call is slow: it waits up to 500 ms of virtual time before it runs. */
  readonly latency: number
  /** The call is refused before it runs (an outage; nothing committed). */
  readonly unavailable: number
  /** A write committed and its host crashed before hearing (an ambiguous commit); the host restarts later. */
  readonly crashAfterCommit: number
  /** A write committed and the connection dropped: the caller hears `Unavailable` with `maybeCommitted`. */
  readonly maybeCommitted: number
  /** A bus message (due signal, forwarded poll, hand-over) is lost in transit. */
  readonly busDrop: number
}

/** Every option of a scale run. */
export interface ScaleOptions {
  readonly seed: number
  /** Engines at the start; one more joins during the run, one dies. */
  readonly engines: number
  readonly queues: number
  readonly queue: ScaleQueueOptions
  /** Jobs enqueued per virtual second across the group, spread over every engine and queue. */
  readonly enqueuePerS: number
  /** Engines that run `work` loops on each queue. */
  readonly workersPerQueue: number
  /** The loops' concurrency. */
  readonly workConcurrency: number
  /** Longest virtual time a handler runs (each run draws 0…this). */
  readonly handlerMsMax: number
  /** Chance a handler throws (the job is retried on its queue's curve). */
  readonly handlerFailChance: number
  /** Virtual time of steady load before the first membership change, and after each one converged. */
  readonly steadyMs: number
  /** Most virtual time the final phase (faults off) may take to deliver what is left. */
  readonly drainMsMax: number
  /** Null: faults off. */
  readonly faults: ScaleFaultChances | null
}

/** What a caller sizes; the rest defaults to a realistic group. */
export interface ScaleSize {
  readonly seed: number
  readonly engines: number
  /** Queue partitions across the group: queues × partitions per queue. */
  readonly partitions: number
  readonly enqueuePerS?: number
  readonly steadyMs?: number
  readonly faultsOff?: boolean
}

/**
 * Chances low enough that a hundred engines making thousands of calls a second still get work
 * done, high enough that every kind strikes many times in a run.
 */
export const scaleFaultChances: ScaleFaultChances = { latency: 0.01, unavailable: 0.002, crashAfterCommit: 0.000_05, maybeCommitted: 0.001, busDrop: 0.002 }

/**
 * A run's options for a group of `engines` and `partitions` queue partitions: as few queues as
 * the per-queue limit allows (each of `jobQueuePartitionsMax` partitions or fewer, the count
 * rounded so every queue has the same), two engines working each queue with two handlers each,
 * handlers of up to 200 ms, one in twenty failing.
 */
export function scaleOptions(size: ScaleSize): ScaleOptions {
  const perQueue = Math.min(jobQueuePartitionsMax, Math.max(1, Math.floor(size.partitions / Math.max(1, Math.ceil(size.partitions / 50)))))
  const queues = Math.max(1, Math.round(size.partitions / perQueue))
  return {
    seed: size.seed,
    engines: size.engines,
    queues,
    queue: { visibilityTimeoutS: 30, maxAttempts: 5, backoffBaseS: 1, partitions: perQueue },
    enqueuePerS: size.enqueuePerS ?? size.engines,
    workersPerQueue: Math.min(2, size.engines),
    workConcurrency: 2,
    handlerMsMax: 200,
    handlerFailChance: 0.05,
    steadyMs: size.steadyMs ?? 10_000,
    drainMsMax: 120_000,
    faults: size.faultsOff === true ? null : scaleFaultChances,
  }
}

/** One line per option, for a run's header. */
export function describeScaleOptions(options: ScaleOptions): string[] {
  const q = options.queue
  const f = options.faults
  return [
    `seed=${options.seed} engines=${options.engines} queues=${options.queues}×${q.partitions} partitions=${options.queues * q.partitions} enqueue ${options.enqueuePerS}/s`,
    `queues vis ${q.visibilityTimeoutS}s max ${q.maxAttempts} backoff ${q.backoffBaseS}s · ${options.workersPerQueue} engines work each queue, concurrency ${options.workConcurrency}, handlers ≤${options.handlerMsMax} ms, fail ${options.handlerFailChance}`,
    `steady ${options.steadyMs} ms per phase · drain ≤${options.drainMsMax} ms · faults ${f === null ? 'off' : `latency=${f.latency} unavailable=${f.unavailable} crash.afterCommit=${f.crashAfterCommit} maybeCommitted=${f.maybeCommitted} bus.drop=${f.busDrop}`}`,
  ]
}
