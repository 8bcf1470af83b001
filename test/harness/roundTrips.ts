/**
 * roundTrips — a job store whose claims and acks each take one event-loop turn, as a round trip
 * to a database does, so that handlers run while a statement is out; it records the statements
 * sent and how many acks rode on each claim statement. No clock moves.
 */
import type { JobStore } from '../../src/persistence/jobs/JobStore.ts'

/** `inner` with claimDue, ackAndClaimDue, ackMany and ack each answering a turn later. */
export function withRoundTrips(inner: JobStore): { store: JobStore; statements: string[]; ridingPerStatement: number[] } {
  const roundTrip = () => new Promise<void>((resolve) => setImmediate(resolve))
  const statements: string[] = []
  const ridingPerStatement: number[] = []
  const store: JobStore = {
    ...inner,
    async claimDue(params) {
      statements.push('claimDue')
      await roundTrip()
      return inner.claimDue(params)
    },
    async ackAndClaimDue(params) {
      statements.push('ackAndClaimDue')
      ridingPerStatement.push(params.acks.length)
      await roundTrip()
      return inner.ackAndClaimDue(params)
    },
    async ackMany(params) {
      statements.push('ackMany')
      await roundTrip()
      return inner.ackMany(params)
    },
    async ack(params) {
      statements.push('ack')
      await roundTrip()
      return inner.ack(params)
    },
  }
  return { store, statements, ridingPerStatement }
}
