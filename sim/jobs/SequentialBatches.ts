/**
 * SequentialBatches — a job store whose batched claims and acks are its own single claims and
 * acks, one after another (acks with the next claims: the claims, then the acks). The simulator
 * wraps its gated and mutant stores with it, so every
 * claim and ack the engine batches still passes the gate, the trace and the planted bugs one
 * by one; the batched SQL statements themselves are covered by the conformance suite.
 */
import type { ClaimOutcome, JobRecord, JobStore } from '../../src/persistence/jobs/JobStore.ts'

/** `store` with `enqueueMany`, `claimMany`, `ackMany` and `ackAndClaimDue` made of its own `enqueue`, `claim`, `ack` and `claimDue`. */
export function withSequentialBatches(store: JobStore): JobStore {
  return {
    ...store,
    async enqueueMany(params, tx) {
      const records: JobRecord[] = []
      for (const job of params.jobs) records.push(await store.enqueue({ job, nowMs: params.nowMs }, tx))
      return records
    },
    async claimMany(params) {
      const outcomes: ClaimOutcome[] = []
      for (const claim of params.claims) outcomes.push(await store.claim({ id: claim.id, claimToken: claim.claimToken, nowMs: params.nowMs, ...(params.fence === undefined ? {} : { fence: params.fence }) }))
      return outcomes
    },
    async ackMany(params) {
      const acked: string[] = []
      for (const claim of params.claims) if (await store.ack({ id: claim.id, claimToken: claim.claimToken, nowMs: params.nowMs })) acked.push(claim.id)
      return acked
    },
    // Two gated calls where the SQL stores run one statement, so the simulator also tries one
    // committed without the other. The claim goes first: it is issued when the engine issued the
    // statement, with the ownership it checked then (the ownership checker judges a claim by the
    // view at its issue). The answers are the statement's: a valid ack's job is not claimable,
    // and a lapsed one's ack is refused whichever comes first.
    async ackAndClaimDue(params) {
      const claimed = await store.claimDue({ queue: params.queue, nowMs: params.nowMs, claimTokens: params.claimTokens, ...(params.fence === undefined ? {} : { fence: params.fence }) })
      const acked: string[] = []
      for (const claim of params.acks) if (await store.ack({ id: claim.id, claimToken: claim.claimToken, nowMs: params.nowMs })) acked.push(claim.id)
      return { acked, claimed }
    },
  }
}
