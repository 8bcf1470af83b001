/**
 * claimFencingRace — runs one ownership race over job claims between two independent engines'
 * stores (two connection pools): owner A acquires a job queue's physical queue and fires fenced
 * claims (`claimDue`, or `ackAndClaimDue` with an ack riding on each) while owner B acquires the
 * same physical queue, and records what each side observed — the ledger of A's statements and the
 * job rows B read right after its acquire and at the end — for the checker
 * (claimFencingChecker.ts). It asserts nothing itself.
 *
 * Interleavings vary by a seeded stream, as fencingRace.ts's do: A's statements go out all at
 * once or one after another, and B joins after 0–3 of them settled. `unfenced` sends A's claims
 * without the fence: the planted bug the checker must catch. Waiting is on promises only.
 */
import type { QueueKey } from '../../src/domain/QueueKey.ts'
import type { Random } from '../../src/kernel/Random.ts'
import type { ClaimFence, ClaimRef, JobStore } from '../../src/persistence/jobs/JobStore.ts'
import type { Store } from '../../src/persistence/queues/Store.ts'
import type { ClaimRaceRecord, ClaimStatement, JobRows } from './claimFencingChecker.ts'

/** Which claim A races against B's acquire. */
export type ClaimRaceVariant = 'claimDue' | 'ackAndClaimDue'

// Every claim happens at one time, well inside the jobs' visibility: no claim lapses in a race.
const claimNowMs = 2_000
const statementsPerRace = 6
const tokensPerStatement = 2
const jobsPerRace = statementsPerRace * tokensPerStatement + 4

/** One engine's two stores on its own pool. */
export interface RaceOwner {
  readonly store: Store
  readonly jobStore: JobStore
}

/** The live job rows of `queue` as `jobStore` reads them. */
export async function jobRowsOf(jobStore: JobStore, queue: string): Promise<JobRows> {
  const rows = new Map<string, { state: string; claimToken: string | null; attempts: number }>()
  for (const state of ['pending', 'processing'] as const) {
    for (const job of await jobStore.listJobs({ queue, state, limit: 1_000, afterId: null })) rows.set(job.id, { state: job.state, claimToken: job.claimToken, attempts: job.attempts })
  }
  return rows
}

function tagOf(error: unknown): { errorTag: string; detail: string } {
  const tag = (error as { _tag?: unknown } | null)?._tag
  return { errorTag: typeof tag === 'string' ? tag : 'defect', detail: error instanceof Error ? error.message : String(error) }
}

/** Runs one race on a fresh job queue and returns what was observed. */
export async function runClaimRace(params: {
  readonly a: RaceOwner
  readonly b: RaceOwner
  readonly variant: ClaimRaceVariant
  readonly iteration: number
  readonly label: string
  readonly random: Random
  readonly unfenced?: boolean
}): Promise<ClaimRaceRecord> {
  const { a, b, variant, iteration, random } = params
  const queue = `${params.label}-${variant}-${iteration}`
  const queueKey: QueueKey = { namespace: 'jobs', family: queue, type: 'activity', partition: 0, version: null }
  const fence: ClaimFence = { queueKey, rangeId: (await a.store.acquire({ key: queueKey, nowMs: 1_000 })).rangeId }
  const job = (index: number) => ({
    id: `${queue}-j${index}`,
    queue,
    payload: index,
    priority: 0,
    runAtMs: 1_000,
    expiresAtMs: null,
    maxAttempts: 3,
    visibilityTimeoutMs: 60_000,
    backoffBaseMs: 1_000,
    deadLetterRetentionMs: null,
  })
  await a.jobStore.enqueueMany({ jobs: Array.from({ length: jobsPerRace }, (_, index) => job(index)), nowMs: 1_000 })
  // The acks that ride on A's statements: jobs A claimed before the race, one per statement.
  const held: ClaimRef[] =
    variant === 'ackAndClaimDue'
      ? (await a.jobStore.claimDue({ queue, nowMs: claimNowMs, claimTokens: Array.from({ length: statementsPerRace }, (_, index) => `${queue}-held${index}`), fence })).map((claimed) => ({
          id: claimed.id,
          claimToken: claimed.claimToken as string,
        }))
      : []
  const fenced = params.unfenced === true ? {} : { fence }

  const statement = async (index: number): Promise<ClaimStatement> => {
    const claimTokens = Array.from({ length: tokensPerStatement }, (_, token) => `${queue}-s${index}t${token}`)
    const acks = variant === 'ackAndClaimDue' ? [held[index] as ClaimRef] : []
    try {
      const answer =
        variant === 'claimDue'
          ? { acked: [], claimed: await a.jobStore.claimDue({ queue, nowMs: claimNowMs, claimTokens, ...fenced }) }
          : await a.jobStore.ackAndClaimDue({ acks, queue, nowMs: claimNowMs, claimTokens, ...fenced })
      return { ok: true, claimTokens, acks, claimed: answer.claimed.map((claimed) => ({ id: claimed.id, claimToken: claimed.claimToken as string })), acked: answer.acked }
    } catch (error) {
      return { ok: false, claimTokens, acks, ...tagOf(error) }
    }
  }

  const lead = random.int(0, 3)
  let statements: Promise<ClaimStatement[]>
  let joined: Promise<unknown>
  if (random.chance(0.5)) {
    let signal: () => void = () => {}
    joined = new Promise<void>((resolve) => {
      signal = resolve
      if (lead === 0) resolve()
    })
    statements = (async () => {
      const outcomes: ClaimStatement[] = []
      for (let index = 0; index < statementsPerRace; index++) {
        outcomes.push(await statement(index))
        if (outcomes.length === lead) signal()
      }
      return outcomes
    })()
  } else {
    const all = Array.from({ length: statementsPerRace }, (_, index) => statement(index))
    statements = Promise.all(all)
    joined = lead === 0 ? Promise.resolve() : (all[lead - 1] as Promise<ClaimStatement>)
  }
  await joined
  const acquiredRangeId = (await b.store.acquire({ key: queueKey, nowMs: 3_000 })).rangeId
  const afterAcquire = await jobRowsOf(b.jobStore, queue)
  const outcomes = await statements
  return { variant, iteration, queue, fenceRangeId: fence.rangeId, acquiredRangeId, held, afterAcquire, statements: outcomes, finalRows: await jobRowsOf(b.jobStore, queue) }
}
