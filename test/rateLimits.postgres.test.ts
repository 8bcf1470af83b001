/**
 * Rate limits across independent connections (JobStore.ts's "Rate limits"): two job stores on
 * two separate `pg` Pools share one fresh database, as two engines do. In each race both stores
 * fire, all at once, every kind of claim that can start a job (claimDue batches, claim and
 * claimMany by id, ackAndClaimDue riding acks of what they hold, and an enqueue handed a claim
 * token) at one queue with a queue-wide limit and a per-key limit, whose jobs have two fairness
 * keys and none, round after round while the injected clock moves on, each claim's clock up
 * to `skewMs` ahead of the round's. After every round the checker counts the starts — what the
 * stores answered claimed, and what the table says left pending — against the bound: at most
 * burst + perSecond × (the latest clock any claim used − the buckets' creation) for the queue
 * and for each key (the implicit key of unkeyed jobs included).
 *
 * SKIP LOCKED on the job rows alone would let two claims spend one token twice; what stops them
 * is the bucket's row, locked by the claim and read through that lock (rateSql.ts). The races
 * must actually contend — claims refused while jobs wait, and the queue's starts reaching the
 * bound exactly — which is asserted, or the test would pass vacuously.
 * `SIM_SEED=<seed>` replays the choices of claim kinds, sizes and clocks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Random, seedFromEntropy } from '../src/kernel/Random.ts'
import type { ClaimRef, JobRecord, JobStore, NewJob, RateLimit } from '../src/persistence/jobs/JobStore.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { freshDatabase } from './harness/database.ts'

const seed = process.env.SIM_SEED !== undefined && process.env.SIM_SEED !== '' ? Number(process.env.SIM_SEED) : (seedFromEntropy() >>> 0) % 2 ** 31
console.log(`rate limit races: SIM_SEED=${seed}`)
const random = Random.make(seed)

const races = 12
const rounds = 12
const queueLimit: RateLimit = { perSecond: 5, burst: 3 }
const keyLimit: RateLimit = { perSecond: 2, burst: 2 }
const createdMs = 1_000
const skewMs = 50
const keys = ['a', 'b', null] as const

// The most starts a bucket of `limit` created at `createdMs` allows by `latestMs`.
const boundOf = (limit: RateLimit, latestMs: number): number => Math.floor(limit.burst + (limit.perSecond * (latestMs - createdMs)) / 1000 + 1e-9)

describe('rate limits across two pools (PostgreSQL)', () => {
  let stores: JobStore[]
  beforeAll(async () => {
    const connectionString = await freshDatabase('rate_limits')
    stores = [await openSqlJobStore(makePgDriver({ connectionString })), await openSqlJobStore(makePgDriver({ connectionString }))]
  })
  afterAll(async () => {
    for (const store of stores ?? []) await store.close()
  })

  let counter = 0
  const id = (label: string): string => `${label}-${++counter}`
  const job = (queue: string, key: string | null, extra: Partial<NewJob> = {}): NewJob => ({
    id: id('job'), queue, payload: key, priority: 0, runAtMs: createdMs, expiresAtMs: null, maxAttempts: 3, visibilityTimeoutMs: 600_000, backoffBaseMs: 0, deadLetterRetentionMs: null,
    rateLimit: queueLimit, rateLimitPerKey: keyLimit, ...(key === null ? {} : { fairnessKey: key }), ...extra,
  })

  // One claim of a kind drawn from `stream`, through `store` at `nowMs`, acking some of `held` on the way.
  const claimOnce = async (store: JobStore, queue: string, ids: ReadonlyArray<string>, held: ClaimRef[], stream: Random, nowMs: number): Promise<{ asked: number; claimed: JobRecord[]; inserted?: number }> => {
    const tokens = Array.from({ length: 1 + stream.int(0, 3) }, () => id('t'))
    const pick = (): string => ids[stream.int(0, ids.length - 1)] ?? 'missing'
    switch (stream.int(0, 4)) {
      case 0:
        return { asked: tokens.length, claimed: [...(await store.claimDue({ queue, nowMs, claimTokens: tokens }))] }
      case 1: {
        const outcome = await store.claim({ id: pick(), claimToken: id('t'), nowMs })
        return { asked: 1, claimed: outcome.kind === 'claimed' ? [outcome.job] : [] }
      }
      case 2: {
        const outcomes = await store.claimMany({ claims: tokens.map((claimToken) => ({ id: pick(), claimToken })), nowMs })
        return { asked: tokens.length, claimed: outcomes.flatMap((outcome) => (outcome.kind === 'claimed' ? [outcome.job] : [])) }
      }
      case 3: {
        // A handle without limits hands its job over claimed: the queue's buckets refuse it.
        const key = keys[stream.int(0, 2)] ?? null
        const record = await store.enqueue({ job: job(queue, key, { rateLimit: null, rateLimitPerKey: null, runAtMs: nowMs }), nowMs, claimToken: id('t') })
        return { asked: 1, claimed: record.state === 'processing' ? [record] : [], inserted: 1 }
      }
      default: {
        const acks = held.splice(0, stream.int(1, 2))
        return { asked: tokens.length, claimed: [...(await store.ackAndClaimDue({ acks, queue, nowMs, claimTokens: tokens })).claimed] }
      }
    }
  }

  it(`${races} races of every claim kind from two pools at skewed clocks: never more starts than burst + refill`, async () => {
    const violations: string[] = []
    let refusedWhileWaiting = 0
    let reachedBound = 0
    for (let race = 0; race < races; race++) {
      const stream = random.fork()
      const queue = `rate-race-${race}`
      const enqueued: string[] = []
      for (const key of keys) for (let n = 0; n < 8; n++) enqueued.push((await (stores[n % 2] as JobStore).enqueue({ job: job(queue, key), nowMs: createdMs })).id)
      const held: ClaimRef[] = []
      const started = new Map<string, number>()
      let handed = 0
      let latestMs = createdMs
      let roundMs = createdMs
      for (let round = 0; round < rounds; round++) {
        const attempts = 6 + stream.int(0, 5)
        const clocks = Array.from({ length: attempts }, () => roundMs + stream.int(0, skewMs))
        latestMs = Math.max(latestMs, ...clocks)
        const answers = await Promise.all(clocks.map((nowMs, n) => claimOnce(stores[n % 2] as JobStore, queue, enqueued, held, stream.fork(), nowMs)))
        const claimed = answers.flatMap((answer) => answer.claimed)
        held.push(...claimed.map((record) => ({ id: record.id, claimToken: record.claimToken as string })))
        for (const record of claimed) {
          const key = typeof record.payload === 'string' ? record.payload : ''
          started.set(key, (started.get(key) ?? 0) + 1)
        }
        handed += answers.reduce((sum, answer) => sum + (answer.inserted ?? 0), 0)
        const total = [...started.values()].reduce((sum, count) => sum + count, 0)
        const bound = boundOf(queueLimit, latestMs)
        if (total > bound) violations.push(`race ${race} round ${round}: ${total} started by ${latestMs}, bound ${bound}`)
        if (total === bound) reachedBound++
        for (const [key, count] of started) {
          if (count > boundOf(keyLimit, latestMs)) violations.push(`race ${race} round ${round}: key '${key}' ${count} started by ${latestMs}, bound ${boundOf(keyLimit, latestMs)}`)
        }
        // The table agrees: every enqueued job not pending was started (nothing lapses or is released).
        const pendingNow = (await (stores[0] as JobStore).countJobs({ queue })).pending
        const enqueuedNow = enqueued.length + handed
        if (enqueuedNow - pendingNow !== total) violations.push(`race ${race} round ${round}: the table shows ${enqueuedNow - pendingNow} started, the stores answered ${total}`)
        if (answers.some((answer) => answer.claimed.length < answer.asked) && pendingNow > 0) refusedWhileWaiting++
        // Ack about half of what is held; the clock moves on 100–300 ms.
        const settling = held.splice(0, Math.ceil(held.length / 2))
        await Promise.all(settling.map((claim, n) => stores[n % 2]?.ack({ ...claim, nowMs: latestMs })))
        roundMs += 100 + stream.int(0, 200)
      }
    }
    expect(violations).toEqual([])
    expect(refusedWhileWaiting).toBeGreaterThan(0)
    expect(reachedBound).toBeGreaterThan(0)
  })
})
