/**
 * A zero-wait `claim()` that arrives while the job's Matching queue unloads on its own (idle)
 * still gets the job: the poll waits out the drain, goes to the fresh queue, and its wait counts
 * only once that queue has loaded and read its backlog. The Matching store's checkpoints wait on
 * a gate here, so the drain is held open exactly while the claim arrives.
 *
 * No sleeps: waits are on conditions; time moves only by `clock.advance`.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock, Random } from '../src/index.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import { idleUnloadMs } from '../src/kernel/Limits.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import type { Store } from '../src/persistence/queues/Store.ts'
import { type Gate, makeGate } from './harness/gate.ts'
import { settle, until } from './harness/settle.ts'

// A queue store whose checkpoints wait at `gate`; everything else passes through.
function gatedCheckpoints(inner: Store, gate: Gate): Store {
  return {
    ...inner,
    async checkpoint(params) {
      await gate.pass()
      return inner.checkpoint(params)
    },
  }
}

describe('claim while the Matching queue unloads', () => {
  for (const waitMs of [0, 1_000]) {
    it(`claim({ waitMs: ${waitMs} }) finds a job whose task waits in the backlog of a queue draining on its own`, async () => {
      const clock = new ManualClock(1_700_000_000_000)
      const inner = makeMemoryStore()
      const gate = makeGate()
      const mb = makeMatchbox({ hostId: 'unload', store: gatedCheckpoints(inner, gate), jobStore: makeMemoryJobStore(), clock, random: Random.make(5), closeStores: () => inner.close() })
      const q = mb.queue('q')
      // Two jobs: the first is claimed and acked, the second's task stays in the queue's backlog.
      await q.enqueue('first')
      await q.enqueue('second')
      expect(await (await q.claim())?.ack()).toBe(true)
      await mb.idle()
      await settle()

      // The claim's ack level is saved first (ungated); then the queue goes idle with the second
      // task still stored, and its final checkpoint is held.
      clock.advance(idleUnloadMs / 2)
      await mb.idle()
      await settle()
      gate.close()
      clock.advance(idleUnloadMs)
      await until(() => gate.held() > 0, 'the idle drain is writing its final checkpoint')

      const claimed = q.claim({ waitMs })
      await settle()
      gate.open()
      expect((await claimed)?.payload).toBe('second')
      await mb.close()
    })
  }
})
