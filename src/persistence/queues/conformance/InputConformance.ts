/**
 * InputConformance — every store refuses the same malformed inputs with the same
 * `InvalidInput` (naming the field) and writes nothing, because all of them validate through
 * StoreInput.ts before touching anything.
 *
 * Readings of the contract pinned here: validation comes before the fence (a malformed append
 * to a queue nobody acquired is `InvalidInput`, not `OwnershipLost`), and `inspect` validates
 * its key like every other call.
 */
import { describe, expect, it } from 'vitest'
import type { JsonValue } from '../../../domain/Json.ts'
import type { QueueKey } from '../../../domain/QueueKey.ts'
import type { Task } from '../../../domain/Task.ts'
import type { Store } from '../Store.ts'
import { type ConformanceFixture, expectRejection, stateOf, task, tasks } from './ConformanceFixture.ts'

interface Case {
  readonly name: string
  readonly field: string
  readonly call: (store: Store, key: QueueKey) => Promise<unknown>
}

// Malformed values are cast: the suite checks what a caller without types would send.
const unchecked = <T>(value: unknown): T => value as T

/** Registers the input-validation tests. */
export function describeInputConformance(fixture: ConformanceFixture): void {
  invalidKeysCases(fixture)
  invalidQueueOperationsCases(fixture)
  invalidUserDataAndFiltersCases(fixture)
}

// The 'invalid keys' cases.
function invalidKeysCases(fixture: ConformanceFixture): void {
  const store = () => fixture.store()
  describe('invalid keys', () => {
    const badKeys: ReadonlyArray<{ name: string; field: string; key: (namespace: string) => QueueKey }> = [
      { name: 'an empty namespace', field: 'key.namespace', key: () => fixture.key({ namespace: '' }) },
      { name: 'an empty family', field: 'key.family', key: (namespace) => fixture.key({ namespace, family: '' }) },
      { name: 'a family over 1000 UTF-8 bytes', field: 'key.family', key: (namespace) => fixture.key({ namespace, family: 'é'.repeat(501) }) },
      { name: 'a control character in the version', field: 'key.version', key: (namespace) => fixture.key({ namespace, version: 'v\u0007' }) },
      { name: 'an empty version', field: 'key.version', key: (namespace) => fixture.key({ namespace, version: '' }) },
      { name: 'a negative partition', field: 'key.partition', key: (namespace) => fixture.key({ namespace, partition: -1 }) },
      { name: 'a fractional partition', field: 'key.partition', key: (namespace) => fixture.key({ namespace, partition: 1.5 }) },
      { name: 'an unknown type', field: 'key.type', key: (namespace) => fixture.key({ namespace, type: unchecked('timer') }) },
    ]
    for (const bad of badKeys) {
      it(`acquire and inspect refuse ${bad.name}, naming ${bad.field}, and create nothing`, async () => {
        const namespace = fixture.namespace('badkey')
        const key = bad.key(namespace)
        await expectRejection(store().acquire({ key, nowMs: 1 }), 'InvalidInput', { field: bad.field })
        await expectRejection(store().inspect(key), 'InvalidInput', { field: bad.field })
        await expectRejection(store().read({ key, subqueue: 0, afterTaskId: 0, limit: 1 }), 'InvalidInput', { field: bad.field })
        expect(await store().list({ namespace })).toEqual([])
      })
    }

    it('accepts a family of exactly 1000 UTF-8 bytes', async () => {
      const key = fixture.key({ family: 'é'.repeat(500) })
      expect((await store().acquire({ key, nowMs: 1 })).key).toEqual(key)
    })
  })
}

// The 'invalid queue operations' cases.
function invalidQueueOperationsCases(fixture: ConformanceFixture): void {
  const store = () => fixture.store()
  describe('invalid queue operations', () => {
    const validTask = task('ok')
    const cases: ReadonlyArray<Case> = [
      { name: 'NaN nowMs on acquire', field: 'nowMs', call: (s, key) => s.acquire({ key, nowMs: Number.NaN }) },
      {
        name: 'a NaN createdAtMs',
        field: 'tasks[1].createdAtMs',
        call: (s, key) => s.append({ key, rangeId: 1, tasks: [validTask, { ...validTask, createdAtMs: Number.NaN }], nowMs: 1 }),
      },
      {
        name: 'priority 10',
        field: 'tasks[0].priority',
        call: (s, key) => s.append({ key, rangeId: 1, tasks: [{ ...validTask, priority: 10 }], nowMs: 1 }),
      },
      {
        name: 'an empty jobId',
        field: 'tasks[0].jobId',
        call: (s, key) => s.append({ key, rangeId: 1, tasks: [{ ...validTask, jobId: '' }], nowMs: 1 }),
      },
      {
        name: 'a pinned directive without a version',
        field: 'tasks[0].versionDirective.version',
        call: (s, key) => s.append({ key, rangeId: 1, tasks: [{ ...validTask, versionDirective: unchecked({ kind: 'pinned' }) }], nowMs: 1 }),
      },
      { name: 'an empty append batch', field: 'tasks', call: (s, key) => s.append({ key, rangeId: 1, tasks: [], nowMs: 1 }) },
      { name: 'an append batch over the limit', field: 'tasks', call: (s, key) => s.append({ key, rangeId: 1, tasks: tasks('big', 101), nowMs: 1 }) },
      { name: 'range 0 on append', field: 'rangeId', call: (s, key) => s.append({ key, rangeId: 0, tasks: [validTask], nowMs: 1 }) },
      { name: 'read limit 0', field: 'limit', call: (s, key) => s.read({ key, subqueue: 0, afterTaskId: 0, limit: 0 }) },
      { name: 'read limit 1001', field: 'limit', call: (s, key) => s.read({ key, subqueue: 0, afterTaskId: 0, limit: 1001 }) },
      { name: 'read of subqueue 10', field: 'subqueue', call: (s, key) => s.read({ key, subqueue: 10, afterTaskId: 0, limit: 1 }) },
      { name: 'read after id -1', field: 'afterTaskId', call: (s, key) => s.read({ key, subqueue: 0, afterTaskId: -1, limit: 1 }) },
      { name: 'a checkpoint of no subqueues', field: 'ackLevels', call: (s, key) => s.checkpoint({ key, rangeId: 1, ackLevels: [], nowMs: 1 }) },
      {
        name: 'a checkpoint naming a subqueue twice',
        field: 'ackLevels[1].subqueue',
        call: (s, key) =>
          s.checkpoint({
            key,
            rangeId: 1,
            ackLevels: [
              { subqueue: 0, ackLevel: 0 },
              { subqueue: 0, ackLevel: 0 },
            ],
            nowMs: 1,
          }),
      },
      {
        name: 'a negative ack level',
        field: 'ackLevels[0].ackLevel',
        call: (s, key) => s.checkpoint({ key, rangeId: 1, ackLevels: [{ subqueue: 0, ackLevel: -1 }], nowMs: 1 }),
      },
      {
        name: 'a relocate to the same queue',
        field: 'to',
        call: (s, key) => s.relocate({ from: key, fromRangeId: 1, to: { ...key }, toRangeId: 1, taskIds: [1], nowMs: 1 }),
      },
      {
        name: 'a relocate of no ids',
        field: 'taskIds',
        call: (s, key) => s.relocate({ from: key, fromRangeId: 1, to: { ...key, version: 'v' }, toRangeId: 1, taskIds: [], nowMs: 1 }),
      },
      {
        name: 'a relocate of id 0',
        field: 'taskIds[1]',
        call: (s, key) => s.relocate({ from: key, fromRangeId: 1, to: { ...key, version: 'v' }, toRangeId: 1, taskIds: [1, 0], nowMs: 1 }),
      },
      {
        name: 'a relocate with a bad destination key',
        field: 'to.partition',
        call: (s, key) => s.relocate({ from: key, fromRangeId: 1, to: { ...key, partition: -2 }, toRangeId: 1, taskIds: [1], nowMs: 1 }),
      },
    ]
    for (const bad of cases) {
      it(`refuses ${bad.name}, naming ${bad.field}, and changes nothing`, async () => {
        const key = fixture.key()
        await store().acquire({ key, nowMs: 1 })
        await store().append({ key, rangeId: 1, tasks: tasks('seed', 2), nowMs: 1 })
        const before = await stateOf(store(), key)
        await expectRejection(bad.call(store(), key), 'InvalidInput', { field: bad.field })
        expect(await stateOf(store(), key)).toEqual(before)
      })
    }

    it('validates before fencing: a malformed append to a queue never acquired is InvalidInput', async () => {
      const key = fixture.key()
      const bad: Task = { ...task('x'), priority: 10 }
      await expectRejection(store().append({ key, rangeId: 1, tasks: [bad], nowMs: 1 }), 'InvalidInput', { field: 'tasks[0].priority' })
      expect(await store().inspect(key)).toBeNull()
    })
  })
}

// The 'invalid user data and filters' cases.
function invalidUserDataAndFiltersCases(fixture: ConformanceFixture): void {
  const store = () => fixture.store()
  describe('invalid user data and filters', () => {
    const cases: ReadonlyArray<{ name: string; field: string; data: unknown; expectedVersion?: number; family?: string }> = [
      { name: 'a NaN inside the data', field: 'data.ratio', data: { ratio: Number.NaN } },
      { name: 'undefined inside the data', field: 'data.list[1]', data: { list: [1, undefined] } },
      { name: 'a function as data', field: 'data', data: () => 1 },
      { name: 'a class instance inside the data', field: 'data.when', data: { when: new Map() } },
      { name: 'a bigint inside the data', field: 'data.n', data: { n: 1n } },
      { name: 'a negative expected version', field: 'expectedVersion', data: 1, expectedVersion: -1 },
      { name: 'an empty family', field: 'family', data: 1, family: '' },
    ]
    for (const bad of cases) {
      it(`updateUserData refuses ${bad.name}, naming ${bad.field}, and writes nothing`, async () => {
        const namespace = fixture.namespace('baddata')
        const family = bad.family ?? 'emails'
        const update = { namespace, family, expectedVersion: bad.expectedVersion ?? 0, data: unchecked<JsonValue>(bad.data), nowMs: 1 }
        await expectRejection(store().updateUserData(update), 'InvalidInput', { field: bad.field })
        if (family !== '') expect(await store().getUserData({ namespace, family })).toBeNull()
      })
    }

    it('getUserData and list refuse bad names, naming the field', async () => {
      await expectRejection(store().getUserData({ namespace: fixture.namespace('g'), family: '' }), 'InvalidInput', { field: 'family' })
      await expectRejection(store().getUserData({ namespace: 'a\u0000b', family: 'f' }), 'InvalidInput', { field: 'namespace' })
      await expectRejection(store().list({ namespace: '' }), 'InvalidInput', { field: 'filter.namespace' })
      await expectRejection(store().list({ namespace: 'ok', family: 'x'.repeat(1001) }), 'InvalidInput', { field: 'filter.family' })
    })
  })
}
