/**
 * JobFairnessConformance — weighted fairness keys on a job store: within a priority, the keys of
 * a queue are claimed in proportion to their weights (stride scheduling on the queue's virtual
 * time), FIFO within a key; a job without a key takes the turns of one more key of weight 1 (the
 * implicit key) in a queue that has a key's state, and is ordered by its due time in a queue
 * without; a key's state carries over between its jobs; bad keys and weights are refused with
 * nothing written.
 *
 * Setup shared by the cases: jobs are enqueued at 1 000 ms, due then, and claimed with claimDue
 * (the head of the queue in claim order) one token at a time unless a case says otherwise.
 */
import { describe, expect, it } from 'vitest'
import { InvalidInput } from '../../../domain/errors.ts'
import { fairnessStrideMax, type NewJob } from '../JobStore.ts'
import type { JobFixture } from './JobFixture.ts'

// The fixture and the helpers the fairness key cases share.
function fairnessKitOf(fixture: JobFixture) {
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

  return { fixture, store, nowMs, enqueueKeyed, drainOneByOne }
}

/** Registers the fairness cases on `fixture`'s store. */
export function describeJobFairnessConformance(fixture: JobFixture): void {
  const kit = fairnessKitOf(fixture)
  describe('fairness keys', () => {
    fairnessCases1(kit)
    fairnessCases2(kit)
  })

  describeFairBatchCases(fixture)
}

function fairnessCases1(kit: ReturnType<typeof fairnessKitOf>): void {
  const { fixture, store, nowMs, enqueueKeyed, drainOneByOne } = kit
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

  it('getJob shows a live job its keys and pass: a key\'s passes step by its stride, an unkeyed job has none in a queue without keys', async () => {
    const queue = fixture.queue('fair-read')
    const [pure] = await enqueueKeyed(queue, null, 1)
    const heavy = await enqueueKeyed(queue, 'heavy', 3, { fairnessWeight: 4, concurrencyKey: 'c', concurrencyLimit: 5 })
    const read = async (id: string | undefined) => await store().getJob({ queue, id: id as string })
    // Stride 1000 / 4 = 250 from the head's 1 000.
    expect(await Promise.all(heavy.map(async (id) => (await read(id))?.fairPass))).toEqual([1_000, 1_250, 1_500])
    expect(await read(heavy[0])).toMatchObject({ fairnessKey: 'heavy', concurrencyKey: 'c' })
    const unkeyed = await read(pure)
    expect([unkeyed?.fairnessKey, unkeyed?.fairPass, unkeyed?.concurrencyKey]).toEqual([undefined, undefined, undefined])
  })

  it('getJob shows an unkeyed job of a queue with keys the implicit key\'s pass and no fairness key', async () => {
    const queue = fixture.queue('fair-read-implicit')
    await enqueueKeyed(queue, 'a', 1)
    const plain = await enqueueKeyed(queue, null, 2)
    const read = async (id: string | undefined) => await store().getJob({ queue, id: id as string })
    // The implicit key enters at the head (1 000), then steps by weight 1's stride.
    expect(await Promise.all(plain.map(async (id) => (await read(id))?.fairPass))).toEqual([1_000, 2_000])
    const unkeyed = await read(plain[0])
    expect([unkeyed?.fairnessKey, unkeyed?.concurrencyKey]).toEqual([undefined, undefined])
  })

  it('in a queue with keys, unkeyed jobs take turns with the keys as one more key of weight 1, FIFO among themselves', async () => {
    const queue = fixture.queue('fair-implicit')
    // One keyed job, done, gives the queue fairness state: from then on it mixes keyed and unkeyed jobs.
    await enqueueKeyed(queue, 'seed', 1)
    await drainOneByOne(queue, 1)
    await enqueueKeyed(queue, null, 20)
    await enqueueKeyed(queue, 'b', 3)
    const order = await drainOneByOne(queue, 23)
    expect(order.slice(0, 6)).toEqual([
      { key: null, n: 0 },
      { key: 'b', n: 0 },
      { key: null, n: 1 },
      { key: 'b', n: 1 },
      { key: null, n: 2 },
      { key: 'b', n: 2 },
    ])
    expect(order.filter((job) => job.key === null).map((job) => job.n)).toEqual(Array.from({ length: 20 }, (_, n) => n))
  })
}

function fairnessCases2(kit: ReturnType<typeof fairnessKitOf>): void {
  const { fixture, store, nowMs, enqueueKeyed } = kit
  it('a queue without keyed state keeps unkeyed jobs in due order with no pass, whatever their priority and runAt', async () => {
    const queue = fixture.queue('fair-pure')
    const ids = [
      (await store().enqueue({ job: fixture.job(queue, { payload: { n: 0 }, runAtMs: 900 }), nowMs })).id,
      (await store().enqueue({ job: fixture.job(queue, { payload: { n: 1 }, priority: 2 }), nowMs })).id,
      (await store().enqueue({ job: fixture.job(queue, { payload: { n: 2 }, runAtMs: 500 }), nowMs })).id,
    ]
    const more = await store().enqueueMany({ jobs: [fixture.job(queue, { payload: { n: 3 }, runAtMs: 700 }), fixture.job(queue, { payload: { n: 4 } })], nowMs })
    ids.push(...more.map((job) => job.id))
    expect((await Promise.all(ids.map(async (id) => (await store().getJob({ queue, id }))?.fairPass)))).toEqual([undefined, undefined, undefined, undefined, undefined])
    const claimed = await store().claimDue({ queue, nowMs, claimTokens: Array.from({ length: 5 }, () => fixture.id('t')) })
    // Priority first, then due time (runAt, or now when earlier), then enqueue order.
    expect(claimed.map((job) => (job.payload as { n: number }).n)).toEqual([1, 0, 2, 3, 4])
  })

  it('the sweep forgets the implicit key by the rule of every key: a queue whose keys are all forgotten is without keys again', async () => {
    const queue = fixture.queue('fair-implicit-sweep')
    await enqueueKeyed(queue, 'a', 1)
    const [plain] = await enqueueKeyed(queue, null, 1)
    expect((await store().getJob({ queue, id: plain as string }))?.fairPass).toBe(1_000)
    const claimed = await store().claimDue({ queue, nowMs, claimTokens: [fixture.id('t'), fixture.id('t')] })
    for (const job of claimed) await store().ack({ id: job.id, claimToken: job.claimToken as string, nowMs })
    const later = nowMs + fairnessStrideMax
    await store().sweepExpired({ queue, nowMs: later })
    const next = await store().enqueue({ job: fixture.job(queue, { payload: { n: 1 } }), nowMs: later })
    expect((await store().getJob({ queue, id: next.id }))?.fairPass).toBeUndefined()
  })

  it('an enqueue answered by its job key\'s live holder leaves the fairness key\'s pass where it was', async () => {
    const queue = fixture.queue('fair-dedup')
    const [held] = await enqueueKeyed(queue, 'a', 1, { key: 'once' })
    // Answered by the holder: nothing written, so the key's next job is one stride on, not two.
    expect(await enqueueKeyed(queue, 'a', 2, { key: 'once' })).toEqual([held, held])
    const [next] = await enqueueKeyed(queue, 'a', 1)
    expect((await store().getJob({ queue, id: next as string }))?.fairPass).toBe(2_000)
  })

  it('refuses a key over 64 bytes and a weight out of 0.001…1000, writing nothing', async () => {
    const queue = fixture.queue('fair-input')
    const bad: Array<Partial<NewJob>> = [
      { fairnessKey: 'k'.repeat(65) },
      { fairnessKey: 'k', fairnessWeight: 0 },
      { fairnessKey: 'k', fairnessWeight: 1001 },
      { fairnessKey: 'k', fairnessWeight: Number.NaN },
      { fairnessWeight: 0.0001 },
    ]
    for (const overrides of bad) await expect(store().enqueue({ job: fixture.job(queue, overrides), nowMs })).rejects.toBeInstanceOf(InvalidInput)
    expect(await store().claimDue({ queue, nowMs, claimTokens: [fixture.id('t')] })).toEqual([])
    // At the bounds, accepted.
    await store().enqueue({ job: fixture.job(queue, { fairnessKey: 'k'.repeat(64), fairnessWeight: 1000 }), nowMs })
    await store().enqueue({ job: fixture.job(queue, { fairnessKey: 'k', fairnessWeight: 0.001 }), nowMs })
    expect(await store().claimDue({ queue, nowMs, claimTokens: [fixture.id('t'), fixture.id('t')] })).toHaveLength(2)
  })
}

// One job of a batch case: its payload names it; an unkeyed job has no `fairnessKey`.
type BatchItem = Partial<NewJob> & { readonly name: string }

// enqueueMany of keyed jobs: the same passes and claim order as that many enqueues in array
// order, a job answered by its job key's holder (live, or earlier in the batch) stepping no pass.
// The fixture and the helpers the fairness-in-enqueueMany cases share.
function fairBatchKitOf(fixture: JobFixture) {
  const { store } = fixture
  const nowMs = 1_000
  const jobOf = (queue: string, item: BatchItem): NewJob => {
    const { name, ...overrides } = item
    return fixture.job(queue, { payload: { name }, ...overrides })
  }
  // Each job's name, pass and id after `jobs` went in (answers in order).
  const passesOf = async (queue: string, answers: ReadonlyArray<{ id: string }>) =>
    await Promise.all(
      answers.map(async ({ id }) => {
        const job = await store().getJob({ queue, id })
        return { name: (job?.payload as { name: string } | undefined)?.name, fairPass: job?.fairPass }
      }),
    )
  // Every job of the queue, claimed one at a time late enough for all to be due, by name.
  const claimOrder = async (queue: string): Promise<string[]> => {
    const names: string[] = []
    for (;;) {
      const [job] = await store().claimDue({ queue, nowMs: 100_000, claimTokens: [fixture.id('t')] })
      if (job === undefined) return names
      names.push((job.payload as { name: string }).name)
    }
  }
  // `setup` then `items` enqueued one by one in one queue and as one enqueueMany in another:
  // answers each queue's passes (by item) and claim order.
  const singlesAndBatch = async (label: string, setup: ReadonlyArray<BatchItem>, items: ReadonlyArray<BatchItem>) => {
    const results = []
    for (const batched of [false, true]) {
      const queue = fixture.queue(`${label}-${batched ? 'batch' : 'singles'}`)
      for (const item of setup) await store().enqueue({ job: jobOf(queue, item), nowMs })
      // The setup's first job is claimed, so the head (the virtual now) is ahead of now.
      await store().claimDue({ queue, nowMs, claimTokens: [fixture.id('t')] })
      const jobs = items.map((item) => jobOf(queue, item))
      const answers: Array<{ id: string }> = []
      if (batched) answers.push(...(await store().enqueueMany({ jobs, nowMs })))
      else for (const job of jobs) answers.push(await store().enqueue({ job, nowMs }))
      results.push({ passes: await passesOf(queue, answers), order: await claimOrder(queue) })
    }
    return { singles: results[0], batch: results[1] }
  }

  return { fixture, store, nowMs, jobOf, passesOf, claimOrder, singlesAndBatch }
}

function describeFairBatchCases(fixture: JobFixture): void {
  const kit = fairBatchKitOf(fixture)
  describe('fairness keys in enqueueMany', () => {
    fairBatchCases1(kit)
    fairBatchCases2(kit)
  })
}

function fairBatchCases1(kit: ReturnType<typeof fairBatchKitOf>): void {
  const { fixture, store, nowMs, jobOf, passesOf, claimOrder, singlesAndBatch } = kit
  it('a batch of mixed keys, weights, priorities and runAts gets the passes and claim order of the same enqueues one by one', async () => {
    const setup: BatchItem[] = [0, 1, 2, 3].map((n) => ({ name: `heavy${n}`, fairnessKey: 'heavy' }))
    const items: BatchItem[] = [
      { name: 'a0', fairnessKey: 'a' },
      { name: 'heavy4', fairnessKey: 'heavy' },
      { name: 'a1', fairnessKey: 'a', fairnessWeight: 2 },
      { name: 'b0', fairnessKey: 'b', runAtMs: 4_500 },
      { name: 'a2', fairnessKey: 'a', priority: 3 },
      { name: 'c0', fairnessKey: 'c', priority: 3, runAtMs: 9_000 },
      { name: 'c1', fairnessKey: 'c', priority: 3, fairnessWeight: 0.5 },
      { name: 'b1', fairnessKey: 'b' },
      { name: 'a3', fairnessKey: 'a' },
    ]
    const { singles, batch } = await singlesAndBatch('fair-many', setup, items)
    expect(batch).toEqual(singles)
    // The passes are the stride schedule's, not all at the head: a's second job is one stride on.
    expect(singles?.passes.slice(0, 3)).toEqual([
      { name: 'a0', fairPass: 2_000 },
      { name: 'heavy4', fairPass: 5_000 },
      { name: 'a1', fairPass: 2_500 },
    ])
  })

  it('a batch that mixes keyed and unkeyed jobs orders them as the same enqueues one by one', async () => {
    const setup: BatchItem[] = [0, 1, 2].map((n) => ({ name: `heavy${n}`, fairnessKey: 'heavy' }))
    const items: BatchItem[] = [
      { name: 'light0', fairnessKey: 'light' },
      { name: 'plain0', runAtMs: 1_500 },
      { name: 'light1', fairnessKey: 'light' },
      { name: 'plain1' },
      { name: 'new0', fairnessKey: 'new' },
      { name: 'plain2', priority: 2, runAtMs: 3_000 },
      { name: 'new1', fairnessKey: 'new', priority: 2 },
      { name: 'heavy3', fairnessKey: 'heavy' },
    ]
    const { singles, batch } = await singlesAndBatch('fair-mixed', setup, items)
    expect(batch).toEqual(singles)
  })

  it('a batch of unkeyed jobs in a queue with keys gets the implicit key\'s passes and claim order of the same enqueues one by one', async () => {
    const setup: BatchItem[] = [0, 1, 2, 3].map((n) => ({ name: `heavy${n}`, fairnessKey: 'heavy' }))
    const items: BatchItem[] = [
      { name: 'p0' },
      { name: 'p1', runAtMs: 1_500 },
      { name: 'p2', priority: 2 },
      { name: 'p3', priority: 2, runAtMs: 3_000 },
      { name: 'p4' },
      { name: 'p5' },
    ]
    const { singles, batch } = await singlesAndBatch('fair-implicit-many', setup, items)
    expect(batch).toEqual(singles)
    // One key of weight 1 across priorities, entering at the head (heavy1's 2 000).
    expect(singles?.passes.map((job) => job.fairPass)).toEqual([2_000, 3_000, 4_000, 5_000, 6_000, 7_000])
  })

  it('a batch whose first keyed job gives a queue without keys its fairness state: the unkeyed jobs after it take the implicit key\'s turns, as one by one', async () => {
    const setup: BatchItem[] = [0, 1, 2].map((n) => ({ name: `plain${n}` }))
    const items: BatchItem[] = [
      { name: 'p0' },
      { name: 'k0', fairnessKey: 'k' },
      { name: 'p1' },
      { name: 'p2', priority: 2 },
      { name: 'k1', fairnessKey: 'k' },
      { name: 'p3' },
    ]
    const { singles, batch } = await singlesAndBatch('fair-turns-mixed', setup, items)
    expect(batch).toEqual(singles)
    expect(singles?.passes.map((job) => job.fairPass)).toEqual([undefined, 1_000, 1_000, 2_000, 2_000, 3_000])
  })

  it("chains a key's passes within the batch, FIFO within the key, and the key's next enqueue continues from the batch's last", async () => {
    const queue = fixture.queue('fair-chain')
    const jobs = [0, 1, 2].map((n) => jobOf(queue, { name: `k${n}`, fairnessKey: 'k', fairnessWeight: 4 }))
    const answers = await store().enqueueMany({ jobs, nowMs })
    expect((await passesOf(queue, answers)).map((job) => job.fairPass)).toEqual([1_000, 1_250, 1_500])
    const next = await store().enqueue({ job: jobOf(queue, { name: 'k3', fairnessKey: 'k', fairnessWeight: 4 }), nowMs })
    expect((await store().getJob({ queue, id: next.id }))?.fairPass).toBe(1_750)
    expect(await claimOrder(queue)).toEqual(['k0', 'k1', 'k2', 'k3'])
  })

  it("a job answered by its job key's holder, live or earlier in the batch, steps no pass", async () => {
    const queue = fixture.queue('fair-many-dedup')
    const held = await store().enqueue({ job: jobOf(queue, { name: 'held', fairnessKey: 'a', key: 'live' }), nowMs })
    const jobs = [
      jobOf(queue, { name: 'dup-live', fairnessKey: 'a', key: 'live' }),
      jobOf(queue, { name: 'first', fairnessKey: 'a', key: 'batch' }),
      jobOf(queue, { name: 'dup-batch', fairnessKey: 'a', key: 'batch' }),
      jobOf(queue, { name: 'next', fairnessKey: 'a' }),
    ]
    const answers = await store().enqueueMany({ jobs, nowMs })
    expect(answers.map((answer) => answer.id)).toEqual([held.id, jobs[1]?.id, jobs[1]?.id, jobs[3]?.id])
    // held 1 000, first 2 000, next 3 000: the two answered jobs took no stride.
    expect((await passesOf(queue, answers)).map((job) => job.fairPass)).toEqual([1_000, 2_000, 2_000, 3_000])
  })
}

function fairBatchCases2(kit: ReturnType<typeof fairBatchKitOf>): void {
  const { fixture, store, nowMs } = kit
  it('refuses a bad key or weight in job i naming jobs[i], with nothing written', async () => {
    const queue = fixture.queue('fair-many-input')
    const cases: Array<[Partial<NewJob>, string]> = [
      [{ fairnessKey: 'k'.repeat(65) }, 'jobs[1].fairnessKey'],
      [{ fairnessKey: '' }, 'jobs[1].fairnessKey'],
      [{ fairnessKey: 'k', fairnessWeight: 1001 }, 'jobs[1].fairnessWeight'],
      [{ fairnessKey: 'k', fairnessWeight: Number.NaN }, 'jobs[1].fairnessWeight'],
    ]
    for (const [overrides, field] of cases) {
      const jobs = [fixture.job(queue, { fairnessKey: 'k' }), fixture.job(queue, overrides), fixture.job(queue)]
      const error = await store().enqueueMany({ jobs, nowMs }).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(InvalidInput)
      expect((error as InvalidInput).field).toBe(field)
    }
    expect(await store().countJobs({ queue })).toEqual({ pending: 0, processing: 0, dead: 0 })
    // Nothing stepped either: the same batch without its bad job gives the key's first job the head.
    const [first] = await store().enqueueMany({ jobs: [fixture.job(queue, { fairnessKey: 'k' }), fixture.job(queue)], nowMs })
    expect((await store().getJob({ queue, id: first?.id as string }))?.fairPass).toBe(nowMs)
  })
}
