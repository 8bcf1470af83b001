/**
 * roundTrips — a job store whose claims and acks each take one event-loop turn, as a round trip
 * to a database does, so that handlers run while a statement is out; it records the statements
 * sent, how many acks rode on each claim statement, and the most claim statements (claimDue,
 * ackAndClaimDue) out at once. No clock moves.
 */
import type { JobStore } from '../../src/persistence/jobs/JobStore.ts'

/** `inner` with claimDue, ackAndClaimDue, ackMany and ack each answering a turn later. */
export function withRoundTrips(inner: JobStore): { store: JobStore; statements: string[]; ridingPerStatement: number[]; claimsOutMax: () => number } {
  const statements: string[] = []
  const ridingPerStatement: number[] = []
  let claimsOut = 0
  let claimsOutMost = 0
  // `call` as a statement named `name`: recorded when sent, answered a turn later.
  const slow =
    <P, R>(name: string, call: (params: P) => Promise<R>) =>
    async (params: P): Promise<R> => {
      statements.push(name)
      const claims = name === 'claimDue' || name === 'ackAndClaimDue'
      if (claims) claimsOutMost = Math.max(claimsOutMost, ++claimsOut)
      try {
        await new Promise<void>((resolve) => setImmediate(resolve))
        return await call(params)
      } finally {
        if (claims) claimsOut--
      }
    }
  const store: JobStore = {
    ...inner,
    claimDue: slow('claimDue', inner.claimDue),
    ackAndClaimDue: slow('ackAndClaimDue', (params: Parameters<JobStore['ackAndClaimDue']>[0]) => {
      ridingPerStatement.push(params.acks.length)
      return inner.ackAndClaimDue(params)
    }),
    ackMany: slow('ackMany', inner.ackMany),
    ack: slow('ack', inner.ack),
  }
  return { store, statements, ridingPerStatement, claimsOutMax: () => claimsOutMost }
}
