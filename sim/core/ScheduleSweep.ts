/**
 * ScheduleSweep — many generated worlds run to the end, every failure kept: the deep runs' wide
 * look, beside the property of ScheduleProperty.ts (which stops at its first failure and shrinks
 * it). One master seed, printed before anything runs, draws every world's schedule (a world seed
 * and a list of explicit decisions) with the property's own generator (`scheduleArbitrary`), so a
 * sweep's worlds are the worlds the property draws, and the same master seed draws them again.
 * Each failure is reported with its world's seed and script, and the command that replays it alone.
 *
 * Does not: shrink (a failure's schedule is reported as drawn), run worlds side by side, or
 * choose stores (the test files do).
 */
import fc from 'fast-check'
import { fastCheckSeed, type Schedule, scheduleArbitrary, type WorldVerdict } from './ScheduleProperty.ts'

/** How a test file runs a sweep. */
export interface ScheduleSweepRun {
  /** The worlds, in order (`sweepSchedules`, or one world a failure named for its replay). */
  readonly schedules: ReadonlyArray<Schedule>
  /** Runs one schedule's world. */
  readonly runWorld: (schedule: Schedule) => Promise<WorldVerdict>
  /** The command that replays one world alone. */
  readonly replay: (schedule: Schedule) => string
  /** Hears each finished world, in order (progress output). */
  readonly onWorld?: (index: number, schedule: Schedule, verdict: WorldVerdict) => void
}

/** One world of a sweep that failed. */
export interface SweepFailure {
  readonly index: number
  readonly schedule: Schedule
  readonly violations: ReadonlyArray<string>
  readonly replay: string
}

/**
 * The worlds a master seed draws, in order: the same list for the same seed and count (fast-check's
 * sampling, on the property's generator; `scriptLengthMax` is its longest decision list).
 */
export function sweepSchedules(masterSeed: number, worlds: number, scriptLengthMax: number): Schedule[] {
  return worlds === 0 ? [] : fc.sample(scheduleArbitrary(scriptLengthMax), { seed: masterSeed, numRuns: worlds })
}

/** The master seed: SIM_SWEEP_SEED if set, else a fresh one (the caller prints it before running). */
export function sweepMasterSeed(): number {
  const fromEnv = process.env.SIM_SWEEP_SEED
  return fromEnv !== undefined && fromEnv !== '' ? Number(fromEnv) : fastCheckSeed()
}

/** The one world SIM_SWEEP_WORLD (a seed) and SIM_SWEEP_SCRIPT (decisions, comma-separated) name, for a failure's replay, or null. */
export function sweepNamedWorld(): Schedule | null {
  const seed = process.env.SIM_SWEEP_WORLD
  if (seed === undefined || seed === '') return null
  const script = process.env.SIM_SWEEP_SCRIPT ?? ''
  return { seed: Number(seed), script: script === '' ? [] : script.split(',').map(Number) }
}

/** The command that replays one world of the sweep in test file `file` alone (`sweepNamedWorld` reads it back). */
export const sweepReplay =
  (file: string) =>
  (schedule: Schedule): string =>
    `SIM_SWEEP_WORLD=${schedule.seed} SIM_SWEEP_SCRIPT=${schedule.script.join(',')} MATCHBOX_DEEP=1 npx vitest run ${file}`

/** Runs every world of the sweep, one after another; returns the failures, in order. */
export async function runScheduleSweep(run: ScheduleSweepRun): Promise<SweepFailure[]> {
  const failures: SweepFailure[] = []
  for (const [index, schedule] of run.schedules.entries()) {
    const verdict = await run.runWorld(schedule)
    run.onWorld?.(index, schedule, verdict)
    if (!verdict.ok) failures.push({ index, schedule, violations: verdict.violations, replay: run.replay(schedule) })
  }
  return failures
}

/** A failure as the lines a reader replays it from. */
export function describeSweepFailure(failure: SweepFailure): string {
  const { seed, script } = failure.schedule
  return [`world ${failure.index}: seed ${seed} script ${JSON.stringify(script)}`, ...failure.violations.slice(0, 5).map((violation) => `  ${violation}`), `  replay: ${failure.replay}`].join('\n')
}
