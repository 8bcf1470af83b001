/**
 * QueueConformance — acquire, append and read: the range fence, the per-queue id sequence,
 * subqueues by priority, pagination, and copies across the boundary.
 *
 * Readings of the contract pinned here (Store.ts doc comments are the semantics):
 * - the fence is equality: a range above the current one is refused like a stale one;
 * - `updatedAtMs` moves on acquire and checkpoint only, not on append, in whole ms (floored);
 * - `ackLevels` is {} for a new queue and gains a subqueue at 0 on its first successful append;
 * - tasks read back deep-equal to `makeTask` of what was appended, including fractional
 *   epoch-ms times, null run ids, pinned directives with unicode versions, and expiry.
 */
import { describe, expect, it } from 'vitest'
import { encodeQueueKey } from '../../../domain/QueueKey.ts'
import type { Task } from '../../../domain/Task.ts'
import { type ConformanceFixture, expectRejection, readAll, stateOf, task, tasks } from './ConformanceFixture.ts'

/** Registers the acquire / append / read tests. */
export function describeQueueConformance(fixture: ConformanceFixture): void {
  acquireCases(fixture)
  appendFencingCases(fixture)
  taskIdsCases(fixture)
  readCases(fixture)
  copiesCases(fixture)
}

// The 'acquire' cases.
function acquireCases(fixture: ConformanceFixture): void {
  const store = () => fixture.store()
  describe('acquire', () => {
    it('creates a new queue at range 1, ack 0, last id 0', async () => {
      const key = fixture.key()
      const metadata = await store().acquire({ key, nowMs: 5_000 })
      expect(metadata.key).toEqual(key)
      expect(metadata.rangeId).toBe(1)
      expect(metadata.lastTaskId).toBe(0)
      expect(metadata.ackLevels).toEqual({})
      expect(metadata.updatedAtMs).toBe(5_000)
    })

    it('increments the range by one on every acquire and keeps everything else', async () => {
      const key = fixture.key()
      await store().acquire({ key, nowMs: 1 })
      await store().append({ key, rangeId: 1, tasks: tasks('a', 3), nowMs: 2 })
      for (let expected = 2; expected <= 6; expected++) {
        const metadata = await store().acquire({ key, nowMs: 10 * expected })
        expect(metadata.rangeId).toBe(expected)
        expect(metadata.lastTaskId).toBe(3)
        expect(metadata.updatedAtMs).toBe(10 * expected)
      }
      expect((await store().inspect(key))?.metadata.rangeId).toBe(6)
    })

    it('stores updatedAtMs in whole milliseconds (a fractional nowMs is floored)', async () => {
      const key = fixture.key()
      expect((await store().acquire({ key, nowMs: 1_700_000_000_123.9 })).updatedAtMs).toBe(1_700_000_000_123)
      expect((await store().acquire({ key, nowMs: 0.5 })).updatedAtMs).toBe(0)
    })

    it('stamps updatedAtMs on acquire but not on append', async () => {
      const key = fixture.key()
      await store().acquire({ key, nowMs: 7_000 })
      await store().append({ key, rangeId: 1, tasks: tasks('a', 2), nowMs: 9_000 })
      expect((await store().inspect(key))?.metadata.updatedAtMs).toBe(7_000)
    })
  })
}

// The 'append fencing' cases.
function appendFencingCases(fixture: ConformanceFixture): void {
  const store = () => fixture.store()
  describe('append fencing', () => {
    it('refuses a stale range with OwnershipLost and writes nothing', async () => {
      const key = fixture.key()
      await store().acquire({ key, nowMs: 1 })
      await store().append({ key, rangeId: 1, tasks: tasks('old', 2), nowMs: 2 })
      await store().acquire({ key, nowMs: 3 })
      await expectRejection(store().append({ key, rangeId: 1, tasks: tasks('stale', 3), nowMs: 4 }), 'OwnershipLost', {
        queue: encodeQueueKey(key),
        rangeId: 1,
        currentRangeId: 2,
      })
      const rows = await readAll(store(), key, 0)
      expect(rows.map((row) => row.task.jobId)).toEqual(['old-0', 'old-1'])
      expect((await store().inspect(key))?.metadata.lastTaskId).toBe(2)
    })

    it('a refused append registers no subqueue', async () => {
      const key = fixture.key()
      await store().acquire({ key, nowMs: 1 })
      await store().acquire({ key, nowMs: 2 })
      await expectRejection(store().append({ key, rangeId: 1, tasks: tasks('stale', 1, 4), nowMs: 3 }), 'OwnershipLost')
      expect((await store().inspect(key))?.metadata.ackLevels).toEqual({})
    })

    it('refuses a range above the current one (the fence is equality)', async () => {
      const key = fixture.key()
      await store().acquire({ key, nowMs: 1 })
      await expectRejection(store().append({ key, rangeId: 2, tasks: tasks('x', 1), nowMs: 2 }), 'OwnershipLost', {
        rangeId: 2,
        currentRangeId: 1,
      })
      expect(await readAll(store(), key, 0)).toEqual([])
    })

    it('refuses a queue that was never acquired with currentRangeId null, creating nothing', async () => {
      const key = fixture.key()
      await expectRejection(store().append({ key, rangeId: 1, tasks: tasks('x', 1), nowMs: 1 }), 'OwnershipLost', {
        queue: encodeQueueKey(key),
        rangeId: 1,
        currentRangeId: null,
      })
      expect(await store().inspect(key)).toBeNull()
      expect(await store().read({ key, subqueue: 0, afterTaskId: 0, limit: 10 })).toEqual([])
    })
  })
}

// The 'task ids' cases.
function taskIdsCases(fixture: ConformanceFixture): void {
  const store = () => fixture.store()
  describe('task ids', () => {
    it('are consecutive per physical queue and independent across queues', async () => {
      const namespace = fixture.namespace('ids')
      const workflow = fixture.key({ namespace })
      const activity = fixture.key({ namespace, type: 'activity' })
      const versioned = fixture.key({ namespace, version: 'build-7' })
      const otherPartition = fixture.key({ namespace, partition: 1 })
      for (const key of [workflow, activity, versioned, otherPartition]) await store().acquire({ key, nowMs: 1 })
      expect(await store().append({ key: workflow, rangeId: 1, tasks: tasks('w', 3), nowMs: 2 })).toEqual({ firstTaskId: 1, lastTaskId: 3 })
      expect(await store().append({ key: activity, rangeId: 1, tasks: tasks('a', 2), nowMs: 2 })).toEqual({ firstTaskId: 1, lastTaskId: 2 })
      expect(await store().append({ key: workflow, rangeId: 1, tasks: tasks('w2', 2), nowMs: 3 })).toEqual({ firstTaskId: 4, lastTaskId: 5 })
      expect(await store().append({ key: versioned, rangeId: 1, tasks: tasks('v', 4), nowMs: 3 })).toEqual({ firstTaskId: 1, lastTaskId: 4 })
      expect(await store().append({ key: otherPartition, rangeId: 1, tasks: tasks('p', 1), nowMs: 3 })).toEqual({ firstTaskId: 1, lastTaskId: 1 })
      const lastIds = await Promise.all([workflow, activity, versioned, otherPartition].map(async (key) => (await store().inspect(key))?.metadata.lastTaskId))
      expect(lastIds).toEqual([5, 2, 4, 1])
      expect((await readAll(store(), activity, 0)).map((row) => row.task.jobId)).toEqual(['a-0', 'a-1'])
    })

    it('acquiring one queue does not fence another of the same partition or family', async () => {
      const namespace = fixture.namespace('fence-scope')
      const workflow = fixture.key({ namespace })
      const activity = fixture.key({ namespace, type: 'activity' })
      const versioned = fixture.key({ namespace, version: 'v2' })
      for (const key of [workflow, activity, versioned]) await store().acquire({ key, nowMs: 1 })
      await store().acquire({ key: workflow, nowMs: 2 })
      await store().append({ key: activity, rangeId: 1, tasks: tasks('a', 1), nowMs: 3 })
      await store().append({ key: versioned, rangeId: 1, tasks: tasks('v', 1), nowMs: 3 })
      expect((await store().inspect(activity))?.metadata.rangeId).toBe(1)
    })

    it('reads 32 batches of 32 back in id order through pages of 1', async () => {
      const key = fixture.key()
      await store().acquire({ key, nowMs: 1 })
      const appended: Task[] = []
      for (let batch = 0; batch < 32; batch++) {
        const batchTasks = tasks(`b${batch}`, 32)
        const result = await store().append({ key, rangeId: 1, tasks: batchTasks, nowMs: 2 })
        expect(result).toEqual({ firstTaskId: batch * 32 + 1, lastTaskId: batch * 32 + 32 })
        appended.push(...batchTasks)
      }
      const onePerPage = await readAll(store(), key, 0, 1)
      expect(onePerPage.map((row) => row.taskId)).toEqual(appended.map((_, index) => index + 1))
      expect(onePerPage.map((row) => row.task)).toEqual(appended)
      const fullPages = await readAll(store(), key, 0)
      expect(fullPages).toEqual(onePerPage)
      expect(await store().read({ key, subqueue: 0, afterTaskId: 1000, limit: 1000 })).toHaveLength(24)
      expect(await store().read({ key, subqueue: 0, afterTaskId: 1024, limit: 10 })).toEqual([])
    })
  })
}

// The 'read' cases.
function readCases(fixture: ConformanceFixture): void {
  const store = () => fixture.store()
  describe('read', () => {
    it('returns tasks deep-equal to what was appended', async () => {
      const key = fixture.key()
      await store().acquire({ key, nowMs: 1 })
      const variety: Task[] = [
        task('plain'),
        task('run', { runId: 'run-1', kind: 'workflow-task', createdAtMs: 1_700_000_000_123.5 }),
        task('pinned', { versionDirective: { kind: 'pinned', version: 'dépl/🚀@2' }, expiresAtMs: 1_700_000_060_000 }),
        task('auto', { versionDirective: { kind: 'auto-upgrade' }, createdAtMs: 0, expiresAtMs: 0 }),
        task('名前 / with % and @', { runId: '"quoted"\\', kind: 'k' }),
      ]
      await store().append({ key, rangeId: 1, tasks: variety, nowMs: 2 })
      const rows = await readAll(store(), key, 0)
      expect(rows).toEqual(variety.map((expected, index) => ({ taskId: index + 1, task: expected })))
    })

    it('keeps subqueues by priority: a subqueue reads only its own tasks, ids from the one sequence', async () => {
      const key = fixture.key()
      await store().acquire({ key, nowMs: 1 })
      const priorities = [0, 5, 0, 5, 9, 5, 3]
      const batch = priorities.map((priority, index) => task(`t${index}`, { priority }))
      expect(await store().append({ key, rangeId: 1, tasks: batch, nowMs: 2 })).toEqual({ firstTaskId: 1, lastTaskId: 7 })
      const five = await store().read({ key, subqueue: 5, afterTaskId: 0, limit: 1000 })
      expect(five.map((row) => row.taskId)).toEqual([2, 4, 6])
      expect(five.every((row) => row.task.priority === 5)).toBe(true)
      expect((await readAll(store(), key, 0)).map((row) => row.taskId)).toEqual([1, 3])
      expect((await readAll(store(), key, 9)).map((row) => row.taskId)).toEqual([5])
      expect(await readAll(store(), key, 1)).toEqual([])
      expect((await store().read({ key, subqueue: 5, afterTaskId: 2, limit: 1 })).map((row) => row.taskId)).toEqual([4])
      const inspection = await store().inspect(key)
      expect(inspection?.storedRows).toBe(7)
      expect(inspection?.storedRowsBySubqueue).toEqual({ 0: 2, 3: 1, 5: 3, 9: 1 })
      // Every subqueue appended to is registered at 0, so a new owner knows what to read.
      expect(inspection?.metadata.ackLevels).toEqual({ 0: 0, 3: 0, 5: 0, 9: 0 })
      expect((await store().acquire({ key, nowMs: 3 })).ackLevels).toEqual({ 0: 0, 3: 0, 5: 0, 9: 0 })
    })

    it('reads a queue that was never acquired as empty and creates nothing', async () => {
      const key = fixture.key()
      expect(await store().read({ key, subqueue: 0, afterTaskId: 0, limit: 1000 })).toEqual([])
      expect(await store().inspect(key)).toBeNull()
    })
  })
}

// The 'copies' cases.
function copiesCases(fixture: ConformanceFixture): void {
  const store = () => fixture.store()
  describe('copies', () => {
    it('results and arguments are not shared with the store', async () => {
      const key = fixture.key()
      const mutableKey = { ...key }
      const metadata = await store().acquire({ key: mutableKey, nowMs: 1 })
      mutableKey.family = 'changed'
      ;(metadata.key as { family: string }).family = 'changed-too'
      const input = { ...task('original', { versionDirective: { kind: 'pinned', version: 'v1' } }) }
      await store().append({ key, rangeId: 1, tasks: [input], nowMs: 2 })
      ;(input as { jobId: string }).jobId = 'mutated-input'
      const [first] = await readAll(store(), key, 0)
      if (first === undefined) return expect.fail('the appended task was not read back')
      ;(first.task as { jobId: string }).jobId = 'mutated-output'
      ;(first.task.versionDirective as { version: string }).version = 'mutated-version'
      const before = await stateOf(store(), key)
      expect(before.inspection?.metadata.key).toEqual(key)
      expect(before.rows[0]?.[0]?.task).toEqual(task('original', { versionDirective: { kind: 'pinned', version: 'v1' } }))
    })
  })
}
