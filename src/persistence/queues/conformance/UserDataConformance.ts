/**
 * UserDataConformance — queue-family user data: insert-if-absent at expected version 0, then
 * compare-and-set, with a typed `VersionConflict` for the loser (upstream Matching: "conditional
 * insertion and update, with a typed conflict for the loser"). Range fences do not protect it.
 *
 * Readings of the contract pinned here: a conflict reports `currentVersion` 0 when the family
 * has no user data; the subject names the family; families are independent of each other and
 * of any queue rows; data round-trips deep-equal (nested objects, arrays, unicode, numbers).
 */
import { describe, expect, it } from 'vitest'
import type { JsonValue } from '../../../domain/Json.ts'
import { type ConformanceFixture, expectRejection } from './ConformanceFixture.ts'

/** Registers the user-data tests. */
export function describeUserDataConformance(fixture: ConformanceFixture): void {
  const store = () => fixture.store()
  const family = (label: string) => ({ namespace: fixture.namespace(label), family: 'emails' })

  describe('user data', () => {
    it('is null when never written', async () => {
      expect(await store().getUserData(family('missing'))).toBeNull()
    })

    it('expected version 0 inserts version 1; reads return it deep-equal', async () => {
      const names = family('insert')
      const data: JsonValue = { versions: ['v1', 'v2'], current: { build: 'v2', ramp: 0.25 }, note: 'ünïcode ✓', empty: {}, none: null, flag: true }
      const written = await store().updateUserData({ ...names, expectedVersion: 0, data, nowMs: 1 })
      expect(written).toEqual({ ...names, version: 1, data })
      expect(await store().getUserData(names)).toEqual({ ...names, version: 1, data })
    })

    it('compare-and-set increments the version on every update', async () => {
      const names = family('cas')
      for (let version = 0; version < 4; version++) {
        const written = await store().updateUserData({ ...names, expectedVersion: version, data: { step: version }, nowMs: version })
        expect(written.version).toBe(version + 1)
      }
      expect(await store().getUserData(names)).toEqual({ ...names, version: 4, data: { step: 3 } })
    })

    it('a stale expected version is a VersionConflict and nothing changes', async () => {
      const names = family('stale')
      await store().updateUserData({ ...names, expectedVersion: 0, data: 'first', nowMs: 1 })
      await store().updateUserData({ ...names, expectedVersion: 1, data: 'second', nowMs: 2 })
      const error = await expectRejection(store().updateUserData({ ...names, expectedVersion: 1, data: 'loser', nowMs: 3 }), 'VersionConflict', {
        expectedVersion: 1,
        currentVersion: 2,
      })
      expect(error.subject).toContain(names.family)
      expect(await store().getUserData(names)).toEqual({ ...names, version: 2, data: 'second' })
    })

    it('expected 0 when present is a VersionConflict; expected ≥ 1 when absent reports current 0', async () => {
      const names = family('present')
      await store().updateUserData({ ...names, expectedVersion: 0, data: [1, 2, 3], nowMs: 1 })
      await expectRejection(store().updateUserData({ ...names, expectedVersion: 0, data: [], nowMs: 2 }), 'VersionConflict', {
        expectedVersion: 0,
        currentVersion: 1,
      })
      expect(await store().getUserData(names)).toEqual({ ...names, version: 1, data: [1, 2, 3] })
      const absent = family('absent')
      await expectRejection(store().updateUserData({ ...absent, expectedVersion: 1, data: 1, nowMs: 3 }), 'VersionConflict', {
        expectedVersion: 1,
        currentVersion: 0,
      })
      expect(await store().getUserData(absent)).toBeNull()
    })

    it('families are independent, and neither queue rows nor acquires touch user data', async () => {
      const namespace = fixture.namespace('families')
      await store().updateUserData({ namespace, family: 'a', expectedVersion: 0, data: 'a', nowMs: 1 })
      await store().updateUserData({ namespace, family: 'b', expectedVersion: 0, data: 'b', nowMs: 1 })
      await store().updateUserData({ namespace, family: 'b', expectedVersion: 1, data: 'b2', nowMs: 2 })
      await store().acquire({ key: { namespace, family: 'a', type: 'workflow', partition: 0, version: null }, nowMs: 3 })
      expect(await store().getUserData({ namespace, family: 'a' })).toEqual({ namespace, family: 'a', version: 1, data: 'a' })
      expect(await store().getUserData({ namespace, family: 'b' })).toEqual({ namespace, family: 'b', version: 2, data: 'b2' })
      expect(await store().getUserData({ namespace, family: 'c' })).toBeNull()
    })

    it('results and arguments are not shared with the store', async () => {
      const names = family('copies')
      const data = { list: [1, 2], nested: { value: 'original' } }
      const written = await store().updateUserData({ ...names, expectedVersion: 0, data, nowMs: 1 })
      data.nested.value = 'mutated-input'
      ;(written.data as { list: number[] }).list.push(99)
      const read = await store().getUserData(names)
      if (read === null) return expect.fail('the user data was not read back')
      ;(read.data as { nested: { value: string } }).nested.value = 'mutated-output'
      expect((await store().getUserData(names))?.data).toEqual({ list: [1, 2], nested: { value: 'original' } })
    })
  })
}
