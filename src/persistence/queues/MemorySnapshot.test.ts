/**
 * MemorySnapshot tests: export is plain, deterministic data; import round-trips; every class of
 * malformed, truncated or other-version snapshot is refused with the path of the problem, and a
 * refused import leaves the store exactly as it was.
 */
import { describe, expect, it } from 'vitest'
import { SnapshotInvalid } from '../../domain/errors.ts'
import { encodeQueueKey, type QueueKey } from '../../domain/QueueKey.ts'
import { makeTask } from '../../domain/Task.ts'
import type { MemorySnapshot } from './MemorySnapshot.ts'
import { makeMemoryStore, type MemoryStore } from './MemoryStore.ts'

const workflow: QueueKey = { namespace: 'default', family: 'emails', type: 'workflow', partition: 0, version: null }
const activity: QueueKey = { ...workflow, type: 'activity' }
const versioned: QueueKey = { ...workflow, version: 'build/7 ✓' }

// A store with three queues, rows in two subqueues, a checkpoint, a reload and user data.
async function populated(): Promise<MemoryStore> {
  const store = makeMemoryStore()
  for (const key of [versioned, workflow, activity]) await store.acquire({ key, nowMs: 100 })
  await store.append({
    key: workflow,
    rangeId: 1,
    tasks: [0, 5, 0, 5, 0].map((priority, index) => makeTask({ jobId: `job-${index}`, priority, createdAtMs: 10.5 })),
    nowMs: 200,
  })
  await store.checkpoint({ key: workflow, rangeId: 1, ackLevels: [{ subqueue: 0, ackLevel: 3 }], nowMs: 300 })
  await store.acquire({ key: workflow, nowMs: 400 })
  await store.append({ key: versioned, rangeId: 1, tasks: [makeTask({ jobId: 'pinned', versionDirective: { kind: 'pinned', version: 'build/7 ✓' }, createdAtMs: 1 })], nowMs: 500 })
  await store.updateUserData({ namespace: 'default', family: 'emails', expectedVersion: 0, data: { ramp: [1, 2] }, nowMs: 600 })
  await store.updateUserData({ namespace: 'a', family: 'z', expectedVersion: 0, data: null, nowMs: 600 })
  return store
}

// A deep, mutable copy of a snapshot to break in one place.
function editable(snapshot: MemorySnapshot): any {
  return JSON.parse(JSON.stringify(snapshot))
}

function problemOf(run: () => void): string {
  try {
    run()
  } catch (error) {
    expect(error).toBeInstanceOf(SnapshotInvalid)
    return (error as SnapshotInvalid).problem
  }
  return expect.fail('expected SnapshotInvalid')
}

describe('MemorySnapshot', () => {
  it('exports plain data in deterministic order', async () => {
    const snapshot = (await populated()).exportSnapshot()
    expect(snapshot.format).toBe('matchbox.memory')
    expect(snapshot.version).toBe(1)
    expect(snapshot.queues.map((queue) => queue.key)).toEqual([encodeQueueKey(activity), encodeQueueKey(workflow), encodeQueueKey(versioned)])
    expect(snapshot.queues[1]).toEqual({ key: encodeQueueKey(workflow), rangeId: 2, lastTaskId: 5, ackLevels: { 0: 3, 5: 0 }, updatedAtMs: 400 })
    expect(snapshot.tasks.map((row) => [row.queue, row.taskId])).toEqual([
      [encodeQueueKey(workflow), 2],
      [encodeQueueKey(workflow), 4],
      [encodeQueueKey(workflow), 5],
      [encodeQueueKey(versioned), 1],
    ])
    expect(snapshot.userData.map((entry) => [entry.namespace, entry.family])).toEqual([
      ['a', 'z'],
      ['default', 'emails'],
    ])
    expect(JSON.parse(JSON.stringify(snapshot))).toEqual(snapshot)
    expect(JSON.stringify((await populated()).exportSnapshot())).toBe(JSON.stringify(snapshot))
  })

  it('round-trips: an imported snapshot behaves like the original and exports identically', async () => {
    const original = await populated()
    const snapshot = original.exportSnapshot()
    const copy = makeMemoryStore()
    copy.importSnapshot(JSON.stringify(snapshot))
    expect(copy.exportSnapshot()).toEqual(snapshot)
    expect(await copy.list()).toEqual(await original.list())
    expect(await copy.read({ key: workflow, subqueue: 5, afterTaskId: 0, limit: 10 })).toEqual(
      await original.read({ key: workflow, subqueue: 5, afterTaskId: 0, limit: 10 }),
    )
    expect(await copy.getUserData({ namespace: 'default', family: 'emails' })).toEqual({ namespace: 'default', family: 'emails', version: 1, data: { ramp: [1, 2] } })
    // Fencing and the id sequence continue from the snapshot.
    await expect(copy.append({ key: workflow, rangeId: 1, tasks: [makeTask({ jobId: 'x', createdAtMs: 1 })], nowMs: 1 })).rejects.toMatchObject({ _tag: 'OwnershipLost', currentRangeId: 2 })
    expect(await copy.append({ key: workflow, rangeId: 2, tasks: [makeTask({ jobId: 'x', createdAtMs: 1 })], nowMs: 1 })).toEqual({ firstTaskId: 6, lastTaskId: 6 })
  })

  it('import replaces the whole state and shares nothing with the input', async () => {
    const store = await populated()
    const snapshot = editable(makeMemoryStore().exportSnapshot())
    snapshot.userData.push({ namespace: 'n', family: 'f', version: 3, data: { deep: ['x'] } })
    store.importSnapshot(snapshot)
    snapshot.userData[0].data.deep.push('mutated')
    expect(await store.list()).toEqual([])
    expect(await store.getUserData({ namespace: 'n', family: 'f' })).toEqual({ namespace: 'n', family: 'f', version: 3, data: { deep: ['x'] } })
    const exported = store.exportSnapshot()
    ;(exported.userData.map((entry) => entry.data)[0] as { deep: string[] }).deep.push('mutated-export')
    expect((await store.getUserData({ namespace: 'n', family: 'f' }))?.data).toEqual({ deep: ['x'] })
  })

  const rejections: ReadonlyArray<{ name: string; problem: RegExp; edit: (snapshot: any) => unknown }> = [
    { name: 'a non-object', problem: /^\(snapshot\): must be an object/, edit: () => [] },
    { name: 'truncated JSON text', problem: /^\(snapshot\): is not valid JSON/, edit: (s) => JSON.stringify(s).slice(0, 40) },
    { name: 'another format', problem: /^format: must be "matchbox\.memory"/, edit: (s) => ({ ...s, format: 'matchbox.sql' }) },
    { name: 'a newer version', problem: /^version: must be 1/, edit: (s) => ({ ...s, version: 2 }) },
    { name: 'an older version', problem: /^version: must be 1/, edit: (s) => ({ ...s, version: 0 }) },
    { name: 'a missing section', problem: /^\(snapshot\)\.tasks: is missing/, edit: ({ tasks: _tasks, ...rest }) => rest },
    { name: 'an unknown field', problem: /^\(snapshot\)\.extra: is not a known field/, edit: (s) => ({ ...s, extra: 1 }) },
    { name: 'a section of the wrong type', problem: /^queues: must be an array/, edit: (s) => ({ ...s, queues: {} }) },
    { name: 'range 0', problem: /^queues\[2\]\.rangeId: must be an integer ≥ 1/, edit: (s) => void (s.queues[2].rangeId = 0) },
    { name: 'a fractional last id', problem: /^queues\[0\]\.lastTaskId: must be an integer ≥ 0/, edit: (s) => void (s.queues[0].lastTaskId = 1.5) },
    { name: 'a non-canonical key', problem: /^queues\[0\]\.key: /, edit: (s) => void (s.queues[0].key = 'default/emails/activity/00') },
    { name: 'a key with a control character', problem: /^queues\[0\]\.key\.namespace: must not contain control characters/, edit: (s) => void (s.queues[0].key = 'de%07fault/emails/activity/0') },
    { name: 'a duplicate queue', problem: /^queues\[1\]\.key: duplicates queue/, edit: (s) => void (s.queues[1].key = s.queues[0].key) },
    { name: 'an ack level above the last id', problem: /^queues\[1\]\.ackLevels\.0: must be at most lastTaskId \(5\)/, edit: (s) => void (s.queues[1].ackLevels[0] = 6) },
    { name: 'an ack level of subqueue 10', problem: /^queues\[1\]\.ackLevels\.10: subqueue must be an integer in 0…9/, edit: (s) => void (s.queues[1].ackLevels[10] = 1) },
    { name: 'a NaN time', problem: /^queues\[0\]\.updatedAtMs: must be an integer ≥ 0/, edit: (s) => void (s.queues[0].updatedAtMs = 'NaN') },
    { name: 'a fractional time', problem: /^queues\[1\]\.updatedAtMs: must be an integer ≥ 0/, edit: (s) => void (s.queues[1].updatedAtMs = 1.5) },
    { name: 'a task of an unknown queue', problem: /^tasks\[0\]\.queue: must be the key of a queue/, edit: (s) => void (s.tasks[0].queue = 'x/y/workflow/0') },
    { name: 'a task id above the last id', problem: /^tasks\[3\]\.taskId: must be at most the queue's lastTaskId \(1\)/, edit: (s) => void (s.tasks[3].taskId = 2) },
    { name: 'a duplicate task id', problem: /^tasks\[1\]\.taskId: duplicates task 2/, edit: (s) => void (s.tasks[1].taskId = 2) },
    { name: 'a task at or below its ack level', problem: /^tasks\[2\]\.taskId: must be above the ack level of subqueue 0 \(3\)/, edit: (s) => void (s.tasks[2].taskId = 3) },
    { name: 'a task in an unregistered subqueue', problem: /^tasks\[3\]\.task\.priority: subqueue 0 is not in the queue's ackLevels/, edit: (s) => void (s.queues[2].ackLevels = {}) },
    { name: 'a task with priority 10', problem: /^tasks\[0\]\.task\.priority: must be an integer in 0…9/, edit: (s) => void (s.tasks[0].task.priority = 10) },
    { name: 'a task missing a field', problem: /^tasks\[0\]\.task\.runId: is missing/, edit: (s) => void delete s.tasks[0].task.runId },
    { name: 'a task with an extra field', problem: /^tasks\[0\]\.task\.deliveryId: is not a known field/, edit: (s) => void (s.tasks[0].task.deliveryId = 'legacy') },
    { name: 'a pinned task without a version', problem: /^tasks\[3\]\.task\.versionDirective\.version: is missing/, edit: (s) => void delete s.tasks[3].task.versionDirective.version },
    { name: 'user data version 0', problem: /^userData\[1\]\.version: must be an integer ≥ 1/, edit: (s) => void (s.userData[1].version = 0) },
    { name: 'user data with an empty family', problem: /^userData\[0\]\.family: must not be empty/, edit: (s) => void (s.userData[0].family = '') },
    { name: 'duplicate user data', problem: /^userData\[1\]: duplicates the user data of a\/z/, edit: (s) => void (s.userData[1] = { ...s.userData[0] }) },
    { name: 'user data with a NUL character', problem: /^userData\[1\]\.data\.ramp\[0\]: contains a NUL/, edit: (s) => void (s.userData[1].data.ramp[0] = 'a\u0000') },
  ]

  for (const rejection of rejections) {
    it(`rejects ${rejection.name}, naming the path, and leaves the store unchanged`, async () => {
      const store = await populated()
      const before = store.exportSnapshot()
      const snapshot = editable(before)
      const edited = rejection.edit(snapshot)
      const problem = problemOf(() => store.importSnapshot(edited === undefined ? snapshot : edited))
      expect(problem).toMatch(rejection.problem)
      expect(store.exportSnapshot()).toEqual(before)
      expect(await store.inspect(workflow)).toMatchObject({ metadata: { rangeId: 2, lastTaskId: 5 }, storedRows: 3 })
    })
  }

  it('accepts tasks in any order', async () => {
    const store = await populated()
    const snapshot = editable(store.exportSnapshot())
    snapshot.tasks.reverse()
    const copy = makeMemoryStore()
    copy.importSnapshot(snapshot)
    expect(copy.exportSnapshot()).toEqual(store.exportSnapshot())
  })
})
