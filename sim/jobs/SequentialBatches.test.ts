/**
 * SequentialBatches runs an ack riding on the next claim as the claim, then the ack: the claim
 * is issued when the engine issued the statement, so the ownership checker judges it by the view
 * the engine checked. With the ack first, a slow ack would send the claim out after the host
 * lost the queue: a violation of the simulator's making, not the engine's. The answers are the
 * statement's either way.
 */
import { describe, expect, it } from 'vitest'
import type { JobStore } from '../../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../../src/persistence/jobs/MemoryJobStore.ts'
import { withSequentialBatches } from './SequentialBatches.ts'

describe('SequentialBatches', () => {
  it('runs ackAndClaimDue as claimDue, then each ack, with the one statement’s answers', async () => {
    const inner = makeMemoryJobStore()
    const calls: string[] = []
    const watched: JobStore = {
      ...inner,
      async claimDue(params) {
        calls.push('claimDue')
        return inner.claimDue(params)
      },
      async ack(params) {
        calls.push('ack')
        return inner.ack(params)
      },
    }
    const store = withSequentialBatches(watched)
    const job = (id: string) => ({ id, queue: 'q', payload: id, priority: 0, maxAttempts: 3, visibilityTimeoutMs: 10_000, backoffBaseMs: 1_000, deadLetterRetentionMs: null, runAtMs: 1_000, expiresAtMs: null, key: null })
    await inner.enqueueMany({ jobs: [job('a'), job('c'), job('b')], nowMs: 1_000 })
    const running = await inner.claimDue({ queue: 'q', nowMs: 2_000, claimTokens: ['t-a', 't-c'] })
    expect(running.map((claimed) => claimed.id)).toEqual(['a', 'c'])
    const answer = await store.ackAndClaimDue({ acks: [{ id: 'a', claimToken: 't-a' }, { id: 'c', claimToken: 'stale' }], queue: 'q', nowMs: 3_000, claimTokens: ['t-b'] })
    expect(calls).toEqual(['claimDue', 'ack', 'ack'])
    expect(answer.acked).toEqual(['a'])
    expect(answer.claimed.map((claimed) => [claimed.id, claimed.claimToken])).toEqual([['b', 't-b']])
  })
})
