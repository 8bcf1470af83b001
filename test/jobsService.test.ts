/**
 * The service author's API on every store (memory, embedded PGlite, PostgreSQL): typed queues,
 * `runAt` as a Date, `delayMs`, idempotent enqueue by key, handler errors kept on the job,
 * events and the logger, `startMaintenance`, schedules (list, unschedule, time zones), and the
 * per-queue admin (counts, pages by state, retrying a dead job).
 *
 * One engine per store on a ManualClock; tests isolate themselves by queue name. No sleeps:
 * waits are on conditions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock, type Matchbox, type MatchboxEvent, open } from '../src/index.ts'
import { freshDatabase } from './harness/database.ts'
import { settle } from './harness/settle.ts'

const start = 1_700_000_000_000 // 2023-11-14T22:13:20Z

interface Email {
  readonly to: string
  readonly subject: string
}

const stores = [
  ['memory', async () => 'memory' as const],
  ['embedded', async () => 'embedded' as const],
  ['postgres', async () => ({ databaseUrl: await freshDatabase('jobs_service') })],
] as const

describe.each(stores)('service API on %s', (label, storeOf) => {
  let mb: Matchbox
  const clock = new ManualClock(start)
  const events: MatchboxEvent[] = []
  const logged: Array<{ level: string; object: object; message: string | undefined }> = []
  const logger = {
    info: (object: object, message?: string) => logged.push({ level: 'info', object, message }),
    warn: (object: object, message?: string) => logged.push({ level: 'warn', object, message }),
    error: (object: object, message?: string) => logged.push({ level: 'error', object, message }),
  }
  beforeAll(async () => {
    mb = await open({ store: await storeOf(), clock, seed: 11, hostId: `service-${label}`, logger, onEvent: (event) => events.push(event) })
  })
  afterAll(async () => {
    await mb?.close()
  })
  const of = (queue: string) => events.filter((event) => 'queue' in event && event.queue === queue)
  // Waits for `condition` through real I/O (bounded by turns, not time), firing timers due now and
  // now and then moving the clock a little, for the timers an engine in a PostgreSQL group waits
  // on (delivery retries while membership settles): at most 10 s of engine time in all.
  const pump = async (condition: () => boolean, what: string): Promise<void> => {
    for (let turn = 0; turn < 200_000; turn++) {
      if (condition()) return
      await settle(1)
      clock.advance(turn % 2_000 === 1_999 ? 100 : 0)
    }
    throw new Error(`condition never held: ${what}`)
  }

  it('types payloads, takes runAt as a Date or delayMs, and refuses bad options writing nothing', async () => {
    const q = mb.queue<Email>('typed')
    const id = await q.enqueue({ to: 'a@b.c', subject: 'hi' })
    // @ts-expect-error a payload of another shape does not type-check
    await expect(q.enqueue({ nope: 1 }, { runAt: new Date(Number.NaN) })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.runAt' })
    const later = await q.enqueue({ to: 'c', subject: 'later' }, { runAt: new Date(clock.now() + 60_000) })
    const delayed = await q.enqueue({ to: 'd', subject: 'delayed' }, { delayMs: 5_000 })
    expect((await q.getJob(later))?.runAt).toBe(clock.now() + 60_000)
    expect((await q.getJob(delayed))?.runAt).toBe(clock.now() + 5_000)
    const refusals: Array<[object, string]> = [
      [{ runAt: 1, delayMs: 1 }, 'options.delayMs'],
      [{ delayMs: -1 }, 'options.delayMs'],
      [{ delayMs: 1.5 }, 'options.delayMs'],
      [{ expiresAt: new Date(Number.NaN) }, 'options.expiresAt'],
      [{ key: '' }, 'options.key'],
      [{ key: 42 }, 'options.key'],
    ]
    for (const [options, field] of refusals) await expect(q.enqueue({ to: 'x', subject: 'y' }, options as never), field).rejects.toMatchObject({ _tag: 'InvalidInput', field })
    expect(await q.counts()).toEqual({ pending: 3, processing: 0, dead: 0 })
    const job = await q.claim()
    const to: string | undefined = job?.payload.to
    expect(to).toBe('a@b.c')
    expect(job?.id).toBe(id)
    expect(await job?.ack()).toBe(true)
  })

  it('a key makes enqueue idempotent while its job is live; afterwards the key is free', async () => {
    const q = mb.queue<Email>('keyed')
    const first = await q.enqueue({ to: 'a', subject: 'welcome' }, { key: 'user-1' })
    expect(await q.enqueue({ to: 'a', subject: 'again' }, { key: 'user-1' })).toBe(first)
    expect(await Promise.all([1, 2, 3].map(() => q.enqueue({ to: 'a', subject: 'race' }, { key: 'user-1' })))).toEqual([first, first, first])
    expect(await q.getJob(first)).toMatchObject({ key: 'user-1', payload: { subject: 'welcome' } })
    expect(await q.counts()).toEqual({ pending: 1, processing: 0, dead: 0 })
    const job = await q.claim()
    expect(await q.enqueue({ to: 'a', subject: 'while processing' }, { key: 'user-1' })).toBe(first)
    await job?.ack()
    const second = await q.enqueue({ to: 'a', subject: 'after ack' }, { key: 'user-1' })
    expect(second).not.toBe(first)
  })

  it('a handler’s throw is kept on the job (message and stack), pending and dead; events and logs say so', async () => {
    const q = mb.queue<Email>('failing', { maxAttempts: 2, backoffBaseS: 0 })
    const runs: number[] = []
    const stop = q.work(async (job) => {
      runs.push(job.attempts)
      if (job.attempts === 1) clock.advance(250)
      throw new Error(`smtp down #${job.attempts}`)
    })
    const id = await q.enqueue({ to: 'z', subject: 'doomed' })
    await pump(() => of('failing').some((event) => event.type === 'job.dead'), 'the job died')
    await stop()
    const dead = await q.getJob(id)
    expect(dead).toMatchObject({ state: 'dead', attempts: 2, lastError: 'max attempts exceeded', lastHandlerError: { message: 'smtp down #2' } })
    expect(dead?.lastHandlerError?.stack).toContain('smtp down #2')
    expect(of('failing').map((event) => event.type)).toEqual(['job.started', 'job.retried', 'job.started', 'job.dead'])
    expect(of('failing')[1]).toMatchObject({ type: 'job.retried', id, attempt: 1, delayMs: 0, error: 'smtp down #1' })
    expect((of('failing')[1] as { durationMs: number }).durationMs).toBeGreaterThanOrEqual(250)
    expect(of('failing')[3]).toMatchObject({ type: 'job.dead', id, attempt: 2, reason: 'max attempts exceeded', error: 'smtp down #2' })
    expect(logged.filter((line) => (line.object as { queue?: string }).queue === 'failing').map((line) => line.level)).toEqual(['warn', 'error'])

    const pendingQ = mb.queue('failing-once', { backoffBaseS: 60 })
    const pendingId = await pendingQ.enqueue('x')
    const claimed = await pendingQ.claim()
    await claimed?.retry(new TypeError('bad field'))
    expect(await pendingQ.getJob(pendingId)).toMatchObject({ state: 'pending', lastHandlerError: { message: 'bad field' } })
    expect((await pendingQ.getJob(pendingId))?.lastError).toBeUndefined()

    const done = mb.queue('completing')
    await done.enqueue('ok')
    const stopDone = done.work(async () => {
      clock.advance(40)
    })
    await pump(() => of('completing').some((event) => event.type === 'job.completed'), 'the job completed')
    await stopDone()
    expect(of('completing')).toEqual([
      expect.objectContaining({ type: 'job.started', attempt: 1 }),
      expect.objectContaining({ type: 'job.completed', attempt: 1 }),
    ])
    expect((of('completing')[1] as { durationMs: number }).durationMs).toBeGreaterThanOrEqual(40)
    const seen: string[] = []
    const off = mb.on('job.completed', (event) => seen.push(event.id))
    const again = await done.enqueue('again')
    await (await done.claim())?.ack()
    off()
    await done.enqueue('unheard')
    await (await done.claim())?.ack()
    expect(seen).toEqual([again])
  })

  it('lists jobs by state in pages, dead ones with their errors, and retries a dead job as a fresh one', async () => {
    const q = mb.queue('admin', { maxAttempts: 1 })
    const ids = []
    for (let i = 0; i < 5; i++) ids.push(await q.enqueue({ n: i }, { delayMs: 3_600_000 }))
    const victim = await q.enqueue('victim', { key: 'only-one' })
    const held = await q.claim()
    expect(held?.id).toBe(victim)
    await held?.fail(new Error('cannot parse'))
    expect(await q.counts()).toEqual({ pending: 5, processing: 0, dead: 1 })
    const first = await q.list({ limit: 3 })
    const rest = await q.list({ limit: 3, after: first.next as string })
    expect([...first.jobs, ...rest.jobs].map((job) => job.id)).toEqual([...ids].sort())
    expect(rest.next).toBeNull()
    const dead = await q.list({ state: 'dead' })
    expect(dead.jobs).toEqual([expect.objectContaining({ id: victim, state: 'dead', lastError: 'cannot parse', lastHandlerError: expect.objectContaining({ message: 'cannot parse' }) })])
    await expect(q.list({ state: 'gone' as never })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.state' })
    await expect(q.list({ limit: 0 })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.limit' })

    const holder = await q.enqueue('usurper', { key: 'only-one' })
    expect(await q.retryDead(victim)).toEqual({ retried: false, reason: 'key-taken', liveId: holder })
    await q.cancel(holder)
    const retried = await q.retryDead(victim)
    expect(retried).toMatchObject({ retried: true, job: { id: victim, state: 'pending', attempts: 0, runAt: clock.now(), key: 'only-one' } })
    expect(await q.retryDead(victim)).toEqual({ retried: false, reason: 'not-dead' })
    const again = await q.claim()
    expect(again).toMatchObject({ id: victim, attempts: 1, payload: 'victim' })
    await again?.ack()
  })

  it('schedules with a time zone, listed with their next run; unschedule removes them', async () => {
    await mb.schedule('paris-morning', '0 9 * * *', 'reports', { kind: 'daily' }, { timezone: 'Europe/Paris' })
    await expect(mb.schedule('bad-zone', '0 9 * * *', 'reports', 1, { timezone: 'Mars/Olympus' })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.timezone' })
    await expect(mb.schedule('every-zone', '@every 5m', 'reports', 1, { timezone: 'UTC' })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.timezone' })
    const listed = (await mb.listSchedules()).find((schedule) => schedule.name === 'paris-morning')
    // The day after `start` (22:13 UTC), 09:00 in Paris (UTC+1 in November) is 08:00 UTC.
    expect(listed).toMatchObject({ spec: '0 9 * * *', queue: 'reports', timezone: 'Europe/Paris', lastFiredAt: null, nextRunAt: Date.UTC(2023, 10, 15, 8) })
    expect(await mb.unschedule('paris-morning')).toBe(true)
    expect(await mb.unschedule('paris-morning')).toBe(false)
    expect((await mb.listSchedules()).some((schedule) => schedule.name === 'paris-morning')).toBe(false)
  })

  it('a schedule gives its jobs a priority and fairness and concurrency keys, lists them, restarts when they change, refuses bad ones', async () => {
    const limited = mb.queue<{ n: number }>('keyed-ticks', { concurrencyPerKey: 1 })
    await mb.schedule('keyed-tick', '@every 60s', 'keyed-ticks', { n: 1 }, { priority: 3, concurrencyKey: 'acct', concurrencyPerKey: 1 })
    // A backlog of 200 jobs of key 'light', passes 0, 1 000, … 199 000 ms on from now: the
    // schedule's occurrences of the key, due when fired two minutes on, queue behind the key's
    // backlog (FIFO within the key); without the key they would go in at their due time, among it.
    const fair = mb.queue<{ key: string }>('keyed-fair')
    await fair.enqueueMany(Array.from({ length: 200 }, () => ({ payload: { key: 'backlog' }, fairnessKey: 'light' })))
    await mb.schedule('keyed-light', '@every 60s', 'keyed-fair', { key: 'light' }, { fairnessKey: 'light', fairnessWeight: 2 })
    const listed = (await mb.listSchedules()).filter((schedule) => schedule.name.startsWith('keyed-'))
    expect(listed).toMatchObject([
      { name: 'keyed-light', priority: 0, fairnessKey: 'light', fairnessWeight: 2, concurrencyKey: null, concurrencyPerKey: null },
      { name: 'keyed-tick', priority: 3, fairnessKey: null, fairnessWeight: null, concurrencyKey: 'acct', concurrencyPerKey: 1 },
    ])
    clock.advance(120_000)
    await mb.runSchedules()
    await mb.unschedule('keyed-light')
    // Two occurrences of one concurrency key, limit 1: the second waits while the first is claimed.
    const first = await limited.claim()
    expect(first?.priority).toBe(3)
    expect(await limited.claim()).toBeNull()
    await first?.ack()
    expect((await limited.claim())?.priority).toBe(3)
    const order: string[] = []
    for (let job = await fair.claim(); job !== null; job = await fair.claim()) order.push(job.payload.key)
    expect(order.slice(200)).toEqual(['light', 'light'])
    // The same keys again keep the firing state; another key restarts it, as another payload does.
    await mb.schedule('keyed-tick', '@every 60s', 'keyed-ticks', { n: 1 }, { priority: 3, concurrencyKey: 'acct', concurrencyPerKey: 1 })
    expect((await mb.listSchedules()).find((schedule) => schedule.name === 'keyed-tick')?.lastFiredAt).not.toBeNull()
    await mb.schedule('keyed-tick', '@every 60s', 'keyed-ticks', { n: 1 }, { priority: 3, concurrencyKey: 'acct', concurrencyPerKey: 2 })
    expect((await mb.listSchedules()).find((schedule) => schedule.name === 'keyed-tick')).toMatchObject({ concurrencyPerKey: 2, lastFiredAt: null })
    await mb.unschedule('keyed-tick')
    const refusals: Array<[object, string]> = [
      [{ priority: 10 }, 'options.priority'],
      [{ fairnessKey: 'k'.repeat(65) }, 'options.fairnessKey'],
      [{ fairnessKey: 'k', fairnessWeight: 0 }, 'options.fairnessWeight'],
      [{ fairnessWeight: 2 }, 'options.fairnessWeight'],
      [{ concurrencyKey: 'acct' }, 'options.concurrencyPerKey'],
      [{ concurrencyPerKey: 2 }, 'options.concurrencyPerKey'],
      [{ concurrencyKey: 'acct', concurrencyPerKey: 0 }, 'options.concurrencyPerKey'],
      [{ fairnesKey: 'k' }, 'options.fairnesKey'],
    ]
    for (const [options, field] of refusals) await expect(mb.schedule('keyed-bad', '@every 60s', 'keyed-ticks', 1, options)).rejects.toMatchObject({ _tag: 'InvalidInput', field })
    expect((await mb.listSchedules()).some((schedule) => schedule.name === 'keyed-bad')).toBe(false)
  })

  it('startMaintenance runs schedules and sweeps on the clock until stopped', async () => {
    expect(() => mb.startMaintenance({})).toThrow(expect.objectContaining({ _tag: 'InvalidInput', field: 'options' }))
    expect(() => mb.startMaintenance({ sweepEveryMs: 1_000 })).toThrow(expect.objectContaining({ field: 'options.queues' }))
    expect(() => mb.startMaintenance({ schedulesEveryMs: 0 })).toThrow(expect.objectContaining({ field: 'options.schedulesEveryMs' }))
    const ticks = mb.queue('ticks')
    const expiring = mb.queue('expiring')
    await expiring.enqueue('stale', { delayMs: 3_600_000, expiresAt: clock.now() + 500 })
    await mb.schedule('tick', '@every 1s', 'ticks', 'tick')
    const stop = mb.startMaintenance({ schedulesEveryMs: 1_000, sweepEveryMs: 1_000, queues: ['expiring'] })
    clock.advance(1_000)
    let counts = { ticks: 0, dead: 0 }
    for (let i = 0; i < 200 && (counts.ticks < 1 || counts.dead < 1); i++) {
      await settle()
      counts = { ticks: (await ticks.counts()).pending, dead: (await expiring.counts()).dead }
    }
    expect(counts).toEqual({ ticks: 1, dead: 1 })
    await stop()
    clock.advance(5_000)
    await settle(10)
    expect((await ticks.counts()).pending).toBe(1)
    await mb.unschedule('tick')
  })
})

describe('open: logger and onEvent', () => {
  it('refuses a logger without info/warn/error and an onEvent that is not a function', async () => {
    await expect(open({ store: 'memory', logger: { info() {} } as never })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.logger' })
    await expect(open({ store: 'memory', onEvent: 5 as never })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.onEvent' })
    const mb = await open({ store: 'memory' })
    expect(() => mb.on('job.finished' as never, () => {})).toThrow(expect.objectContaining({ _tag: 'InvalidInput', field: 'type' }))
    expect(() => mb.on('job.dead', 'nope' as never)).toThrow(expect.objectContaining({ _tag: 'InvalidInput', field: 'listener' }))
    await expect(mb.queue('q').retryDead('')).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'id' })
    await expect(mb.unschedule('')).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'name' })
    await mb.close()
  })
})

describe('startMaintenance and close', () => {
  it('close stops maintenance that was never stopped: no pass runs on a closed engine', async () => {
    const clock = new ManualClock(start)
    const warnings: string[] = []
    const logger = { info() {}, warn: (_object: object, message?: string) => warnings.push(message ?? ''), error: (_object: object, message?: string) => warnings.push(message ?? '') }
    const mb = await open({ store: 'memory', clock, seed: 5, hostId: 'maintained', logger })
    await mb.schedule('tick', '@every 1s', 'ticks', 'tick')
    mb.startMaintenance({ schedulesEveryMs: 1_000 })
    clock.advance(1_000)
    for (let i = 0; i < 100 && (await mb.queue('ticks').counts()).pending === 0; i++) await settle()
    expect((await mb.queue('ticks').counts()).pending).toBe(1)
    await mb.close()
    clock.advance(10_000)
    await settle(10)
    expect(warnings).toEqual([])
  })
})
