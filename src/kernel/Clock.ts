/**
 * Clock — the only source of time in Matchbox.
 *
 * Owns: "now" in epoch milliseconds and one-shot timers. Two implementations: `RealClock`
 * (wall time and Node timers, for production) and `ManualClock` (virtual time that moves only
 * when told to, for tests and the simulator).
 *
 * Invariants: `ManualClock.now()` never goes backwards unless `set` is called explicitly (the
 * simulator's clock-jump fault); timers fire in due-time order, ties in scheduling order, so a
 * run is reproducible.
 *
 * Does not: schedule anything durable. A delay that must survive a restart is a due-time row in
 * the store (DESIGN.md §5); timers here are in-memory conveniences.
 */
import { assert } from './assert.ts'

/** Cancels a timer; calling it twice, or after the timer fired, does nothing. */
export type CancelTimer = () => void

/** A source of time and one-shot timers. */
export interface Clock {
  /** Current time, epoch milliseconds. */
  now(): number
  /** Runs `callback` once, `delayMs` from now (clamped to ≥ 0). */
  setTimer(delayMs: number, callback: () => void): CancelTimer
}

/** Wall-clock time and Node timers. */
export class RealClock implements Clock {
  now(): number {
    return Date.now()
  }

  setTimer(delayMs: number, callback: () => void): CancelTimer {
    const handle = setTimeout(callback, Math.max(0, delayMs))
    return () => clearTimeout(handle)
  }
}

interface PendingTimer {
  readonly dueMs: number
  readonly order: number
  readonly callback: () => void
  /** Cancelled, or fired: it stays in the heap until it reaches the top, and is skipped there. */
  done: boolean
}

// Heap order: earlier due time first, then earlier scheduling.
const before = (a: PendingTimer, b: PendingTimer): boolean => a.dueMs < b.dueMs || (a.dueMs === b.dueMs && a.order < b.order)

/**
 * Virtual time. `advance(ms)` moves the clock forward and fires every timer that came due, in
 * due-time order, each with `now()` equal to its due time.
 *
 * Timers wait in a binary heap ordered by (due time, scheduling order); a cancelled timer is
 * only marked, and dropped when it reaches the top or when marked ones outnumber the live ones
 * (queues re-arm their timers on most steps, so cancels are frequent and must stay cheap).
 */
export class ManualClock implements Clock {
  #nowMs: number
  #order = 0
  #heap: PendingTimer[] = []
  #live = 0

  /** @param startMs initial epoch milliseconds (default 0). */
  constructor(startMs = 0) {
    assert(Number.isFinite(startMs), 'ManualClock start must be finite')
    this.#nowMs = startMs
  }

  now(): number {
    return this.#nowMs
  }

  setTimer(delayMs: number, callback: () => void): CancelTimer {
    const timer: PendingTimer = {
      dueMs: this.#nowMs + Math.max(0, delayMs),
      order: this.#order++,
      callback,
      done: false,
    }
    this.#push(timer)
    this.#live++
    return () => {
      if (timer.done) return
      timer.done = true
      this.#live--
      if (this.#heap.length > 2 * this.#live + 64) this.#compact()
    }
  }

  /** Moves time forward by `ms` (≥ 0), firing due timers in order. */
  advance(ms: number): void {
    assert(ms >= 0 && Number.isFinite(ms), `ManualClock.advance needs a finite ms ≥ 0, got ${ms}`)
    this.advanceTo(this.#nowMs + ms)
  }

  /** Moves time forward to `targetMs`, firing due timers in order. */
  advanceTo(targetMs: number): void {
    assert(targetMs >= this.#nowMs, 'ManualClock.advanceTo cannot move backwards; use set')
    let fired = 0
    for (;;) {
      // A timer that re-arms itself in the past would spin here forever: that is a bug, say so.
      assert(++fired < 10_000_000, `ManualClock: timer storm at ${this.#nowMs}`)
      const next = this.nextDueMs()
      if (next === undefined || next > targetMs) break
      // Timers left overdue by a forward `set` fire at the current time, never in the past.
      this.#nowMs = Math.max(this.#nowMs, next)
      this.fireDue()
    }
    this.#nowMs = targetMs
  }

  /** Sets the time directly, forwards or backwards, without firing timers (a clock jump). */
  set(ms: number): void {
    assert(Number.isFinite(ms), 'ManualClock.set needs a finite time')
    this.#nowMs = ms
  }

  /** Due time of the earliest pending timer, if any. */
  nextDueMs(): number | undefined {
    return this.#top()?.dueMs
  }

  /** Number of timers not yet fired or cancelled. */
  pendingTimerCount(): number {
    return this.#live
  }

  /** Fires every timer due at or before now, in order; returns how many fired. */
  fireDue(): number {
    let fired = 0
    for (;;) {
      const due = this.#top()
      if (due === undefined || due.dueMs > this.#nowMs) return fired
      this.#pop()
      due.done = true
      this.#live--
      due.callback()
      fired++
    }
  }

  // The earliest live timer, after dropping the cancelled ones above it.
  #top(): PendingTimer | undefined {
    while (this.#heap.length > 0 && (this.#heap[0] as PendingTimer).done) this.#pop()
    return this.#heap[0]
  }

  #push(timer: PendingTimer): void {
    const heap = this.#heap
    let index = heap.push(timer) - 1
    while (index > 0) {
      const parent = (index - 1) >> 1
      if (!before(timer, heap[parent] as PendingTimer)) break
      heap[index] = heap[parent] as PendingTimer
      index = parent
    }
    heap[index] = timer
  }

  #pop(): void {
    const heap = this.#heap
    const last = heap.pop() as PendingTimer
    if (heap.length === 0) return
    let index = 0
    for (;;) {
      const left = 2 * index + 1
      if (left >= heap.length) break
      const right = left + 1
      const child = right < heap.length && before(heap[right] as PendingTimer, heap[left] as PendingTimer) ? right : left
      if (!before(heap[child] as PendingTimer, last)) break
      heap[index] = heap[child] as PendingTimer
      index = child
    }
    heap[index] = last
  }

  // Rebuilds the heap from the live timers alone.
  #compact(): void {
    const live = this.#heap.filter((timer) => !timer.done)
    this.#heap = []
    for (const timer of live) this.#push(timer)
  }
}
