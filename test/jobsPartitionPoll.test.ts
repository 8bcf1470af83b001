/**
 * A task added to one partition of a queue must reach a poll its engine has parked on another
 * partition of the same queue, at once. The end-to-end simulator finds it does not on the current
 * engine ("prompt delivery", sim/jobs/KnownEngineFailures.ts): MatchingHost parks a poll on ONE
 * owned partition (one with tasks ready, else the next in rotation) and adds a task to a random
 * owned one, so the task waits for something else to move the poll (here the engine's next
 * one-second due scan, 500 ms after the job became due). Staged on one engine on the memory
 * stores, a queue of four partitions, on a ManualClock:
 * - claims straight from the store find nothing (as when another transaction holds the head), so
 *   the due job goes to Matching, where the worker's line poll waits;
 * - with the engine seeded by `seed` below the add lands on another partition than the poll's (the test
 *   prints which seeds of 1…8 do: for the others the job starts at once);
 * - the job must start within 250 ms (the simulator's prompt-delivery bound); on those seeds it
 *   starts 500 ms after it became due.
 *
 * Marked `it.fails` while the engine has the bug, so the suite stays green; when a task reaches
 * the poll across partitions, vitest reports this test as unexpectedly passing.
 */
import { expect, it } from 'vitest'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { directClaimsFindNothing, memoryEngine } from './harness/memoryEngine.ts'
import { settle, until } from './harness/settle.ts'

const promptDeliveryBoundMs = 250

// Runs the staging with `seed`; the ms after the job became due at which its handler started (null: not within `limitMs`).
async function startedAfter(seed: number, limitMs: number): Promise<number | null> {
  const { mb, clock, polls } = memoryEngine('partitions', directClaimsFindNothing(makeMemoryJobStore()), seed)
  const q = mb.queue('q', { partitions: 4 })
  let startedAtMs: number | null = null
  const stop = q.work(async () => {
    startedAtMs ??= clock.now()
  })
  await until(() => polls.arrived === 1, 'the line poll parked')
  await settle()
  const dueMs = clock.now() + 500
  await q.enqueue('payload', { runAt: new Date(dueMs) })
  clock.advance(500)
  for (let waitedMs = 0; startedAtMs === null && waitedMs < limitMs; waitedMs += 50) {
    await settle(10)
    if (startedAtMs === null) clock.advance(50)
  }
  await settle(10)
  await stop()
  await mb.close()
  return startedAtMs === null ? null : (startedAtMs as number) - dueMs
}

it.fails('a task added to another partition of the engine reaches its parked poll at once', async () => {
  const outcomes: string[] = []
  // Given up to 6 s: when each seed's job did start.
  for (let seed = 1; seed <= 8; seed++) outcomes.push(`seed ${seed}: ${(await startedAfter(seed, 6_000)) ?? 'never'} ms`)
  console.log(`the job started this long after it became due: ${outcomes.join(', ')} (bound ${promptDeliveryBoundMs} ms)`)
  for (let seed = 1; seed <= 8; seed++) expect(await startedAfter(seed, promptDeliveryBoundMs), `seed ${seed}`).not.toBeNull()
})
