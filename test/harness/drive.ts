/**
 * drive — moves virtual time for in-process hosts whose stores do real I/O: between clock
 * steps it waits until every recorded store call has settled (recordingStore.ts), so a step
 * never overtakes a query still on the wire. No sleeps: only conditions and virtual time.
 */
import type { ManualClock } from '../../src/kernel/Clock.ts'
import type { StoreRecorder } from './recordingStore.ts'

/** Tracks promises so a driver can wait for all of them. */
export class Pending {
  #open = 0
  /** Promises not yet settled. */
  get open(): number {
    return this.#open
  }
  /** Tracks `promise`; returns it unchanged. */
  track<T>(promise: Promise<T>): Promise<T> {
    this.#open++
    const done = () => {
      this.#open--
    }
    promise.then(done, done)
    return promise
  }
}

/**
 * Advances `clock` by `stepMs` at a time, quiescing the store calls after each step, until
 * `condition()` holds; throws after `stepsMax` steps saying what never happened.
 */
export async function driveUntil(clock: ManualClock, recorder: StoreRecorder, condition: () => boolean, what: string, stepMs = 50, stepsMax = 10_000): Promise<number> {
  await recorder.quiesce()
  for (let step = 0; step < stepsMax; step++) {
    if (condition()) return step
    clock.advance(stepMs)
    await recorder.quiesce()
  }
  throw new Error(`after ${stepsMax} steps of ${stepMs} ms: ${what} never happened`)
}
