/**
 * MemoryMembershipStore — the MembershipStore contract in process memory, for tests and the
 * simulator: hosts that share one instance share one membership table.
 *
 * Invariants, the same as the SQL store's: input is validated before anything changes; rows
 * cross the boundary as copies; `liveHosts` sorts by host id in code-unit order.
 *
 * Does not: read a clock or persist anything.
 */
import { checkHeartbeat, checkHostId, checkLiveHosts, compareHostIds, type HostRow, type MembershipStore } from './MembershipStore.ts'

/** A MembershipStore in process memory. */
export interface MemoryMembershipStore extends MembershipStore {
  readonly kind: 'memory'
}

/** Makes an empty membership table in memory. */
export function makeMemoryMembershipStore(): MemoryMembershipStore {
  const rows = new Map<string, HostRow>()
  return {
    kind: 'memory',

    async heartbeat(params) {
      const { hostId, nowMs, ttlMs } = checkHeartbeat(params)
      const row: HostRow = { hostId, lastSeenMs: nowMs, expiresAtMs: nowMs + ttlMs }
      rows.set(hostId, row)
      return { ...row }
    },

    async leave(params) {
      return rows.delete(checkHostId(params.hostId))
    },

    async liveHosts(params) {
      const { nowMs } = checkLiveHosts(params)
      return [...rows.values()]
        .filter((row) => row.expiresAtMs > nowMs)
        .sort((a, b) => compareHostIds(a.hostId, b.hostId))
        .map((row) => ({ ...row }))
    },

    async close() {},
  }
}
