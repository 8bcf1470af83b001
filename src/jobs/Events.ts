/**
 * Events — what an engine tells its user about jobs and its store, for logs and metrics: a job
 * started, completed, was retried or died through a handle; the job store became unavailable or
 * recovered. Each event carries the counts and durations an OpenTelemetry counter or histogram
 * wants (attempt, durationMs, lagMs, downMs), measured on the engine's injected clock.
 *
 * Delivery: synchronously, in order, to `open({ onEvent })`, to every `mb.on(type, listener)`,
 * and as one line to `open({ logger })` (pino-compatible: `info/warn/error(obj, msg)`, and
 * `debug` when it has one). A listener that throws never breaks the engine: its error goes to
 * the logger, or is rethrown asynchronously when there is none.
 *
 * Does not: report deaths the store decides on its own — a lapsed claim at its attempt budget
 * (reclaim exhaustion) and `sweepExpired` — those show in `getJob`, `queue.counts()` and the
 * sweep's return value.
 */
import { InvalidInput } from '../domain/errors.ts'
import type { deadReasonExhausted } from '../domain/JobRules.ts'

/** A job was claimed and handed to a worker or a `claim` caller. */
export interface JobStartedEvent {
  readonly type: 'job.started'
  readonly queue: string
  readonly id: string
  /** This claim's attempt number (1 on the first). */
  readonly attempt: number
  readonly maxAttempts: number
  /** How long after it became runnable (its runAt) the job was claimed, ms. */
  readonly lagMs: number
  /** Engine time of the event, epoch ms. */
  readonly at: number
}

/** A job was acked. */
export interface JobCompletedEvent {
  readonly type: 'job.completed'
  readonly queue: string
  readonly id: string
  readonly attempt: number
  /** From claim to ack, ms. */
  readonly durationMs: number
  readonly at: number
}

/** A job went back to pending after a failed attempt. */
export interface JobRetriedEvent {
  readonly type: 'job.retried'
  readonly queue: string
  readonly id: string
  readonly attempt: number
  readonly durationMs: number
  /** Until it is runnable again, ms. */
  readonly delayMs: number
  /** The handler's error message. */
  readonly error: string
  readonly at: number
}

/** A job was dead-lettered through its handle: `fail`, or `retry` at its attempt budget. */
export interface JobDeadEvent {
  readonly type: 'job.dead'
  readonly queue: string
  readonly id: string
  readonly attempt: number
  readonly durationMs: number
  /** `failed` (the handler gave up) or `max attempts exceeded` (its budget ran out; the job's `lastError`). */
  readonly reason: 'failed' | typeof deadReasonExhausted
  readonly error: string
  readonly at: number
}

/** A job store call failed with `Unavailable` while the store was believed healthy. */
export interface StoreUnavailableEvent {
  readonly type: 'store.unavailable'
  /** The store operation that failed first. */
  readonly operation: string
  readonly error: string
  readonly at: number
}

/** A job store call succeeded after `store.unavailable`. */
export interface StoreRecoveredEvent {
  readonly type: 'store.recovered'
  /** From the first failure to this success, ms. */
  readonly downMs: number
  readonly at: number
}

/** Every event an engine emits. */
export type MatchboxEvent = JobStartedEvent | JobCompletedEvent | JobRetriedEvent | JobDeadEvent | StoreUnavailableEvent | StoreRecoveredEvent

/** The `type` of an event. */
export type MatchboxEventType = MatchboxEvent['type']

/** The event of one type. */
export type MatchboxEventOf<Type extends MatchboxEventType> = Extract<MatchboxEvent, { readonly type: Type }>

/** A pino-compatible logger (pino, bunyan-style and console wrappers fit). */
export interface Logger {
  info(object: object, message?: string): void
  warn(object: object, message?: string): void
  error(object: object, message?: string): void
  debug?(object: object, message?: string): void
}

/** Emits events to the user's hooks. */
export interface EventHub {
  emit(event: MatchboxEvent): void
  /** Subscribes to one type; returns the unsubscribe function. */
  on<Type extends MatchboxEventType>(type: Type, listener: (event: MatchboxEventOf<Type>) => void): () => void
}

const eventTypes: ReadonlyArray<MatchboxEventType> = ['job.started', 'job.completed', 'job.retried', 'job.dead', 'store.unavailable', 'store.recovered']

/** Checks a user's logger: an object with info, warn and error functions. */
export function validateLogger(field: string, value: unknown): Logger {
  const logger = value as Partial<Logger> | null
  if (typeof logger !== 'object' || logger === null || typeof logger.info !== 'function' || typeof logger.warn !== 'function' || typeof logger.error !== 'function') {
    throw new InvalidInput({ field, reason: 'must be a logger with info, warn and error functions (pino-compatible)' })
  }
  return logger as Logger
}

// One log line per event: level and message.
function logLine(logger: Logger, event: MatchboxEvent): void {
  const { type, ...fields } = event
  const record = { event: type, ...fields }
  switch (type) {
    case 'job.started':
    case 'job.completed':
      logger.debug?.(record, `matchbox ${type}`)
      return
    case 'job.retried':
      logger.warn(record, `matchbox job retried: ${event.error}`)
      return
    case 'job.dead':
      logger.error(record, `matchbox job dead (${event.reason}): ${event.error}`)
      return
    case 'store.unavailable':
      logger.error(record, `matchbox store unavailable: ${event.error}`)
      return
    case 'store.recovered':
      logger.info(record, `matchbox store recovered after ${event.downMs} ms`)
      return
  }
}

/** Makes the hub of one engine. */
export function makeEventHub(options: { readonly logger?: Logger; readonly onEvent?: (event: MatchboxEvent) => void }): EventHub {
  const listeners = new Map<MatchboxEventType, Set<(event: MatchboxEvent) => void>>()
  const contain = (run: () => void): void => {
    try {
      run()
    } catch (error) {
      if (options.logger !== undefined) {
        options.logger.error({ err: error }, 'matchbox event listener threw')
        return
      }
      queueMicrotask(() => {
        throw error
      })
    }
  }
  return {
    emit(event) {
      if (options.logger !== undefined) contain(() => logLine(options.logger as Logger, event))
      if (options.onEvent !== undefined) contain(() => options.onEvent?.(event))
      for (const listener of listeners.get(event.type) ?? []) contain(() => listener(event))
    },
    on(type, listener) {
      if (!eventTypes.includes(type)) throw new InvalidInput({ field: 'type', reason: `must be one of ${eventTypes.join(', ')}` })
      if (typeof listener !== 'function') throw new InvalidInput({ field: 'listener', reason: 'must be a function' })
      const wrapped = listener as (event: MatchboxEvent) => void
      let set = listeners.get(type)
      if (set === undefined) {
        set = new Set()
        listeners.set(type, set)
      }
      set.add(wrapped)
      return () => {
        listeners.get(type)?.delete(wrapped)
      }
    },
  }
}
