/**
 * `matchbox jobs` run in-process on the embedded store (a PGlite data directory made here) and
 * on PostgreSQL: counts per queue, pages by state with errors, one job, retrying a dead job and
 * cancelling a live one; a missing job exits 1, bad usage exits 2 with one line.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { JobRecord, JobStore, NewJob } from '../src/persistence/jobs/JobStore.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { makePgliteDriver } from '../src/persistence/sql/PgliteDriver.ts'
import { freshDatabase } from './harness/database.ts'
import { cli } from './harness/runCli.ts'

const job = (id: string, queue: string, overrides: Partial<NewJob> = {}): NewJob => ({
  id,
  queue,
  payload: { id },
  priority: 0,
  runAtMs: 1_000,
  expiresAtMs: null,
  maxAttempts: 1,
  visibilityTimeoutMs: 30_000,
  backoffBaseMs: 0,
  deadLetterRetentionMs: null,
  ...overrides,
})

/** emails: two pending, one dead (fail with a stack); exports: one dead of its budget; reports: one processing. */
async function populate(store: JobStore): Promise<void> {
  await store.enqueue({ job: job('e-1', 'emails'), nowMs: 1_000 })
  await store.enqueue({ job: job('e-2', 'emails', { key: 'welcome-ada' }), nowMs: 1_000 })
  await store.enqueue({ job: job('e-3', 'emails'), nowMs: 1_000 })
  await store.claim({ id: 'e-3', claimToken: 'tok', nowMs: 1_000 })
  await store.fail({ id: 'e-3', claimToken: 'tok', error: 'smtp 550: no such mailbox', stack: 'Error: smtp 550\n    at send (mail.ts:3)', nowMs: 2_000 })
  // A budget death: the reason of death and the handler's error are both listed.
  await store.enqueue({ job: job('x-1', 'exports'), nowMs: 1_000 })
  await store.claim({ id: 'x-1', claimToken: 'tok', nowMs: 1_000 })
  await store.retry({ id: 'x-1', claimToken: 'tok', error: 'timeout after 30 s', delayMs: 0, nowMs: 3_000 })
  await store.enqueue({ job: job('r-1', 'reports'), nowMs: 1_000 })
  await store.claim({ id: 'r-1', claimToken: 'tok', nowMs: 1_000 })
}

function describeJobsCli(label: string, location: () => string[], reopen: () => Promise<JobStore>): void {
  describe(`matchbox jobs on ${label}`, () => {
    it('counts per queue, as text and JSON', async () => {
      const text = await cli(['jobs', 'counts', ...location()])
      expect(text.stderr).toBe('')
      expect(text.code).toBe(0)
      expect(text.stdout).toMatch(/^queue +pending +processing +dead$/m)
      expect(text.stdout).toMatch(/^emails +2 +0 +1$/m)
      expect(text.stdout).toMatch(/^reports +0 +1 +0$/m)
      const json = await cli(['jobs', 'counts', ...location(), '--json'])
      expect(JSON.parse(json.stdout)).toEqual([
        { queue: 'emails', pending: 2, processing: 0, dead: 1 },
        { queue: 'exports', pending: 0, processing: 0, dead: 1 },
        { queue: 'reports', pending: 0, processing: 1, dead: 0 },
      ])
    })

    it('lists a page by state, dead jobs with their error, and shows one job', async () => {
      const pending = await cli(['jobs', 'list', 'emails', ...location(), '--limit', '1'])
      expect(pending.code).toBe(0)
      expect(pending.stdout).toMatch(/^e-1 +0 +0 +1970-01-01T00:00:01.000Z$/m)
      expect(pending.stdout).toContain('more: --after e-1')
      const next = await cli(['jobs', 'list', 'emails', ...location(), '--limit', '1', '--after', 'e-1', '--json'])
      expect(JSON.parse(next.stdout)).toMatchObject({ queue: 'emails', state: 'pending', jobs: [{ id: 'e-2', key: 'welcome-ada' }], next: 'e-2' })
      const dead = await cli(['jobs', 'list', 'emails', ...location(), '--state', 'dead'])
      expect(dead.stdout).toMatch(/^e-3 +1 +0 +1970-01-01T00:00:02.000Z +smtp 550: no such mailbox$/m)
      const exhausted = await cli(['jobs', 'list', 'exports', ...location(), '--state', 'dead'])
      expect(exhausted.stdout).toMatch(/^x-1 +1 +0 +1970-01-01T00:00:03.000Z +max attempts exceeded: timeout after 30 s$/m)
      const shown = await cli(['jobs', 'show', 'emails', 'e-3', ...location()])
      expect(shown.code).toBe(0)
      expect(shown.stdout).toContain('e-3  dead  queue emails')
      expect(shown.stdout).toContain('died 1970-01-01T00:00:02.000Z: smtp 550: no such mailbox')
      expect(shown.stdout).toContain('at send (mail.ts:3)')
      expect(shown.stdout).toContain('attempt 1 at 1970-01-01T00:00:02.000Z: smtp 550: no such mailbox')
      const json = await cli(['jobs', 'show', 'emails', 'e-3', ...location(), '--json'])
      expect(JSON.parse(json.stdout)).toMatchObject({ id: 'e-3', state: 'dead', lastError: 'smtp 550: no such mailbox', lastHandlerStack: expect.stringContaining('mail.ts') })
    })

    it('retries a dead job as a fresh pending one and cancels a live one; missing jobs exit 1', async () => {
      const retried = await cli(['jobs', 'retry', 'emails', 'e-3', ...location()])
      expect(retried).toMatchObject({ code: 0, stderr: '' })
      expect(retried.stdout).toContain('retried e-3')
      const again = await cli(['jobs', 'retry', 'emails', 'e-3', ...location()])
      expect(again.code).toBe(1)
      expect(again.stderr).toBe('matchbox: JobNotFound: no dead job e-3 in queue emails\n')
      const cancelled = await cli(['jobs', 'cancel', 'reports', 'r-1', ...location()])
      expect(cancelled).toMatchObject({ code: 0, stdout: 'cancelled r-1 in reports\n' })
      expect((await cli(['jobs', 'cancel', 'reports', 'r-1', ...location()])).code).toBe(1)
      expect((await cli(['jobs', 'show', 'reports', 'r-1', ...location()])).code).toBe(1)
      const store = await reopen()
      try {
        const revived = (await store.getJob({ queue: 'emails', id: 'e-3' })) as JobRecord
        expect(revived).toMatchObject({ state: 'pending', attempts: 0, lastHandlerError: 'smtp 550: no such mailbox' })
        expect(await store.countQueues({ limit: 10 })).toEqual([
          { queue: 'emails', pending: 3, processing: 0, dead: 0 },
          { queue: 'exports', pending: 0, processing: 0, dead: 1 },
        ])
      } finally {
        await store.close()
      }
    })

    it('bad usage exits 2 with one line', async () => {
      const state = await cli(['jobs', 'list', 'emails', ...location(), '--state', 'done'])
      expect(state.code).toBe(2)
      expect(state.stderr).toMatch(/^matchbox: UsageError: .*must be pending, processing or dead\n$/)
      expect((await cli(['jobs', 'list', 'emails', ...location(), '--limit', '0'])).code).toBe(2)
      expect((await cli(['jobs', 'show', 'emails', ...location()])).code).toBe(2)
      const nowhere = await cli(['jobs', 'counts'])
      expect(nowhere).toMatchObject({ code: 2, stdout: '' })
      expect(nowhere.stderr).toMatch(/^matchbox: UsageError: no store given/)
      const bad = await cli(['jobs', 'show', '', 'x', ...location()])
      expect(bad.code).toBe(2)
      expect(bad.stderr).toMatch(/^matchbox: InvalidInput: .*queue/)
    })
  })
}

let directory: string
let dataDir: string
let databaseUrl: string
beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'matchbox-jobs-cli-'))
  dataDir = join(directory, 'data')
  const embedded = await openSqlJobStore(await makePgliteDriver({ dataDir }))
  await populate(embedded)
  await embedded.close()
  databaseUrl = await freshDatabase('jobs_cli')
  const postgres = await openSqlJobStore(makePgDriver({ connectionString: databaseUrl }))
  await populate(postgres)
  await postgres.close()
})
afterAll(() => {
  rmSync(directory, { recursive: true, force: true })
})

describeJobsCli('the embedded store', () => ['--data-dir', dataDir], async () => openSqlJobStore(await makePgliteDriver({ dataDir })))
describeJobsCli('PostgreSQL', () => ['--database-url', databaseUrl], async () => openSqlJobStore(makePgDriver({ connectionString: databaseUrl })))
