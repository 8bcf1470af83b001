/**
 * QueueWaiters — claims waiting per queue, first come first woken, each until its own time on
 * the injected clock or until something wakes it: the due-time driver keeps one set for claims
 * waiting for a delivery and one for claims waiting for their queue to have an owner.
 *
 * Invariants: a queue's entry goes with its last waiter, so queues nobody waits on keep none;
 * each waiter settles once (its timer is cancelled when it is woken); once `isClosed` holds, a
 * new wait settles at once as 'woken'.
 *
 * Does not: decide when to wake (DueDriver.ts and its passes, DuePass.ts, do).
 */
import type { Clock } from '../kernel/Clock.ts'

/** Why a wait ended. */
export type WakeReason = 'delivered' | 'woken' | 'timeout'

/** One set of waiters, by queue. */
export interface QueueWaiters {
  /** Waits until `untilMs` ('timeout') or until woken (with the waker's reason). */
  wait(queue: string, untilMs: number): Promise<WakeReason>
  /** Wakes the first `count` waiters of `queue` with `reason`. */
  wake(queue: string, reason: WakeReason, count?: number): void
  /** Wakes every waiter of every queue with `reason`. */
  wakeAll(reason: WakeReason): void
  /** Queues with a waiter now. */
  size(): number
}

/** A set of waiters on `clock`; `isClosed` ends new waits at once. */
export function makeQueueWaiters(clock: Clock, isClosed: () => boolean): QueueWaiters {
  const waiters = new Map<string, Array<(reason: WakeReason) => void>>()
  const wake = (queue: string, reason: WakeReason, count = Number.POSITIVE_INFINITY): void => {
    const list = waiters.get(queue)
    if (list === undefined) return
    for (const resolve of list.splice(0, count)) resolve(reason)
    if (list.length === 0) waiters.delete(queue)
  }
  return {
    wait(queue, untilMs) {
      if (isClosed()) return Promise.resolve('woken')
      return new Promise((resolve) => {
        let settled = false
        const done = (reason: WakeReason) => {
          if (settled) return
          settled = true
          cancel()
          const list = waiters.get(queue)
          const index = list?.indexOf(done) ?? -1
          if (index >= 0) list?.splice(index, 1)
          if (list?.length === 0) waiters.delete(queue)
          resolve(reason)
        }
        const list = waiters.get(queue) ?? []
        list.push(done)
        waiters.set(queue, list)
        const cancel = clock.setTimer(untilMs - clock.now(), () => done('timeout'))
      })
    },
    wake,
    wakeAll(reason) {
      for (const queue of [...waiters.keys()]) wake(queue, reason)
    },
    size: () => waiters.size,
  }
}
