/**
 * A job claimed for a worker that has gone must not wait out its visibility timeout. The end-to-end
 * simulator found it did ("claims reach a worker" and "stop releases"); here it is staged on one
 * engine on the memory stores, on a ManualClock:
 * - claims straight from the store find nothing (as when another transaction holds the head), so
 *   the due job goes to Matching, where the worker's line poll waits;
 * - History's claim of it for that poll is held at the store while the worker's loops are
 *   stopped (`stop()` resolves: no handler is running);
 * - then the claim commits. Nobody holds the claimed job: it is kept for the queue's next claim
 *   at most `jobKeptHoldMs` (a pass runs by then and gives it back, pending again), never a scan
 *   interval — which a visibility timeout may be shorter than — nor its 30 s deadline.
 *
 * No sleeps: waits are on conditions, bounded by event-loop turns; the clock moves in 100 ms steps.
 */
import { expect, it } from 'vitest'
import { jobKeptHoldMs } from '../src/kernel/Limits.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { directClaimsFindNothing, memoryEngine } from './harness/memoryEngine.ts'
import { settle, until } from './harness/settle.ts'

it("after stop(), a job History claimed for the stopped worker's poll is given back within the kept-job bound, not left to its visibility timeout", async () => {
  const inner = makeMemoryJobStore()
  // History's claims wait here until the test opens them.
  const held: Array<() => void> = []
  const jobStore: JobStore = {
    ...directClaimsFindNothing(inner),
    claimMany: async (params) => {
      await new Promise<void>((resolve) => held.push(resolve))
      return inner.claimMany(params)
    },
  }
  const { mb, clock, polls } = memoryEngine('spare', jobStore, 7)
  const q = mb.queue('q', { visibilityTimeoutS: 30 })
  const ran: string[] = []
  const stop = q.work(async (job) => {
    ran.push(job.id)
  })
  await until(() => polls.arrived === 1, 'the line poll parked')
  await settle()

  // Due in 500 ms, so no worker is handed it at enqueue: the due-time pass sends it to Matching.
  const id = await q.enqueue('payload', { runAt: new Date(clock.now() + 500) })
  clock.advance(500)
  await until(() => held.length === 1, "History's claim for the line poll is at the store")

  await stop()
  for (const open of held.splice(0)) open()
  await settle(10)
  // Given back within the bound, not at the next one-second scan or the 30 s deadline.
  for (let waitedMs = 0; waitedMs < jobKeptHoldMs; waitedMs += 10) {
    clock.advance(10)
    await settle(5)
  }

  const row = await inner.getJob({ queue: 'q', id })
  console.log(`${jobKeptHoldMs} ms after the claim: the job is ${row?.state}, handler runs ${ran.length}, claim valid until ${row?.deadlineMs === null || row === null ? '-' : (row.deadlineMs as number) - clock.now()} ms from now`)
  expect(row).not.toBeNull()
  // Released (due again now) or run: either way nothing waits 30 s for a claim nobody holds.
  expect(row?.state === 'processing' && ran.length === 0).toBe(false)
  await mb.close()
})
