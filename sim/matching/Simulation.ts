/**
 * Simulation — runs seeds: builds the stores a world needs (memory, embedded PGlite, or
 * PostgreSQL with one pool per host), runs the world, and returns its result. Also the
 * determinism self-check: the same seed twice must give the same trace, byte for byte.
 */
import type { PGlite } from '@electric-sql/pglite'
import type { Store } from '../../src/persistence/queues/Store.ts'
import { makeMemoryStore } from '../../src/persistence/queues/MemoryStore.ts'
import { openEmbeddedStore, openPostgresStore } from '../../src/persistence/queues/sql/openSqlStore.ts'
import type { BoundaryRecord } from '../core/Boundary.ts'
import { checkTwice, type SimStoreKind } from '../core/Determinism.ts'
import { type SwarmOptions, type SwarmOverrides, swarmOptions } from './Swarm.ts'
import { type RunResult, World, type WorldEvent } from './World.ts'

/** Which store the world runs on (core/Determinism.ts). */
export type { SimStoreKind }

/** How to run one seed. */
export interface SeedRun {
  readonly seed: number
  readonly store: SimStoreKind
  /** PostgreSQL connection string (required for `postgres`): a database the run may fill. */
  readonly databaseUrl?: string
  /**
   * For `embedded`: a PGlite instance to run on (left open), each run in a schema of its own.
   * Without it a run starts an instance of its own, which takes seconds.
   */
  readonly pglite?: PGlite
  readonly overrides?: SwarmOverrides
  readonly script?: ReadonlyArray<number>
  readonly keepTrace?: boolean
  /** Wraps the shared store (the store-side mutations). */
  readonly wrapStore?: (store: Store) => Store
  /** Wraps each host process's gated store (the host-side mutations). */
  readonly wrapHostStore?: (hostId: string, store: Store) => Store
  readonly onBoundary?: (record: BoundaryRecord, nowMs: number) => void
  /** Observes faults, History answers and the heal (timelines). */
  readonly onEvent?: (event: WorldEvent, nowMs: number) => void
}

/** A seed's options and result. */
export interface SeedResult {
  readonly options: SwarmOptions
  readonly result: RunResult
}

// A schema no other run of a shared database or PGlite instance uses.
const runSchema = (seed: number): string => `sim_${seed >>> 0}_${Math.floor(Math.random() * 1e9)}`

/** Opens the stores of one run; `close` releases them. */
async function openStores(run: SeedRun, hostIds: ReadonlyArray<string>): Promise<{ storeFor: (hostId: string) => Store; close: () => Promise<void> }> {
  const wrap = run.wrapStore ?? ((store: Store) => store)
  if (run.store === 'memory') {
    const shared = wrap(makeMemoryStore())
    return { storeFor: () => shared, close: () => shared.close() }
  }
  if (run.store === 'embedded') {
    const shared = wrap(await openEmbeddedStore(run.pglite === undefined ? {} : { pglite: run.pglite, schema: runSchema(run.seed) }))
    return { storeFor: () => shared, close: () => shared.close() }
  }
  if (run.databaseUrl === undefined) throw new Error('the postgres store needs a database URL (--database-url or DATABASE_URL)')
  // One pool per host, as separate processes would have. Each run gets its own schema so
  // seeds never see each other's rows.
  const schema = runSchema(run.seed)
  const stores = new Map<string, Store>()
  for (const hostId of hostIds) stores.set(hostId, wrap(await openPostgresStore({ connectionString: run.databaseUrl, schema })))
  return {
    storeFor: (hostId) => stores.get(hostId) as Store,
    close: async () => {
      for (const store of stores.values()) await store.close()
    },
  }
}

/** Runs one seed to completion. */
export async function runSeed(run: SeedRun): Promise<SeedResult> {
  const options = swarmOptions(run.seed, run.overrides)
  const hostIds = Array.from({ length: options.hosts }, (_, i) => `host-${i + 1}`)
  const stores = await openStores(run, hostIds)
  try {
    const world = new World({
      options,
      storeFor: stores.storeFor,
      ...(run.script === undefined ? {} : { script: run.script }),
      ...(run.keepTrace === undefined ? {} : { keepTrace: run.keepTrace }),
      ...(run.onBoundary === undefined ? {} : { onBoundary: run.onBoundary }),
      ...(run.wrapHostStore === undefined ? {} : { wrapHostStore: run.wrapHostStore }),
      ...(run.onEvent === undefined ? {} : { onEvent: run.onEvent }),
    })
    return { options, result: await world.run() }
  } finally {
    await stores.close()
  }
}

/**
 * Runs a seed twice and reports the first trace line where the runs diverge, or null. `earlier`,
 * a result of the same run already made with `keepTrace`, stands in for the first run.
 */
export function checkDeterminism(run: SeedRun, earlier?: SeedResult): Promise<{ hash: string; divergence: string | null }> {
  return checkTwice(run, earlier, runSeed)
}

/** A schedule property's world (core/ScheduleProperty.ts): the schedule's seed and decisions, run on `run`'s store. */
export function matchingWorld(run: Omit<SeedRun, 'seed' | 'script'>): (schedule: { readonly seed: number; readonly script: ReadonlyArray<number> }) => Promise<RunResult> {
  return async (schedule) => (await runSeed({ ...run, seed: schedule.seed, script: schedule.script })).result
}
