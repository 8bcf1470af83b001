/**
 * The dashboard in a real headless Chromium (test/harness/browser.ts), on PostgreSQL with seeded
 * jobs, mounted under `/jobs` in an Express app: the queues page shows the counts; a dead job's
 * page shows its handler error beside the reason of death and its timeline; clicking Retry makes
 * it pending, its earlier life kept on the timeline;
 * payloads and keys holding markup render as text (no element, no dialog); and actions need the
 * basic-auth credential and the CSRF token. One browser for the file.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import type { Page } from 'puppeteer-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dashboardHandler } from '../src/dashboard/DashboardHandler.ts'
import { ManualClock, type Matchbox, open } from '../src/index.ts'
import { launchBrowser, type LaunchedBrowser } from './harness/browser.ts'
import { freshDatabase } from './harness/database.ts'

const xssPayload = { html: '<script>alert(1)</script>', attribute: '"><img src=x onerror=alert(2)>' }
const xssKey = '"><img src=x onerror=alert(3)>'

let mb: Matchbox
let worker: Matchbox
let chrome: LaunchedBrowser
let mounted: http.Server
let guarded: http.Server
let base: string
let guardedBase: string
let deadId: string
let xssId: string

const listen = async (server: http.Server): Promise<string> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

beforeAll(async () => {
  const databaseUrl = await freshDatabase('dashboard_browser')
  const clock = new ManualClock(1_700_000_000_000)
  // The dashboard's engine is a producer, as `matchbox dashboard` opens it; a worker engine
  // beside it owns the partitions and runs the handlers.
  mb = await open({ store: { databaseUrl }, clock, seed: 29, hostId: 'dash', role: 'producer' })
  worker = await open({ store: { databaseUrl }, clock, seed: 30, hostId: 'worker' })
  const emails = mb.queue('emails')
  for (let i = 0; i < 3; i++) await emails.enqueue({ to: `user${i}@example.com` })
  xssId = await emails.enqueue(xssPayload, { key: xssKey })
  const reports = mb.queue('reports', { maxAttempts: 1 })
  deadId = await reports.enqueue({ report: 'monthly' })
  const job = await worker.queue('reports', { maxAttempts: 1 }).claim()
  expect(job?.id).toBe(deadId)
  expect(await job?.retry(new Error('renderer crashed: <b>out of memory</b>'))).toBe(true)

  const app = express()
  app.use('/jobs', dashboardHandler(mb, { basePath: '/jobs' }))
  mounted = http.createServer(app)
  base = `${await listen(mounted)}/jobs`
  guarded = http.createServer(dashboardHandler(mb, { basicAuth: 'ops:s3cret' }))
  guardedBase = await listen(guarded)
  chrome = await launchBrowser()
})
afterAll(async () => {
  await chrome?.close()
  await Promise.all([mounted, guarded].map((server) => new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())))))
  await worker?.close()
  await mb?.close()
})

// A fresh page that fails the test on any dialog (an injected alert would open one).
async function freshPage(): Promise<{ page: Page; dialogs: string[] }> {
  const page = await chrome.browser.newPage()
  const dialogs: string[] = []
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message())
    void dialog.dismiss()
  })
  return { page, dialogs }
}

const text = (page: Page, selector: string) => page.$eval(selector, (element) => element.textContent ?? '')

describe('dashboard in a browser (PostgreSQL, mounted under /jobs in Express)', () => {
  it('shows every queue with its counts and its deaths of the last hour', async () => {
    const { page } = await freshPage()
    expect((await page.goto(`${base}/`))?.status()).toBe(200)
    const rows = await page.$$eval('#queues tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim())))
    expect(rows.map((row) => row.slice(0, 5))).toEqual([
      ['emails', '4', '0', '0', '0'],
      ['reports', '0', '0', '0', '1'],
    ])
    const charts = await page.$$eval('#queues svg.chart', (svgs) => svgs.map((svg) => [svg.getAttribute('aria-label'), svg.querySelectorAll('rect').length]))
    expect(charts).toEqual([
      ['0 died in the last hour, at most 0 in one minute', 0],
      ['1 died in the last hour, at most 1 in one minute', 1],
    ])
    await page.close()
  })

  it('opens a dead job from its queue and shows the handler error beside the reason of death, then retries it', async () => {
    const { page } = await freshPage()
    await page.goto(`${base}/`)
    await Promise.all([page.waitForNavigation(), page.click('#queues a[href$="/queues/reports?state=dead"]')])
    await Promise.all([page.waitForNavigation(), page.click('#jobs a.job')])
    expect(page.url()).toBe(`${base}/queues/reports/jobs/${deadId}`)
    expect(await text(page, '#state')).toBe('dead')
    expect(await text(page, '#died')).toContain('max attempts exceeded')
    expect(await text(page, '#handler-error')).toBe('renderer crashed: <b>out of memory</b>')
    expect(await text(page, '#handler-stack')).toContain('dashboard.browser.postgres.test.ts')
    expect(await page.$$eval('#attempts tbody tr', (rows) => rows.map((row) => [row.querySelector('td')?.textContent, row.querySelector('pre')?.textContent]))).toEqual([
      ['1', 'renderer crashed: <b>out of memory</b>'],
    ])
    // Its timeline: enqueued, claimed, failed at its budget with the error as text, dead.
    const timeline = () => page.$$eval('#timeline tbody tr', (rows) => rows.map((row) => [row.className, row.querySelector('pre')?.textContent ?? null]))
    expect(await timeline()).toEqual([
      ['timeline-enqueued', null],
      ['timeline-claimed', null],
      ['timeline-failed', 'renderer crashed: <b>out of memory</b>'],
      ['timeline-died', null],
    ])
    expect(await text(page, '#timeline tr.timeline-died')).toContain('dead: max attempts exceeded')

    await Promise.all([page.waitForNavigation(), page.click('button[value="retry"]')])
    expect(await text(page, '#action-result')).toContain('Retried 1 job in reports.')
    expect((await mb.queue('reports').getJob(deadId))?.state).toBe('pending')
    await page.goto(`${base}/queues/reports/jobs/${deadId}`)
    expect(await text(page, '#state')).toBe('pending')
    // Its earlier life stays on the timeline, before its return from dead.
    expect((await timeline()).map((row) => row[0])).toEqual(['timeline-claimed', 'timeline-failed', 'timeline-revived', 'timeline-due'])
    await page.close()
  })

  it('renders payloads and keys holding markup as text: no element made, no script run', async () => {
    const { page, dialogs } = await freshPage()
    await page.goto(`${base}/queues/emails`)
    expect(await page.$$eval('#jobs img', (images) => images.length)).toBe(0)
    expect(await page.$$eval('#jobs td', (cells, key) => cells.some((cell) => cell.textContent === key), xssKey)).toBe(true)
    await page.goto(`${base}/queues/emails/jobs/${xssId}`)
    expect(JSON.parse(await text(page, '#payload'))).toEqual(xssPayload)
    expect(await page.$$eval('img, main script', (elements) => elements.length)).toBe(0)
    expect(dialogs).toEqual([])
    await page.close()
  })

  it('pauses a queue from its row: the worker stops taking its jobs while another queue runs, and Resume lets them through', async () => {
    const { page } = await freshPage()
    // A job may start before its enqueue call returns here (handed to the waiting worker at the
    // enqueue's commit): a job that ran before anyone waited for it counts as done.
    const ran = new Set<string>()
    const waiting = new Map<string, () => void>()
    const done = (id: string) => new Promise<void>((resolve) => (ran.has(id) ? resolve() : waiting.set(id, resolve)))
    const handler = async (job: { id: string }) => {
      ran.add(job.id)
      waiting.get(job.id)?.()
    }
    const stops = [worker.queue('thumbs').work(handler), worker.queue('audit').work(handler)]
    // A job far in the future keeps the queue on the page.
    await mb.queue('thumbs').enqueue({ later: true }, { delayMs: 86_400_000 })
    await page.goto(`${base}/`)
    await Promise.all([page.waitForNavigation(), page.click('#queues tr:has(a[href$="/queues/thumbs"]) button[value="pause"]')])
    expect(await text(page, '#action-result')).toContain('Paused thumbs')
    expect(await mb.queue('thumbs').isPaused()).toBe(true)

    const held = await mb.queue('thumbs').enqueue({ n: 1 })
    const heldRan = done(held)
    const passing = await mb.queue('audit').enqueue({ n: 2 })
    await done(passing)
    expect((await mb.queue('thumbs').getJob(held))?.state).toBe('pending')
    expect(await worker.queue('thumbs').claim()).toBeNull()

    await page.goto(`${base}/`)
    expect(await text(page, '#queues tr:has(a[href$="/queues/thumbs"]) td.pause')).toContain('paused')
    await Promise.all([page.waitForNavigation(), page.click('#queues tr:has(a[href$="/queues/thumbs"]) button[value="resume"]')])
    expect(await text(page, '#action-result')).toContain('Resumed thumbs')
    await heldRan
    for (const stop of stops) await stop()
    await page.close()
  })

  it('serves nothing without the basic-auth credential, and everything with it', async () => {
    const { page } = await freshPage()
    expect((await page.goto(`${guardedBase}/`))?.status()).toBe(401)
    await page.authenticate({ username: 'ops', password: 'wrong' })
    expect((await page.goto(`${guardedBase}/`))?.status()).toBe(401)
    await page.authenticate({ username: 'ops', password: 's3cret' })
    expect((await page.goto(`${guardedBase}/`))?.status()).toBe(200)
    await page.close()
  })

  it('refuses an action whose form lost its CSRF token or carries another, and the job stays as it was', async () => {
    const { page } = await freshPage()
    const emails = mb.queue('emails')
    for (const tamper of ['remove', 'replace'] as const) {
      await page.goto(`${base}/queues/emails/jobs/${xssId}`)
      await page.$eval(
        'button[value="cancel"]',
        (button, how) => {
          const field = button.form?.querySelector('input[name="csrf"]') as unknown as { value: string; remove(): void }
          if (how === 'remove') field.remove()
          else field.value = 'forged-token'
        },
        tamper,
      )
      const [response] = await Promise.all([page.waitForNavigation(), page.click('button[value="cancel"]')])
      expect(response?.status()).toBe(403)
      expect(await text(page, '#error')).toContain('CSRF')
      expect((await emails.getJob(xssId))?.state).toBe('pending')
    }
    // The untouched form does cancel: the refusals above were the token's doing.
    await page.goto(`${base}/queues/emails/jobs/${xssId}`)
    await Promise.all([page.waitForNavigation(), page.click('button[value="cancel"]')])
    expect(await text(page, '#action-result')).toContain('Cancelled 1 job in emails.')
    expect(await emails.getJob(xssId)).toBeNull()
    await page.close()
  })
})
