/**
 * twoEngines — two engines of one group on shared memory stores and bus, with one ManualClock:
 * by default h1 owns every partition, so h2 forwards its claims to it and signals h1 the due
 * times of what it enqueues (or, with `handOverAcrossEngines`, hands a job to h1's waiting claim
 * at enqueue). The tests close them with `closeEngines` (the last to close closes the shared stores).
 */
import type { PartitionKey } from '../../src/domain/QueueKey.ts'
import { ManualClock, Random } from '../../src/index.ts'
import type { DispatchStepListener } from '../../src/jobs/Dispatch.ts'
import { type Matchbox, makeMatchbox } from '../../src/jobs/Matchbox.ts'
import { makeMemoryBus, type MemoryBus } from '../../src/persistence/bus/MemoryBus.ts'
import type { JobStore } from '../../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../../src/persistence/queues/MemoryStore.ts'

/** The engines made so far and not closed. */
const open: Matchbox[] = []

/**
 * The two engines and their clock; `ownerOf` names each partition's owner (default: h1 owns
 * every partition).
 */
export function twoEngines(
  ownerOf: (partition: PartitionKey) => string = () => 'h1',
  hooks: {
    readonly onDispatchStep?: (hostId: string) => DispatchStepListener
    readonly onQueueStep?: () => void
    readonly handOverAcrossEngines?: boolean
    readonly wrapJobStore?: (store: JobStore) => JobStore
    /** What an engine's leaving the group does (default: nothing; the test moves ownership itself). */
    readonly leave?: (hostId: string) => Promise<void>
  } = {},
): {
  readonly h1: Matchbox
  readonly h2: Matchbox
  readonly clock: ManualClock
  readonly membershipChanged: () => void
  /** The shared bus: a tap on it drops messages. */
  readonly bus: MemoryBus
} {
  const store = makeMemoryStore()
  const jobStore = (hooks.wrapJobStore ?? ((inner: JobStore) => inner))(makeMemoryJobStore({ queueRanges: store }))
  const bus = makeMemoryBus()
  const clock = new ManualClock(1_700_000_000_000)
  const listeners = new Set<() => void>()
  const membership = {
    ownerOf,
    hosts: () => ['h1', 'h2'],
    subscribe: (listener: () => void) => {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
  }
  let closed = 0
  const engine = (hostId: string, seed: number): Matchbox =>
    makeMatchbox({
      hostId,
      store,
      jobStore,
      clock,
      random: Random.make(seed),
      group: { membership, bus, storeSignalsDue: false, handOverAcrossEngines: hooks.handOverAcrossEngines ?? false, leave: async () => await hooks.leave?.(hostId) },
      ...(hooks.onDispatchStep === undefined ? {} : { onDispatchStep: hooks.onDispatchStep(hostId) }),
      ...(hooks.onQueueStep === undefined ? {} : { onQueueStep: hooks.onQueueStep }),
      // The engine that closes last closes the shared stores.
      closeStores: async () => {
        if (++closed < 2) return
        await bus.close()
        await store.close()
      },
    })
  const h1 = engine('h1', 7)
  const h2 = engine('h2', 8)
  open.push(h2, h1)
  return { h1, h2, clock, bus, membershipChanged: () => [...listeners].forEach((listener) => listener()) }
}

/** Closes every engine `twoEngines` made, h2 before h1. */
export async function closeEngines(): Promise<void> {
  for (const engine of open.splice(0)) await engine.close()
}
