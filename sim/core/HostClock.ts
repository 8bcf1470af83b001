/**
 * HostClock — one simulated host's view of the world's virtual clock. It reads the shared
 * ManualClock, but keeps its own timers so a crash can cancel every timer the host armed, and
 * a dead host can never fire one again.
 */
import type { CancelTimer, Clock, ManualClock } from '../../src/kernel/Clock.ts'

/** A host's clock: shared time, private timers. */
export class HostClock implements Clock {
  readonly #world: ManualClock
  readonly #cancels = new Set<CancelTimer>()
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
      this.#cancels.delete(cancel)
      if (!this.#dead) callback()
    })
    this.#cancels.add(cancel)
    return () => {
      this.#cancels.delete(cancel)
      cancel()
    }
  }

  /** The host crashed: every timer it armed is gone, and it arms no more. */
  kill(): void {
    this.#dead = true
    for (const cancel of this.#cancels) cancel()
    this.#cancels.clear()
  }
}
