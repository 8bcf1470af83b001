/**
 * MembershipConformance — the conformance suite of the MembershipStore contract
 * (MembershipStore.ts), written once and bound to every store in test/membershipStore.test.ts.
 *
 * Pinned readings: a heartbeat returns the stored row with times floored; a host is live while
 * `nowMs < expiresAtMs` (strictly); the last heartbeat wins even from an earlier `nowMs`;
 * `leave` says whether there was a row; `liveHosts` is in code-point order of the ids; bad
 * input is the same `InvalidInput` (field) in every store and writes nothing.
 *
 * Isolation: the binding opens one store for the suite and `liveHosts` sees every row, so each
 * test uses host ids under a prefix nobody else uses and looks only at those.
 *
 * Does not: test heartbeating on a timer or views built on the rows (actors/Membership.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { seedFromEntropy } from '../../kernel/Random.ts'
import { expectRejection } from '../queues/conformance/ConformanceFixture.ts'
import type { HostRow, MembershipStore } from './MembershipStore.ts'

/** Registers `MembershipStore conformance: ${name}` against the store `open` returns (opened once, closed after the last test). */
export function describeMembershipConformance(name: string, open: () => Promise<MembershipStore>): void {
  describe(`MembershipStore conformance: ${name}`, () => {
    let opened: MembershipStore | undefined
    const store = (): MembershipStore => {
      if (opened === undefined) throw new Error(`MembershipStore conformance: ${name}: the store is not open (did open() fail?)`)
      return opened
    }
    // A token per run, so a rerun against a kept database cannot see an earlier run's rows.
    const token = ((seedFromEntropy() >>> 0) % 2 ** 31).toString(36)
    let counter = 0
    const prefix = (label: string): string => `conf-${token}-${++counter}-${label}-`
    const liveUnder = async (under: string, nowMs: number): Promise<HostRow[]> =>
      (await store().liveHosts({ nowMs })).filter((row) => row.hostId.startsWith(under))

    beforeAll(async () => {
      opened = await open()
    })
    afterAll(async () => {
      await opened?.close()
    })

    it('a heartbeat stores and returns the row; the host is live until its expiry', async () => {
      const under = prefix('beat')
      const hostId = `${under}a`
      expect(await store().heartbeat({ hostId, nowMs: 1_000, ttlMs: 5_000 })).toEqual({ hostId, lastSeenMs: 1_000, expiresAtMs: 6_000 })
      expect(await liveUnder(under, 1_000)).toEqual([{ hostId, lastSeenMs: 1_000, expiresAtMs: 6_000 }])
      expect(await liveUnder(under, 5_999)).toEqual([{ hostId, lastSeenMs: 1_000, expiresAtMs: 6_000 }])
      expect(await liveUnder(under, 6_000)).toEqual([])
      expect(await liveUnder(under, 0)).toHaveLength(1)
    })

    it('times are floored to whole milliseconds', async () => {
      const under = prefix('floor')
      const hostId = `${under}a`
      expect(await store().heartbeat({ hostId, nowMs: 1_000.9, ttlMs: 10 })).toEqual({ hostId, lastSeenMs: 1_000, expiresAtMs: 1_010 })
      expect(await liveUnder(under, 1_009.9)).toHaveLength(1)
    })

    it('a later heartbeat renews; the last heartbeat wins even from an earlier now', async () => {
      const under = prefix('renew')
      const hostId = `${under}a`
      await store().heartbeat({ hostId, nowMs: 1_000, ttlMs: 5_000 })
      await store().heartbeat({ hostId, nowMs: 4_000, ttlMs: 5_000 })
      expect(await liveUnder(under, 8_000)).toEqual([{ hostId, lastSeenMs: 4_000, expiresAtMs: 9_000 }])
      expect(await store().heartbeat({ hostId, nowMs: 2_000, ttlMs: 1_000 })).toEqual({ hostId, lastSeenMs: 2_000, expiresAtMs: 3_000 })
      expect(await liveUnder(under, 3_000)).toEqual([])
    })

    it('leave deletes only that host and says whether there was a row', async () => {
      const under = prefix('leave')
      for (const id of ['a', 'b']) await store().heartbeat({ hostId: `${under}${id}`, nowMs: 0, ttlMs: 100 })
      expect(await store().leave({ hostId: `${under}a` })).toBe(true)
      expect(await store().leave({ hostId: `${under}a` })).toBe(false)
      expect(await store().leave({ hostId: `${under}never` })).toBe(false)
      expect((await liveUnder(under, 0)).map((row) => row.hostId)).toEqual([`${under}b`])
      await store().heartbeat({ hostId: `${under}a`, nowMs: 50, ttlMs: 100 })
      expect((await liveUnder(under, 60)).map((row) => row.hostId)).toEqual([`${under}a`, `${under}b`])
    })

    it('lists live hosts in code-point order, each with its own expiry', async () => {
      const under = prefix('order')
      // '\uff01' sorts before '🚀' by code point (UTF-8 bytes, the "C" collation), after it by UTF-16 units.
      const ids = ['b', 'B', 'a', 'é', '🚀', '\uff01', 'a0', 'Z']
      for (const [index, id] of ids.entries()) await store().heartbeat({ hostId: `${under}${id}`, nowMs: 100, ttlMs: 10 + index })
      const expected = ['B', 'Z', 'a', 'a0', 'b', 'é', '\uff01', '🚀'].map((id) => `${under}${id}`)
      expect((await liveUnder(under, 100)).map((row) => row.hostId)).toEqual(expected)
      // Expiries are 110…117 in the order given: at 114 only the last three given remain.
      expect((await liveUnder(under, 114)).map((row) => row.hostId.slice(under.length))).toEqual(['Z', 'a0', '\uff01'])
    })

    it('refuses bad input with the same InvalidInput and writes nothing', async () => {
      const under = prefix('bad')
      const hostId = `${under}a`
      await expectRejection(store().heartbeat({ hostId: '', nowMs: 0, ttlMs: 1 }), 'InvalidInput', { field: 'hostId' })
      await expectRejection(store().heartbeat({ hostId: `${under}\u0007`, nowMs: 0, ttlMs: 1 }), 'InvalidInput', { field: 'hostId' })
      await expectRejection(store().heartbeat({ hostId: 7 as unknown as string, nowMs: 0, ttlMs: 1 }), 'InvalidInput', { field: 'hostId' })
      await expectRejection(store().heartbeat({ hostId, nowMs: -1, ttlMs: 1 }), 'InvalidInput', { field: 'nowMs' })
      await expectRejection(store().heartbeat({ hostId, nowMs: Number.NaN, ttlMs: 1 }), 'InvalidInput', { field: 'nowMs' })
      await expectRejection(store().heartbeat({ hostId, nowMs: 0, ttlMs: 0 }), 'InvalidInput', { field: 'ttlMs' })
      await expectRejection(store().heartbeat({ hostId, nowMs: 0, ttlMs: 1.5 }), 'InvalidInput', { field: 'ttlMs' })
      await expectRejection(store().heartbeat({ hostId, nowMs: 2 ** 53 - 2, ttlMs: 10 }), 'InvalidInput', { field: 'ttlMs' })
      await expectRejection(store().liveHosts({ nowMs: Number.POSITIVE_INFINITY }), 'InvalidInput', { field: 'nowMs' })
      await expectRejection(store().leave({ hostId: '' }), 'InvalidInput', { field: 'hostId' })
      expect(await liveUnder(under, 0)).toEqual([])
    })
  })
}
