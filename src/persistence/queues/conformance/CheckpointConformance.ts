/**
 * CheckpointConformance — saving ack levels, deleting the handled prefix, and resuming after a
 * reload (upstream Matching: "the next manager increments the range and resumes reading above the saved
 * acknowledgement level").
 *
 * Readings of the contract pinned here:
 * - a stale range is refused before the ack levels are looked at, so a stale writer learns
 *   `OwnershipLost` even when its ack level would also be invalid;
 * - an ack level above `lastTaskId` anywhere in the list refuses the whole call (nothing saved,
 *   nothing deleted), naming `ackLevels[i].ackLevel`;
 * - a checkpoint whose levels are all at or below the saved ones succeeds, changes no level,
 *   deletes nothing, and still stamps `updatedAtMs` (the row was checkpointed);
 * - a checkpoint registers the subqueues it names, even at 0 and even with no rows in them.
 */
import { describe, expect, it } from 'vitest'
import { encodeQueueKey, type QueueKey } from '../../../domain/QueueKey.ts'
import { type ConformanceFixture, expectRejection, readAll, stateOf, task, tasks } from './ConformanceFixture.ts'

// The fixture and the helpers the checkpoint and reload cases share.
function checkpointKitOf(fixture: ConformanceFixture) {
  const store = () => fixture.store()

  // A queue at range 1 holding subqueue 0: ids 1–4 and 7–8, subqueue 5: ids 5–6.
  async function twoSubqueues(): Promise<QueueKey> {
    const key = fixture.key()
    await store().acquire({ key, nowMs: 1 })
    await store().append({ key, rangeId: 1, tasks: tasks('low', 4, 0), nowMs: 2 })
    await store().append({ key, rangeId: 1, tasks: tasks('high', 2, 5), nowMs: 2 })
    await store().append({ key, rangeId: 1, tasks: tasks('late', 2, 0), nowMs: 2 })
    return key
  }

  return { fixture, store, twoSubqueues }
}

/** Registers the checkpoint and reload tests. */
export function describeCheckpointConformance(fixture: ConformanceFixture): void {
  const kit = checkpointKitOf(fixture)
  describe('checkpoint', () => {
    checkpointCases(kit)
  })
  describe('empty queues and reload', () => {
    reloadCases(kit)
  })
}

function checkpointCases(kit: ReturnType<typeof checkpointKitOf>): void {
  const { fixture, store, twoSubqueues } = kit
  it('saves the ack level and deletes rows at or below it in that subqueue only', async () => {
    const key = await twoSubqueues()
    const result = await store().checkpoint({ key, rangeId: 1, ackLevels: [{ subqueue: 0, ackLevel: 7 }], nowMs: 50 })
    expect(result.deletedRows).toBe(5)
    expect(result.metadata.ackLevels).toEqual({ 0: 7, 5: 0 })
    expect(result.metadata.rangeId).toBe(1)
    expect(result.metadata.lastTaskId).toBe(8)
    expect(result.metadata.updatedAtMs).toBe(50)
    expect((await readAll(store(), key, 0)).map((row) => row.taskId)).toEqual([8])
    expect((await readAll(store(), key, 5)).map((row) => row.taskId)).toEqual([5, 6])
    const inspection = await store().inspect(key)
    expect(inspection?.storedRows).toBe(3)
    expect(inspection?.storedRowsBySubqueue).toEqual({ 0: 1, 5: 2 })
    expect(inspection?.metadata.ackLevels).toEqual({ 0: 7, 5: 0 })
  })

  it('saves several subqueues in one call', async () => {
    const key = await twoSubqueues()
    const result = await store().checkpoint({
      key,
      rangeId: 1,
      ackLevels: [
        { subqueue: 5, ackLevel: 5 },
        { subqueue: 0, ackLevel: 2 },
      ],
      nowMs: 3,
    })
    expect(result.deletedRows).toBe(3)
    expect(result.metadata.ackLevels).toEqual({ 0: 2, 5: 5 })
    expect((await readAll(store(), key, 5)).map((row) => row.taskId)).toEqual([6])
  })

  it('never moves an ack level backwards: a lower value leaves it', async () => {
    const key = await twoSubqueues()
    await store().checkpoint({ key, rangeId: 1, ackLevels: [{ subqueue: 0, ackLevel: 3 }], nowMs: 10 })
    const result = await store().checkpoint({ key, rangeId: 1, ackLevels: [{ subqueue: 0, ackLevel: 1 }], nowMs: 20 })
    expect(result.metadata.ackLevels).toEqual({ 0: 3, 5: 0 })
    expect(result.deletedRows).toBe(0)
    expect(result.metadata.updatedAtMs).toBe(20)
    expect((await readAll(store(), key, 0)).map((row) => row.taskId)).toEqual([4, 7, 8])
  })

  it('may set an ack level above every stored row of the subqueue, up to lastTaskId', async () => {
    const key = await twoSubqueues()
    const result = await store().checkpoint({ key, rangeId: 1, ackLevels: [{ subqueue: 3, ackLevel: 8 }], nowMs: 10 })
    expect(result.deletedRows).toBe(0)
    expect(result.metadata.ackLevels).toEqual({ 0: 0, 3: 8, 5: 0 })
    expect((await stateOf(store(), key)).inspection?.storedRows).toBe(8)
  })

  it('refuses a stale range with OwnershipLost: nothing saved, nothing deleted', async () => {
    const key = await twoSubqueues()
    await store().acquire({ key, nowMs: 3 })
    const before = await stateOf(store(), key)
    await expectRejection(store().checkpoint({ key, rangeId: 1, ackLevels: [{ subqueue: 0, ackLevel: 4 }], nowMs: 4 }), 'OwnershipLost', {
      queue: encodeQueueKey(key),
      rangeId: 1,
      currentRangeId: 2,
    })
    expect(await stateOf(store(), key)).toEqual(before)
  })

  it('refuses a queue that was never acquired with currentRangeId null', async () => {
    const key = fixture.key()
    await expectRejection(store().checkpoint({ key, rangeId: 1, ackLevels: [{ subqueue: 0, ackLevel: 0 }], nowMs: 1 }), 'OwnershipLost', {
      currentRangeId: null,
    })
    expect(await store().inspect(key)).toBeNull()
  })

  it('checks the fence before the ack level', async () => {
    const key = await twoSubqueues()
    await store().acquire({ key, nowMs: 3 })
    await expectRejection(store().checkpoint({ key, rangeId: 1, ackLevels: [{ subqueue: 0, ackLevel: 99 }], nowMs: 4 }), 'OwnershipLost')
  })

  it('refuses an ack level above lastTaskId with InvalidInput, changing nothing', async () => {
    const key = await twoSubqueues()
    const before = await stateOf(store(), key)
    const ackLevels = [
      { subqueue: 0, ackLevel: 4 },
      { subqueue: 5, ackLevel: 9 },
    ]
    await expectRejection(store().checkpoint({ key, rangeId: 1, ackLevels, nowMs: 99 }), 'InvalidInput', { field: 'ackLevels[1].ackLevel' })
    expect(await stateOf(store(), key)).toEqual(before)
  })
}

function reloadCases(kit: ReturnType<typeof checkpointKitOf>): void {
  const { fixture, store } = kit
  it('a queue row with ack = last id = 0 is valid and inspect shows it', async () => {
    const key = fixture.key()
    await store().acquire({ key, nowMs: 1 })
    const result = await store().checkpoint({ key, rangeId: 1, ackLevels: [{ subqueue: 0, ackLevel: 0 }], nowMs: 2 })
    expect(result.deletedRows).toBe(0)
    const inspection = await store().inspect(key)
    expect(inspection).not.toBeNull()
    expect(inspection?.metadata.lastTaskId).toBe(0)
    expect(inspection?.metadata.ackLevels).toEqual({ 0: 0 })
    expect(inspection?.storedRows).toBe(0)
    expect(inspection?.storedRowsBySubqueue).toEqual({})
    const reloaded = await store().acquire({ key, nowMs: 3 })
    expect(reloaded.rangeId).toBe(2)
    expect(reloaded.lastTaskId).toBe(0)
    expect(reloaded.ackLevels).toEqual({ 0: 0 })
  })

  it('a reload resumes above the saved ack level: metadata carries it, reading after it returns the rest', async () => {
    const key = fixture.key()
    await store().acquire({ key, nowMs: 1 })
    await store().append({ key, rangeId: 1, tasks: tasks('t', 5), nowMs: 2 })
    await store().checkpoint({ key, rangeId: 1, ackLevels: [{ subqueue: 0, ackLevel: 2 }], nowMs: 3 })
    const reloaded = await store().acquire({ key, nowMs: 4 })
    expect(reloaded.rangeId).toBe(2)
    expect(reloaded.lastTaskId).toBe(5)
    expect(reloaded.ackLevels).toEqual({ 0: 2 })
    const rest = await store().read({ key, subqueue: 0, afterTaskId: reloaded.ackLevels[0] ?? 0, limit: 1000 })
    expect(rest.map((row) => [row.taskId, row.task.jobId])).toEqual([
      [3, 't-2'],
      [4, 't-3'],
      [5, 't-4'],
    ])
    expect(await store().append({ key, rangeId: 2, tasks: [task('after-reload')], nowMs: 5 })).toEqual({ firstTaskId: 6, lastTaskId: 6 })
    await expectRejection(store().checkpoint({ key, rangeId: 1, ackLevels: [{ subqueue: 0, ackLevel: 5 }], nowMs: 6 }), 'OwnershipLost')
    const done = await store().checkpoint({ key, rangeId: 2, ackLevels: [{ subqueue: 0, ackLevel: 6 }], nowMs: 7 })
    expect(done.deletedRows).toBe(4)
    expect((await store().inspect(key))?.storedRows).toBe(0)
  })
}
