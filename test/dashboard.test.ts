/**
 * The dashboard's request handler mounted under a path prefix on `node:http`, over an engine on
 * the memory store: the pages answer, values from the database render escaped (a payload holding
 * `<script>` or `"><img onerror=…>` shows as text), a bad path or state answers 404/400 with a
 * page, and an action without its CSRF token is refused. Browser tests are still to come.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dashboardHandler } from '../src/dashboard/DashboardHandler.ts'
import { ManualClock, type Matchbox, open } from '../src/index.ts'

let mb: Matchbox
let server: http.Server
let base: string
let jobId: string

beforeAll(async () => {
  mb = await open({ store: 'memory', clock: new ManualClock(1_700_000_000_000), seed: 7 })
  jobId = await mb.queue('emails').enqueue({ x: '<script>alert(1)</script>', y: '"><img onerror=alert(1)>' })
  server = http.createServer(dashboardHandler(mb, { basePath: '/jobs' }))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await mb.close()
})

describe('dashboardHandler under /jobs', () => {
  it.each(['/jobs/', '/jobs/queues/emails', '/jobs/engines', '/jobs/schedules'])('%s answers a page', async (path) => {
    const response = await fetch(`${base}${path}`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/text\/html/)
  })

  it('shows a payload holding markup as text, never as markup', async () => {
    const response = await fetch(`${base}/jobs/queues/emails/jobs/${jobId}`)
    expect(response.status).toBe(200)
    const page = await response.text()
    expect(page).toContain('&lt;script&gt;')
    expect(page).not.toContain('<script>alert(1)')
    expect(page).not.toContain('<img onerror')
  })

  it("shows a running job's progress and the error of each attempt", async () => {
    const q = mb.queue('progress', { maxAttempts: 3, backoffBaseS: 0 })
    const id = await q.enqueue({ step: 'render' })
    const first = await q.claim()
    await first?.retry(new Error('first try <failed>'), 0)
    const second = await q.claim()
    expect(await second?.progress({ pages: 12, of: 40 })).toBe(true)
    const page = await (await fetch(`${base}/jobs/queues/progress/jobs/${id}`)).text()
    expect(page).toMatch(/<pre id="progress">\{\n {2}&quot;pages&quot;: 12,\n {2}&quot;of&quot;: 40\n\}<\/pre>/)
    expect(page).toMatch(/<table id="attempts">.*<td class="num">1<\/td>.*first try &lt;failed&gt;/s)
    expect(await q.getJob(id)).toMatchObject({ progress: { pages: 12, of: 40 }, attemptErrors: [{ attempt: 1, message: 'first try <failed>' }] })
    // The timeline, in the order it happened, the handler's error as text.
    const timeline = /<table id="timeline">(.*?)<\/table>/s.exec(page)?.[1] ?? ''
    expect([...timeline.matchAll(/<tr class="timeline-(\w+)">/g)].map((match) => match[1])).toEqual(['enqueued', 'claimed', 'retried', 'claimed', 'progress'])
    expect(timeline).toContain('first try &lt;failed&gt;')
    expect(timeline).toContain('attempt 2 claimed by a worker — running')
    expect(await q.getJob(id)).toMatchObject({ claims: [{ attempt: 1 }, { attempt: 2 }], attemptErrors: [{ attempt: 1, retryAt: expect.any(Number) }], progressAt: expect.any(Number) })
  })

  it('lists a paused queue that has no jobs, with its Resume button; a read-only dashboard shows the state and no button', async () => {
    await mb.queue('idle').pause()
    const page = await (await fetch(`${base}/jobs/`)).text()
    expect(page).toMatch(/<a href="\/jobs\/queues\/idle">idle<\/a>.*<span class="paused"[^>]*>paused<\/span>.*<button name="action" value="resume">Resume<\/button>/s)
    const readOnly = http.createServer(dashboardHandler(mb, { basePath: '/jobs', readOnly: true }))
    await new Promise<void>((resolve) => readOnly.listen(0, '127.0.0.1', resolve))
    try {
      const shown = await (await fetch(`http://127.0.0.1:${(readOnly.address() as AddressInfo).port}/jobs/`)).text()
      expect(shown).toContain('>paused</span>')
      expect(shown).not.toMatch(/value="(pause|resume)"/)
      const refused = await fetch(`http://127.0.0.1:${(readOnly.address() as AddressInfo).port}/jobs/actions`, { method: 'POST', body: 'action=resume&queue=idle', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
      expect(refused.status).toBe(403)
      expect(await mb.queue('idle').isPaused()).toBe(true)
    } finally {
      await new Promise<void>((resolve) => readOnly.close(() => resolve()))
      await mb.queue('idle').resume()
    }
  })

  it('answers an unknown path with 404 and a bad state with 400, each a page', async () => {
    const missing = await fetch(`${base}/jobs/nope`)
    expect(missing.status).toBe(404)
    expect(await missing.text()).toMatch(/<html/i)
    const bad = await fetch(`${base}/jobs/queues/emails?state=bogus`)
    expect(bad.status).toBe(400)
  })

  it('refuses an action without its CSRF token, and leaves the job as it was', async () => {
    const response = await fetch(`${base}/jobs/actions`, { method: 'POST', body: 'action=cancel', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(response.status).toBe(403)
    expect((await mb.queue('emails').getJob(jobId))?.state).toBe('pending')
  })
})
