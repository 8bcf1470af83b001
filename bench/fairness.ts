/**
 * Fairness bench — `npx tsx bench/fairness.ts [--jobs N]`, on a fresh database (bench/BenchDatabase.ts:
 * DATABASE_URL's server, else a throwaway cluster), through the public API on the real clock,
 * 16 no-op workers on one engine:
 * - heavy and light: tenant A enqueues N jobs (default 100,000), then tenant B enqueues 100; the
 *   workers start after both. Prints B's p99 wait (enqueue → handler start), the time the
 *   workers took for A's backlog, and how many starts came before B's last one — with fairness
 *   keys, and the same jobs without keys (the baseline measured in the same run).
 * - unkeyed and keyed: tenant A enqueues N jobs without a key, then tenant B 100 with one. Run
 *   twice: on a queue that already has keys (B's key's state, from one job of B's enqueued and
 *   worked before A's backlog), where A's jobs take the implicit key's turns, and on a queue that
 *   has none until B's first job, where A's jobs keep their ready times. Prints the same figures.
 * - weights 3:1 under saturation: 2,000 jobs of each of two keys, weights 3 and 1; of the first
 *   1,000 starts, the ratio of the heavy-weight key's to the other's (3.0 is exact).
 *
 * Each scenario gets a schema of its own. Figures depend on the machine; a busy one slows both
 * runs of a pair alike, so read the ratios rather than the times.
 */
import { type Matchbox, open } from '../src/index.ts'
import { openBenchDatabase } from './BenchDatabase.ts'

const jobsFlag = process.argv.indexOf('--jobs')
const heavyJobs = jobsFlag >= 0 ? Number(process.argv[jobsFlag + 1]) : 100_000
if (!Number.isInteger(heavyJobs) || heavyJobs < 1) throw new Error('--jobs takes a positive integer')
const lightJobs = 100

const percentile = (sorted: ReadonlyArray<number>, p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN

// Enqueues `count` jobs of `tenant`, 16 in flight (keyed: `enqueue`, one at a time per call;
// unkeyed: `enqueueMany` of 500, since the order, not the insert rate, is measured).
async function fill(mb: Matchbox, tenant: string, count: number, keyed: boolean, weight = 1): Promise<void> {
  const queue = mb.queue<{ tenant: string; at: number }>('fair')
  if (!keyed) {
    for (let done = 0; done < count; done += 500) {
      await queue.enqueueMany(Array.from({ length: Math.min(500, count - done) }, () => ({ payload: { tenant, at: Date.now() } })))
    }
    return
  }
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < count) {
      next++
      await queue.enqueue({ tenant, at: Date.now() }, { fairnessKey: tenant, fairnessWeight: weight })
    }
  }
  await Promise.all(Array.from({ length: 16 }, lane))
}

// Runs 16 workers until `total` jobs have started; answers each start's tenant, wait and time since the workers began, in start order.
async function drain(mb: Matchbox, total: number): Promise<{ starts: Array<{ tenant: string; waitMs: number; atMs: number }>; elapsedMs: number }> {
  const starts: Array<{ tenant: string; waitMs: number; atMs: number }> = []
  const began = Date.now()
  let finish: () => void = () => {}
  const done = new Promise<void>((resolve) => {
    finish = resolve
  })
  const stop = mb.queue<{ tenant: string; at: number }>('fair').work(
    async (job) => {
      starts.push({ tenant: job.payload.tenant, waitMs: Date.now() - job.payload.at, atMs: Date.now() - began })
      if (starts.length >= total) finish()
    },
    { concurrency: 16 },
  )
  await done
  const elapsedMs = Date.now() - began
  await stop()
  return { starts, elapsedMs }
}

// Drains A's and B's jobs and prints B's figures after `label`.
async function drainAndReport(mb: Matchbox, label: string): Promise<void> {
  const { starts, elapsedMs } = await drain(mb, heavyJobs + lightJobs)
  const waits = starts.filter((start) => start.tenant === 'B').map((start) => start.waitMs).sort((a, b) => a - b)
  const lastB = starts.map((start) => start.tenant).lastIndexOf('B') + 1
  // The bound: B's jobs all start within the time the workers take for 2 × B's count of jobs.
  const bound = starts[2 * lightJobs - 1]?.atMs ?? Number.NaN
  console.log(
    `${label}: B p99 wait ${percentile(waits, 99)} ms; A's backlog drained in ${elapsedMs} ms; ` +
      `B's last start was start ${lastB} of ${starts.length}, ${starts[lastB - 1]?.atMs ?? Number.NaN} ms after the workers began (the first ${2 * lightJobs} starts took ${bound} ms)`,
  )
}

async function heavyAndLight(databaseUrl: string, keyed: boolean): Promise<void> {
  const mb = await open({ store: { databaseUrl }, schema: `bench_fair_${keyed ? 'keys' : 'plain'}` })
  await fill(mb, 'A', heavyJobs, keyed)
  await fill(mb, 'B', lightJobs, keyed)
  await drainAndReport(mb, keyed ? 'with keys   ' : 'without keys')
  await mb.close()
}

// B's wait behind A's unkeyed backlog; `hasKeys`: B's key has state in the queue before A's backlog.
async function unkeyedAndKeyed(databaseUrl: string, hasKeys: boolean): Promise<void> {
  const mb = await open({ store: { databaseUrl }, schema: `bench_fair_implicit_${hasKeys ? 'keys' : 'none'}` })
  if (hasKeys) {
    await fill(mb, 'B', 1, true)
    await drain(mb, 1)
  }
  await fill(mb, 'A', heavyJobs, false)
  await fill(mb, 'B', lightJobs, true)
  await drainAndReport(mb, `A unkeyed, B keyed, ${hasKeys ? 'queue with keys' : 'queue without keys until B'}`)
  await mb.close()
}

async function weights(databaseUrl: string): Promise<void> {
  const mb = await open({ store: { databaseUrl }, schema: 'bench_fair_weights' })
  await fill(mb, 'three', 2_000, true, 3)
  await fill(mb, 'one', 2_000, true, 1)
  const { starts } = await drain(mb, 1_000)
  const first = starts.slice(0, 1_000)
  const three = first.filter((start) => start.tenant === 'three').length
  console.log(`weights 3:1: of the first 1,000 starts, ${three} vs ${1_000 - three} (ratio ${(three / (1_000 - three)).toFixed(2)}, 3.00 exact)`)
  await mb.close()
}

const database = await openBenchDatabase('fairness')
try {
  console.log(`fairness bench: node ${process.version}, PostgreSQL, A ${heavyJobs} jobs then B ${lightJobs}, 16 workers`)
  await heavyAndLight(database.url, false)
  await heavyAndLight(database.url, true)
  await unkeyedAndKeyed(database.url, true)
  await unkeyedAndKeyed(database.url, false)
  await weights(database.url)
} finally {
  await database.drop()
}
