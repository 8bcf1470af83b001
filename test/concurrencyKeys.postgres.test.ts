/**
 * Per-key concurrency limits across independent connections (JobStore.ts's "Concurrency keys"):
 * two job stores on two separate `pg` Pools share one fresh database, as two engines do. In each
 * race both stores fire, all at once, every kind of claim (claimDue batches, claim and claimMany
 * by id, ackAndClaimDue riding acks of what they hold) at one queue whose jobs share a key of
 * limit 2 beside another key and unkeyed jobs, round after round until the queue is drained.
 * After every round the checker reads the table: no key has more rows processing than its
 * limit, and each key's slot row counts exactly its processing rows.
 *
 * SKIP LOCKED on the job rows alone would let two claims take two different jobs of one key
 * past the limit; what stops them is the key's slot row, locked by the claim and read through
 * that lock (concurrencySql.ts). The races must actually contend (more claims than the limit
 * leaves room for in one round), which is asserted, or the test would pass vacuously.
 * `SIM_SEED=<seed>` replays the choices of claim kinds and sizes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Random, seedFromEntropy } from '../src/kernel/Random.ts'
import type { ClaimRef, JobRecord, JobStore, NewJob } from '../src/persistence/jobs/JobStore.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import type { Driver } from '../src/persistence/sql/Driver.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { freshDatabase } from './harness/database.ts'

const seed = process.env.SIM_SEED !== undefined && process.env.SIM_SEED !== '' ? Number(process.env.SIM_SEED) : (seedFromEntropy() >>> 0) % 2 ** 31
console.log(`concurrency key races: SIM_SEED=${seed}`)
const random = Random.make(seed)

const races = 40
const limit = 2
const nowMs = 1_000

describe('per-key concurrency limits across two pools (PostgreSQL)', () => {
  let stores: JobStore[]
  let reader: Driver
  beforeAll(async () => {
    const connectionString = await freshDatabase('concurrency_keys')
    stores = [await openSqlJobStore(makePgDriver({ connectionString })), await openSqlJobStore(makePgDriver({ connectionString }))]
    reader = makePgDriver({ connectionString })
  })
  afterAll(async () => {
    for (const store of stores ?? []) await store.close()
    await reader?.close()
  })

  let counter = 0
  const id = (label: string): string => `${label}-${++counter}`
  const job = (queue: string, extra: Partial<NewJob>): NewJob => ({
    id: id('job'), queue, payload: null, priority: 0, runAtMs: nowMs, expiresAtMs: null, maxAttempts: 3, visibilityTimeoutMs: 600_000, backoffBaseMs: 0, deadLetterRetentionMs: null, ...extra,
  })

  // What the database holds per key of `queue`: processing rows and the slot row's count.
  const heldByKey = async (queue: string): Promise<Array<{ key: string; processing: number; held: number }>> => {
    const { rows } = await reader.query<{ key: string; processing: string; held: string }>(
      `SELECT slot.concurrency_key AS key, slot.held::text AS held,
              (SELECT count(*) FROM matchbox.jobs AS job WHERE job.queue = slot.queue AND job.concurrency_key = slot.concurrency_key AND job.state = 'processing')::text AS processing
       FROM matchbox.concurrency_slots AS slot WHERE slot.queue = $1 ORDER BY 1`,
      [queue],
    )
    return rows.map((row) => ({ key: row.key, processing: Number(row.processing), held: Number(row.held) }))
  }

  // One claim of a kind drawn from `stream`, through `store`, acking some of `held` on the way.
  const claimOnce = async (store: JobStore, queue: string, pending: ReadonlyArray<string>, held: ClaimRef[], stream: Random): Promise<JobRecord[]> => {
    const tokens = Array.from({ length: 1 + stream.int(0, 2) }, () => id('t'))
    const pick = (): string => pending[stream.int(0, pending.length - 1)] ?? 'missing'
    switch (stream.int(0, 3)) {
      case 0:
        return [...(await store.claimDue({ queue, nowMs, claimTokens: tokens }))]
      case 1: {
        const outcome = await store.claim({ id: pick(), claimToken: id('t'), nowMs })
        return outcome.kind === 'claimed' ? [outcome.job] : []
      }
      case 2: {
        const outcomes = await store.claimMany({ claims: tokens.map((claimToken) => ({ id: pick(), claimToken })), nowMs })
        return outcomes.flatMap((outcome) => (outcome.kind === 'claimed' ? [outcome.job] : []))
      }
      default: {
        const acks = held.splice(0, stream.int(1, 2))
        return [...(await store.ackAndClaimDue({ acks, queue, nowMs, claimTokens: tokens })).claimed]
      }
    }
  }

  it(`${races} races of every claim kind from two pools: no key past its limit, every slot count exact`, async () => {
    const violations: string[] = []
    let contended = 0
    for (let race = 0; race < races; race++) {
      const stream = random.fork()
      const queue = `race-${race}`
      const keyed = await Promise.all(Array.from({ length: 10 }, () => stores[0]?.enqueue({ job: job(queue, { concurrencyKey: 'k', concurrencyLimit: limit }), nowMs })))
      await stores[1]?.enqueueMany({ jobs: [...Array.from({ length: 4 }, () => job(queue, { concurrencyKey: 'other', concurrencyLimit: limit })), job(queue, {}), job(queue, {})], nowMs })
      const pending = keyed.flatMap((record) => (record === undefined ? [] : [record.id]))
      const held: ClaimRef[] = []
      for (let round = 0; round < 20 && (await stores[0]?.countJobs({ queue }))?.pending !== 0; round++) {
        const attempts = 6 + stream.int(0, 5)
        const claimed = (await Promise.all(Array.from({ length: attempts }, (_, n) => claimOnce(stores[n % 2] as JobStore, queue, pending, held, stream.fork())))).flat()
        held.push(...claimed.map((record) => ({ id: record.id, claimToken: record.claimToken as string })))
        if (attempts > limit) contended++
        for (const key of await heldByKey(queue)) {
          if (key.processing > limit) violations.push(`race ${race} round ${round}: key ${key.key} has ${key.processing} processing, limit ${limit}`)
          if (key.processing !== key.held) violations.push(`race ${race} round ${round}: key ${key.key} slot counts ${key.held}, ${key.processing} processing`)
        }
        // Settle about half of what is held, so the next round's claims race the freed slots.
        const settling = held.splice(0, Math.ceil(held.length / 2))
        await Promise.all(settling.map((claim, n) => stores[n % 2]?.ack({ ...claim, nowMs })))
      }
    }
    expect(contended).toBeGreaterThan(0)
    expect(violations).toEqual([])
  })
})
