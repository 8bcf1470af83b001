/**
 * Job claims bench — `npx tsx bench/jobClaims.ts [--against REV] [--rounds N] [--round-ms MS]`.
 *
 * What a claim statement costs on PostgreSQL, beside the same statement of an earlier build
 * (Baseline.ts: `--against REV`, default HEAD~1) measured in the same run, so a change to the
 * claim path (a column every claim writes, say) shows as a ratio even on a busy machine. One
 * sequential caller per build, each with its own job store (its own schema and pool) on one
 * throwaway database, drains a backlog the way a lone worker does: `ackAndClaimDue` acking the
 * previous job and claiming the next in one round trip; then a retry cycle per job (claim,
 * `retry` with its error, claim again, ack). The builds take turns in ABBA order, `rounds` turns
 * each of `roundMs` (defaults 12 and 500 ms), and the ratio is this build's jobs/s over the baseline's.
 *
 * PostgreSQL: DATABASE_URL if set (a fresh database on it), else a throwaway cluster
 * (BenchDatabase.ts). Figures are for the ratio; the absolute jobs/s are the machine's of the moment.
 */
import type { JobStore, NewJob } from '../src/persistence/jobs/JobStore.ts'
import * as current from '../src/persistence/jobs/sql/SqlJobStore.ts'
import * as currentPg from '../src/persistence/sql/PgDriver.ts'
import { type Baseline, prepareBaseline } from './Baseline.ts'
import { openBenchDatabase } from './BenchDatabase.ts'
import { wholeNumberFlag } from './Flags.ts'

const roundMs = wholeNumberFlag('round-ms', 500)
const rounds = wholeNumberFlag('rounds', 12)
// Jobs enqueued ahead of each turn: more than one turn drains on this hardware.
const backlogPerTurn = 20_000

const againstAt = process.argv.indexOf('--against')
const against = againstAt >= 0 ? (process.argv[againstAt + 1] ?? 'HEAD~1') : 'HEAD~1'

interface Side {
  readonly name: string
  readonly store: JobStore
  drained: number
  drainMs: number
  retried: number
  retryMs: number
  next: number
}

const job = (side: Side, queue: string): NewJob => ({
  id: `${side.name}-${++side.next}`,
  queue,
  payload: { n: side.next },
  priority: 0,
  runAtMs: 1_000,
  expiresAtMs: null,
  maxAttempts: 3,
  visibilityTimeoutMs: 60_000,
  backoffBaseMs: 0,
  deadLetterRetentionMs: null,
})

// One turn of the drain: ack the previous job and claim the next, one statement a job, for roundMs.
async function drainTurn(side: Side, turn: number): Promise<void> {
  const queue = `drain-${turn}`
  for (let start = 0; start < backlogPerTurn; start += 1_000) {
    await side.store.enqueueMany({ jobs: Array.from({ length: 1_000 }, () => job(side, queue)), nowMs: 1_000 })
  }
  let held: { id: string; claimToken: string } | null = null
  const began = performance.now()
  let count = 0
  while (performance.now() - began < roundMs) {
    const answer = await side.store.ackAndClaimDue({ acks: held === null ? [] : [held], queue, nowMs: 2_000, claimTokens: [`t${count}`] })
    const claimed = answer.claimed[0]
    if (claimed === undefined) break
    held = { id: claimed.id, claimToken: claimed.claimToken as string }
    count++
  }
  side.drainMs += performance.now() - began
  side.drained += count
}

// One turn of retries: claim, retry with an error (the attempt history grows), claim again, ack.
async function retryTurn(side: Side, turn: number): Promise<void> {
  const queue = `retry-${turn}`
  const began = performance.now()
  let count = 0
  while (performance.now() - began < roundMs) {
    const enqueued = await side.store.enqueue({ job: job(side, queue), nowMs: 1_000 })
    const first = await side.store.claim({ id: enqueued.id, claimToken: 'a', nowMs: 2_000 })
    if (first.kind !== 'claimed') throw new Error(`bench: claim answered ${first.kind}`)
    await side.store.retry({ id: enqueued.id, claimToken: 'a', error: 'upstream timeout', stack: 'Error: upstream timeout\n    at send', delayMs: 0, nowMs: 2_000 })
    const second = await side.store.claim({ id: enqueued.id, claimToken: 'b', nowMs: 2_000 })
    if (second.kind !== 'claimed') throw new Error(`bench: reclaim answered ${second.kind}`)
    await side.store.ack({ id: enqueued.id, claimToken: 'b', nowMs: 2_000 })
    count++
  }
  side.retryMs += performance.now() - began
  side.retried += count
}

const perSecond = (count: number, ms: number): number => (count / ms) * 1_000

const database = await openBenchDatabase('job_claims')
let baseline: Baseline | null = null
const sides: Side[] = []
const drivers: Array<{ close(): Promise<void> }> = []
try {
  baseline = prepareBaseline(against)
  const before = await baseline.load<typeof current>('src/persistence/jobs/sql/SqlJobStore.ts')
  const beforePg = await baseline.load<typeof currentPg>('src/persistence/sql/PgDriver.ts')
  const make = (name: string, store: JobStore): Side => ({ name, store, drained: 0, drainMs: 0, retried: 0, retryMs: 0, next: 0 })
  const nowDriver = currentPg.makePgDriver({ connectionString: database.url })
  const baseDriver = beforePg.makePgDriver({ connectionString: database.url })
  drivers.push(nowDriver, baseDriver)
  const now = make('current', await current.openSqlJobStore(nowDriver, { schema: 'bench_claims_current' }))
  const base = make('baseline', await before.openSqlJobStore(baseDriver, { schema: 'bench_claims_baseline' }))
  sides.push(now, base)
  // ABBA: each build goes first as often as second, so a warming or cooling machine favours neither.
  for (let turn = 0; turn < rounds; turn++) {
    const order = turn % 2 === 0 ? [now, base] : [base, now]
    for (const side of order) await drainTurn(side, turn)
    for (const side of order) await retryTurn(side, turn)
  }
  const row = (what: string, a: number, b: number) => console.log(`${what.padEnd(34)} ${Math.round(a).toLocaleString('en-US').padStart(10)} ${Math.round(b).toLocaleString('en-US').padStart(10)} ${(a / b).toFixed(3).padStart(8)}×`)
  console.log(`${'postgres, one sequential caller'.padEnd(34)} ${'this build'.padStart(10)} ${'baseline'.padStart(10)} ${'ratio'.padStart(9)}`)
  row('drain: ackAndClaimDue jobs/s', perSecond(now.drained, now.drainMs), perSecond(base.drained, base.drainMs))
  row('retry cycle: jobs/s (4 statements)', perSecond(now.retried, now.retryMs), perSecond(base.retried, base.retryMs))
  console.log(`baseline: ${baseline.commit}; ${rounds} turns of ${roundMs} ms each per build and workload, ABBA`)
} finally {
  for (const side of sides) await side.store.close()
  for (const driver of drivers) await driver.close()
  baseline?.dispose()
  await database.drop()
}
