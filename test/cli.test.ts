/**
 * The `matchbox` command line, run in-process through `run(argv, io)`: the lifecycle
 * walkthrough's stages (text and JSON, byte-for-byte reproducible), `inspect` on the embedded
 * store (a PGlite data directory made here) and on PostgreSQL, and bad usage (exit 2, one line).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { InspectReport } from '../src/cli/inspect.ts'
import type { LifecycleReport } from '../src/cli/LifecycleWalkthrough.ts'
import type { QueueKey } from '../src/domain/QueueKey.ts'
import { makeTask } from '../src/domain/Task.ts'
import { openEmbeddedStore, openPostgresStore } from '../src/persistence/queues/sql/openSqlStore.ts'
import type { Store } from '../src/persistence/queues/Store.ts'
import { freshDatabase } from './harness/database.ts'
import { cli } from './harness/runCli.ts'

/** The text of stage `step` of the lifecycle output (from its heading to the next). */
function stageText(stdout: string, step: number): string {
  const stages = stdout.split(/^(?=\d+\. )/m)
  const stage = stages.find((text) => text.startsWith(`${step}. `))
  expect(stage, `stage ${step}`).toBeDefined()
  return stage as string
}

const activity: QueueKey = { namespace: 'default', family: 'emails', type: 'activity', partition: 0, version: null }
const workflow: QueueKey = { ...activity, type: 'workflow' }

/** Range 2, tasks 1–5 (even ones at priority 5, task 4 pinned to v2), subqueue 0 checkpointed at 1; an empty workflow queue. */
async function populate(store: Store): Promise<void> {
  await store.acquire({ key: activity, nowMs: 1 })
  const { rangeId } = await store.acquire({ key: activity, nowMs: 2 })
  const tasks = [1, 2, 3, 4, 5].map((i) =>
    makeTask({
      jobId: `email-${i}`,
      createdAtMs: 3,
      priority: i % 2 === 0 ? 5 : 0,
      versionDirective: i === 4 ? { kind: 'pinned', version: 'v2' } : { kind: 'unversioned' },
    }),
  )
  await store.append({ key: activity, rangeId, tasks, nowMs: 3 })
  await store.checkpoint({ key: activity, rangeId, ackLevels: [{ subqueue: 0, ackLevel: 1 }], nowMs: 4 })
  await store.acquire({ key: workflow, nowMs: 5 })
}

function expectPopulatedText(stdout: string): void {
  expect(stdout).toContain('2 physical queues')
  expect(stdout).toContain('default/emails/activity/0\n  range 2 · last task id 5 · ack level per subqueue {0: 1, 5: 0}\n  stored rows 4 (subqueue 0: 2, subqueue 5: 2)')
  expect(stdout).toMatch(/^ {2}task id +subqueue +job id +kind +version directive +priority$/m)
  expect(stdout).toMatch(/^ {2}2 +5 +email-2 +job +unversioned +5$/m)
  expect(stdout).toMatch(/^ {2}4 +5 +email-4 +job +pinned v2 +5$/m)
  expect(stdout).toMatch(/^ {2}5 +0 +email-5 +job +unversioned +0$/m)
  expect(stdout).not.toMatch(/^ {2}1 +0 +email-1/m)
  expect(stdout).toContain('default/emails/workflow/0\n  range 1 · last task id 0 · ack level per subqueue {}\n  stored rows 0')
  expect(stdout).toContain('gauges: storedRows 4 · outstanding unknown to the store')
  expect(stdout).toContain('storedRows 4 across 2 queues')
  expect(stdout).toMatch(/outstanding unknown — only the loaded owner of a queue knows its outstanding deliveries/)
}

describe('matchbox lifecycle', () => {
  it('prints the gap, the checkpoint that leaves row 3, and the reload at range 2 with ack 2', async () => {
    const { code, stdout, stderr } = await cli(['lifecycle'])
    expect(stderr).toBe('')
    expect(code).toBe(0)
    const gap = stageText(stdout, 3)
    expect(gap).toContain('stored rows: 1, 2, 3 (3)')
    expect(gap).toContain('ack level per subqueue {0: 0}')
    expect(gap).toContain('subqueue 0: read level 3 · ack level 0 (saved 0) · outstanding {1, 3} · completed above ack {2}')
    const handled = stageText(stdout, 4)
    expect(handled).toContain('read level 3 · ack level 2 (saved 0)')
    expect(handled).toContain('stored rows: 1, 2, 3 (3)')
    const checkpoint = stageText(stdout, 5)
    expect(checkpoint).toContain('range 1 · last task id 3 · ack level per subqueue {0: 2}')
    expect(checkpoint).toContain('stored rows: 3 (1)')
    const unload = stageText(stdout, 6)
    expect(unload).toContain('no owner loaded')
    expect(unload).toContain('drained · range 1 · saved ack level {0: 2} · read level {0: 3} · outstanding 1')
    const reload = stageText(stdout, 7)
    expect(reload).toContain('range 2 · last task id 3 · ack level per subqueue {0: 2}')
    expect(reload).toContain('stored rows: 3 (1)')
    expect(reload).toContain('generation 2 · owned · range 2 · outstanding 1')
    expect(reload).toContain('subqueue 0: read level 3 · ack level 2 (saved 2) · outstanding {3}')
    expect(stdout).not.toContain('\u001b[')
  })

  it('is byte-for-byte reproducible, and colours only a TTY', async () => {
    const first = await cli(['lifecycle'])
    const second = await cli(['lifecycle'])
    expect(second.stdout).toBe(first.stdout)
    const tty = await cli(['lifecycle'], true)
    expect(tty.stdout).toContain('\u001b[')
  })

  it('--json prints the same stages', async () => {
    const { code, stdout } = await cli(['lifecycle', '--json'])
    expect(code).toBe(0)
    const report = JSON.parse(stdout) as LifecycleReport
    expect(report.queue).toBe('default/emails/activity/0')
    const stage = (name: string) => report.stages.find((s) => s.name === name)
    const rows = (name: string) => stage(name)?.persistedQueue.tasks.map((task) => task.taskId)
    expect(report.stages.map((s) => s.name)).toEqual(['load', 'spool', 'gap', 'handled', 'checkpoint', 'unload', 'reload', 'finish'])
    expect(stage('gap')?.loadedQueueProgress?.subqueues[0]).toEqual({ subqueue: 0, readLevel: 3, ackLevel: 0, savedAckLevel: 0, outstandingTaskIds: [1, 3], completedAboveAck: [2] })
    expect(stage('gap')?.persistedQueue.ackLevels).toEqual({ 0: 0 })
    expect(rows('gap')).toEqual([1, 2, 3])
    expect(stage('checkpoint')?.persistedQueue.ackLevels).toEqual({ 0: 2 })
    expect(rows('checkpoint')).toEqual([3])
    expect(stage('unload')?.loadedQueueProgress).toBeNull()
    expect(stage('unload')?.unloadedProgress).toMatchObject({ rangeId: 1, savedAckLevels: { 0: 2 }, readLevels: { 0: 3 }, outstanding: 1 })
    expect(stage('reload')?.persistedQueue).toMatchObject({ rangeId: 2, ackLevels: { 0: 2 }, lastTaskId: 3 })
    expect(stage('reload')?.loadedQueueProgress).toMatchObject({ generation: 2, rangeId: 2, outstanding: 1 })
    expect(rows('finish')).toEqual([])
  })
})

describe('matchbox inspect on the embedded store', () => {
  let directory: string
  let dataDir: string

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'matchbox-cli-'))
    dataDir = join(directory, 'data')
    const store = await openEmbeddedStore({ dataDir })
    try {
      await populate(store)
    } finally {
      await store.close()
    }
  })

  afterAll(() => {
    rmSync(directory, { recursive: true, force: true })
  })

  it('prints each queue, its stored tasks and the gauges', async () => {
    const { code, stdout, stderr } = await cli(['inspect', '--data-dir', dataDir])
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toContain('embedded (PGlite) store, schema matchbox')
    expectPopulatedText(stdout)
  })

  it('bounds the tasks listed, filters by family, and prints JSON', async () => {
    const text = await cli(['inspect', '--data-dir', dataDir, '--tasks-max', '1', '--family', 'emails'])
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(/^ {2}2 +5 +email-2 .*\n {2}… and 3 more$/m)
    const json = await cli(['inspect', '--data-dir', dataDir, '--tasks-max', '2', '--json', '--namespace', 'nowhere'])
    expect(json.code).toBe(0)
    expect((JSON.parse(json.stdout) as InspectReport).queues).toEqual([])
    const full = await cli(['inspect', '--data-dir', dataDir, '--tasks-max', '2', '--json'])
    const report = JSON.parse(full.stdout) as InspectReport
    expect(report.store).toBe('embedded')
    expect(report.queues[0]).toMatchObject({ queue: 'default/emails/activity/0', rangeId: 2, lastTaskId: 5, storedRows: 4, storedRowsBySubqueue: { 0: 2, 5: 2 }, tasksOmitted: 2 })
    expect(report.queues[0]?.tasks).toEqual([
      { taskId: 2, subqueue: 5, jobId: 'email-2', runId: null, kind: 'job', versionDirective: { kind: 'unversioned' }, priority: 5 },
      { taskId: 3, subqueue: 0, jobId: 'email-3', runId: null, kind: 'job', versionDirective: { kind: 'unversioned' }, priority: 0 },
    ])
    expect(report.gauges).toMatchObject({ queues: 2, storedRows: 4, outstanding: null })
  })

  it('a value the store refuses is a one-line InvalidInput, exit 2', async () => {
    const { code, stdout, stderr } = await cli(['inspect', '--data-dir', dataDir, '--namespace', ''])
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr).toBe('matchbox: InvalidInput: invalid filter.namespace: must not be empty\n')
  })
})

describe('matchbox inspect on PostgreSQL', () => {
  let databaseUrl: string

  beforeAll(async () => {
    databaseUrl = await freshDatabase('cli_inspect')
    const store = await openPostgresStore({ connectionString: databaseUrl })
    try {
      await populate(store)
      // A second namespace with more rows than one read page, to exercise paginated reads.
      const big: QueueKey = { ...activity, namespace: 'bulk' }
      const { rangeId } = await store.acquire({ key: big, nowMs: 1 })
      for (let batch = 0; batch < 11; batch++) {
        const tasks = Array.from({ length: 100 }, (_, i) => makeTask({ jobId: `bulk-${batch * 100 + i + 1}`, createdAtMs: 1 }))
        await store.append({ key: big, rangeId, tasks, nowMs: 1 })
      }
    } finally {
      await store.close()
    }
  })

  it('prints each queue, its stored tasks and the gauges', async () => {
    const { code, stdout, stderr } = await cli(['inspect', '--database-url', databaseUrl, '--namespace', 'default'])
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toContain('PostgreSQL store, schema matchbox, namespace default')
    expectPopulatedText(stdout)
  })

  it('reads past one page when --tasks-max asks for more than a page', async () => {
    const { code, stdout } = await cli(['inspect', '--database-url', databaseUrl, '--namespace', 'bulk', '--tasks-max', '1050', '--json'])
    expect(code).toBe(0)
    const queue = (JSON.parse(stdout) as InspectReport).queues[0]
    expect(queue?.tasks.map((task) => task.taskId)).toEqual(Array.from({ length: 1050 }, (_, i) => i + 1))
    expect(queue?.tasksOmitted).toBe(50)
  })
})

describe('bad usage', () => {
  it.each([
    [['inspect'], /^matchbox: UsageError: no store given: pass --database-url <postgres:\/\/…> for PostgreSQL or --data-dir <dir>/],
    [['inspect', '--data-dir', '/nonexistent/matchbox'], /^matchbox: UsageError: no data directory at \/nonexistent\/matchbox/],
    [['inspect', '--data-dir', tmpdir()], /^matchbox: UsageError: .* is not an embedded \(PGlite\) data directory/],
    [['inspect', '--data-dir', 'x', '--database-url', 'postgres://x'], /^matchbox: UsageError: give one store, not two/],
    [['inspect', '--data-dir', 'x', '--tasks-max', '-1'], /^matchbox: UsageError: option '--tasks-max <n>' argument '-1' is invalid/],
    [['inspect', '--bogus'], /^matchbox: UsageError: unknown option '--bogus'/],
    [['bogus'], /^matchbox: UsageError: unknown command 'bogus'/],
    [[], /matchbox: UsageError: no command given/],
  ])('%j exits 2 with one typed line', async (argv, message) => {
    const { code, stderr } = await cli(argv)
    expect(code).toBe(2)
    const lines = stderr.trimEnd().split('\n')
    // Without a command, commander's help comes first; the typed error is still one line.
    expect(lines.at(-1)).toMatch(message)
    if (argv.length > 0) expect(lines).toHaveLength(1)
    expect(stderr).not.toMatch(/^\s+at /m)
  })

  it('help and version exit 0', async () => {
    expect((await cli(['--help'])).code).toBe(0)
    expect((await cli(['help'])).code).toBe(0)
    expect((await cli(['--version'])).stdout).toBe('0.1.0\n')
  })
})
