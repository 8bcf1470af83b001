/**
 * Row locks between the due-time driver's confirmation and claims, on PostgreSQL.
 *
 * A claim batch (`claimMany`) and the driver's `confirmDelivered` touch the same reserved rows
 * from different connections. If the confirmation waited for rows a claim holds while that claim
 * waited for rows the confirmation holds, PostgreSQL would break the cycle only after its
 * deadlock timeout (a second) and fail one side: every worker stalls meanwhile. A confirmation
 * therefore skips rows another transaction holds; those rows stay reserved, which costs nothing
 * when the holder is a claim (the claim sets the due time itself).
 *
 * The connections carry a `lock_timeout`, so a statement that waits on a lock fails the test
 * with PostgreSQL's lock-timeout error instead of hanging it. A correct run never waits.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { JobStore, NewJob } from '../src/persistence/jobs/JobStore.ts'
import { makeJobFixture } from '../src/persistence/jobs/conformance/JobFixture.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { freshDatabase } from './harness/database.ts'

let url = ''
let store: JobStore
let holder: pg.Client

const fixture = makeJobFixture('postgres', () => store, 1)
const job = (id: string, queue: string): NewJob => fixture.job(queue, { id })

beforeAll(async () => {
  const given = new URL(await freshDatabase('row_locks'))
  given.searchParams.set('options', '-c lock_timeout=5000')
  url = given.toString()
  store = await openSqlJobStore(makePgDriver({ connectionString: url }))
  holder = new pg.Client({ connectionString: url })
  await holder.connect()
})

afterAll(async () => {
  await holder?.end()
  await store?.close()
})

describe('delivery confirmation and claims on PostgreSQL', () => {
  it('a confirmation skips a reserved row another transaction holds, and confirms it once the row is free', async () => {
    const queue = 'locks-confirm'
    await store.enqueue({ job: job('held', queue), nowMs: 1_000 })
    await store.enqueue({ job: job('free', queue), nowMs: 1_000 })
    const reserved = await store.takeDue({ nowMs: 1_000, reserveUntilMs: 31_000, limit: 10, queues: [queue] })
    const deliveries = reserved.map((due) => ({ id: due.id, revision: due.revision }))
    expect(deliveries.map((delivery) => delivery.id).sort()).toEqual(['free', 'held'])

    await holder.query('BEGIN')
    await holder.query('SELECT id FROM matchbox.jobs WHERE id = $1 FOR UPDATE', ['held'])
    // Without skipping, this waits for the holder and fails on the lock timeout.
    expect(await store.confirmDelivered({ deliveries })).toBe(1)
    await holder.query('ROLLBACK')

    // The skipped row kept its reservation; a later confirmation at its revision clears it.
    expect(await store.nextDueMs({ nowMs: 1_000, queues: [queue] })).toBe(31_000)
    expect(await store.confirmDelivered({ deliveries: deliveries.filter((delivery) => delivery.id === 'held') })).toBe(1)
    expect(await store.nextDueMs({ nowMs: 1_000, queues: [queue] })).toBeNull()
  })

  it('a claim batch holding one row and wanting another never meets a confirmation holding the second', async () => {
    const queue = 'locks-cycle'
    await store.enqueue({ job: job('first', queue), nowMs: 1_000 })
    await store.enqueue({ job: job('second', queue), nowMs: 1_000 })
    const reserved = await store.takeDue({ nowMs: 1_000, reserveUntilMs: 31_000, limit: 10, queues: [queue] })
    const deliveries = reserved.map((due) => ({ id: due.id, revision: due.revision }))

    // A claim in flight on another connection holds 'first' (its transaction is still open).
    await holder.query('BEGIN')
    await holder.query("UPDATE matchbox.jobs SET revision = revision + 1, due_ms = 61000 WHERE id = 'first'")
    // The confirmation takes 'second' and does not wait for 'first'.
    expect(await store.confirmDelivered({ deliveries })).toBe(1)
    await holder.query('COMMIT')
    // The claim's due time stands; the confirmed row has none.
    expect(await store.nextDueMs({ nowMs: 1_000, queues: [queue] })).toBe(61_000)
  })
})
