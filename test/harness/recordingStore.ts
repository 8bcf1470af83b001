/**
 * recordingStore — wraps Stores (wrap, don't fork) so tests can see what the runtime asked of
 * persistence: every call with the host that made it, its range id, whether it succeeded, and
 * where it sits in one global order of issue and completion shared by every wrapped store.
 *
 * The recorder also knows how many calls are in flight, which lets tests that drive virtual
 * time wait for real I/O (PGlite, PostgreSQL) to finish before they advance the clock.
 *
 * `staleWrites` judges the record apart from the system under test: a fenced write that
 * returned success after an acquire of the same queue with a higher range had returned. The
 * order of responses on two connections is not the order of commits (a write that committed
 * just before the acquire may be answered just after it), so each such write is classified by
 * the state the acquire returned: `definite` when that state lacks what the write wrote, or the
 * write was sent after the acquire returned; `reordered` when the state proves it committed
 * first. Only `definite` ones are violations. (A checkpoint that changed nothing cannot be told
 * apart from one that committed first; it is classified `reordered`.)
 *
 * Does not: change any call's arguments or outcome.
 */
import { encodeQueueKey, type QueueKey } from '../../src/domain/QueueKey.ts'
import type { QueueMetadata, Store, SubqueueAckLevel } from '../../src/persistence/queues/Store.ts'
import { settle, until } from './settle.ts'

/** The Store operations the recorder names. */
export type StoreOperation = 'acquire' | 'append' | 'read' | 'checkpoint' | 'relocate' | 'inspect' | 'list' | 'getUserData' | 'updateUserData'

/** One finished store call. */
export interface StoreCall {
  readonly host: string
  readonly operation: StoreOperation
  /** Canonical queue key (the source queue of a relocate), or '' for calls without one. */
  readonly queue: string
  /** The range the write was fenced with, or the range an acquire returned; null otherwise. */
  readonly rangeId: number | null
  /** Global sequence numbers: when the call was made and when it settled. */
  readonly issued: number
  readonly returned: number
  readonly ok: boolean
  readonly errorTag: string | null
  /** Acquire and checkpoint: the metadata returned. Append: the last id allocated. */
  readonly metadata: QueueMetadata | null
  readonly lastTaskId: number | null
  /** Checkpoint: the ack levels asked for. */
  readonly requested: ReadonlyArray<SubqueueAckLevel> | null
  /** Virtual time when the call returned (the recorder's `now`). */
  readonly atMs: number
}

/** Shared by every store it wraps. */
export interface StoreRecorder {
  readonly calls: ReadonlyArray<StoreCall>
  /** Calls made and not yet settled, over every wrapped store. */
  inFlight(): number
  /** Wraps `store`; calls are recorded under `host`. */
  wrap(store: Store, host: string): Store
  /** Finished calls matching the filter. */
  count(filter: Partial<Pick<StoreCall, 'host' | 'operation' | 'queue' | 'ok'>>): number
  /** Counts other I/O (a History on a database, say) as in flight until `promise` settles. */
  trackIo<T>(promise: Promise<T>): Promise<T>
  /** Waits (without advancing any clock) until no call is in flight across several event-loop turns. */
  quiesce(): Promise<void>
}

/** A new recorder with empty history; `now` stamps each call (default: always 0). */
export function makeStoreRecorder(now: () => number = () => 0): StoreRecorder {
  const calls: StoreCall[] = []
  let sequence = 0
  let inFlight = 0

  const record = <T>(host: string, operation: StoreOperation, queue: string, fencedRange: number | null, call: () => Promise<T>, requested: ReadonlyArray<SubqueueAckLevel> | null = null): Promise<T> => {
    const issued = ++sequence
    inFlight++
    const finish = (ok: boolean, value: unknown, error: unknown) => {
      inFlight--
      const metadata = ok && operation === 'acquire' ? (value as QueueMetadata) : ok && operation === 'checkpoint' ? (value as { metadata: QueueMetadata }).metadata : null
      const lastTaskId = ok && operation === 'append' ? (value as { lastTaskId: number }).lastTaskId : null
      const errorTag = ok ? null : String((error as { _tag?: unknown })?._tag ?? (error instanceof Error ? error.name : 'unknown'))
      calls.push({ host, operation, queue, rangeId: operation === 'acquire' ? (metadata?.rangeId ?? null) : fencedRange, issued, returned: ++sequence, ok, errorTag, metadata, lastTaskId, requested, atMs: now() })
    }
    return call().then(
      (value) => {
        finish(true, value, undefined)
        return value
      },
      (error: unknown) => {
        finish(false, undefined, error)
        throw error
      },
    )
  }
  const name = (key: QueueKey) => encodeQueueKey(key)

  return {
    calls,
    inFlight: () => inFlight,
    wrap(store, host) {
      return {
        kind: store.kind,
        acquire: (params) => record(host, 'acquire', name(params.key), null, () => store.acquire(params)),
        append: (params) => record(host, 'append', name(params.key), params.rangeId, () => store.append(params)),
        read: (params) => record(host, 'read', name(params.key), null, () => store.read(params)),
        checkpoint: (params) => record(host, 'checkpoint', name(params.key), params.rangeId, () => store.checkpoint(params), params.ackLevels),
        relocate: (params) => record(host, 'relocate', name(params.from), params.fromRangeId, () => store.relocate(params)),
        inspect: (key) => record(host, 'inspect', name(key), null, () => store.inspect(key)),
        list: (filter) => record(host, 'list', '', null, () => store.list(filter)),
        getUserData: (params) => record(host, 'getUserData', '', null, () => store.getUserData(params)),
        updateUserData: (params) => record(host, 'updateUserData', '', null, () => store.updateUserData(params)),
        close: () => store.close(),
      }
    },
    trackIo(promise) {
      inFlight++
      sequence++
      const done = () => {
        inFlight--
        sequence++
      }
      promise.then(done, done)
      return promise
    },
    count(filter) {
      return calls.filter((call) => Object.entries(filter).every(([field, value]) => call[field as keyof StoreCall] === value)).length
    },
    async quiesce() {
      for (let round = 0; round < 1_000; round++) {
        await until(() => inFlight === 0, 'store calls in flight to finish', 1_000_000)
        const before = sequence
        await settle()
        if (inFlight === 0 && sequence === before) return
      }
      throw new Error('store calls never went quiet')
    },
  }
}

/** A successful fenced write that returned after a higher range of its queue was acquired. */
export interface StaleWrite {
  readonly write: StoreCall
  readonly acquire: StoreCall
  /**
   * `definite`: the write was issued after that acquire returned, or what it wrote is missing
   * from the state the acquire returned (an append's ids above the acquire's last id, a
   * checkpoint's level above the acquire's ack level) — it committed after the acquire.
   * `reordered`: the write was issued before the acquire returned and the acquire's state
   * already contains it, so it committed first; only the two responses, on different
   * connections, arrived out of commit order. Not a violation.
   */
  readonly evidence: 'definite' | 'reordered'
}

// True when the acquire's returned state proves `write` had committed before it.
function committedBefore(write: StoreCall, acquire: StoreCall): boolean {
  if (write.issued > acquire.returned || acquire.metadata === null) return false
  const seen = acquire.metadata
  if (write.operation === 'append') return write.lastTaskId !== null && write.lastTaskId <= seen.lastTaskId
  if (write.operation === 'checkpoint') return (write.requested ?? []).every((level) => level.ackLevel <= (seen.ackLevels[level.subqueue] ?? 0))
  return false
}

/**
 * Fenced writes (append, checkpoint, relocate) that succeeded with a range lower than the
 * latest range acquired for their queue when they returned, with the evidence for each.
 * PostgreSQL serializes the queue row, so a correct store produces no `definite` one.
 */
export function staleWrites(calls: ReadonlyArray<StoreCall>): StaleWrite[] {
  const byCompletion = [...calls].sort((a, b) => a.returned - b.returned)
  const latest = new Map<string, StoreCall>()
  const stale: StaleWrite[] = []
  for (const call of byCompletion) {
    if (!call.ok) continue
    if (call.operation === 'acquire') {
      const previous = latest.get(call.queue)
      if (previous === undefined || (previous.rangeId ?? 0) < (call.rangeId ?? 0)) latest.set(call.queue, call)
      continue
    }
    if (call.operation !== 'append' && call.operation !== 'checkpoint' && call.operation !== 'relocate') continue
    const acquire = latest.get(call.queue)
    if (acquire === undefined || (call.rangeId ?? 0) >= (acquire.rangeId ?? 0)) continue
    stale.push({ write: call, acquire, evidence: committedBefore(call, acquire) ? 'reordered' : 'definite' })
  }
  return stale
}
