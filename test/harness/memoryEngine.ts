/**
 * memoryEngine — one job engine on the memory stores and a ManualClock, for example tests that
 * stage a race in the claim path: the engine, its clock, and a count of its queue machines' poll
 * arrivals (a line poll parked). `directClaimsFindNothing` wraps a job store so that claims
 * straight from the store find nothing (as when another transaction holds the head): due jobs
 * then go through Matching.
 */
import { ManualClock, Random } from '../../src/index.ts'
import { makeMatchbox, type Matchbox } from '../../src/jobs/Matchbox.ts'
import type { JobStore } from '../../src/persistence/jobs/JobStore.ts'
import { makeMemoryStore } from '../../src/persistence/queues/MemoryStore.ts'

/** An engine on `jobStore` and a fresh memory Matching store, seeded with `seed`. */
export function memoryEngine(hostId: string, jobStore: JobStore, seed: number): { readonly mb: Matchbox; readonly clock: ManualClock; readonly polls: { arrived: number } } {
  const store = makeMemoryStore()
  const clock = new ManualClock(1_700_000_000_000)
  const polls = { arrived: 0 }
  const mb = makeMatchbox({
    hostId,
    store,
    jobStore,
    clock,
    random: Random.make(seed),
    closeStores: () => store.close(),
    onQueueStep: (_queue, event) => {
      if (event.type === 'poll.arrived') polls.arrived++
    },
  })
  return { mb, clock, polls }
}

/** `inner` with claims straight from the store answering none (riding acks still go through). */
export function directClaimsFindNothing(inner: JobStore): JobStore {
  return {
    ...inner,
    claimDue: async () => [],
    ackAndClaimDue: async (params) => ({ acked: await inner.ackMany({ claims: params.acks, nowMs: params.nowMs }), claimed: [] }),
  }
}
