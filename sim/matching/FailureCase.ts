/**
 * FailureCase — the file a failing seed leaves behind (`sim-failure-<seed>.json`): everything
 * needed to run the same case again (seed, store, overrides, decision script) plus what went
 * wrong (violations, the trace tail) for the person reading it. `matchbox sim replay` and
 * `SIM_REPLAY=… vitest run sim/matching/replay.test.ts` both read it through `parseFailureCase`.
 *
 * Invariants: a case never holds a connection string (it may hold a password); a PostgreSQL
 * case is replayed against whatever database the replaying person names.
 *
 * Does not: run anything (Simulation.ts does) or decide where the file goes (the caller does).
 */
import type { SeedResult, SeedRun, SimStoreKind } from './Simulation.ts'
import { describeOptions, type SwarmOverrides } from './Swarm.ts'

/** The format tag every case file carries, so a stray JSON file is refused by name. */
export const failureCaseFormat = 'matchbox-sim-failure/1'

/** One failing case, as written to disk. */
export interface FailureCase {
  readonly format: typeof failureCaseFormat
  readonly seed: number
  readonly store: SimStoreKind
  readonly overrides: SwarmOverrides
  /** Explicit decisions consumed before the PRNG (fast-check schedules); absent for plain seeds. */
  readonly script?: ReadonlyArray<number>
  /** The options the seed drew, as `describeOptions` prints them. */
  readonly options: ReadonlyArray<string>
  readonly violations: ReadonlyArray<string>
  readonly traceHash: string
  /** The last trace lines before the run ended. */
  readonly traceTail: ReadonlyArray<string>
}

const storeKinds: ReadonlyArray<SimStoreKind> = ['memory', 'embedded', 'postgres']

/** The file name of a seed's failure case. */
export function failureFileName(seed: number): string {
  return `sim-failure-${seed}.json`
}

/** The case a failed run leaves. */
export function failureCaseOf(run: SeedRun, seeded: SeedResult): FailureCase {
  return {
    format: failureCaseFormat,
    seed: run.seed,
    store: run.store,
    overrides: run.overrides ?? {},
    ...(run.script === undefined || run.script.length === 0 ? {} : { script: run.script }),
    options: describeOptions(seeded.options),
    violations: seeded.result.violations,
    traceHash: seeded.result.traceHash,
    traceTail: seeded.result.trace.slice(-200),
  }
}

function fail(source: string, what: string): never {
  throw new Error(`${source} is not a simulator failure case: ${what}`)
}

const isSafeInteger = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value)

/** Reads a case from JSON text; throws an Error naming `source` and the first problem. */
export function parseFailureCase(text: string, source: string): FailureCase {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    return fail(source, `not JSON (${error instanceof Error ? error.message : String(error)})`)
  }
  if (typeof value !== 'object' || value === null) return fail(source, 'not a JSON object')
  const raw = value as Record<string, unknown>
  if (raw.format !== failureCaseFormat) fail(source, `format is ${JSON.stringify(raw.format)}, expected "${failureCaseFormat}"`)
  if (!isSafeInteger(raw.seed)) fail(source, 'seed must be an integer')
  if (!storeKinds.includes(raw.store as SimStoreKind)) fail(source, `store must be one of ${storeKinds.join(', ')}`)
  const overrides = (raw.overrides ?? {}) as Record<string, unknown>
  if (typeof overrides !== 'object' || overrides === null) fail(source, 'overrides must be an object')
  for (const key of ['hosts', 'steps'] as const) if (overrides[key] !== undefined && !isSafeInteger(overrides[key])) fail(source, `overrides.${key} must be an integer`)
  if (overrides.faultsOff !== undefined && typeof overrides.faultsOff !== 'boolean') fail(source, 'overrides.faultsOff must be a boolean')
  if (raw.script !== undefined && !(Array.isArray(raw.script) && raw.script.every(isSafeInteger))) fail(source, 'script must be a list of integers')
  const strings = (field: string): string[] => {
    const list = raw[field] ?? []
    if (!Array.isArray(list) || !list.every((item) => typeof item === 'string')) fail(source, `${field} must be a list of strings`)
    return list as string[]
  }
  return {
    format: failureCaseFormat,
    seed: raw.seed as number,
    store: raw.store as SimStoreKind,
    overrides: overrides as SwarmOverrides,
    ...(raw.script === undefined ? {} : { script: raw.script as number[] }),
    options: strings('options'),
    violations: strings('violations'),
    traceHash: typeof raw.traceHash === 'string' ? raw.traceHash : '',
    traceTail: strings('traceTail'),
  }
}

/** The run that replays a case; `databaseUrl` is needed only for a PostgreSQL case. */
export function seedRunOf(failure: FailureCase, databaseUrl?: string): SeedRun {
  return {
    seed: failure.seed,
    store: failure.store,
    overrides: failure.overrides,
    ...(failure.script === undefined ? {} : { script: failure.script }),
    ...(databaseUrl === undefined ? {} : { databaseUrl }),
  }
}

/** The commands that replay a case file, for a person to paste. */
export function replayCommands(path: string): string[] {
  return [`npx matchbox sim replay ${path}`, `SIM_REPLAY=${path} npx vitest run sim/matching/replay.test.ts`]
}
