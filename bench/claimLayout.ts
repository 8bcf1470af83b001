/**
 * Claim layout bench — `npx tsx bench/claimLayout.ts [--against REV] [--jobs N] [--rounds N]`:
 * this build's drains beside an earlier commit's (default `main`), on one throwaway PostgreSQL
 * (fsync off), so a change to the jobs table's layout or its claim statements reads as a ratio
 * measured under the same load, whatever the machine's absolute speed.
 *
 * Each drain gets a fresh database (its build migrates it to its own schema version) and a pool
 * of 18 connections; the earlier commit is checked out and built in a temporary worktree
 * (bench/Baseline.ts), this build is loaded from dist/ (bench/built.ts). Per round and mode, the
 * two builds drain `jobs` pre-enqueued no-op jobs in ABBA order (this build first in odd
 * rounds): `work({ concurrency: 16 })` and `work({ concurrency: 16, batch: 64 })`, timed from
 * starting the workers to the last handler start. Besides jobs/s it prints the server's index
 * growth per job (`pg_relation_size` of the jobs indexes after the backlog's enqueue and after
 * the drain, with autovacuum off for the table so nothing is reclaimed meanwhile) and other processes' CPU over
 * each drain (bench/CpuWatch.ts): a drain during which they used more than half a core is
 * flagged `busy`, and its ratio is indicative only.
 *
 * Does not: compare with other libraries (bench/peers.ts does), or judge a ratio.
 */
import { Command } from 'commander'
import pg from 'pg'
import type * as MatchboxPackage from '../src/index.ts'
import { type RunningCluster, startCluster } from '../test/harness/PostgresCluster.ts'
import { prepareBaseline } from './Baseline.ts'
import { loadBuilt } from './built.ts'
import { makeCpuWatch, postmasterPidOf } from './CpuWatch.ts'
import { median } from './peerTable.ts'
import { busyCoresMax, drainModes, poolMax, timedDrain } from './TimedDrain.ts'

const given = new Command()
  .option('--against <rev>', 'the commit to measure beside this build', 'main')
  .option('--jobs <n>', 'jobs per drain', '5000')
  .option('--rounds <n>', 'rounds (the median is printed)', '3')
  .parse()
  .opts<{ against: string; jobs: string; rounds: string }>()
const jobs = Number(given.jobs)
const rounds = Number(given.rounds)
if (!Number.isInteger(jobs) || jobs < 1 || !Number.isInteger(rounds) || rounds < 1) throw new Error('--jobs and --rounds take positive integers')

const modes = drainModes

type Open = (typeof MatchboxPackage)['open']
interface Build {
  readonly label: string
  readonly open: Open
  readonly database: string
}

interface Drain {
  readonly jobsPerS: number
  readonly indexBytesPerJob: number
  readonly othersCores: number
}

let cluster: RunningCluster | undefined
const baseline = prepareBaseline(given.against)
try {
  cluster = startCluster()
  const urlOf = (database: string): string => {
    const url = new URL((cluster as RunningCluster).url)
    url.pathname = `/${database}`
    return url.toString()
  }
  const postmaster = postmasterPidOf(cluster.url)
  const cpu = makeCpuWatch(postmaster === null ? [] : [postmaster])
  const admin = new pg.Client({ connectionString: cluster.url })
  await admin.connect()
  const builds: Build[] = [
    { label: 'this build', open: (await loadBuilt<typeof MatchboxPackage>('src/index.ts')).open, database: 'layout_current' },
    { label: baseline.commit.split(' ')[0] ?? baseline.commit, open: (await baseline.load<typeof MatchboxPackage>('src/index.ts')).open, database: 'layout_baseline' },
  ]

  const indexBytes = async (pool: pg.Pool): Promise<number> =>
    Number((await pool.query<{ bytes: string }>("SELECT coalesce(sum(pg_relation_size(indexrelid)), 0) AS bytes FROM pg_index WHERE indrelid = 'matchbox.jobs'::regclass")).rows[0]?.bytes)

  const drain = async (build: Build, mode: (typeof modes)[number], tag: string): Promise<Drain> => {
    await admin.query(`DROP DATABASE IF EXISTS ${build.database}`)
    await admin.query(`CREATE DATABASE ${build.database}`)
    const pool = new pg.Pool({ connectionString: urlOf(build.database), max: poolMax })
    pool.on('error', () => {})
    const mb = await build.open({ store: { pool } })
    try {
      await pool.query('ALTER TABLE matchbox.jobs SET (autovacuum_enabled = false)')
      let bytesBefore = 0
      const figures = await timedDrain(mb.queue(`drain-${tag}`), jobs, mode.options, cpu, async () => void (bytesBefore = await indexBytes(pool)))
      return { ...figures, indexBytesPerJob: ((await indexBytes(pool)) - bytesBefore) / jobs }
    } finally {
      await mb.close()
      await pool.end()
    }
  }

  console.log(`claim layout bench ${new Date().toISOString()}: this build vs ${baseline.commit}; ${jobs} jobs per drain, ${rounds} rounds (median), ABBA order; busy = other processes > ${busyCoresMax} cores`)
  for (const mode of modes) {
    const results = new Map<string, Drain[]>(builds.map((build) => [build.label, []]))
    for (let round = 1; round <= rounds; round++) {
      const order = round % 2 === 1 ? builds : [...builds].reverse()
      for (const build of order) {
        const result = await drain(build, mode, `${round}`)
        results.get(build.label)?.push(result)
        console.log(`  · ${mode.name}, ${build.label}, round ${round}: ${result.jobsPerS.toFixed(0)} jobs/s, index growth ${result.indexBytesPerJob.toFixed(1)} B/job, others ${result.othersCores.toFixed(2)} cores${result.othersCores > busyCoresMax ? ' (busy)' : ''}`)
      }
    }
    const [ours, theirs] = builds.map((build) => results.get(build.label) ?? [])
    const busy = [...(ours ?? []), ...(theirs ?? [])].some((result) => result.othersCores > busyCoresMax)
    const rate = (list: ReadonlyArray<Drain> | undefined): number => median((list ?? []).map((result) => result.jobsPerS))
    const growth = (list: ReadonlyArray<Drain> | undefined): number => median((list ?? []).map((result) => result.indexBytesPerJob))
    console.log(
      `${mode.name}: this build ${rate(ours).toFixed(0)} jobs/s, ${builds[1]?.label} ${rate(theirs).toFixed(0)} jobs/s, ratio ${(rate(ours) / rate(theirs)).toFixed(2)}${busy ? ' (busy: indicative only)' : ''}; ` +
        `index growth ${growth(ours).toFixed(1)} vs ${growth(theirs).toFixed(1)} B/job`,
    )
  }
  await admin.end()
} finally {
  cluster?.stop()
  baseline.dispose()
}
