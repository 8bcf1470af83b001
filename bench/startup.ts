/**
 * Start-up — `npx tsx bench/startup.ts [--runs 7] [--dist dist/src/index.js] [--embedded]`.
 *
 * How long a service waits for Matchbox on PostgreSQL: fresh Node processes, each importing the
 * BUILT package (`npm run build` first; tsx's on-the-fly compilation is not what users run) and
 * calling `open({ store: { databaseUrl } })`, then `close()`. Prints, per process, the import
 * time, the open time and the whole process's wall time (Node's own start included), then the
 * medians. The first process migrates the fresh database and is reported apart; the rest open a
 * migrated one, as every start after the first does. `--embedded` adds the same for the
 * embedded store (PGlite in memory, which migrates on every open).
 *
 * PostgreSQL: a new database on DATABASE_URL's server (needs CREATE DATABASE), else a throwaway
 * cluster from test/harness/PostgresCluster.ts. Run it on a quiet machine: a busy one inflates
 * every number (the per-process lines show the spread).
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import pg from 'pg'
import { type RunningCluster, startCluster } from '../test/harness/PostgresCluster.ts'

function option(name: string, fallback: string): string {
  const index = process.argv.indexOf(`--${name}`)
  return index < 0 ? fallback : (process.argv[index + 1] ?? fallback)
}

const runs = Number(option('runs', '7'))
if (!Number.isSafeInteger(runs) || runs < 1) throw new Error('--runs needs a whole number ≥ 1')
const entry = resolve(option('dist', 'dist/src/index.js'))
if (!existsSync(entry)) throw new Error(`${entry} does not exist: run \`npm run build\` first (or pass --dist)`)
const embedded = process.argv.includes('--embedded')

// The child (STARTUP_STORE null: open's default, the embedded store): times the import and the open with its own clock, and prints them as one JSON line.
const child = `
const startedMs = performance.now()
const matchbox = await import(${JSON.stringify(pathToFileURL(entry).href)})
const importedMs = performance.now()
const store = JSON.parse(process.env.STARTUP_STORE)
const mb = await matchbox.open(store === null ? {} : { store })
const openedMs = performance.now()
await mb.close()
console.log(JSON.stringify({ importMs: importedMs - startedMs, openMs: openedMs - importedMs }))
`

interface Sample {
  readonly importMs: number
  readonly openMs: number
  readonly processMs: number
}

function measure(store: unknown): Sample {
  const startedMs = performance.now()
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', child], { env: { ...process.env, STARTUP_STORE: JSON.stringify(store) }, encoding: 'utf8' })
  const processMs = performance.now() - startedMs
  if (result.status !== 0) throw new Error(`the child failed (${result.status ?? result.signal}): ${result.stderr}`)
  const line = result.stdout.trim().split('\n').at(-1) ?? ''
  return { ...(JSON.parse(line) as Omit<Sample, 'processMs'>), processMs }
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}
const ms = (value: number): string => `${Math.round(value)} ms`
const show = (label: string, sample: Sample): void => console.log(`${label}: import ${ms(sample.importMs)}, open ${ms(sample.openMs)}, process ${ms(sample.processMs)}`)

function series(label: string, store: unknown): void {
  const samples = Array.from({ length: runs }, (_, index) => {
    const sample = measure(store)
    show(`  ${label} #${index + 1}`, sample)
    return sample
  })
  console.log(
    `${label}, median of ${runs}: import ${ms(median(samples.map((s) => s.importMs)))}, open ${ms(median(samples.map((s) => s.openMs)))}, ` +
      `import + open ${ms(median(samples.map((s) => s.importMs + s.openMs)))}, process ${ms(median(samples.map((s) => s.processMs)))}`,
  )
}

console.log(`start-up of ${entry}, ${runs} fresh processes per series (node ${process.version})`)
let cluster: RunningCluster | undefined
const fromEnv = process.env.DATABASE_URL
const adminUrl = fromEnv !== undefined && fromEnv !== '' ? fromEnv : (cluster = startCluster()).url
const database = `mb_startup_${process.pid}`
const admin = new pg.Client({ connectionString: adminUrl })
await admin.connect()
await admin.query(`CREATE DATABASE ${database} TEMPLATE template0`)
const url = new URL(adminUrl)
url.pathname = `/${database}`
try {
  const store = { databaseUrl: url.toString() }
  show('postgres, first open (migrates the fresh database)', measure(store))
  series('postgres', store)
  if (embedded) series('embedded (in memory, migrates each time)', null)
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {})
  await admin.end()
  cluster?.stop()
}
