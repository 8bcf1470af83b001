/**
 * The hand-overs over a stub engine: a `handed` message that reaches an engine that began
 * closing gives the job back to the store (no worker here takes it, no pass of this engine would)
 * and announces it due through the engine's `announceDue` — which tells the owners of the queue's
 * other partitions, where a claim may wait for it — as any give-back of a kept job does.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../kernel/Clock.ts'
import { handOverMessage } from '../persistence/jobs/HandOver.ts'
import type { NewJob } from '../persistence/jobs/JobStore.ts'
import { type HandOverEngine, makeHandOvers } from './HandOvers.ts'

const job: NewJob = { id: 'j', queue: 'q', payload: { n: 1 }, priority: 0, runAtMs: 1_000, expiresAtMs: null, maxAttempts: 3, visibilityTimeoutMs: 30_000, backoffBaseMs: 1_000, deadLetterRetentionMs: null }

describe('HandOvers', () => {
  it('a job handed to an engine that began closing goes back to the store and is announced due to the queue’s owners', async () => {
    const clock = new ManualClock(1_000)
    const announced: Array<[string, number]> = []
    const released: string[] = []
    const engine = {
      hostId: 'h',
      now: () => clock.now(),
      jobStore: { release: async ({ claims }: { claims: ReadonlyArray<{ id: string }> }) => (released.push(...claims.map((claim) => claim.id)), claims.map((claim) => claim.id)) },
      routing: { ownsEvery: () => false },
      driver: { notifyDue: () => {} },
      isClosed: () => true,
      announceDue: (queue: string, dueMs: number) => void announced.push([queue, dueMs]),
    } as unknown as HandOverEngine
    const defects: unknown[] = []
    const handOvers = makeHandOvers(() => engine, { bus: {} as never, storeSends: false, fenced: (_queue, _write, otherwise) => otherwise(), onDefect: (defect) => void defects.push(defect) })
    expect(handOvers.onMessage(handOverMessage(job, 1_000, 'token-1'))).toBe(true)
    await new Promise((resolve) => setImmediate(resolve))
    expect(released).toEqual(['j'])
    expect(announced).toEqual([['q', 1_000]])
    expect(defects).toEqual([])
  })
})
