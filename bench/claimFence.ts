/**
 * Claim fence bench — `npx tsx bench/claimFence.ts [--jobs N] [--rounds N]`: what the range fence
 * on the owner's claims costs a drain. The same engine drains the same backlog twice per round on
 * one throwaway PostgreSQL (fsync off): once as shipped, every claim from the store carrying its
 * partition's range (`claimDue`, `ackAndClaimDue`, `claimMany`, a claimed enqueue), and once
 * with a job store that drops the fence before the statement is built, so the statements run
 * without the fence's CTE and nothing else changes. Modes `work({ concurrency: 16 })` and
 * `work({ concurrency: 16, batch: 64 })`, ABBA order (fenced first in odd rounds), a fresh
 * database and an 18-connection pool per drain, timed from starting the workers to the last
 * handler start. Prints jobs/s per drain and the median ratio fenced ÷ unfenced per mode; a
 * drain during which other processes used more than half a core is flagged `busy` (bench/CpuWatch.ts).
 *
 * Does not: compare builds (bench/claimLayout.ts does) or other libraries (bench/peers.ts).
 */
import { Command } from 'commander'
import pg from 'pg'
import { openWith } from '../src/jobs/open.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { type RunningCluster, startCluster } from '../test/harness/PostgresCluster.ts'
import { makeCpuWatch, postmasterPidOf } from './CpuWatch.ts'
import { median } from './peerTable.ts'
import { busyCoresMax, type DrainFigures, drainModes, poolMax, timedDrain } from './TimedDrain.ts'

const given = new Command()
  .option('--jobs <n>', 'jobs per drain', '5000')
  .option('--rounds <n>', 'rounds (the median is printed)', '3')
  .parse()
  .opts<{ jobs: string; rounds: string }>()
const jobs = Number(given.jobs)
const rounds = Number(given.rounds)
if (!Number.isInteger(jobs) || jobs < 1 || !Number.isInteger(rounds) || rounds < 1) throw new Error('--jobs and --rounds take positive integers')

const modes = drainModes

// The job store with every claim's fence dropped: the statements the store builds without one.
function unfenced(store: JobStore): JobStore {
  const drop = <P extends { readonly fence?: unknown }>(params: P): P => {
    const { fence: _fence, ...rest } = params
    return rest as P
  }
  return {
    ...store,
    enqueue: (params, tx) => store.enqueue(drop(params), tx),
    claim: (params) => store.claim(drop(params)),
    claimMany: (params) => store.claimMany(drop(params)),
    claimDue: (params) => store.claimDue(drop(params)),
    ackAndClaimDue: (params) => store.ackAndClaimDue(drop(params)),
  }
}

const variants = [
  { label: 'fenced', wrap: (store: JobStore) => store },
  { label: 'unfenced', wrap: unfenced },
] as const

type Drain = DrainFigures

let cluster: RunningCluster | undefined
try {
  cluster = startCluster()
  const base = cluster.url
  const urlOf = (database: string): string => {
    const url = new URL(base)
    url.pathname = `/${database}`
    return url.toString()
  }
  const postmaster = postmasterPidOf(base)
  const cpu = makeCpuWatch(postmaster === null ? [] : [postmaster])
  const admin = new pg.Client({ connectionString: base })
  await admin.connect()

  const drain = async (variant: (typeof variants)[number], mode: (typeof modes)[number]): Promise<Drain> => {
    const database = `fence_${variant.label}`
    await admin.query(`DROP DATABASE IF EXISTS ${database}`)
    await admin.query(`CREATE DATABASE ${database}`)
    const pool = new pg.Pool({ connectionString: urlOf(database), max: poolMax })
    pool.on('error', () => {})
    const mb = await openWith({ store: { pool } }, variant.wrap)
    try {
      return await timedDrain(mb.queue('drain'), jobs, mode.options, cpu)
    } finally {
      await mb.close()
      await pool.end()
    }
  }

  console.log(`claim fence bench ${new Date().toISOString()}: ${jobs} jobs per drain, ${rounds} rounds (median), ABBA order; busy = other processes > ${busyCoresMax} cores`)
  for (const mode of modes) {
    const results = new Map<string, Drain[]>(variants.map((variant) => [variant.label, []]))
    for (let round = 1; round <= rounds; round++) {
      for (const variant of round % 2 === 1 ? variants : [...variants].reverse()) {
        const result = await drain(variant, mode)
        results.get(variant.label)?.push(result)
        console.log(`  · ${mode.name}, ${variant.label}, round ${round}: ${result.jobsPerS.toFixed(0)} jobs/s, others ${result.othersCores.toFixed(2)} cores${result.othersCores > busyCoresMax ? ' (busy)' : ''}`)
      }
    }
    const rate = (label: string): number => median((results.get(label) ?? []).map((result) => result.jobsPerS))
    const busy = [...results.values()].flat().some((result) => result.othersCores > busyCoresMax)
    console.log(`${mode.name}: fenced ${rate('fenced').toFixed(0)} jobs/s, unfenced ${rate('unfenced').toFixed(0)} jobs/s, fenced ÷ unfenced ${(rate('fenced') / rate('unfenced')).toFixed(3)}${busy ? ' (busy: indicative only)' : ''}`)
  }
  await admin.end()
} finally {
  cluster?.stop()
}
