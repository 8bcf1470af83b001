/**
 * Dashboard screenshots — `npm run screenshots`: one PNG of each dashboard page in `docs/`, made
 * by the headless Chromium the browser tests use (test/harness/browser.ts).
 *
 * It starts a throwaway PostgreSQL cluster, opens two worker engines on it (so the engines page
 * shows partitions split between them) and a dashboard on a third, producer engine, seeds a few
 * queues — pending, delayed, running with progress, dead after two failed attempts, one queue
 * paused — and two schedules, then photographs each page at 1200 px wide. Nothing is left behind but the PNGs.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdirSync } from 'node:fs'
import { dashboardHandler } from '../src/dashboard/DashboardHandler.ts'
import { replayFailureFile } from '../src/cli/dashboard.ts'
import { type Matchbox, open } from '../src/index.ts'
import { launchBrowser } from '../test/harness/browser.ts'
import { startCluster } from '../test/harness/PostgresCluster.ts'

const outDir = new URL('../docs/', import.meta.url)

async function seed(worker: Matchbox): Promise<{ deadId: string; runningId: string }> {
  const emails = worker.queue('emails')
  for (let i = 0; i < 12; i++) await emails.enqueue({ to: `user${i}@example.com`, subject: 'Welcome' }, { key: `welcome:user${i}` })
  for (let i = 0; i < 3; i++) await emails.enqueue({ to: `later${i}@example.com`, subject: 'Reminder' }, { delayMs: 3_600_000 })
  const reports = worker.queue('reports', { maxAttempts: 2, backoffBaseS: 1 })
  let deadId = ''
  for (let i = 0; i < 2; i++) {
    // Alone in the queue, so each claim gets it back: two attempts, the second out of budget.
    deadId = await reports.enqueue({ report: 'monthly', month: `2026-0${i + 1}` })
    for (const error of [`upstream timeout after 30 s (page ${40 + i})`, `renderer crashed: out of memory at page ${40 + i}`]) {
      const job = await reports.claim()
      if (job?.id !== deadId) throw new Error('expected the report back')
      await job.retry(new Error(error), 0)
    }
  }
  for (let i = 3; i <= 5; i++) await reports.enqueue({ report: 'monthly', month: `2026-0${i}` })
  const running = await reports.claim()
  if (running === null) throw new Error('expected a report to claim')
  await running.progress({ pages: 12, of: 40, stage: 'rendering' })
  await worker.queue('thumbnails').enqueue({ image: 's3://bucket/cat.png', sizes: [64, 256] }, { priority: 5 })
  await worker.schedule('nightly-digest', '0 8 * * *', 'emails', { to: 'team@example.com', subject: 'Digest' }, { timezone: 'Europe/Paris' })
  await worker.schedule('hourly-report', '0 * * * *', 'reports', { report: 'hourly' })
  await worker.queue('thumbnails').pause()
  return { deadId, runningId: running.id }
}

async function main(): Promise<void> {
  mkdirSync(outDir, { recursive: true })
  const cluster = startCluster()
  const engines: Matchbox[] = []
  const chrome = await launchBrowser()
  try {
    const databaseUrl = cluster.url
    for (const hostId of ['worker-a', 'worker-b']) engines.push(await open({ store: { databaseUrl }, hostId }))
    const [workerA] = engines as [Matchbox]
    const { deadId, runningId } = await seed(workerA)
    // Workers load their queues' partitions, so the engines page shows who owns which.
    const hold = new Promise<void>((resolve) => setTimeout(resolve, 30_000).unref())
    for (const [index, engine] of engines.entries()) engine.queue(['thumbnails', 'audit', 'emails-priority', 'webhooks'][index] ?? 'audit').work(() => hold)
    for (const [index, engine] of engines.entries()) engine.queue(['webhooks', 'emails-priority'][index] ?? 'audit').work(() => hold)
    const dashboardEngine = await open({ store: { databaseUrl }, role: 'producer', hostId: 'dashboard' })
    engines.push(dashboardEngine)
    const server = http.createServer(dashboardHandler(dashboardEngine, { basePath: '/jobs', simulator: replayFailureFile }))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jobs`
    const pages: ReadonlyArray<[string, string]> = [
      ['queues', '/'],
      ['jobs', '/queues/emails?state=pending'],
      ['dead-jobs', '/queues/reports?state=dead'],
      ['job', `/queues/reports/jobs/${deadId}`],
      ['running-job', `/queues/reports/jobs/${runningId}`],
      ['schedules', '/schedules'],
      ['engines', '/engines'],
      ['simulator', '/simulator'],
    ]
    const page = await chrome.browser.newPage()
    for (let tries = 0; tries < 50; tries++) {
      await page.goto(`${base}/engines`)
      if ((await page.$$('#physical-queues tbody tr')).length >= 3) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    await page.setViewport({ width: 1200, height: 700 })
    for (const [name, path] of pages) {
      const response = await page.goto(`${base}${path}`)
      if (response?.status() !== 200) throw new Error(`${path} answered ${response?.status()}`)
      const file = new URL(`dashboard-${name}.png`, outDir)
      await page.screenshot({ path: file.pathname as `${string}.png`, fullPage: true })
      console.log(`docs/dashboard-${name}.png  ${path}`)
    }
    await new Promise<void>((resolve) => server.close(() => resolve()))
  } finally {
    await chrome.close()
    for (const engine of engines.reverse()) await engine.close()
    cluster.stop()
  }
}

await main()
