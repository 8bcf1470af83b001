/**
 * RelocateConformance — moving backlog between physical queues (upstream Matching's migration 004:
 * "relocates old auto backlog to default storage, allocating fresh destination IDs without
 * collisions"), and the `inspect` / `list` views with stored-row counts.
 *
 * Readings of the contract pinned here:
 * - when both ranges are stale, `from` is reported; relocating nothing stored is a success
 *   returning []; relocation leaves the source's `lastTaskId` and registered subqueues alone
 *   (ids are never reused) and registers a subqueue new to the destination, like an append;
 * - `list` orders by the canonical encoding compared as bytes (it is ASCII), so `…/10` sorts
 *   before `…/2` and upper case before lower case, whatever the database's collation.
 */
import { describe, expect, it } from 'vitest'
import { encodeQueueKey, type QueueKey } from '../../../domain/QueueKey.ts'
import { type ConformanceFixture, expectRejection, readAll, stateOf, task } from './ConformanceFixture.ts'

/** Registers the relocate, inspect and list tests. */
export function describeRelocateConformance(fixture: ConformanceFixture): void {
  relocateCases(fixture)
  inspectAndListCases(fixture)
}

// The 'relocate' cases.
function relocateCases(fixture: ConformanceFixture): void {
  const store = () => fixture.store()
  describe('relocate', () => {
    it('moves rows with fresh destination ids after its last id, in source order, keeping subqueues', async () => {
      const { from, to } = await pair(fixture)
      const moved = await store().relocate({ from, fromRangeId: 1, to, toRangeId: 1, taskIds: [5, 2, 1], nowMs: 3 })
      expect(moved).toEqual([
        { fromTaskId: 1, toTaskId: 3 },
        { fromTaskId: 2, toTaskId: 4 },
        { fromTaskId: 5, toTaskId: 5 },
      ])
      expect((await readAll(store(), from, 0)).map((row) => row.taskId)).toEqual([3, 6])
      expect((await readAll(store(), from, 3)).map((row) => row.taskId)).toEqual([4])
      const destinationLow = await readAll(store(), to, 0)
      expect(destinationLow.map((row) => [row.taskId, row.task.jobId])).toEqual([
        [1, 'dst-1'],
        [3, 'src-1'],
        [5, 'src-5'],
      ])
      expect(destinationLow[1]?.task).toEqual(task('src-1', { versionDirective: { kind: 'auto-upgrade' } }))
      expect((await readAll(store(), to, 3)).map((row) => [row.taskId, row.task.jobId])).toEqual([
        [2, 'dst-2'],
        [4, 'src-2'],
      ])
      expect((await store().inspect(to))?.metadata.lastTaskId).toBe(5)
      expect((await store().inspect(from))?.metadata.lastTaskId).toBe(6)
      expect(await store().append({ key: to, rangeId: 1, tasks: [task('next')], nowMs: 4 })).toEqual({ firstTaskId: 6, lastTaskId: 6 })
    })

    it('skips ids that are not stored at the source', async () => {
      const { from, to } = await pair(fixture)
      await store().checkpoint({ key: from, rangeId: 1, ackLevels: [{ subqueue: 0, ackLevel: 3 }], nowMs: 3 })
      const moved = await store().relocate({ from, fromRangeId: 1, to, toRangeId: 1, taskIds: [1, 3, 4, 99], nowMs: 4 })
      expect(moved).toEqual([{ fromTaskId: 4, toTaskId: 3 }])
      const nothing = await store().relocate({ from, fromRangeId: 1, to, toRangeId: 1, taskIds: [1, 4], nowMs: 5 })
      expect(nothing).toEqual([])
      expect((await store().inspect(to))?.metadata.lastTaskId).toBe(3)
    })

    it('registers a subqueue new to the destination, as an append would', async () => {
      const namespace = fixture.namespace('relocate-register')
      const from = fixture.key({ namespace, version: 'v1' })
      const to = fixture.key({ namespace })
      await store().acquire({ key: from, nowMs: 1 })
      await store().acquire({ key: to, nowMs: 1 })
      await store().append({ key: from, rangeId: 1, tasks: [task('urgent', { priority: 7 })], nowMs: 2 })
      expect(await store().relocate({ from, fromRangeId: 1, to, toRangeId: 1, taskIds: [1], nowMs: 3 })).toEqual([{ fromTaskId: 1, toTaskId: 1 }])
      expect((await store().inspect(to))?.metadata.ackLevels).toEqual({ 7: 0 })
      expect((await store().inspect(from))?.metadata.ackLevels).toEqual({ 7: 0 })
      expect((await store().inspect(from))?.storedRows).toBe(0)
    })

    it('is refused with OwnershipLost when the source is stale, moving nothing', async () => {
      const { from, to } = await pair(fixture)
      await store().acquire({ key: from, nowMs: 3 })
      const before = [await stateOf(store(), from), await stateOf(store(), to)]
      await expectRejection(store().relocate({ from, fromRangeId: 1, to, toRangeId: 1, taskIds: [1, 2], nowMs: 4 }), 'OwnershipLost', {
        queue: encodeQueueKey(from),
        rangeId: 1,
        currentRangeId: 2,
      })
      expect([await stateOf(store(), from), await stateOf(store(), to)]).toEqual(before)
    })

    it('is refused with OwnershipLost when the destination is stale, moving nothing', async () => {
      const { from, to } = await pair(fixture)
      await store().acquire({ key: to, nowMs: 3 })
      const before = [await stateOf(store(), from), await stateOf(store(), to)]
      await expectRejection(store().relocate({ from, fromRangeId: 1, to, toRangeId: 1, taskIds: [1, 2], nowMs: 4 }), 'OwnershipLost', {
        queue: encodeQueueKey(to),
        rangeId: 1,
        currentRangeId: 2,
      })
      expect([await stateOf(store(), from), await stateOf(store(), to)]).toEqual(before)
    })

    it('reports the source when both sides are stale, and a never-acquired destination with null', async () => {
      const { from, to } = await pair(fixture)
      await store().acquire({ key: from, nowMs: 3 })
      await store().acquire({ key: to, nowMs: 3 })
      await expectRejection(store().relocate({ from, fromRangeId: 1, to, toRangeId: 1, taskIds: [1], nowMs: 4 }), 'OwnershipLost', {
        queue: encodeQueueKey(from),
      })
      const nowhere = fixture.key()
      await expectRejection(store().relocate({ from, fromRangeId: 2, to: nowhere, toRangeId: 1, taskIds: [1], nowMs: 4 }), 'OwnershipLost', {
        queue: encodeQueueKey(nowhere),
        currentRangeId: null,
      })
      expect(await store().inspect(nowhere)).toBeNull()
      expect((await readAll(store(), from, 0)).map((row) => row.taskId)).toEqual([1, 3, 5, 6])
    })
  })
}

// The 'inspect and list' cases.
function inspectAndListCases(fixture: ConformanceFixture): void {
  const store = () => fixture.store()
  describe('inspect and list', () => {
    it('inspect: null for a queue never acquired; stored rows per subqueue otherwise', async () => {
      const { from } = await pair(fixture)
      expect(await store().inspect(fixture.key())).toBeNull()
      const inspection = await store().inspect(from)
      expect(inspection?.metadata.key).toEqual(from)
      expect(inspection?.storedRows).toBe(6)
      expect(inspection?.storedRowsBySubqueue).toEqual({ 0: 4, 3: 2 })
    })

    it('list filters by namespace and family and orders by canonical key', async () => {
      const namespace = fixture.namespace('list')
      const keys: QueueKey[] = [
        fixture.key({ namespace, family: 'b', partition: 2 }),
        fixture.key({ namespace, family: 'b', partition: 10 }),
        fixture.key({ namespace, family: 'b', partition: 2, version: 'v1' }),
        fixture.key({ namespace, family: 'b', partition: 2, type: 'activity' }),
        fixture.key({ namespace, family: 'B' }),
        fixture.key({ namespace, family: 'a b' }),
        fixture.key({ namespace, family: 'a-b' }),
        fixture.key({ namespace, family: 'é' }),
        fixture.key({ namespace, family: 'z' }),
      ]
      for (const key of keys) await store().acquire({ key, nowMs: 1 })
      await store().append({ key: keys[0] as QueueKey, rangeId: 1, tasks: [task('x', { priority: 4 })], nowMs: 2 })
      const expectedOrder = keys.map(encodeQueueKey).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      const listed = await store().list({ namespace })
      expect(listed.map((inspection) => encodeQueueKey(inspection.metadata.key))).toEqual(expectedOrder)
      const first = listed.find((inspection) => encodeQueueKey(inspection.metadata.key) === encodeQueueKey(keys[0] as QueueKey))
      expect(first?.storedRows).toBe(1)
      expect(first?.storedRowsBySubqueue).toEqual({ 4: 1 })
      const family = await store().list({ namespace, family: 'b' })
      const familyOrder = expectedOrder.filter((encoded) => encoded.startsWith(`${encodeURIComponent(namespace)}/b/`))
      expect(family.map((inspection) => encodeQueueKey(inspection.metadata.key))).toEqual(familyOrder)
      expect(familyOrder).toHaveLength(4)
      expect(await store().list({ namespace, family: 'missing' })).toEqual([])
      expect(await store().list({ namespace: fixture.namespace('empty') })).toEqual([])
    })

    it('list without a filter includes every queue, in canonical order', async () => {
      const namespace = fixture.namespace('all')
      const mine = [fixture.key({ namespace, family: 'one' }), fixture.key({ namespace, family: 'two' })]
      for (const key of mine) await store().acquire({ key, nowMs: 1 })
      const all = (await store().list()).map((inspection) => encodeQueueKey(inspection.metadata.key))
      expect(all).toEqual([...all].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)))
      for (const key of mine) expect(all).toContain(encodeQueueKey(key))
    })
  })
}

// A versioned source with ids 1–6 (priorities 0,3,0,3,0,0) and a default destination holding 2 rows.
async function pair(fixture: ConformanceFixture): Promise<{ from: QueueKey; to: QueueKey }> {
  const store = () => fixture.store()
  const namespace = fixture.namespace('relocate')
  const from = fixture.key({ namespace, version: 'auto-1' })
  const to = fixture.key({ namespace })
  await store().acquire({ key: from, nowMs: 1 })
  await store().acquire({ key: to, nowMs: 1 })
  const source = [0, 3, 0, 3, 0, 0].map((priority, index) => task(`src-${index + 1}`, { priority, versionDirective: { kind: 'auto-upgrade' } }))
  await store().append({ key: from, rangeId: 1, tasks: source, nowMs: 2 })
  await store().append({ key: to, rangeId: 1, tasks: [task('dst-1'), task('dst-2', { priority: 3 })], nowMs: 2 })
  return { from, to }
}
