/**
 * open — the one entry point of the job engine: picks and opens the stores, then
 * builds the engine (Matchbox.ts) over them.
 *
 * Stores: 'memory' (nothing persists); 'embedded' (default: PGlite in memory) or `{ dataDir }`
 * (PGlite in a directory); `{ databaseUrl, connectTimeoutMs?, statementTimeoutMs? }` (a `pg`
 * Pool of our own, with those time bounds) or `{ pool }` (the caller's Pool, left open on close,
 * with its own settings). The Matching Store and the JobStore share one driver and
 * one migrated schema (default `matchbox`).
 *
 * The only file of src/jobs that may import store implementations and drivers (the
 * architecture test's exception for `src/jobs/open`).
 *
 * Invariants: options are validated before anything opens (`InvalidInput`), an option the chosen
 * store would ignore (`role` on a one-engine store, `schema` on memory) included; a failed open
 * closes what it opened; without a seed one is drawn from entropy in the kernel, and ids draw
 * from the seed mixed with the host id, so hosts sharing a database need distinct host ids.
 */
import type { PGlite } from '@electric-sql/pglite'
import type pg from 'pg'
import { InvalidInput } from '../domain/errors.ts'
import { validateName } from '../domain/QueueKey.ts'
import { type Clock, RealClock } from '../kernel/Clock.ts'
import { randomId } from '../kernel/Ids.ts'
import { Random, seedFromEntropy } from '../kernel/Random.ts'
import type { JobStore } from '../persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../persistence/jobs/MemoryJobStore.ts'
import { makeSqlJobStore } from '../persistence/jobs/sql/SqlJobStore.ts'
import { makeMemoryStore } from '../persistence/queues/MemoryStore.ts'
import type { Driver } from '../persistence/sql/Driver.ts'
import { makePgDriver, type PgTimeoutOptions } from '../persistence/sql/PgDriver.ts'
import { makePgliteDriver } from '../persistence/sql/PgliteDriver.ts'
import { makeSchema } from '../persistence/sql/Schema.ts'
import { openMigrated } from '../persistence/sql/SqlSession.ts'
import { makeSqlStore } from '../persistence/queues/sql/SqlStore.ts'
import { makeDynamicMembership } from '../actors/Membership.ts'
import { makeSqlBus } from '../persistence/bus/SqlBus.ts'
import { attachInternals } from './EngineInternals.ts'
import { makeSqlMembershipStore } from '../persistence/membership/sql/SqlMembershipStore.ts'
import { type Logger, type MatchboxEvent, validateLogger } from './Events.ts'
import { makeMatchbox, type Matchbox, type MatchboxEngine } from './Matchbox.ts'

/** Where the engine keeps its state. */
export type StoreOption =
  | 'memory'
  | 'embedded'
  | { readonly dataDir: string }
  | ({ readonly databaseUrl: string } & PgTimeoutOptions)
  | { readonly pool: pg.Pool }

/** Options of `open`. */
export interface OpenOptions {
  /** Default: 'embedded' (PGlite in memory). */
  readonly store?: StoreOption
  /** Default: the real clock. Pass a `ManualClock` to drive time in tests and simulations. */
  readonly clock?: Clock
  /** Seeds every random choice (ids, claim tokens, jitter); default: drawn from entropy. */
  readonly seed?: number
  /** This host's id: distinct per host sharing a database (default: drawn). */
  readonly hostId?: string
  /** PostgreSQL schema of the tables (default `matchbox`). */
  readonly schema?: string
  /**
   * On a PostgreSQL store, how this engine takes part among the engines sharing the database:
   * - `'worker'` (default): it joins the group (a heartbeat row), owns the Matching partitions
   *   membership gives it, delivers their jobs, and serves polls other engines forward to it;
   * - `'producer'`: it owns nothing and delivers nothing — for a process that only enqueues (a
   *   web app). Its enqueues reach the owners through the database; a `claim` or `work` on it
   *   still works, forwarded to the owners.
   * The memory and embedded stores are one engine's own: the option must be left out there.
   */
  readonly role?: 'worker' | 'producer'
  /**
   * A pino-compatible logger (`info/warn/error(obj, msg)`, `debug` if it has one): job retries
   * and deaths, store outages and recoveries, and failed maintenance passes are logged to it.
   */
  readonly logger?: Logger
  /** Called with every event (job.started/completed/retried/dead, store.unavailable/recovered): feed metrics from here. */
  readonly onEvent?: (event: MatchboxEvent) => void
}

const optionKeys = ['store', 'clock', 'seed', 'hostId', 'schema', 'role', 'logger', 'onEvent']

// FNV-1a: folds the host id into the seed, so two hosts given the same seed still draw different ids.
function hashOf(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return hash | 0
}

function checkOptions(options: OpenOptions): void {
  if (typeof options !== 'object' || options === null) throw new InvalidInput({ field: 'options', reason: 'must be an object' })
  for (const key of Object.keys(options)) if (!optionKeys.includes(key)) throw new InvalidInput({ field: `options.${key}`, reason: `is not an option (known: ${optionKeys.join(', ')})` })
  if (options.seed !== undefined && !Number.isSafeInteger(options.seed)) throw new InvalidInput({ field: 'options.seed', reason: 'must be an integer' })
  if (options.role !== undefined && options.role !== 'worker' && options.role !== 'producer') throw new InvalidInput({ field: 'options.role', reason: "must be 'worker' or 'producer'" })
  if (options.logger !== undefined) validateLogger('options.logger', options.logger)
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function') throw new InvalidInput({ field: 'options.onEvent', reason: 'must be a function' })
  if (options.clock !== undefined && (typeof options.clock?.now !== 'function' || typeof options.clock?.setTimer !== 'function')) {
    throw new InvalidInput({ field: 'options.clock', reason: 'must be a Clock (now, setTimer)' })
  }
  if (options.store === null) throw new InvalidInput({ field: 'options.store', reason: "must be 'memory', 'embedded', { dataDir }, { databaseUrl } or { pool } (leave it out for 'embedded')" })
  // Options the chosen store would ignore are refused here, before anything is created.
  const store = options.store ?? 'embedded'
  const oneEngine = store === 'memory' || store === 'embedded' || (typeof store === 'object' && 'dataDir' in store)
  if (options.role !== undefined && oneEngine) throw new InvalidInput({ field: 'options.role', reason: 'applies to PostgreSQL stores only (a memory or embedded store belongs to one engine)' })
  if (options.schema !== undefined && store === 'memory') throw new InvalidInput({ field: 'options.schema', reason: 'applies to SQL stores only (the memory store has no schema)' })
}

// Time bounds a `{ databaseUrl }` store may carry beside the URL (PgDriver's `PgTimeoutOptions`).
const timeoutKeys = ['connectTimeoutMs', 'statementTimeoutMs']

async function sqlDriverOf(store: Exclude<StoreOption, 'memory'>, pglite: PGlite | undefined): Promise<Driver> {
  if (store === 'embedded') return makePgliteDriver(pglite === undefined ? {} : { pglite })
  if (pglite !== undefined) throw new Error("openWith: a PGlite instance is for the 'embedded' store only")
  if (typeof store !== 'object' || store === null) throw new InvalidInput({ field: 'options.store', reason: "must be 'memory', 'embedded', { dataDir }, { databaseUrl } or { pool }" })
  const kinds = Object.keys(store).filter((key) => !timeoutKeys.includes(key))
  if (kinds.length !== 1) throw new InvalidInput({ field: 'options.store', reason: 'must name exactly one of dataDir, databaseUrl, pool' })
  if (!('databaseUrl' in store)) {
    const misplaced = Object.keys(store).find((key) => timeoutKeys.includes(key))
    if (misplaced !== undefined) throw new InvalidInput({ field: `options.store.${misplaced}`, reason: 'applies to { databaseUrl } only (a pool keeps its own settings)' })
  }
  if ('dataDir' in store) return makePgliteDriver({ dataDir: validateName('options.store.dataDir', store.dataDir) })
  if ('databaseUrl' in store) {
    try {
      return makePgDriver({
        connectionString: validateName('options.store.databaseUrl', store.databaseUrl),
        ...(store.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: store.connectTimeoutMs }),
        ...(store.statementTimeoutMs === undefined ? {} : { statementTimeoutMs: store.statementTimeoutMs }),
      })
    } catch (error) {
      // The driver names the bare option; name it where the caller wrote it.
      if (error instanceof InvalidInput && timeoutKeys.includes(error.field)) throw new InvalidInput({ field: `options.store.${error.field}`, reason: error.reason })
      throw error
    }
  }
  if ('pool' in store && typeof (store.pool as { connect?: unknown } | null)?.connect === 'function') return makePgDriver({ pool: store.pool })
  throw new InvalidInput({ field: 'options.store', reason: 'must name exactly one of dataDir, databaseUrl, pool (a pg.Pool)' })
}

/**
 * Opens an engine: `await open()` is an embedded, in-memory PGlite engine on the real clock.
 * Rejects with `InvalidInput` for bad options and `Unavailable` when the database cannot be
 * reached — on `{ databaseUrl }` within `connectTimeoutMs` (default 10 s) even when the server
 * accepts the connection and never answers.
 */
export async function open(options: OpenOptions = {}): Promise<Matchbox> {
  return openWith(options)
}

/**
 * `open`, for this package's benches and tests; not exported from the package entry. The job
 * store the engine sees is wrapped by `wrapJobStore` (a store variant measured beside the real
 * one through the same engine). With `pglite`, an 'embedded' store opens on that instance instead
 * of starting its own (seconds each): the engine leaves it open on close, and a schema of its
 * own per engine keeps the engines sharing one instance apart.
 */
export async function openWith(options: OpenOptions, wrapJobStore: (jobStore: JobStore) => JobStore = (jobStore) => jobStore, pglite?: PGlite): Promise<Matchbox> {
  checkOptions(options)
  const seed = options.seed ?? seedFromEntropy()
  const hostId = options.hostId === undefined ? `host-${randomId(Random.make(seed))}` : validateName('options.hostId', options.hostId)
  const clock = options.clock ?? new RealClock()
  const random = Random.make((seed ^ hashOf(hostId)) | 0)
  const storeOption = options.store ?? 'embedded'
  const hooks = {
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.onEvent === undefined ? {} : { onEvent: options.onEvent }),
  }
  if (storeOption === 'memory') {
    const store = makeMemoryStore()
    const jobStore = wrapJobStore(makeMemoryJobStore({ queueRanges: store }))
    return attachInternals(makeMatchbox({ hostId, store, jobStore, clock, random, ...hooks, closeStores: async () => {} }), { jobStore, sql: null, now: () => Math.floor(clock.now()) })
  }
  let schema
  try {
    schema = makeSchema(options.schema)
  } catch (error) {
    throw new InvalidInput({ field: 'options.schema', reason: error instanceof Error ? error.message : String(error) })
  }
  const driver = await sqlDriverOf(storeOption, pglite)
  const [store, jobStore, membershipStore] = await openMigrated(
    driver,
    schema.name,
    (migrated) => [makeSqlStore(driver, migrated), wrapJobStore(makeSqlJobStore(driver, migrated)), makeSqlMembershipStore(driver, migrated)] as const,
  )
  const internals = { jobStore, sql: { driver, schema }, now: () => Math.floor(clock.now()) }
  if (driver.kind !== 'postgres') {
    return engineReady(attachInternals(makeMatchbox({ hostId, store, jobStore, clock, random, ...hooks, closeStores: () => store.close() }), internals))
  }
  const membership = makeDynamicMembership({ hostId, store: membershipStore, clock, member: options.role !== 'producer' })
  await membership.ready
  const bus = makeSqlBus({ driver, schema: schema.name, clock })
  const group = { membership, bus, storeSignalsDue: true, handOverAcrossEngines: true, leave: () => membership.close() }
  return engineReady(
    attachInternals(makeMatchbox({
      ...hooks,
      hostId,
      store,
      jobStore,
      clock,
      random,
      group,
      closeStores: async () => {
        await membership.close()
        await bus.close()
        await store.close()
      },
    }), { ...internals, membership: { settled: () => membership.settled() } }),
  )
}

// Resolves once the engine hears its group; closes it when it cannot.
async function engineReady(engine: MatchboxEngine): Promise<Matchbox> {
  try {
    await engine.ready
  } catch (error) {
    await engine.close().catch(() => {})
    throw error
  }
  return engine
}
