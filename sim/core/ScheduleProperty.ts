/**
 * ScheduleProperty — the fast-check property the simulator's vitest files share: a schedule is
 * plain data (a world seed and a list of explicit decisions that Decisions.ts consumes before
 * the PRNG), so fast-check can generate it and shrink a failure to a shorter list of smaller
 * choices. The property runs the workload's world (`runWorld`: the Matching world, or the
 * end-to-end Jobs world) and holds when every checker is silent.
 *
 * Replay: the fast-check seed is printed before anything runs, and a failure's message names
 * the seed, the counterexample path, the violations and the exact command that replays it
 * (`SIM_SEED` and `SIM_PATH` are read here and handed to fast-check).
 *
 * Shrinking is bounded by count: after the first failing world the property runs at most
 * `shrinkRunsMax` more worlds (each shrink candidate is a whole world, seconds on PostgreSQL), and
 * the candidates past that budget are not run — counted as holding, so fast-check reports the
 * smallest failure found so far. The first failure is also printed the moment it is found, so a
 * run cut short by its test's timeout still names the world that broke.
 *
 * Does not: choose stores or databases (the test files do), or retry anything.
 */
import fc from 'fast-check'

/** One generated schedule. */
export interface Schedule {
  readonly seed: number
  readonly script: ReadonlyArray<number>
}

/** How a test file runs the property. */
export interface SchedulePropertyRun {
  /** Where the worlds run (`memory`, `postgres`, …), for the printed lines. */
  readonly store: string
  /** The test file, for the replay command (`sim/matching/properties.memory.test.ts`). */
  readonly file: string
  readonly numRuns: number
  /** Longest decision list generated; later decisions come from the world seed's PRNG. */
  readonly scriptLengthMax: number
  /** Most worlds run while shrinking a failure (default `shrinkRunsDefault`). */
  readonly shrinkRunsMax?: number
  /** Called with each finished run (counts for the file's summary line). */
  readonly onRun?: (schedule: Schedule, events: number) => void
  /** Runs one schedule's world (the workload's: matching/Simulation.ts `matchingWorld`, or a jobs world). */
  readonly runWorld: (schedule: Schedule) => Promise<WorldVerdict>
}

/** What the property needs to know of a finished world. */
export interface WorldVerdict {
  readonly ok: boolean
  readonly violations: ReadonlyArray<string>
  readonly events: number
}

/** What a property run reports. */
export interface SchedulePropertyReport {
  readonly fcSeed: number
  readonly runs: number
  /** Null when every run held; otherwise the replayable failure message. */
  readonly failure: string | null
}

/** Worlds a failure's shrinking runs at most, unless the file says otherwise. */
export const shrinkRunsDefault = 40

/** The schedule generator: plain data that shrinks. */
export function scheduleArbitrary(scriptLengthMax: number): fc.Arbitrary<Schedule> {
  return fc.record({ seed: fc.integer(), script: fc.array(fc.nat({ max: 10_000 }), { maxLength: scriptLengthMax }) })
}

/** The fast-check seed: SIM_SEED if set, else a fresh one (printed by the caller before running). */
export function fastCheckSeed(): number {
  const fromEnv = process.env.SIM_SEED
  if (fromEnv !== undefined && fromEnv !== '') return Number(fromEnv)
  // fast-check's own default, made explicit so it can be printed first.
  return Date.now() ^ (Math.random() * 0x1_0000_0000)
}

/** Runs the property and returns a report (the caller asserts `failure === null`). */
export async function checkSchedules(run: SchedulePropertyRun): Promise<SchedulePropertyReport> {
  const fcSeed = fastCheckSeed()
  const path = process.env.SIM_PATH
  console.log(`fast-check seed ${fcSeed}${path === undefined || path === '' ? '' : ` path ${path}`} (${run.store}, ${run.numRuns} runs)`)
  const shrinkRunsMax = run.shrinkRunsMax ?? shrinkRunsDefault
  let runs = 0
  let failed = false
  let shrinkRuns = 0
  const property = fc.asyncProperty(scheduleArbitrary(run.scriptLengthMax), async (schedule) => {
    if (failed && shrinkRuns >= shrinkRunsMax) return // the shrink budget is spent: not run
    if (failed) shrinkRuns++
    const result = await run.runWorld(schedule)
    runs++
    run.onRun?.(schedule, result.events)
    if (result.ok) return
    const broke = `world seed ${schedule.seed} (script of ${schedule.script.length} decisions) broke:\n  ${result.violations.slice(0, 10).join('\n  ')}`
    if (!failed) console.log(`${broke}\nschedule ${JSON.stringify(schedule)}\nshrinking it (at most ${shrinkRunsMax} more worlds)`)
    failed = true
    throw new Error(broke)
  })
  const details = await fc.check(property, { seed: fcSeed, numRuns: run.numRuns, ...(path === undefined || path === '' ? {} : { path }) })
  if (!details.failed) return { fcSeed, runs, failure: null }
  const counterexample = details.counterexample?.[0]
  const failure = [
    `simulator property failed on ${run.store} after ${details.numRuns} runs (${details.numShrinks} shrinks${shrinkRuns >= shrinkRunsMax ? ', shrink budget spent' : ''})`,
    `fast-check seed ${details.seed} path ${details.counterexamplePath ?? '(none)'}`,
    `schedule ${JSON.stringify(counterexample)}`,
    details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance),
    `replay: SIM_SEED=${details.seed} SIM_PATH=${details.counterexamplePath ?? ''} npx vitest run ${run.file}`,
  ].join('\n')
  return { fcSeed, runs, failure }
}
