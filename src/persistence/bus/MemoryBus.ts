/**
 * MemoryBus — the Bus in process memory, for several engines in one process (tests, the
 * simulator). Messages are delivered on a later microtask, never inside the sender's call,
 * in send order.
 *
 * A `tap` sees every message before delivery and may drop it (the simulator's fault menu and
 * its planted bugs use it); nothing else is ever lost.
 */
import type { JsonValue } from '../../domain/Json.ts'
import type { Bus, BusHandlers } from './Bus.ts'

/** Decides, per message, whether it is delivered (the simulator drops some). */
export type BusTap = (message: { readonly kind: 'due'; readonly queue: string } | { readonly kind: 'host'; readonly to: string; readonly message: JsonValue }) => 'deliver' | 'drop'

/** A bus shared by every engine that holds it. */
export interface MemoryBus extends Bus {
  readonly kind: 'memory'
  /** Installs the tap (null removes it). */
  setTap(tap: BusTap | null): void
}

/** Makes an empty in-memory bus. */
export function makeMemoryBus(): MemoryBus {
  const subscribers = new Set<{ readonly hostId: string; readonly handlers: BusHandlers }>()
  let tap: BusTap | null = null
  let closed = false
  const later = (fn: () => void): void => {
    void Promise.resolve().then(fn)
  }
  return {
    kind: 'memory',
    setTap(next) {
      tap = next
    },
    async signalDue(queue, dueMs) {
      if (closed || (tap !== null && tap({ kind: 'due', queue }) === 'drop')) return
      for (const subscriber of Array.from(subscribers)) later(() => subscriber.handlers.onDue(queue, dueMs))
    },
    async send(hostId, message) {
      if (closed || (tap !== null && tap({ kind: 'host', to: hostId, message }) === 'drop')) return
      // A structural copy, as a real transport would deliver.
      const copy = JSON.parse(JSON.stringify(message)) as JsonValue
      for (const subscriber of Array.from(subscribers)) if (subscriber.hostId === hostId) later(() => subscriber.handlers.onMessage(copy))
    },
    async subscribe(hostId, handlers) {
      const subscriber = { hostId, handlers }
      subscribers.add(subscriber)
      return async () => {
        subscribers.delete(subscriber)
      }
    },
    async close() {
      closed = true
      subscribers.clear()
    },
  }
}
