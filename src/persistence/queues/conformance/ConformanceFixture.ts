/**
 * ConformanceFixture — what every part of the Store conformance suite shares: the store under
 * test, fresh queue keys, task builders, and assertions about typed errors and unchanged state.
 *
 * Isolation: a binding may open one store for the whole suite (PGlite is slow to open), so no
 * test may rely on an empty store. Every test works in namespaces nobody else uses: a suite
 * token drawn once per run (so a rerun against a kept database cannot collide) plus a counter.
 *
 * Does not: open or close stores (StoreConformance.ts does, through the binding's `open`).
 */
import { expect } from 'vitest'
import { isMatchboxError, type MatchboxError } from '../../../domain/errors.ts'
import type { QueueKey } from '../../../domain/QueueKey.ts'
import { makeTask, type StoredTask, type Task, type TaskInput } from '../../../domain/Task.ts'
import { priorityMax, readPageSizeMax } from '../../../kernel/Limits.ts'
import type { QueueInspection, Store } from '../Store.ts'

/** Tuning a binding may pass to `describeStoreConformance`. */
export interface ConformanceOptions {
  /** Runs of each property (default 50); slow stores may ask for fewer. */
  readonly propertyRuns?: number
  /** Seed of the properties (default: `SIM_SEED`, else drawn and printed). */
  readonly seed?: number
}

/** Shared state and tools of one conformance run. */
export interface ConformanceFixture {
  /** The binding's name, e.g. `memory`. */
  readonly name: string
  /** Properties' runs and seed, resolved. */
  readonly propertyRuns: number
  readonly seed: number
  /** The store under test (valid inside tests). */
  store(): Store
  /** A namespace no other test uses; `label` only makes traces readable. */
  namespace(label: string): string
  /** A workflow queue, partition 0, default version, in a fresh namespace unless one is given. */
  key(overrides?: Partial<QueueKey>): QueueKey
}

/** Builds a fixture over a store getter. */
export function makeConformanceFixture(name: string, store: () => Store, propertyRuns: number, seed: number): ConformanceFixture {
  const token = (seed >>> 0).toString(36)
  let counter = 0
  const namespace = (label: string): string => `conf-${token}-${++counter}-${label}`
  return {
    name,
    propertyRuns,
    seed,
    store,
    namespace,
    key: (overrides = {}) => ({ namespace: namespace('q'), family: 'emails', type: 'workflow', partition: 0, version: null, ...overrides }),
  }
}

/** A valid task (defaults filled, as a store returns it) for job `jobId`. */
export function task(jobId: string, overrides: Partial<TaskInput> = {}): Task {
  return makeTask({ jobId, createdAtMs: 1_000, ...overrides })
}

/** `count` tasks named `${prefix}-${i}` with `priority`. */
export function tasks(prefix: string, count: number, priority = 0): Task[] {
  return Array.from({ length: count }, (_, index) => task(`${prefix}-${index}`, { priority }))
}

/**
 * Awaits a rejection with the tagged error `tag` whose fields equal `fields`; returns it.
 * Fails the test if the call succeeds or rejects with anything else.
 */
export async function expectRejection<Tag extends MatchboxError['_tag']>(
  promise: Promise<unknown>,
  tag: Tag,
  fields: Readonly<Record<string, unknown>> = {},
): Promise<Extract<MatchboxError, { _tag: Tag }>> {
  let outcome: { error: unknown } | undefined
  try {
    await promise
  } catch (error) {
    outcome = { error }
  }
  if (outcome === undefined) return expect.fail(`expected ${tag}, but the call succeeded`)
  const error = outcome.error
  if (!isMatchboxError(error)) return expect.fail(`expected ${tag}, got a non-catalogue error: ${String(error)}`)
  expect(error._tag, `error was ${String(error)}`).toBe(tag)
  for (const [field, value] of Object.entries(fields)) {
    expect((error as unknown as Record<string, unknown>)[field], `${tag}.${field} of ${String(error)}`).toEqual(value)
  }
  return error as Extract<MatchboxError, { _tag: Tag }>
}

/** Every stored row of one subqueue, ascending, read in pages of `pageSize`. */
export async function readAll(store: Store, key: QueueKey, subqueue: number, pageSize = readPageSizeMax): Promise<StoredTask[]> {
  const rows: StoredTask[] = []
  for (;;) {
    const page = await store.read({ key, subqueue, afterTaskId: rows.at(-1)?.taskId ?? 0, limit: pageSize })
    rows.push(...page)
    if (page.length < pageSize) return rows
  }
}

/** Everything observable about one queue: inspection plus every row of every subqueue. */
export interface QueueState {
  readonly inspection: QueueInspection | null
  readonly rows: ReadonlyArray<ReadonlyArray<StoredTask>>
}

/** The observable state of `key`, for "nothing changed" assertions. */
export async function stateOf(store: Store, key: QueueKey): Promise<QueueState> {
  const rows: StoredTask[][] = []
  for (let subqueue = 0; subqueue <= priorityMax; subqueue++) rows.push(await readAll(store, key, subqueue))
  return { inspection: await store.inspect(key), rows }
}
