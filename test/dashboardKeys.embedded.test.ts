/**
 * The dashboard's pending jobs by fairness key on the SQL reads (PGlite): one grouped read of the
 * queue's oldest pending jobs, cut off at the count cap, most pending first (the jobs without a
 * key before any key on a tie), capped when the queue holds more. The memory store's contract
 * reads see no keys (its records do not carry them) and list none. And a queue's pending tab
 * shows the table when the queue has keyed jobs, and no table when it has none.
 */
import { expect, it } from 'vitest'
import { jobsPage } from '../src/dashboard/QueuePages.ts'
import { makeContractReads } from '../src/persistence/dashboard/DashboardReads.ts'
import { makeSqlDashboardReads } from '../src/persistence/dashboard/sql/SqlDashboardReads.ts'
import { makeJobFixture } from '../src/persistence/jobs/conformance/JobFixture.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { makePgliteDriver } from '../src/persistence/sql/PgliteDriver.ts'
import { makeSchema } from '../src/persistence/sql/Schema.ts'

// Four jobs of tenant-a, two of tenant-b, two without a key, one of tenant-c.
async function fill(store: JobStore, label: string): Promise<string> {
  const fixture = makeJobFixture(label, () => store, 1)
  const queue = fixture.queue('keys')
  const keys = ['tenant-a', 'tenant-b', null, 'tenant-a', 'tenant-c', 'tenant-a', null, 'tenant-b', 'tenant-a']
  for (const fairnessKey of keys) await store.enqueue({ job: fixture.job(queue, { fairnessKey }), nowMs: 1_000 })
  return queue
}

it('counts a queue’s pending jobs by fairness key on the SQL reads, most first, and caps the count', async () => {
  const driver = await makePgliteDriver()
  const store = await openSqlJobStore(driver)
  const reads = makeSqlDashboardReads(driver, makeSchema())
  const queue = await fill(store, 'sql')
  expect(await reads.pendingByFairnessKey({ queue, limit: 10, countCap: 100 })).toEqual({
    keys: [
      { key: 'tenant-a', pending: 4 },
      { key: null, pending: 2 },
      { key: 'tenant-b', pending: 2 },
      { key: 'tenant-c', pending: 1 },
    ],
    capped: false,
  })
  // Two keys at most, over the oldest five jobs and the one that says there are more (a, b, –,
  // a, c, a): tenant-a, then the unkeyed jobs first of the keys tied at one.
  expect(await reads.pendingByFairnessKey({ queue, limit: 2, countCap: 5 })).toEqual({
    keys: [
      { key: 'tenant-a', pending: 3 },
      { key: null, pending: 1 },
    ],
    capped: true,
  })
  expect(await makeContractReads(makeMemoryJobStore()).pendingByFairnessKey({ queue, limit: 10, countCap: 100 })).toEqual({ keys: [], capped: false })
  await driver.close()
})

it('shows the table on the pending tab of a queue with keyed jobs, and none for a queue without keys', () => {
  const context = { basePath: '', nowMs: 1_000, readOnly: true, csrfToken: '', notice: null } as unknown as Parameters<typeof jobsPage>[0]
  const keyed = String(jobsPage(context, 'q', 'pending', [], null, false, { keys: [{ key: 'tenant-<a>', pending: 3 }, { key: null, pending: 1 }], capped: true }))
  expect(keyed).toMatch(/<table id="fairness-keys">.*tenant-&lt;a&gt;.*3\+.*no key.*1\+/s)
  const plain = String(jobsPage(context, 'q', 'pending', [], null, false, { keys: [{ key: null, pending: 4 }], capped: false }))
  expect(plain).not.toContain('fairness-keys')
})
