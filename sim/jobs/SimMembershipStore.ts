/**
 * SimMembershipStore — the membership table one simulated engine sees: every heartbeat, read of
 * the live hosts and leave is parked in the IoGate as a step of that host, so heartbeats land
 * when the seed says, suffer the store faults every other call does, and stop with the host's
 * crash (its clock's timers die, its parked beats are dropped, its row expires).
 *
 * Wrap, don't fork: the table underneath is the world's shared MemoryMembershipStore on every
 * store kind, so membership traces read the same on memory and on PostgreSQL.
 *
 * Does not: judge anything, or decide who is cut off from the table (the world does).
 */
import type { MembershipStore } from '../../src/persistence/membership/MembershipStore.ts'
import type { IoGate } from '../core/IoGate.ts'

/** The label prefix of every membership step. */
export const membershipLabelPrefix = 'member.'

/** A host's view of the shared membership table, through the gate. */
export function makeSimMembershipStore(hostId: string, inner: MembershipStore, gate: IoGate): MembershipStore {
  return {
    kind: inner.kind,
    heartbeat: (params) => gate.park(hostId, `${membershipLabelPrefix}heartbeat`, true, () => inner.heartbeat(params)),
    leave: (params) => gate.park(hostId, `${membershipLabelPrefix}leave`, true, () => inner.leave(params)),
    liveHosts: (params) => gate.park(hostId, `${membershipLabelPrefix}live`, false, () => inner.liveHosts(params)),
    // The world owns the shared table.
    close: async () => {},
  }
}
