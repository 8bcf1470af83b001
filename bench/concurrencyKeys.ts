/**
 * Per-key concurrency bench — `npx tsx bench/concurrencyKeys.ts [--jobs N] [--keys K] [--rounds R]
 * [--hold-ms H]`, on a fresh database (bench/BenchDatabase.ts: DATABASE_URL's server, else a
 * throwaway cluster), through the public API on the real clock: three engines on the database,
 * each running `work({ concurrency: 16 })` on one queue, drain N jobs (default 6,000) spread over
 * K keys (default 20) whose handlers each hold their job H ms (default 2).
 *
 * - limited: the queue has `concurrencyPerKey: 2` and every job names its key;
 * - unlimited (the baseline, same run): the same jobs on a queue without a limit, keys unnamed.
 *
 * Prints, per round and as medians, the jobs/s of each and their ratio, and the most handlers of one
 * key seen running at once across the three engines (must be ≤ 2 when limited). Rounds alternate
 * the order (ABBA) so that a machine growing busier slows both alike. With K keys at limit 2 at
 * most 2·K handlers run at once, so K ≥ 24 leaves the 48 workers the only bound.
 *
 * Does not: assert anything (a unit test never asserts a wall-clock time).
 */
import { setTimeout as delay } from 'node:timers/promises'
import { type Matchbox, open } from '../src/index.ts'
import { openBenchDatabase } from './BenchDatabase.ts'
import { wholeNumberFlag } from './Flags.ts'

const jobs = wholeNumberFlag('jobs', 6_000)
const keys = wholeNumberFlag('keys', 20)
const rounds = wholeNumberFlag('rounds', 2)
const holdMs = wholeNumberFlag('hold-ms', 2)
const engineCount = 3
const workersPerEngine = 16
const limit = 2

interface Drained {
  readonly jobsPerS: number
  /** The most handlers of one key running at once, across the engines. */
  readonly mostOfAKey: number
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

// Fills `queueName` with the jobs (keyed or not), then drains them with every engine's workers.
async function drainOnce(engines: ReadonlyArray<Matchbox>, queueName: string, limited: boolean): Promise<Drained> {
  const options = limited ? { concurrencyPerKey: limit } : {}
  const producer = (engines[0] as Matchbox).queue<{ key: string }>(queueName, options)
  for (let done = 0; done < jobs; done += 500) {
    const batch = Array.from({ length: Math.min(500, jobs - done) }, (_, i) => {
      const key = `tenant-${(done + i) % keys}`
      return { payload: { key }, ...(limited ? { concurrencyKey: key } : {}) }
    })
    await producer.enqueueMany(batch)
  }
  const running = new Map<string, number>()
  let mostOfAKey = 0
  let finished = 0
  let allDone: () => void = () => {}
  const done = new Promise<void>((resolve) => {
    allDone = resolve
  })
  const began = performance.now()
  const stops = engines.map((engine) =>
    engine.queue<{ key: string }>(queueName, options).work(
      async (job) => {
        const key = job.payload.key
        const now = (running.get(key) ?? 0) + 1
        running.set(key, now)
        mostOfAKey = Math.max(mostOfAKey, now)
        await delay(holdMs)
        running.set(key, (running.get(key) ?? 1) - 1)
        if (++finished === jobs) allDone()
      },
      { concurrency: workersPerEngine },
    ),
  )
  await done
  const elapsedS = (performance.now() - began) / 1_000
  await Promise.all(stops.map((stop) => stop()))
  return { jobsPerS: jobs / elapsedS, mostOfAKey }
}

const database = await openBenchDatabase('concurrency_keys')
const engines: Matchbox[] = []
try {
  for (let i = 0; i < engineCount; i++) engines.push(await open({ store: { databaseUrl: database.url }, hostId: `bench-${i + 1}` }))
  console.log(`${engineCount} engines × ${workersPerEngine} workers, ${jobs} jobs over ${keys} keys, handlers hold ${holdMs} ms, limit ${limit} per key`)
  const limitedRuns: Drained[] = []
  const plainRuns: Drained[] = []
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? [true, false] : [false, true]
    for (const limited of order) {
      const drained = await drainOnce(engines, `${limited ? 'limited' : 'plain'}-${round}`, limited)
      ;(limited ? limitedRuns : plainRuns).push(drained)
      console.log(`round ${round + 1} ${limited ? 'limited  ' : 'unlimited'}: ${drained.jobsPerS.toFixed(0)} jobs/s, most of one key at once ${drained.mostOfAKey}`)
    }
  }
  const limitedRate = median(limitedRuns.map((run) => run.jobsPerS))
  const plainRate = median(plainRuns.map((run) => run.jobsPerS))
  console.log(`median limited ${limitedRate.toFixed(0)} jobs/s · unlimited ${plainRate.toFixed(0)} jobs/s · limited ÷ unlimited ${(limitedRate / plainRate).toFixed(3)}`)
  console.log(`most handlers of one key at once: limited ${Math.max(...limitedRuns.map((run) => run.mostOfAKey))} (limit ${limit}) · unlimited ${Math.max(...plainRuns.map((run) => run.mostOfAKey))}`)
} finally {
  for (const engine of engines) await engine.close()
  await database.drop()
}
