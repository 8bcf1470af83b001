/**
 * HostClock — one simulated host's view of the world's virtual clock. It reads the shared
 * ManualClock, but keeps its own timers so a crash can cancel every timer the host armed, and
 * a dead host can never fire one again.
 *
 * It also knows which of its timers are overdue: after a clock jump (the process was paused)
 * timers fire only when the world next moves time, while I/O keeps completing meanwhile, so
 * a host may act on stale beliefs whose correcting timer has not run yet.
 */
import type { CancelTimer, Clock, ManualClock } from '../../src/kernel/Clock.ts'

/** A host's clock: shared time, private timers. */
export class HostClock implements Clock {
  readonly #world: ManualClock
  // Each armed timer's cancel, with its due time.
  readonly #timers = new Map<CancelTimer, number>()
  #dead = false

  constructor(world: ManualClock) {
    this.#world = world
  }

  now(): number {
    return this.#world.now()
  }

  setTimer(delayMs: number, callback: () => void): CancelTimer {
    if (this.#dead) return () => {}
    const cancel = this.#world.setTimer(delayMs, () => {
      this.#timers.delete(cancel)
      if (!this.#dead) callback()
    })
    this.#timers.set(cancel, this.#world.now() + Math.max(0, delayMs))
    return () => {
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
    return earliest
  }

  /** The host crashed: every timer it armed is gone, and it arms no more. */
  kill(): void {
    this.#dead = true
    for (const cancel of this.#timers.keys()) cancel()
    this.#timers.clear()
  }
}
