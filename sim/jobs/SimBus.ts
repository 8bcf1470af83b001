/**
 * SimBus — the Bus one incarnation of a simulated engine sees (the bus twin of SimStore.ts).
 * Every due signal and every host message it sends is parked in the IoGate as one step of the
 * sender (`bus.due q`, `bus.send →host-2 poll q`), so the seed decides when each is handed to
 * the transport and so in which order messages arrive; the world's fault menu may drop a parked
 * message (the sender still hears success: NOTIFY gives no receipt) or hand it over late, as a
 * further step. Handing over is the shared in-memory bus underneath, which delivers on a later
 * microtask.
 *
 * A crashed incarnation hears nothing more: its subscriptions are cut when it dies, and its
 * sends still parked die with its other I/O (IoGate.dropHost).
 *
 * Does not: decide drops or delays (the world does), or close the shared bus (the world does).
 */
import type { JsonValue } from '../../src/domain/Json.ts'
import type { Bus, BusHandlers } from '../../src/persistence/bus/Bus.ts'
import type { IoGate } from '../core/IoGate.ts'

/** A gated bus for one incarnation, with the switch its crash throws. */
export interface SimBus extends Bus {
  /** The incarnation died: nothing is delivered to it any more. */
  kill(): void
  /** Whether the incarnation still hears messages (alive, with a subscription not yet stopped). */
  listening(): boolean
}

/** The label prefix of every bus step, so the world can tell bus steps from store calls. */
export const busLabelPrefix = 'bus.'

// What a message is, for traces: its kind and the queue or job it names (poll ids are noise).
function describe(message: JsonValue): string {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return 'message'
  const record = message as { readonly [key: string]: JsonValue }
  const kind = typeof record.kind === 'string' ? record.kind : 'message'
  if (kind === 'poll') return `poll ${String(record.queue)} wait ${String(record.waitMs)}`
  if (kind === 'claimed') return `claimed ${String(record.jobId)}`
  if (kind === 'empty') return record.refused === true ? 'refused' : 'empty'
  return kind
}

/** Wraps the world's shared bus for `hostId`'s current incarnation. */
export function makeSimBus(hostId: string, inner: Bus, gate: IoGate): SimBus {
  let dead = false
  const stops = new Set<() => Promise<void>>()
  const guard = (handler: () => void): void => {
    if (!dead) handler()
  }
  return {
    kind: inner.kind,
    signalDue: (queue, dueMs) => gate.park(hostId, `${busLabelPrefix}due ${queue}`, false, () => inner.signalDue(queue, dueMs)),
    send: (to, message) => gate.park(hostId, `${busLabelPrefix}send →${to} ${describe(message)}`, false, () => inner.send(to, message)),
    async subscribe(subscriber, handlers) {
      const guarded: BusHandlers = {
        onDue: (queue, dueMs) => guard(() => handlers.onDue(queue, dueMs)),
        onMessage: (message) => guard(() => handlers.onMessage(message)),
        onGap: () => guard(() => handlers.onGap?.()),
      }
      const stop = await inner.subscribe(subscriber, guarded)
      const own = async () => {
        stops.delete(own)
        await stop()
      }
      stops.add(own)
      return own
    },
    async close() {
      for (const stop of stops) await stop()
    },
    listening: () => !dead && stops.size > 0,
    kill() {
      dead = true
      for (const stop of stops) void stop()
    },
  }
}
