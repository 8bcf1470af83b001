/**
 * JobsSimulation — runs end-to-end (Jobs) seeds: opens the shared database a world needs —
 * memory (one MemoryStore and one MemoryJobStore shared by every host), embedded (one PGlite
 * shared), or PostgreSQL (one `pg` Pool per host, through `openPostgresStore` and the SQL
 * JobStore on a driver over the same pool, every run in its own schema) — runs the world, and
 * closes what it opened. Also the determinism self-check for this mode. The group's membership
 * table and bus live in the world itself (JobsWorld.ts), in memory on every store kind, so a
 * seed's trace is the same on memory and on PostgreSQL.
 */
import pg from 'pg'
import { makeMemoryJobStore } from '../../src/persistence/jobs/MemoryJobStore.ts'
import type { JobStore } from '../../src/persistence/jobs/JobStore.ts'
import { makeSqlJobStore } from '../../src/persistence/jobs/sql/SqlJobStore.ts'
import { makeMemoryStore } from '../../src/persistence/queues/MemoryStore.ts'
import { openPostgresStore, openSqlStore } from '../../src/persistence/queues/sql/openSqlStore.ts'
import { makePgDriver } from '../../src/persistence/sql/PgDriver.ts'
import { makePgliteDriver } from '../../src/persistence/sql/PgliteDriver.ts'
import { makeSchema } from '../../src/persistence/sql/Schema.ts'
import type { Store } from '../../src/persistence/queues/Store.ts'
import { type JobsSwarmOptions, type JobsSwarmOverrides, jobsSwarmOptions } from './JobsSwarm.ts'
import type { JobsMutant } from './JobMutations.ts'
import { type JobsRunResult, JobsWorld, type JobsWorldConfig } from './JobsWorld.ts'
import { checkTwice, type SimStoreKind } from '../core/Determinism.ts'

/** How to run one end-to-end seed. */
export interface JobsSeedRun {
  readonly seed: number
  readonly store: SimStoreKind
  /** PostgreSQL connection string (required for `postgres`). */
  readonly databaseUrl?: string
  readonly overrides?: JobsSwarmOverrides
  readonly script?: ReadonlyArray<number>
  readonly keepTrace?: boolean
  /** Wraps the shared job store (the job mutation menu); on PostgreSQL each host's. */
  readonly wrapJobStore?: (store: JobStore) => JobStore
  /** One deliberate bug of the job mutation menu (JobMutations.ts `makeJobsMutant`): its store wrapper (instead of `wrapJobStore`), bus tap and membership wrapper. */
  readonly mutant?: JobsMutant
  /** Observes every committed JobStore call (timelines). */
  readonly onJobs?: JobsWorldConfig['onJobs']
  /** Observes faults, membership views and the heal (timelines). */
  readonly onEvent?: JobsWorldConfig['onEvent']
}

/** A seed's options and result. */
export interface JobsSeedResult {
  readonly options: JobsSwarmOptions
  readonly result: JobsRunResult
}

interface OpenedStores {
  readonly storeFor: (hostId: string) => Store
  readonly jobStoreFor: (hostId: string) => JobStore
  readonly close: () => Promise<void>
}

async function openStores(run: JobsSeedRun, hostIds: ReadonlyArray<string>): Promise<OpenedStores> {
  const wrap = run.mutant?.wrapJobStore ?? run.wrapJobStore ?? ((store: JobStore) => store)
  if (run.store === 'memory') {
    const store = makeMemoryStore()
    const jobStore = wrap(makeMemoryJobStore({ queueRanges: store }))
    return { storeFor: () => store, jobStoreFor: () => jobStore, close: () => store.close() }
  }
  if (run.store === 'embedded') {
    const driver = await makePgliteDriver()
    const store = await openSqlStore(driver)
    const jobStore = wrap(makeSqlJobStore(driver, makeSchema()))
    return { storeFor: () => store, jobStoreFor: () => jobStore, close: () => store.close() }
  }
  if (run.databaseUrl === undefined) throw new Error('the postgres store needs a database URL (--database-url or DATABASE_URL)')
  // Each run gets its own schema so seeds never see each other's rows.
  const schema = `simjobs_${run.seed >>> 0}_${Math.floor(Math.random() * 1e9)}`
  const hosts = new Map<string, { pool: pg.Pool; store: Store; jobStore: JobStore }>()
  for (const hostId of hostIds) {
    const pool = new pg.Pool({ connectionString: run.databaseUrl, max: 2 })
    // A dropped idle connection surfaces on the next query as Unavailable; here it must not crash.
    pool.on('error', () => {})
    const store = await openPostgresStore({ pool, schema })
    hosts.set(hostId, { pool, store, jobStore: wrap(makeSqlJobStore(makePgDriver({ pool }), makeSchema(schema))) })
  }
  const of = (hostId: string) => hosts.get(hostId) as { pool: pg.Pool; store: Store; jobStore: JobStore }
  return {
    storeFor: (hostId) => of(hostId).store,
    jobStoreFor: (hostId) => of(hostId).jobStore,
    close: async () => {
      for (const host of hosts.values()) {
        await host.store.close()
        await host.pool.end()
      }
    },
  }
}

/** Runs one end-to-end seed to completion. */
export async function runJobsSeed(run: JobsSeedRun): Promise<JobsSeedResult> {
  const options = jobsSwarmOptions(run.seed, run.overrides)
  const hostIds = Array.from({ length: options.hosts }, (_, i) => `host-${i + 1}`)
  const stores = await openStores(run, hostIds)
  try {
    const world = new JobsWorld({
      options,
      store: run.store,
      storeFor: stores.storeFor,
      jobStoreFor: stores.jobStoreFor,
      ...(run.script === undefined ? {} : { script: run.script }),
      ...(run.keepTrace === undefined ? {} : { keepTrace: run.keepTrace }),
      ...(run.mutant?.busTap === undefined ? {} : { busTap: run.mutant.busTap }),
      ...(run.mutant?.wrapMembership === undefined ? {} : { wrapMembership: run.mutant.wrapMembership }),
      ...(run.mutant === undefined ? {} : { mutant: run.mutant }),
      ...(run.onJobs === undefined ? {} : { onJobs: run.onJobs }),
      ...(run.onEvent === undefined ? {} : { onEvent: run.onEvent }),
    })
    return { options, result: await world.run() }
  } finally {
    await stores.close()
  }
}

/** Runs an end-to-end seed twice; the first line where the traces part, or null. */
export function checkJobsDeterminism(run: JobsSeedRun, earlier?: JobsSeedResult): Promise<{ hash: string; divergence: string | null }> {
  return checkTwice(run, earlier, runJobsSeed)
}
