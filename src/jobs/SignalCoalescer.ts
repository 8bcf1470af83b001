/**
 * SignalCoalescer — at most one bus signal per key on its way at a time. A signal asked for while
 * one is in flight is sent once after it (with the latest due time asked), so a burst of asks
 * costs two signals, not one each: how the acks of a queue limited per key tell its owner that
 * slots freed, without a message per ack.
 *
 * Does not: delay the first signal, or keep anything for a key with no signal in flight.
 */

/** Sends signals, coalescing those of one key. */
export interface SignalCoalescer {
  /** Sends `signal(dueMs)` now, or once the one in flight for `key` settled. */
  send(key: string, signal: (dueMs: number) => Promise<void>, dueMs: number): void
}

/** A coalescer; `onError` hears a signal that failed (the next ask sends again). */
export function makeSignalCoalescer(onError: (error: unknown) => void): SignalCoalescer {
  // Per key in flight: the due time of the signal asked for meanwhile, or null.
  const inFlight = new Map<string, { again: number | null }>()
  const start = (key: string, signal: (dueMs: number) => Promise<void>, dueMs: number): void => {
    const entry: { again: number | null } = { again: null }
    inFlight.set(key, entry)
    signal(dueMs)
      .catch(onError)
      .finally(() => {
        inFlight.delete(key)
        if (entry.again !== null) start(key, signal, entry.again)
      })
  }
  return {
    send(key, signal, dueMs) {
      const entry = inFlight.get(key)
      if (entry === undefined) start(key, signal, dueMs)
      else entry.again = Math.max(entry.again ?? dueMs, dueMs)
    },
  }
}
