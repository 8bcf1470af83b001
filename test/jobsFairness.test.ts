/**
 * Fairness keys through the jobs API on the memory stores and a ManualClock: a light key that
 * enqueues behind a heavy key's backlog is claimed alternately with it; the handle's weights win
 * over the enqueue's; bad keys, weights and weight maps are a typed InvalidInput with nothing
 * written; enqueueMany and an outbox take keys too. The store's order itself is held by the
 * JobStore conformance suite (JobFairnessConformance).
 */
import { describe, expect, it } from 'vitest'
import { InvalidInput, ManualClock, type Matchbox, open } from '../src/index.ts'

const start = 1_700_000_000_000

async function engine(): Promise<Matchbox> {
  return open({ store: 'memory', clock: new ManualClock(start), seed: 7, hostId: 'fair' })
}

// Claims `count` jobs one at a time and answers their payloads' keys in claim order.
async function claimKeys(mb: Matchbox, queue: string, count: number): Promise<string[]> {
  const q = mb.queue<{ key: string }>(queue)
  const keys: string[] = []
  for (let n = 0; n < count; n++) {
    const job = await q.claim()
    if (job === null) break
    keys.push(job.payload.key)
  }
  return keys
}

describe('jobs API: fairness keys', () => {
  it('a light key behind a heavy backlog is claimed alternately with it', async () => {
    const mb = await engine()
    const q = mb.queue<{ key: string }>('tenants')
    for (let n = 0; n < 10; n++) await q.enqueue({ key: 'heavy' }, { fairnessKey: 'heavy' })
    for (let n = 0; n < 2; n++) await q.enqueue({ key: 'light' }, { fairnessKey: 'light' })
    expect(await claimKeys(mb, 'tenants', 5)).toEqual(['heavy', 'light', 'heavy', 'light', 'heavy'])
    await mb.close()
  })

  it("the handle's fairnessWeights win over the enqueue's weight", async () => {
    const mb = await engine()
    // 'gold' asks for weight 1 at enqueue, but the handle gives it 3: three of every four claims.
    const q = mb.queue<{ key: string }>('weighted', { fairnessWeights: { gold: 3 } })
    for (let n = 0; n < 12; n++) await q.enqueue({ key: 'gold' }, { fairnessKey: 'gold', fairnessWeight: 1 })
    for (let n = 0; n < 12; n++) await q.enqueue({ key: 'base' }, { fairnessKey: 'base' })
    const keys = await claimKeys(mb, 'weighted', 8)
    expect(keys.filter((key) => key === 'gold')).toHaveLength(6)
    await mb.close()
  })

  it("enqueueMany takes keys per job, ordered as the same enqueues, and the handle's weights win there too", async () => {
    const mb = await engine()
    const q = mb.queue<{ key: string }>('batched', { fairnessWeights: { gold: 3 } })
    await q.enqueueMany([
      ...Array.from({ length: 12 }, () => ({ payload: { key: 'gold' }, fairnessKey: 'gold', fairnessWeight: 1 })),
      ...Array.from({ length: 12 }, () => ({ payload: { key: 'base' }, fairnessKey: 'base' })),
    ])
    const keys = await claimKeys(mb, 'batched', 8)
    expect(keys.filter((key) => key === 'gold')).toHaveLength(6)
    await mb.close()
  })

  it('an outbox is a queue: its enqueue and enqueueMany take fairness keys', async () => {
    const mb = await engine()
    const outbox = mb.outbox<{ key: string }>('events')
    for (let n = 0; n < 6; n++) await outbox.enqueue({ key: 'heavy' }, { fairnessKey: 'heavy' })
    await outbox.enqueueMany([0, 1].map(() => ({ payload: { key: 'light' }, fairnessKey: 'light' })))
    const keys: string[] = []
    for (let n = 0; n < 4; n++) keys.push((await outbox.claim())?.payload.key ?? 'none')
    expect(keys).toEqual(['heavy', 'light', 'heavy', 'light'])
    await mb.close()
  })

  it('refuses bad keys, weights and weight maps with InvalidInput, writing nothing', async () => {
    const mb = await engine()
    const q = mb.queue('refusals')
    await expect(q.enqueue(1, { fairnessKey: 'x'.repeat(65) })).rejects.toBeInstanceOf(InvalidInput)
    await expect(q.enqueue(1, { fairnessKey: 'x', fairnessWeight: 0 })).rejects.toBeInstanceOf(InvalidInput)
    await expect(q.enqueueMany([{ payload: 1 }, { payload: 2, fairnessKey: 'x'.repeat(65) }])).rejects.toMatchObject({ field: 'jobs[1].fairnessKey' })
    expect(() => mb.queue('refusals', { fairnessWeights: { x: 2000 } })).toThrow(InvalidInput)
    // The empty name is the implicit key's (the unkeyed jobs' turns): neither a job nor a handle can name it.
    await expect(q.enqueue(1, { fairnessKey: '' })).rejects.toBeInstanceOf(InvalidInput)
    expect(() => mb.queue('refusals', { fairnessWeights: { '': 2 } })).toThrow(InvalidInput)
    const tooMany = Object.fromEntries(Array.from({ length: 1001 }, (_, n) => [`k${n}`, 1]))
    expect(() => mb.queue('refusals', { fairnessWeights: tooMany })).toThrow(InvalidInput)
    expect(await q.claim()).toBeNull()
    await mb.close()
  })
})
