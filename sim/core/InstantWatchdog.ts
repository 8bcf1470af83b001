/**
 * InstantWatchdog — ends a simulated world caught in a livelock. A world's clock moves only
 * between steps, so machine steps that let no virtual time pass and never end starve the event
 * loop: no timer fires, no I/O answers, and no test timeout either, so the run would hang without
 * a word. The watchdog counts steps per virtual instant; the step that crosses `stepsMax` is
 * reported once (`onLivelock`, which records the violation) and throws, naming the world: the
 * throw leaves the runtime's scheduler, which nothing else can stop, as an uncaught error that
 * fails the run instead of hanging it.
 *
 * Does not: judge a burst under the bound (a busy instant is not a livelock).
 */

/** Steps at one virtual instant past which a world is in a livelock: far above any honest burst. */
export const stepsPerInstantMax = 100_000

/** A watchdog over `now`; call `step` on every machine step with a description of it (built only when the bound is crossed). */
export function makeInstantWatchdog(now: () => number, world: string, onLivelock: (detail: string) => void, stepsMax = stepsPerInstantMax): { step(describe: () => string): void } {
  let instant = Number.NaN
  let steps = 0
  return {
    step(describe) {
      const nowMs = now()
      if (nowMs !== instant) {
        instant = nowMs
        steps = 0
      }
      if (++steps <= stepsMax) return
      const detail = `livelock in ${world}: more than ${stepsMax} machine steps at t=${nowMs} (the last: ${describe()})`
      if (steps === stepsMax + 1) onLivelock(detail)
      throw new Error(detail)
    },
  }
}
