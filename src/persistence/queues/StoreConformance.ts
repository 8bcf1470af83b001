/**
 * StoreConformance — the one conformance suite of the Store contract (Store.ts), written once
 * and bound to every store by a test file in `test/` (River's `riverdrivertest`). A change of
 * semantics starts as a change here.
 *
 * The suite opens one store through the binding's `open` before its tests and closes it after;
 * tests isolate themselves with fresh namespaces (conformance/ConformanceFixture.ts), so a slow
 * store (PGlite) is opened once per file. The parts, by resource:
 * - conformance/QueueConformance.ts — acquire, append, read, fencing, ids, subqueues;
 * - conformance/CheckpointConformance.ts — ack levels, prefix deletion, reload;
 * - conformance/RelocateConformance.ts — relocation, inspect, list;
 * - conformance/UserDataConformance.ts — queue-family user data;
 * - conformance/InputConformance.ts — the same InvalidInput for the same bad input;
 * - conformance/ModelConformance.ts — a fast-check property against a tiny model.
 *
 * Does not: test fencing across concurrent connections or crash recovery (the simulator and the
 * SQL store's own tests do), nor snapshots (memory-only, MemorySnapshot.test.ts).
 */
import { afterAll, beforeAll, describe } from 'vitest'
import { seedFromEntropy } from '../../kernel/Random.ts'
import { describeCheckpointConformance } from './conformance/CheckpointConformance.ts'
import { type ConformanceOptions, makeConformanceFixture } from './conformance/ConformanceFixture.ts'
import { describeInputConformance } from './conformance/InputConformance.ts'
import { describeModelConformance } from './conformance/ModelConformance.ts'
import { describeQueueConformance } from './conformance/QueueConformance.ts'
import { describeRelocateConformance } from './conformance/RelocateConformance.ts'
import { describeUserDataConformance } from './conformance/UserDataConformance.ts'
import type { Store } from './Store.ts'

export type { ConformanceOptions } from './conformance/ConformanceFixture.ts'

// Enough runs to hit refusals, reloads and prefix deletions in every subqueue many times.
const propertyRunsDefault = 50

function resolveSeed(options: ConformanceOptions): number {
  if (options.seed !== undefined) return options.seed
  const fromEnv = process.env.SIM_SEED
  if (fromEnv !== undefined && fromEnv !== '') return Number(fromEnv)
  return (seedFromEntropy() >>> 0) % 2 ** 31
}

/**
 * Registers `Store conformance: ${name}` against the store `open` returns. `open` is called once
 * for the suite; the store is closed after its last test.
 */
export function describeStoreConformance(name: string, open: () => Promise<Store>, options: ConformanceOptions = {}): void {
  const seed = resolveSeed(options)
  describe(`Store conformance: ${name}`, () => {
    let opened: Store | undefined
    const fixture = makeConformanceFixture(
      name,
      () => {
        if (opened === undefined) throw new Error(`Store conformance: ${name}: the store is not open (did open() fail?)`)
        return opened
      },
      options.propertyRuns ?? propertyRunsDefault,
      seed,
    )

    beforeAll(async () => {
      opened = await open()
    })

    afterAll(async () => {
      await opened?.close()
    })

    describeQueueConformance(fixture)
    describeCheckpointConformance(fixture)
    describeRelocateConformance(fixture)
    describeUserDataConformance(fixture)
    describeInputConformance(fixture)
    describeModelConformance(fixture)
  })
}
