/**
 * JobFairnessConformance — weighted fairness keys on a job store: within a priority, the keys of
 * a queue are claimed in proportion to their weights (stride scheduling on the queue's virtual
 * time), FIFO within a key; a job without a key is ordered by its due time as in a queue without
 * keys; a key's state carries over between its jobs; bad keys and weights are refused with
 * nothing written.
 *
 * Setup shared by the cases: jobs are enqueued at 1 000 ms, due then, and claimed with claimDue
 * (the head of the queue in claim order) one token at a time unless a case says otherwise.
 */
import { describe, expect, it } from 'vitest'
import { InvalidInput } from '../../../domain/errors.ts'
import type { NewJob } from '../JobStore.ts'
import type { JobFixture } from './JobFixture.ts'

/** Registers the fairness cases on `fixture`'s store. */
export function describeJobFairnessConformance(fixture: JobFixture): void {
  const { store } = fixture
  const nowMs = 1_000

  // Enqueues `count` jobs of `key` (payload { key, n }) one at a time; answers their ids in order.
  const enqueueKeyed = async (queue: string, key: string | null, count: number, extra: Partial<NewJob> = {}): Promise<string[]> => {
    const ids: string[] = []
    for (let n = 0; n < count; n++) {
      const job = fixture.job(queue, { payload: { key, n }, ...(key === null ? {} : { fairnessKey: key }), ...extra })
      ids.push((await store().enqueue({ job, nowMs })).id)
    }
    return ids
  }
  // Claims the queue's head `count` times, one job each; answers the claimed payloads.
  const drainOneByOne = async (queue: string, count: number): Promise<Array<{ key: string | null; n: number }>> => {
    const order: Array<{ key: string | null; n: number }> = []
    for (let n = 0; n < count; n++) {
      const [job] = await store().claimDue({ queue, nowMs, claimTokens: [fixture.id('t')] })
      if (job === undefined) break
      order.push(job.payload as { key: string | null; n: number })
    }
    return order
  }

  describe('fairness keys', () => {
    it('a light key that arrives behind a heavy key is claimed alternately with it, not after its backlog', async () => {
      const queue = fixture.queue('fair-heavy')
      await enqueueKeyed(queue, 'heavy', 20)
      await enqueueKeyed(queue, 'light', 3)
      const order = await drainOneByOne(queue, 23)
      expect(order.slice(0, 6)).toEqual([
        { key: 'heavy', n: 0 },
        { key: 'light', n: 0 },
        { key: 'heavy', n: 1 },
        { key: 'light', n: 1 },
        { key: 'heavy', n: 2 },
        { key: 'light', n: 2 },
      ])
      // FIFO within a key: the heavy key's jobs in the order they were enqueued.
      expect(order.filter((job) => job.key === 'heavy').map((job) => job.n)).toEqual(Array.from({ length: 20 }, (_, n) => n))
    })

    it('without keys the same jobs are claimed in due order: the light ones after the backlog', async () => {
      const queue = fixture.queue('fair-unkeyed')
      await enqueueKeyed(queue, null, 20)
      const light = await enqueueKeyed(queue, null, 3)
      const claimed = await store().claimDue({ queue, nowMs, claimTokens: Array.from({ length: 23 }, () => fixture.id('t')) })
      expect(claimed.slice(20).map((job) => job.id)).toEqual(light)
    })

    it('weights 3:1 give 3:1 claims while both keys have jobs, in one several-row claim as one by one', async () => {
      const queue = fixture.queue('fair-weights')
      await enqueueKeyed(queue, 'three', 40, { fairnessWeight: 3 })
      await enqueueKeyed(queue, 'one', 40, { fairnessWeight: 1 })
      const claimed = await store().claimDue({ queue, nowMs, claimTokens: Array.from({ length: 40 }, () => fixture.id('t')) })
      const three = claimed.filter((job) => (job.payload as { key: string }).key === 'three').length
      expect(three).toBeGreaterThanOrEqual(29)
      expect(three).toBeLessThanOrEqual(31)
    })

    it('priority comes first: a higher-priority job without a key is claimed before every keyed job', async () => {
      const queue = fixture.queue('fair-priority')
      await enqueueKeyed(queue, 'a', 3)
      const [urgent] = await enqueueKeyed(queue, null, 1, { priority: 5 })
      const [first] = await store().claimDue({ queue, nowMs, claimTokens: [fixture.id('t')] })
      expect(first?.id).toBe(urgent)
    })

    it('a key new to the queue enters at the head (the virtual now), not at its due time: it banks no credit', async () => {
      const queue = fixture.queue('fair-carry')
      await enqueueKeyed(queue, 'busy', 3)
      await drainOneByOne(queue, 1)
      // busy's remaining jobs hold passes 2 000 and 3 000; idle enters at the head's 2 000, behind
      // busy's job there by ready order, and not at its due time 1 000, which would put it first.
      await enqueueKeyed(queue, 'idle', 1)
      const order = await drainOneByOne(queue, 3)
      expect(order).toEqual([
        { key: 'busy', n: 1 },
        { key: 'idle', n: 0 },
        { key: 'busy', n: 2 },
      ])
    })

    it('getJob shows a live job its keys and pass: a key\'s passes step by its stride, an unkeyed job has none', async () => {
      const queue = fixture.queue('fair-read')
      const heavy = await enqueueKeyed(queue, 'heavy', 3, { fairnessWeight: 4, concurrencyKey: 'c', concurrencyLimit: 5 })
      const [plain] = await enqueueKeyed(queue, null, 1)
      const read = async (id: string | undefined) => await store().getJob({ queue, id: id as string })
      // Stride 1000 / 4 = 250 from the head's 1 000.
      expect(await Promise.all(heavy.map(async (id) => (await read(id))?.fairPass))).toEqual([1_000, 1_250, 1_500])
      expect(await read(heavy[0])).toMatchObject({ fairnessKey: 'heavy', concurrencyKey: 'c' })
      const unkeyed = await read(plain)
      expect([unkeyed?.fairnessKey, unkeyed?.fairPass, unkeyed?.concurrencyKey]).toEqual([undefined, undefined, undefined])
    })

    it('an enqueue answered by its job key\'s live holder leaves the fairness key\'s pass where it was', async () => {
      const queue = fixture.queue('fair-dedup')
      const [held] = await enqueueKeyed(queue, 'a', 1, { key: 'once' })
      // Answered by the holder: nothing written, so the key's next job is one stride on, not two.
      expect(await enqueueKeyed(queue, 'a', 2, { key: 'once' })).toEqual([held, held])
      const [next] = await enqueueKeyed(queue, 'a', 1)
      expect((await store().getJob({ queue, id: next as string }))?.fairPass).toBe(2_000)
    })

    it('refuses a key over 64 bytes, a weight out of 0.001…1000, and keyed jobs in enqueueMany, writing nothing', async () => {
      const queue = fixture.queue('fair-input')
      const bad: Array<Partial<NewJob>> = [
        { fairnessKey: 'k'.repeat(65) },
        { fairnessKey: 'k', fairnessWeight: 0 },
        { fairnessKey: 'k', fairnessWeight: 1001 },
        { fairnessKey: 'k', fairnessWeight: Number.NaN },
        { fairnessWeight: 0.0001 },
      ]
      for (const overrides of bad) await expect(store().enqueue({ job: fixture.job(queue, overrides), nowMs })).rejects.toBeInstanceOf(InvalidInput)
      await expect(store().enqueueMany({ jobs: [fixture.job(queue), fixture.job(queue, { fairnessKey: 'k' })], nowMs })).rejects.toBeInstanceOf(InvalidInput)
      expect(await store().claimDue({ queue, nowMs, claimTokens: [fixture.id('t')] })).toEqual([])
      // At the bounds, accepted.
      await store().enqueue({ job: fixture.job(queue, { fairnessKey: 'k'.repeat(64), fairnessWeight: 1000 }), nowMs })
      await store().enqueue({ job: fixture.job(queue, { fairnessKey: 'k', fairnessWeight: 0.001 }), nowMs })
      expect(await store().claimDue({ queue, nowMs, claimTokens: [fixture.id('t'), fixture.id('t')] })).toHaveLength(2)
    })
  })
}
