/**
 * OwnershipLossChecker — judges what queue instances attempted, not only what committed. The
 * fence refuses a stale owner's writes, so the committed log never shows them; the attempt log
 * (Boundary.ts `attempt` / `answered`, tagged with the instance that made each call) does.
 *
 * - no write after the loss: once the store answered an instance's append, checkpoint or
 *   relocation with `OwnershipLost`, that instance attempts no further append, checkpoint or
 *   relocation (DESIGN.md §5: it goes straight to unloaded with no further write);
 * - restart back-off: a host process whose instance first heard `OwnershipLost` for a queue's
 *   append or checkpoint attempts no new acquire of that queue within `acquireRetryInitialMs`
 *   (the first and shortest of PartitionActor's doubling restart delays, kept by the host across
 *   partition instances), so hosts that disagree take a queue from each other at a bounded rate.
 *
 * What counts: only losses the instance heard from its own writes while it was still loaded (an
 * answer to a write left in flight by an instance that already drained cleanly starts no restart
 * delay: the runtime promises the delay after a death by lost ownership), so the back-off is
 * judged only where the calls are tied to actor steps (the Matching world; the jobs world's
 * hosts report none, and there only the first rule holds). A loss learned by the periodic
 * ownership check (a read) is not tagged with an instance and is not followed; an
 * acquire that retries the same instance's failed acquire is the loading state's own retry, not
 * a restart; a crashed process forgets (its successor is a new process with no restart book).
 * Acquires of versioned queues while the world has a `retireVersion` in flight on that host are
 * the retirement taking the version's fence, which waits for no restart delay; they are exempt.
 *
 * The delay holds across overlapping partition instances of one host (one draining, one fresh,
 * each with an instance of the same queue): a sibling's clean unload does not clear it
 * (sim/matching/restartBackoff.test.ts keeps the seeds where that once went wrong).
 *
 * Does not: see calls of a host above its store (the runtime's beliefs), nor judge committed
 * writes (Checkers.ts does).
 */
import { decodeQueueKey } from '../../src/domain/QueueKey.ts'
import { acquireRetryInitialMs } from '../../src/kernel/Limits.ts'
import type { BoundaryRecord } from './Boundary.ts'

/** The attempt checkers; violations go to `fail`. */
export class OwnershipLossChecker {
  readonly #fail: (message: string) => void
  // Instance → when it heard OwnershipLost, and for which call.
  readonly #lostInstances = new Map<string, { readonly atMs: number; readonly call: string }>()
  // `host.incarnation queue` → when that process last heard OwnershipLost for the queue's writes.
  readonly #lostQueues = new Map<string, number>()
  readonly #flagged = new Set<string>()
  readonly #retiring = new Map<string, number>()

  constructor(fail: (message: string) => void) {
    this.#fail = fail
  }

  /** A `retireVersion` call started (`+1`) or ended (`-1`) on a host process. */
  retiring(hostId: string, incarnation: number, delta: 1 | -1): void {
    const key = `${hostId}.${incarnation}`
    this.#retiring.set(key, (this.#retiring.get(key) ?? 0) + delta)
  }

  /** Follows one boundary record, at world time `nowMs`. */
  observe(record: BoundaryRecord, nowMs: number): void {
    if (record.op === 'answered') {
      if (record.answer !== 'OwnershipLost' || record.lostQueue !== record.queue || record.call === 'acquire' || record.afterUnload === true) return
      // The first loss unloads the instance and starts its restart delay; answers to writes it
      // had in flight by then change neither.
      if (this.#lostInstances.has(record.caller.instance)) return
      this.#lostInstances.set(record.caller.instance, { atMs: nowMs, call: record.call })
      // The restart delay is judged only where the instance is known to have died of this loss.
      if (record.call !== 'relocate' && record.afterUnload === false) this.#lostQueues.set(`${record.caller.hostId}.${record.caller.incarnation} ${record.queue}`, nowMs)
      return
    }
    if (record.op !== 'attempt') return
    const { caller } = record
    if (record.call !== 'acquire') {
      const lost = this.#lostInstances.get(caller.instance)
      if (lost === undefined || this.#flagged.has(caller.instance)) return
      this.#flagged.add(caller.instance)
      this.#fail(`${caller.instance}: instance attempted ${record.call} under range ${record.rangeId} ${nowMs - lost.atMs} ms after its ${lost.call} was answered OwnershipLost`)
      return
    }
    const processQueue = `${caller.hostId}.${caller.incarnation} ${record.queue}`
    const lostAtMs = this.#lostQueues.get(processQueue)
    if (lostAtMs === undefined || record.retry) return
    this.#lostQueues.delete(processQueue)
    const waitedMs = nowMs - lostAtMs
    if (waitedMs >= acquireRetryInitialMs) return
    if (decodeQueueKey(record.queue).version !== null && (this.#retiring.get(`${caller.hostId}.${caller.incarnation}`) ?? 0) > 0) return
    this.#fail(`${caller.hostId}.${caller.incarnation} ${record.queue}: re-acquired ${waitedMs} ms after it heard OwnershipLost, skipping the restart back-off (at least ${acquireRetryInitialMs} ms)`)
  }
}
