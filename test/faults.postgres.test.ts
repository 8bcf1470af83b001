/**
 * Faults on real PostgreSQL while jobs flow through one engine (test/harness/faultRun.ts): the
 * server restarted mid-run (immediate mode, as a crash), and the engine's connections killed
 * mid-transaction (`pg_terminate_backend` in a loop). Each asserts that every successfully
 * enqueued job was handled at least once and that after a final drain none is left pending,
 * processing or dead.
 *
 * The restart needs a server of its own: the global test cluster is shared by every test file,
 * so this file starts a throwaway cluster (PostgresCluster.ts) and bounces that one.
 *
 * A worker process SIGKILLed in a loop with a producer in another process is covered by
 * test/multiEngine.kill.postgres.test.ts (three worker engines and a producer engine, each in
 * its own process). Longer runs: `npx tsx bench/faults.ts --cycles 50`.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RunningCluster, startCluster } from './harness/PostgresCluster.ts'
import { runUnderFaults, terminateBackends } from './harness/faultRun.ts'

const seed = Number(process.env.SIM_SEED ?? Date.now() % 2 ** 31)
console.log(`PostgreSQL faults: seed ${seed} (the seed names the engine's ids; the fault timing is real)`)

let cluster: RunningCluster
// Kills and restarts break its connections too; a pool opens fresh ones.
let admin: pg.Pool
const urls = { restart: '', terminate: '' }

async function database(name: string): Promise<string> {
  await admin.query(`CREATE DATABASE ${name} TEMPLATE template0`)
  // The throwaway cluster runs with synchronous_commit=off for speed, so a crash may lose
  // commits already acknowledged; the restart is a crash, and what it tests needs durable ones.
  await admin.query(`ALTER DATABASE ${name} SET synchronous_commit = on`)
  const url = new URL(cluster.url)
  url.pathname = `/${name}`
  return url.toString()
}

beforeAll(async () => {
  cluster = startCluster()
  admin = new pg.Pool({ connectionString: cluster.url, max: 2 })
  admin.on('error', () => {})
  urls.restart = await database('faults_restart')
  urls.terminate = await database('faults_terminate')
})
afterAll(async () => {
  await admin?.end().catch(() => {})
  cluster?.stop()
})

// The two runs share the server and run at once (the file stays short even when a drain waits
// out a delivery reservation): each also lives through the other's faults.
describe.concurrent('jobs on PostgreSQL under faults', () => {
  it('survive server restarts mid-run', { timeout: 120_000 }, async () => {
    const report = await runUnderFaults({
      url: urls.restart,
      seed,
      cycles: 2,
      enqueuesPerCycle: 100,
      fault: () => cluster.restart('immediate'),
      log: (line) => console.log(`restart: ${line}`),
    })
    console.log('restart:', report)
    expect(report.violations).toEqual([])
    expect(report.enqueued).toBeGreaterThanOrEqual(300)
  })

  it('survive their connections killed mid-transaction', { timeout: 120_000 }, async () => {
    let terminated = 0
    const report = await runUnderFaults({
      url: urls.terminate,
      seed: seed + 1,
      cycles: 2,
      enqueuesPerCycle: 100,
      // A round of kills every 10 enqueues, 10 rounds a cycle: connections die inside enqueues,
      // claims, acks, delivery passes and the listener alike.
      async fault(_cycle, flow) {
        for (let round = 0; round < 10; round++) {
          // The other run's restart may refuse this round; the next one kills again.
          terminated += await terminateBackends(admin, 'faults_terminate').catch(() => 0)
          await flow.moreEnqueued(10)
        }
      },
      log: (line) => console.log(`terminate: ${line}`),
    })
    console.log('terminate:', { ...report, terminated })
    expect(report.violations).toEqual([])
    expect(terminated).toBeGreaterThan(20)
  })
})
