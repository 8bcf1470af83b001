/**
 * HostClock — one simulated host's view of the world's virtual clock. It reads the shared
 * ManualClock, but keeps its own timers so a crash can cancel every timer the host armed, and
 * a dead host can never fire one again.
 *
 * It also knows which of its timers are overdue: after a clock jump (the process was paused)
 * timers fire only when the world next moves time, while I/O keeps completing meanwhile, so
 * a host may act on stale beliefs whose correcting timer has not run yet.
 *
 * It can also be paused (a stop-the-world pause of the process: a long GC, a VM stall): timers
 * that come due meanwhile fire only when the pause ends, in due order, as the process wakes.
 */
import type { CancelTimer, Clock, ManualClock } from '../../src/kernel/Clock.ts'

/** A host's clock: shared time, private timers. */
export class HostClock implements Clock {
  readonly #world: ManualClock
  // Each armed timer's cancel, with its due time.
  readonly #timers = new Map<CancelTimer, number>()
  #dead = false
  // While paused: until when, and the callbacks of timers that came due meanwhile, in due order.
  #pausedUntilMs: number | null = null
  readonly #deferred: Array<{ readonly dueMs: number; readonly fire: () => void }> = []

  constructor(world: ManualClock) {
    this.#world = world
  }

  /** Whether a pause holds this host's timers now. */
  isPaused(): boolean {
    return this.#pausedUntilMs !== null
  }

  /** Holds this host's timers for `ms`; those that come due meanwhile fire when it ends (or at `resume`). */
  pause(ms: number): void {
    if (this.#dead || this.#pausedUntilMs !== null) return
    const untilMs = this.#world.now() + ms
    this.#pausedUntilMs = untilMs
    this.#world.setTimer(ms, () => {
      if (this.#pausedUntilMs === untilMs) this.resume()
    })
  }

  /** Ends a pause now: the timers that came due during it fire, in due order. */
  resume(): void {
    if (this.#pausedUntilMs === null) return
    this.#pausedUntilMs = null
    for (const { fire } of this.#deferred.splice(0)) if (!this.#dead) fire()
  }

  now(): number {
    return this.#world.now()
  }

  setTimer(delayMs: number, callback: () => void): CancelTimer {
    if (this.#dead) return () => {}
    let cancelled = false
    const dueMs = this.#world.now() + Math.max(0, delayMs)
    const cancel = this.#world.setTimer(delayMs, () => {
      this.#timers.delete(cancel)
      if (this.#dead || cancelled) return
      if (this.#pausedUntilMs === null) callback()
      else this.#deferred.push({ dueMs, fire: () => cancelled || callback() })
    })
    this.#timers.set(cancel, dueMs)
    return () => {
      cancelled = true
      this.#timers.delete(cancel)
      cancel()
    }
  }

  /**
   * The due time of this host's earliest timer that is due but has not fired (the clock jumped
   * past it and the world has not moved time since), or null when none is overdue. Timers fire
   * in due order, so every timer of this host due from then until now has not run either.
   */
  overdueSinceMs(): number | null {
    const now = this.#world.now()
    let earliest: number | null = null
    for (const dueMs of this.#timers.values()) if (dueMs <= now && (earliest === null || dueMs < earliest)) earliest = dueMs
    // A paused host's timers that came due wait for the pause to end: overdue as well.
    for (const { dueMs } of this.#deferred) if (earliest === null || dueMs < earliest) earliest = dueMs
    return earliest
  }

  /** The host crashed: every timer it armed is gone, and it arms no more. */
  kill(): void {
    this.#dead = true
    for (const cancel of this.#timers.keys()) cancel()
    this.#timers.clear()
    this.#deferred.length = 0
  }
}
