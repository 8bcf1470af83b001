/**
 * SeedRun — what every workload's run of one seed shares: the seed and the store it runs on,
 * the host ids its world has, the schema a run on a shared database keeps its rows in, and the
 * shape of a run (open the stores, run the world, close the stores whatever happened).
 *
 * A workload (sim/matching/Simulation.ts, sim/jobs/JobsSimulation.ts) says which stores it
 * opens on each store kind and which world it builds over them.
 *
 * Does not: open a store itself or draw options; the schema name's random part is outside the
 * run (it names where rows go, never what a run decides), so it does not touch the trace.
 */
import type { SimStoreKind } from './Determinism.ts'

/** What every workload's run of one seed names. */
export interface SeedRunBase<Overrides> {
  readonly seed: number
  readonly store: SimStoreKind
  /** PostgreSQL connection string (required for `postgres`): a database the run may fill. */
  readonly databaseUrl?: string
  readonly overrides?: Overrides
  /** Explicit decisions consumed before the PRNG (fast-check schedules). */
  readonly script?: ReadonlyArray<number>
  readonly keepTrace?: boolean
}

/** What every world takes from its run: the decision script, and whether it keeps its whole trace. */
export function worldBasicsOf(run: SeedRunBase<unknown>): { readonly script?: ReadonlyArray<number>; readonly keepTrace?: boolean } {
  return { ...(run.script === undefined ? {} : { script: run.script }), ...(run.keepTrace === undefined ? {} : { keepTrace: run.keepTrace }) }
}

/** Stores a run opened; `close` releases them. */
export interface OpenedStores {
  readonly close: () => Promise<void>
}

/** The host ids of a world with `count` hosts, in lane order: `host-1`, `host-2`, … */
export function hostIdsFor(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `host-${i + 1}`)
}

/** A schema no other run of a shared database or PGlite instance uses, so seeds never see each other's rows. */
export function runSchema(prefix: string, seed: number): string {
  return `${prefix}_${seed >>> 0}_${Math.floor(Math.random() * 1e9)}`
}

/** The database a `postgres` run fills; a run without one is a usage mistake. */
export function databaseUrlOf(run: { readonly databaseUrl?: string }): string {
  if (run.databaseUrl === undefined) throw new Error('the postgres store needs a database URL (--database-url or DATABASE_URL)')
  return run.databaseUrl
}

/**
 * Runs one world: opens its stores for the hosts `options` drew, runs the world over them and
 * closes them, also when the world throws.
 */
export async function runWorld<Options extends { readonly hosts: number }, Stores extends OpenedStores, Result>(
  options: Options,
  open: (hostIds: ReadonlyArray<string>) => Promise<Stores>,
  world: (stores: Stores) => Promise<Result>,
): Promise<{ readonly options: Options; readonly result: Result }> {
  const stores = await open(hostIdsFor(options.hosts))
  try {
    return { options, result: await world(stores) }
  } finally {
    await stores.close()
  }
}
