/**
 * Two Matching hosts that disagree about membership, on one PostgreSQL database. Host A's static list is [A]: it thinks it owns every partition. Host B's is
 * [A, B]: it owns the partitions rendezvous hashing gives B. Each host has its own store (its
 * own pg Pool). On the contested partitions both load the default queue, so they take it from
 * each other over and over: every load is an acquire (range +1), and the loser learns at its
 * next fenced write and unloads.
 *
 * Virtual time (one ManualClock) drives both hosts; between steps the test waits for every
 * store call to settle. Checked, apart from the runtime:
 * - stealing really happened: contested queues were acquired many times, alternately by A and
 *   B, and every range id equals the number of acquires the recorder saw;
 * - nothing lost: every job whose addTask resolved was started by History by the end, and every
 *   spooled task is durable (its row, or an ack level past it);
 * - no stale write: no fenced write succeeded with a range below the latest acquired range of
 *   its queue at the time it returned (recordingStore.ts `staleWrites`), and the committed state
 *   is consistent (ack level ≤ last id; rows only in (ack level, last id]);
 * - after both hosts close, a single host drains everything and 0 task rows remain.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeMatchingHost, type MatchingHost } from '../src/actors/MatchingHost.ts'
import { makeStaticMembership } from '../src/actors/Membership.ts'
import { encodeQueueKey, makePartitionKey, type QueueKey } from '../src/domain/QueueKey.ts'
import { ownerOf } from '../src/domain/Rendezvous.ts'
import { ManualClock } from '../src/kernel/Clock.ts'
import { Random, seedFromEntropy } from '../src/kernel/Random.ts'
import { openPostgresStore } from '../src/persistence/queues/sql/openSqlStore.ts'
import type { Store } from '../src/persistence/queues/Store.ts'
import { freshDatabase } from './harness/database.ts'
import { driveUntil, Pending } from './harness/drive.ts'
import { makeStoreRecorder, staleWrites } from './harness/recordingStore.ts'
import { makeStartLedger } from './harness/startLedger.ts'

const seed = process.env.SIM_SEED !== undefined && process.env.SIM_SEED !== '' ? Number(process.env.SIM_SEED) : (seedFromEntropy() >>> 0) % 2 ** 31
console.log(`two hosts: SIM_SEED=${seed}`)

const namespace = 'default'
const type = 'activity'
const partitionCount = 4
const rounds = 90
const hostA = 'host-a'
const hostB = 'host-b'

// A family in which B owns exactly two of the four partitions: two contested, two A's alone.
function pickFamily(): string {
  for (let index = 0; ; index++) {
    const family = `family-${index}`
    const owners = Array.from({ length: partitionCount }, (_, partition) => ownerOf(makePartitionKey({ namespace, family, type, partition }), [hostA, hostB]))
    if (owners.filter((owner) => owner === hostB).length === 2) return family
  }
}

describe('two hosts with different static membership on one PostgreSQL', () => {
  let connectionString: string
  const stores: Store[] = []
  let admin: pg.Client
  beforeAll(async () => {
    connectionString = await freshDatabase('two_hosts')
    admin = new pg.Client({ connectionString })
    await admin.connect()
  })
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()))
    await admin?.end()
  })

  const open = async (): Promise<Store> => {
    const store = await openPostgresStore({ connectionString })
    stores.push(store)
    return store
  }

  it('take queues from each other repeatedly; nothing lost, no stale write, 0 rows after a drain', async () => {
    const random = Random.make(seed)
    const clock = new ManualClock(1_000_000)
    const recorder = makeStoreRecorder(() => clock.now())
    const history = makeStartLedger()
    const family = pickFamily()
    const keyOf = (partition: number): QueueKey => ({ namespace, family, type, partition, version: null })
    const contested = Array.from({ length: partitionCount }, (_, partition) => partition).filter((partition) => ownerOf(makePartitionKey({ namespace, family, type, partition }), [hostA, hostB]) === hostB)
    const hosts: Record<string, MatchingHost> = {}
    for (const [hostId, view] of [[hostA, [hostA]], [hostB, [hostA, hostB]]] as const) {
      hosts[hostId] = makeMatchingHost({ hostId, store: recorder.wrap(await open(), hostId), history, clock, random: random.fork(), membership: makeStaticMembership(view), partitionCount })
    }

    const accepted = new Map<string, { partition: number; taskId: number | null }>()
    const refusals = new Map<string, number>()
    const pending = new Pending()
    let jobCounter = 0
    for (let round = 0; round < rounds; round++) {
      for (const hostId of [hostA, hostB]) {
        const host = hosts[hostId] as MatchingHost
        for (let i = random.int(2, 6); i > 0; i--) {
          const jobId = `${hostId}-${++jobCounter}`
          pending.track(host.addTask({ namespace, family, type, task: { jobId, priority: random.int(0, 2) } })).then(
            (outcome) => accepted.set(jobId, { partition: outcome.partition, taskId: outcome.kind === 'spooled' ? outcome.taskId : null }),
            (error: { _tag?: string }) => refusals.set(error._tag ?? 'defect', (refusals.get(error._tag ?? 'defect') ?? 0) + 1),
          )
        }
        for (let i = random.int(0, 3); i > 0; i--) {
          void pending.track(host.poll({ namespace, family, type, identity: `${hostId}-worker`, waitMs: random.int(50, 400) }))
        }
      }
      await driveUntil(clock, recorder, () => pending.open === 0, `round ${round}: adds and polls to settle`, 50)
      // Let checkpoint timers (1 s) and restart delays (1 s … 10 s) come due between rounds.
      clock.advance(random.int(0, 3_000))
      await recorder.quiesce()
    }
    await Promise.all([hostA, hostB].map((hostId) => (hosts[hostId] as MatchingHost).close()))

    // Stealing happened: contested queues changed hands many times, alternating hosts.
    const acquires = recorder.calls.filter((call) => call.operation === 'acquire' && call.ok).sort((a, b) => a.returned - b.returned)
    for (const partition of contested) {
      const queue = encodeQueueKey(keyOf(partition))
      const owners = acquires.filter((call) => call.queue === queue).map((call) => call.host)
      const handovers = owners.filter((owner, index) => index > 0 && owner !== owners[index - 1]).length
      const times = acquires.filter((call) => call.queue === queue).map((call) => `${call.host.slice(-1)}@${(call.atMs - 1_000_000) / 1_000}s`)
      console.log(`contested partition ${partition}: ${owners.length} acquires, ${handovers} handovers between hosts: ${times.join(' ')}`)
      expect(owners.length).toBeGreaterThanOrEqual(10)
      expect(handovers).toBeGreaterThanOrEqual(8)
    }
    console.log(`adds accepted ${accepted.size} of ${jobCounter}; refused ${JSON.stringify(Object.fromEntries(refusals))}`)
    expect(accepted.size).toBeGreaterThan(jobCounter / 2)

    // Committed state before the drain: ranges match the acquires, levels and rows are consistent,
    // and every spooled task is durable.
    for (let partition = 0; partition < partitionCount; partition++) {
      const key = keyOf(partition)
      const inspection = await stores[0]?.inspect(key)
      expect(inspection).not.toBeNull()
      const metadata = inspection?.metadata
      expect(metadata?.rangeId).toBe(recorder.count({ operation: 'acquire', queue: encodeQueueKey(key), ok: true }))
      const { rows } = await admin.query<{ task_id: string; subqueue: number; job_id: string }>(
        `SELECT task_id, subqueue, data->>'jobId' AS job_id FROM matchbox.tasks WHERE queue_key = $1 ORDER BY task_id`,
        [encodeQueueKey(key)],
      )
      const stored = new Map(rows.map((row) => [Number(row.task_id), row]))
      for (const ackLevel of Object.values(metadata?.ackLevels ?? {})) expect(ackLevel).toBeLessThanOrEqual(metadata?.lastTaskId ?? 0)
      for (const row of rows) {
        expect(Number(row.task_id)).toBeLessThanOrEqual(metadata?.lastTaskId ?? 0)
        expect(Number(row.task_id)).toBeGreaterThan(metadata?.ackLevels[row.subqueue] ?? 0)
      }
      for (const [jobId, outcome] of accepted) {
        if (outcome.partition !== partition || outcome.taskId === null) continue
        const row = stored.get(outcome.taskId)
        if (row !== undefined) expect(row.job_id).toBe(jobId)
        else expect(history.started.has(jobId)).toBe(true)
      }
    }
    const stale = staleWrites(recorder.calls)
    const writes = recorder.calls.filter((call) => call.ok && (call.operation === 'append' || call.operation === 'checkpoint')).length
    const refusedWrites = recorder.calls.filter((call) => !call.ok && call.errorTag === 'OwnershipLost').length
    const reordered = stale.filter((entry) => entry.evidence === 'reordered').length
    console.log(`fenced writes: ${writes} succeeded, ${refusedWrites} refused with OwnershipLost; answered after a newer acquire but committed before it: ${reordered}`)
    const violations = stale.filter((entry) => entry.evidence === 'definite')
    expect(violations.map((entry) => `${entry.write.host} ${entry.write.operation} ${entry.write.queue} range ${entry.write.rangeId} after ${entry.acquire.host} acquired ${entry.acquire.rangeId}`)).toEqual([])
    expect(refusedWrites).toBeGreaterThan(0)

    // A single host drains whatever is left; then nothing is lost and no row remains.
    const drainer = makeMatchingHost({ hostId: 'host-c', store: recorder.wrap(await open(), 'host-c'), history, clock, random: random.fork(), partitionCount })
    const missing = () => [...accepted.keys()].filter((jobId) => !history.started.has(jobId))
    const storedRows = async () => Number((await admin.query<{ count: string }>('SELECT count(*) FROM matchbox.tasks')).rows[0]?.count)
    for (let attempt = 0; attempt < 200 && (missing().length > 0 || (await storedRows()) > 0); attempt++) {
      const polls = Array.from({ length: 8 }, () => pending.track(drainer.poll({ namespace, family, type, identity: 'drainer', waitMs: 100 })))
      await driveUntil(clock, recorder, () => pending.open === 0, 'drain polls to settle', 50)
      await Promise.all(polls)
      clock.advance(1_000)
      await recorder.quiesce()
    }
    await drainer.close()
    expect(missing()).toEqual([])
    expect(await storedRows()).toBe(0)
  })
})
