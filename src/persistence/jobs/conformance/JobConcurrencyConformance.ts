/**
 * JobConcurrencyConformance — per-key concurrency limits on a job store (JobStore.ts's
 * "Concurrency keys"): at most a key's limit (its latest enqueue's) of its queue's jobs are processing at once, whichever
 * claim takes them and whichever of two stores on the same data (the fixture's `peer`) runs it; a
 * key at its limit is skipped, not waited on, so other keys' and unkeyed jobs go on; every exit
 * from processing (ack, retry, fail, release, cancel, the sweep, a dead-lettered lapse) frees the
 * slot, and a lapsed claim's slot goes to its job's next claim; bad limits and keys are refused
 * with nothing written.
 *
 * Setup shared by the cases: jobs of key `k` with limit 2 unless a case says otherwise, enqueued
 * at 1 000 ms and due then; `processingOf` counts what the store holds, so a case fails when a
 * claim lets one job too many through.
 */
import { describe, expect, it } from 'vitest'
import { InvalidInput } from '../../../domain/errors.ts'
import { jobDueScanIntervalMs } from '../../../kernel/Limits.ts'
import type { JobRecord, NewJob } from '../JobStore.ts'
import type { JobFixture } from './JobFixture.ts'

// The fixture and the helpers the concurrency-limit cases share.
function concurrencyKitOf(fixture: JobFixture) {
  const { store } = fixture
  const nowMs = 1_000

  const limited = (key: string, limit = 2): Partial<NewJob> => ({ concurrencyKey: key, concurrencyLimit: limit })
  // Enqueues `count` jobs of `queue` with `extra`; answers them in order.
  const enqueue = async (queue: string, count: number, extra: Partial<NewJob> = {}): Promise<JobRecord[]> => {
    const jobs: JobRecord[] = []
    for (let n = 0; n < count; n++) jobs.push(await store().enqueue({ job: fixture.job(queue, { payload: { n }, ...extra }), nowMs }))
    return jobs
  }
  const tokens = (count: number): string[] => Array.from({ length: count }, () => fixture.id('t'))
  const claimDue = (queue: string, count: number, at = nowMs) => store().claimDue({ queue, nowMs: at, claimTokens: tokens(count) })
  const processingOf = async (queue: string): Promise<number> => (await store().countJobs({ queue })).processing

  return { fixture, store, nowMs, limited, enqueue, tokens, claimDue, processingOf }
}

/** Registers the concurrency-limit cases on `fixture`'s store. */
export function describeJobConcurrencyConformance(fixture: JobFixture): void {
  const kit = concurrencyKitOf(fixture)
  describe('concurrency keys', () => {
    concurrencyCases1(kit)
    concurrencyCases2(kit)
    concurrencyCases3(kit)
    concurrencyCases4(kit)
  })
}

function concurrencyCases1(kit: ReturnType<typeof concurrencyKitOf>): void {
  const { fixture, store, nowMs, limited, enqueue, tokens, claimDue, processingOf } = kit
  it('claimDue takes no more jobs of a key than its limit, in one call or many', async () => {
    const queue = fixture.queue('limit-batch')
    await enqueue(queue, 5, limited('k'))
    expect(await claimDue(queue, 5)).toHaveLength(2)
    expect(await claimDue(queue, 5)).toHaveLength(0)
    expect(await claimDue(queue, 1)).toHaveLength(0)
    expect(await processingOf(queue)).toBe(2)
  })

  it('a key at its limit is skipped: the claim takes other keys and unkeyed jobs behind it', async () => {
    const queue = fixture.queue('limit-skip')
    await enqueue(queue, 3, limited('a', 1))
    await enqueue(queue, 2, limited('b', 1))
    await enqueue(queue, 2)
    const claimed: JobRecord[] = []
    for (let n = 0; n < 4; n++) claimed.push(...(await claimDue(queue, 1)))
    // a's first, then b's first, then the two unkeyed ones: neither key's backlog blocks the rest.
    expect(claimed).toHaveLength(4)
    expect(await processingOf(queue)).toBe(4)
    expect(await claimDue(queue, 3)).toHaveLength(0)
  })

  it('a queue whose first keyed jobs come after claims of unkeyed ones is limited from its first keyed claim', async () => {
    const queue = fixture.queue('limit-late-keys')
    await enqueue(queue, 2)
    const [plain] = await claimDue(queue, 1)
    await enqueue(queue, 4, limited('k', 2))
    // The ack rides on the claim that first meets the keys.
    const { acked, claimed } = await store().ackAndClaimDue({ acks: [{ id: (plain as JobRecord).id, claimToken: (plain as JobRecord).claimToken as string }], queue, nowMs, claimTokens: tokens(4) })
    expect(acked).toEqual([(plain as JobRecord).id])
    expect(claimed).toHaveLength(3)
    expect(await claimDue(queue, 4)).toHaveLength(0)
    expect(await processingOf(queue)).toBe(3)
    // And on the peer, whose first claim of the queue this is.
    expect(await fixture.peer().claimDue({ queue, nowMs, claimTokens: tokens(4) })).toHaveLength(0)
  })

  it('an ack riding on the first claim of a queue frees its key’s slot for that claim, whichever way the job was claimed', async () => {
    const queue = fixture.queue('limit-riding-ack')
    const [first, second] = await enqueue(queue, 2, limited('k', 1))
    // A Matching delivery claims the first by id: the key is full.
    const token = fixture.id('t')
    expect((await store().claimMany({ claims: [{ id: first?.id as string, claimToken: token }], nowMs }))[0]?.kind).toBe('claimed')
    // The queue's first claim from the store rides the first job's ack: the slot it frees takes the second.
    const answer = await store().ackAndClaimDue({ acks: [{ id: first?.id as string, claimToken: token }], queue, nowMs, claimTokens: tokens(1) })
    expect(answer.acked).toEqual([first?.id])
    expect(answer.claimed.map((job) => job.id)).toEqual([second?.id])
    expect(await processingOf(queue)).toBe(1)
    expect(await claimDue(queue, 1)).toHaveLength(0)
  })

  it('jobs without a key are never limited', async () => {
    const queue = fixture.queue('limit-unkeyed')
    await enqueue(queue, 6)
    expect(await claimDue(queue, 6)).toHaveLength(6)
  })

  it('a key is counted per queue: the same key in another queue has its own slots', async () => {
    const one = fixture.queue('limit-queue-a')
    const two = fixture.queue('limit-queue-b')
    await enqueue(one, 2, limited('k', 1))
    await enqueue(two, 2, limited('k', 1))
    expect(await claimDue(one, 2)).toHaveLength(1)
    expect(await claimDue(two, 2)).toHaveLength(1)
  })
}

function concurrencyCases2(kit: ReturnType<typeof concurrencyKitOf>): void {
  const { fixture, store, nowMs, limited, enqueue, tokens, claimDue, processingOf } = kit
  it('claim and claimMany refuse a job of a full key as limited; takeDue passes it over until the slot frees', async () => {
    const queue = fixture.queue('limit-by-id')
    const [first, second, third] = await enqueue(queue, 3, limited('k', 1))
    const outcome = await store().claim({ id: (first as JobRecord).id, claimToken: fixture.id('t'), nowMs })
    expect(outcome.kind).toBe('claimed')
    expect(await store().claim({ id: (second as JobRecord).id, claimToken: fixture.id('t'), nowMs })).toEqual({ kind: 'obsolete', reason: 'limited' })
    const batch = await store().claimMany({ claims: [(second as JobRecord).id, (third as JobRecord).id].map((id) => ({ id, claimToken: fixture.id('t') })), nowMs })
    expect(batch).toEqual([
      { kind: 'obsolete', reason: 'limited' },
      { kind: 'obsolete', reason: 'limited' },
    ])
    expect(await processingOf(queue)).toBe(1)
    // Due again a scan from now, but passed over by takeDue while the key is full; once the slot
    // frees, takeDue reserves as many as it has room for (one), in claim order.
    const due = (at: number) => store().takeDue({ nowMs: at, reserveUntilMs: at + 1, limit: 10, queues: [queue] })
    expect(await store().nextDueMs({ nowMs, queues: [queue] })).toBe(nowMs + jobDueScanIntervalMs)
    expect(await due(nowMs + jobDueScanIntervalMs)).toEqual([])
    if (outcome.kind === 'claimed') await store().ack({ id: outcome.job.id, claimToken: outcome.job.claimToken as string, nowMs })
    expect((await due(nowMs + jobDueScanIntervalMs)).map((job) => job.id)).toEqual([(second as JobRecord).id])
  })

  it('takeDue reserves of each key only as many jobs as its slot has room for, and every unkeyed one', async () => {
    const queue = fixture.queue('limit-reserve')
    const keyed = await enqueue(queue, 4, limited('k', 2))
    const [plain] = await enqueue(queue, 1)
    expect((await claimDue(queue, 1)).map((job) => job.id)).toEqual([keyed[0]?.id])
    // One slot of two is held: one more of k, then the unkeyed job; the other two of k stay due.
    const reserved = await store().takeDue({ nowMs, reserveUntilMs: nowMs + 1, limit: 10, queues: [queue] })
    expect(reserved.map((job) => job.id)).toEqual([keyed[1]?.id, plain?.id])
  })

  it('takeDue names each reserved job’s concurrency key, and passes over the pending jobs of the keys it is told to skip', async () => {
    const queue = fixture.queue('limit-skip')
    const [k0, k1] = await enqueue(queue, 2, limited('k', 1))
    const [j0] = await enqueue(queue, 1, limited('j', 1))
    const [plain] = await enqueue(queue, 1)
    // The head is k's: its slot has room for one, so the first ask reserves k's first job only.
    const first = await store().takeDue({ nowMs, reserveUntilMs: nowMs + 1, limit: 1, queues: [queue] })
    expect(first.map((job) => [job.id, job.concurrencyKey])).toEqual([[k0?.id, 'k']])
    // Asked again past k (whose reserved job holds no slot yet): j's job and the unkeyed one, never k's second.
    const again = await store().takeDue({ nowMs, reserveUntilMs: nowMs + 1, limit: 3, queues: [queue], skipConcurrencyKeys: ['k'] })
    expect(again.map((job) => [job.id, job.concurrencyKey])).toEqual([[j0?.id, 'j'], [plain?.id, undefined]])
    expect(again.map((job) => job.id)).not.toContain(k1?.id)
    await expect(store().takeDue({ nowMs, reserveUntilMs: nowMs + 1, limit: 1, queues: [queue], skipConcurrencyKeys: [''] })).rejects.toMatchObject({ _tag: 'InvalidInput' })
  })

  it('the limit is the key’s, set by its latest enqueue', async () => {
    const queue = fixture.queue('limit-latest')
    await enqueue(queue, 2, limited('k', 1))
    expect(await claimDue(queue, 2)).toHaveLength(1)
    await enqueue(queue, 3, limited('k', 3))
    // Raised to 3: two more of the four pending; the first job's claim already holds one.
    expect(await claimDue(queue, 4)).toHaveLength(2)
    expect(await processingOf(queue)).toBe(3)
  })

  it('claimMany admits a key’s jobs in the order given, up to its limit', async () => {
    const queue = fixture.queue('limit-many')
    const jobs = await enqueue(queue, 4, limited('k', 2))
    const outcomes = await store().claimMany({ claims: jobs.map((job) => ({ id: job.id, claimToken: fixture.id('t') })), nowMs })
    expect(outcomes.map((outcome) => outcome.kind)).toEqual(['claimed', 'claimed', 'obsolete', 'obsolete'])
    expect(await processingOf(queue)).toBe(2)
  })

  it('the limit holds across two stores claiming at once', async () => {
    const queue = fixture.queue('limit-peers')
    const jobs = await enqueue(queue, 12, limited('k', 3))
    const stores = [fixture.store(), fixture.peer()]
    const peerOf = (n: number) => stores[n % 2] ?? store()
    const [byHead, byId] = await Promise.all([
      Promise.all(Array.from({ length: 8 }, (_, n) => peerOf(n).claimDue({ queue, nowMs, claimTokens: tokens(2) }))),
      Promise.all(jobs.map((job, n) => peerOf(n + 1).claim({ id: job.id, claimToken: fixture.id('t'), nowMs }))),
    ])
    const claimed = [...byHead.flat(), ...byId.flatMap((outcome) => (outcome.kind === 'claimed' ? [outcome.job] : []))]
    expect(claimed).toHaveLength(3)
    expect(await processingOf(queue)).toBe(3)
  })
}

function concurrencyCases3(kit: ReturnType<typeof concurrencyKitOf>): void {
  const { fixture, store, nowMs, limited, enqueue, tokens, claimDue, processingOf } = kit
  it('ack, retry, fail, release and cancel each free the slot', async () => {
    const queue = fixture.queue('limit-free')
    await enqueue(queue, 7, limited('k', 1))
    const next = async (): Promise<JobRecord> => {
      const [job] = await claimDue(queue, 2)
      expect(await processingOf(queue)).toBe(1)
      return job ?? expect.fail('the slot was not freed')
    }
    let job = await next()
    expect(await store().ack({ id: job.id, claimToken: job.claimToken as string, nowMs })).toBe(true)
    job = await next()
    expect(await store().retry({ id: job.id, claimToken: job.claimToken as string, error: 'e', delayMs: 60_000, nowMs })).toEqual({ kind: 'retried', runAtMs: nowMs + 60_000 })
    job = await next()
    expect(await store().fail({ id: job.id, claimToken: job.claimToken as string, error: 'e', nowMs })).toBe(true)
    job = await next()
    expect(await store().release({ claims: [{ id: job.id, claimToken: job.claimToken as string }], nowMs })).toEqual([job.id])
    job = await next()
    expect(await store().cancel({ queue, id: job.id })).toBe(true)
    job = await next()
    // ackAndClaimDue: the ack's slot is the claim's.
    const { acked, claimed } = await store().ackAndClaimDue({ acks: [{ id: job.id, claimToken: job.claimToken as string }], queue, nowMs, claimTokens: tokens(2) })
    expect(acked).toEqual([job.id])
    expect(claimed).toHaveLength(1)
    expect(await processingOf(queue)).toBe(1)
  })

  it('a lapsed claim keeps its slot for its job’s next claim, and frees it when it is dead-lettered', async () => {
    const queue = fixture.queue('limit-lapse')
    const [lapsing] = await enqueue(queue, 1, { ...limited('k', 1), visibilityTimeoutMs: 1_000 })
    await enqueue(queue, 2, limited('k', 1))
    const [first] = await claimDue(queue, 1)
    expect(first?.id).toBe(lapsing?.id)
    // Lapsed: claimed again in its own slot, and nothing else of the key beside it.
    const again = await claimDue(queue, 3, nowMs + 2_000)
    expect(again.map((job) => job.id)).toEqual([lapsing?.id])
    expect(await processingOf(queue)).toBe(1)
    // Its budget spent at the next lapse (one attempt left of three is used here), it dies and frees the slot.
    const [third] = await claimDue(queue, 1, nowMs + 60_000)
    expect(third?.id).toBe(lapsing?.id)
    await store().takeDue({ nowMs: nowMs + 120_000, reserveUntilMs: nowMs + 150_000, limit: 0, queues: [queue] })
    expect(await store().getJob({ queue, id: (lapsing as JobRecord).id })).toMatchObject({ state: 'dead' })
    expect(await claimDue(queue, 3, nowMs + 120_000)).toHaveLength(1)
  })

  it('an expired processing job swept to dead frees its slot', async () => {
    const queue = fixture.queue('limit-sweep')
    await enqueue(queue, 1, { ...limited('k', 1), expiresAtMs: 5_000 })
    await enqueue(queue, 1, limited('k', 1))
    expect(await claimDue(queue, 2)).toHaveLength(1)
    expect(await store().sweepExpired({ queue, nowMs: 5_000 })).toMatchObject({ dead: 1 })
    expect(await claimDue(queue, 2, 5_000)).toHaveLength(1)
  })


}

function concurrencyCases4(kit: ReturnType<typeof concurrencyKitOf>): void {
  const { fixture, store, nowMs, limited, enqueue, claimDue, processingOf } = kit
  it('a lapsed claim that expired frees its slot at the next due-time pass, without a sweep: dead of its expiry', async () => {
    const queue = fixture.queue('limit-expired-lapse')
    const [expiring] = await enqueue(queue, 1, { ...limited('k', 1), expiresAtMs: 5_000 })
    const [waiting] = await enqueue(queue, 1, limited('k', 1))
    expect((await claimDue(queue, 2)).map((job) => job.id)).toEqual([expiring?.id])
    // The claim lapses at 31,000, long after the job expired: it can never run again, yet it held the key.
    const lapsedAt = nowMs + 30_000
    expect((await store().dueQueues({ nowMs: lapsedAt, limit: 10_000 })).map((entry) => entry.queue)).toContain(queue)
    await store().takeDue({ nowMs: lapsedAt, reserveUntilMs: lapsedAt + 1, limit: 10, queues: [queue] })
    expect(await store().getJob({ queue, id: (expiring as JobRecord).id })).toMatchObject({ state: 'dead', lastError: 'expired', diedAtMs: lapsedAt })
    expect(await processingOf(queue)).toBe(0)
    // The slot is free for the waiting job (the SQL pass reads the slots as they were before it
    // freed one, so the pass itself may or may not have reserved it; either way it is due by now).
    expect((await claimDue(queue, 2, lapsedAt + 1)).map((job) => job.id)).toEqual([waiting?.id])
  })
  it('a lapsed claim handed to Matching again that then expired frees its slot at the next due-time pass too', async () => {
    const queue = fixture.queue('limit-expired-with-matching')
    const [expiring] = await enqueue(queue, 1, { ...limited('k', 1), expiresAtMs: 40_000 })
    const [waiting] = await enqueue(queue, 1, limited('k', 1))
    expect((await claimDue(queue, 2)).map((job) => job.id)).toEqual([expiring?.id])
    // Its claim lapses at 31,000, before its expiry: a pass hands it to Matching (due null).
    const lapsedAt = nowMs + 30_000
    const reserved = await store().takeDue({ nowMs: lapsedAt, reserveUntilMs: lapsedAt + 1_000, limit: 10, queues: [queue] })
    expect(reserved.map((due) => due.id)).toEqual([expiring?.id])
    expect(await store().confirmDelivered({ deliveries: reserved.map(({ id, revision }) => ({ id, revision })) })).toBe(1)
    // Expired since, it can never run again; its task's claim may never come. The next pass buries it.
    const passAt = 45_000
    await store().takeDue({ nowMs: passAt, reserveUntilMs: passAt + 1, limit: 10, queues: [queue] })
    expect(await store().getJob({ queue, id: (expiring as JobRecord).id })).toMatchObject({ state: 'dead', lastError: 'expired', diedAtMs: passAt })
    expect((await claimDue(queue, 2, passAt + 1)).map((job) => job.id)).toEqual([waiting?.id])
  })

  it('retryDead gives a dead job back with its key, limited as before', async () => {
    const queue = fixture.queue('limit-retry-dead')
    const [dying] = await enqueue(queue, 1, limited('k', 1))
    const [claimed] = await claimDue(queue, 1)
    expect(claimed?.id).toBe(dying?.id)
    await store().fail({ id: (claimed as JobRecord).id, claimToken: (claimed as JobRecord).claimToken as string, error: 'e', nowMs })
    await enqueue(queue, 1, limited('k', 1))
    expect(await claimDue(queue, 1)).toHaveLength(1)
    expect((await store().retryDead({ queue, id: (dying as JobRecord).id, nowMs })).kind).toBe('retried')
    expect(await store().claim({ id: (dying as JobRecord).id, claimToken: fixture.id('t'), nowMs })).toEqual({ kind: 'obsolete', reason: 'limited' })
  })

  it('a limited job enqueued with a claim token is inserted pending; enqueueMany takes limited jobs', async () => {
    const queue = fixture.queue('limit-inserts')
    const inserted = await store().enqueue({ job: fixture.job(queue, limited('k', 1)), nowMs, claimToken: fixture.id('t') })
    expect(inserted.state).toBe('pending')
    await store().enqueueMany({ jobs: [1, 2, 3].map((n) => fixture.job(queue, { payload: { n }, ...limited('k', 1) })), nowMs })
    expect(await claimDue(queue, 4)).toHaveLength(1)
    expect(await processingOf(queue)).toBe(1)
  })

  it('refuses a limit outside 1…10,000, a key past 64 bytes and a limit without a key, writing nothing', async () => {
    const queue = fixture.queue('limit-input')
    const bad: Array<Partial<NewJob>> = [
      limited('k', 0),
      limited('k', 10_001),
      limited('k', 1.5),
      { concurrencyKey: 'k' },
      { concurrencyKey: 'é'.repeat(33), concurrencyLimit: 1 },
      { concurrencyLimit: 2 },
    ]
    for (const overrides of bad) {
      const job = fixture.job(queue, overrides)
      await expect(store().enqueue({ job, nowMs })).rejects.toBeInstanceOf(InvalidInput)
      await expect(store().enqueueMany({ jobs: [job], nowMs })).rejects.toBeInstanceOf(InvalidInput)
    }
    expect(await store().countJobs({ queue })).toEqual({ pending: 0, processing: 0, dead: 0 })
  })
}
