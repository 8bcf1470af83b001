/**
 * The public job API on the memory stores and a ManualClock: typed refusals of bad
 * input with nothing written, stamps and outbox options, lazy-correct claims, `work` (ack on
 * return, retry on throw, heartbeats on the handler's behalf, stop waiting for handlers),
 * schedules (specs, exactly-once firing, the sweep recipe), and close.
 *
 * No sleeps: time moves only by `clock.advance` / `clock.set`; waits are on conditions.
 */
import { describe, expect, it } from 'vitest'
import { type JobHandle, ManualClock, type Matchbox, open } from '../src/index.ts'
import { settle, until } from './harness/settle.ts'

const start = 1_700_000_000_000

async function engine(seed = 7): Promise<{ mb: Matchbox; clock: ManualClock }> {
  const clock = new ManualClock(start)
  return { mb: await open({ store: 'memory', clock, seed, hostId: 'api' }), clock }
}

describe('jobs API: input', () => {
  it('refuses bad options and payloads with a typed InvalidInput and writes nothing', async () => {
    const { mb } = await engine()
    await expect(open({ store: 'memory', colour: 'red' } as never)).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.colour' })
    await expect(open({ store: { dataDir: 'x', databaseUrl: 'y' } as never })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.store' })
    expect(() => mb.queue('q', { visibilityTimeoutS: -1 })).toThrow(expect.objectContaining({ _tag: 'InvalidInput', field: 'options.visibilityTimeoutS' }))
    expect(() => mb.queue('q', { maxAttempts: 0 })).toThrow(expect.objectContaining({ _tag: 'InvalidInput', field: 'options.maxAttempts' }))
    expect(() => mb.queue('q', { backoffBaseS: Number.POSITIVE_INFINITY })).toThrow(expect.objectContaining({ field: 'options.backoffBaseS' }))
    expect(() => mb.queue('q', { retries: 3 } as never)).toThrow(expect.objectContaining({ field: 'options.retries' }))
    expect(() => mb.queue('outbox:sneaky')).toThrow(expect.objectContaining({ _tag: 'InvalidInput', field: 'name' }))
    const q = mb.queue('q')
    const refusals: Array<[unknown, object | undefined, string]> = [
      [() => 1, undefined, 'payload'],
      [undefined, undefined, 'payload'],
      [{ big: 10n }, undefined, 'payload.big'],
      [{ nan: Number.NaN }, undefined, 'payload.nan'],
      [{ ok: 1 }, { priority: 10 }, 'options.priority'],
      [{ ok: 1 }, { priority: -1 }, 'options.priority'],
      [{ ok: 1 }, { runAt: -5 }, 'options.runAt'],
      [{ ok: 1 }, { expiresAt: Number.NaN }, 'options.expiresAt'],
      [{ ok: 1 }, { maxAttempts: 1.5 }, 'options.maxAttempts'],
      [{ ok: 1 }, { delay: 5 }, 'options.delay'],
      [{ ok: 1 }, { tx: {} }, 'options.tx'],
    ]
    for (const [payload, options, field] of refusals) {
      await expect(q.enqueue(payload, options as never), field).rejects.toMatchObject({ _tag: 'InvalidInput', field })
    }
    expect(await q.claim()).toBeNull()
    await expect(q.claim({ waitMs: -1 })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.waitMs' })
    const id = await q.enqueue('fine')
    const job = (await q.claim()) as JobHandle
    await expect(job.heartbeat(0)).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'extendS' })
    await expect(job.retry('x', -1)).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'delayS' })
    expect((await q.getJob(id))?.state).toBe('processing')
    await mb.close()
  })
})

describe('jobs API: stamps and queues', () => {
  it('stamps each job with its handle’s options; outboxes have fixed ones', async () => {
    const { mb } = await engine()
    const plain = await mb.queue('emails').enqueue({ to: 'a' })
    const tuned = await mb.queue('emails', { visibilityTimeoutS: 30, maxAttempts: 7, backoffBaseS: 2, deadLetterRetentionS: 3600 }).enqueue({ to: 'b' }, { maxAttempts: 9 })
    const hook = await mb.outbox('webhooks').enqueue({ url: 'https://example.test' })
    expect(await mb.queue('emails').getJob(plain)).toMatchObject({ visibilityTimeoutS: 300, maxAttempts: 3, backoffBaseS: 5, deadLetterRetentionS: null, state: 'pending', attempts: 0, priority: 0, createdAt: start, runAt: start, claimedAt: null, expiresAt: null })
    expect(await mb.queue('emails').getJob(tuned)).toMatchObject({ visibilityTimeoutS: 30, maxAttempts: 9, backoffBaseS: 2, deadLetterRetentionS: 3600 })
    expect(await mb.outbox('webhooks').getJob(hook)).toMatchObject({ queue: 'outbox:webhooks', visibilityTimeoutS: 60, maxAttempts: 5, backoffBaseS: 5 })
    expect(await mb.queue('emails').getJob(hook)).toBeNull()
    await mb.close()
  })
})

describe('jobs API: lazy-correct claims', () => {
  it('a runAt that arrived or a lapsed claim is claimable at the clock’s time even though no timer fired', async () => {
    const { mb, clock } = await engine()
    const q = mb.queue('lazy', { visibilityTimeoutS: 10 })
    await q.enqueue('later', { runAt: start + 60_000 })
    expect(await q.claim()).toBeNull()
    clock.set(start + 60_000)
    const first = (await q.claim()) as JobHandle
    expect(first).toMatchObject({ payload: 'later', attempts: 1, deadline: start + 70_000 })
    clock.set(start + 70_000)
    const again = (await q.claim()) as JobHandle
    expect(again).toMatchObject({ id: first.id, attempts: 2 })
    expect(await first.ack()).toBe(false)
    expect(await again.ack()).toBe(true)
    await mb.close()
  })

  it('claim({ waitMs }) is answered when a delayed job comes due on the clock', async () => {
    const { mb, clock } = await engine()
    const q = mb.queue('waiting')
    await q.enqueue('soon', { runAt: start + 5_000 })
    let claimed: JobHandle | null | undefined
    void q.claim({ waitMs: 60_000 }).then((job) => {
      claimed = job
    })
    await settle()
    clock.advance(4_999)
    await settle()
    expect(claimed).toBeUndefined()
    clock.advance(1)
    await until(() => claimed !== undefined, 'the waiting claim is answered')
    expect(claimed?.payload).toBe('soon')
    await mb.close()
  })

  it('a claim racing the idle unload of its Matching queue still finds the job', async () => {
    const { mb, clock } = await engine()
    const q = mb.queue('idle')
    await q.enqueue('warm-up')
    expect(await (await q.claim())?.ack()).toBe(true)
    clock.advance(10 * 60_000)
    // No settle: the queue's idle drain is in flight when this enqueue and claim arrive.
    await q.enqueue('after idle')
    expect((await q.claim())?.payload).toBe('after idle')
    await mb.close()
  })
})

describe('jobs API: work', () => {
  it('acks on return, retries on throw (counting attempts) and dead-letters at the budget', async () => {
    const { mb, clock } = await engine()
    const q = mb.queue('work', { maxAttempts: 2, backoffBaseS: 1 })
    const seen: string[] = []
    const stop = q.work(async (job) => {
      seen.push(`${String(job.payload)}#${job.attempts}`)
      if (job.payload === 'bad') throw new Error('handler exploded')
    })
    const good = await q.enqueue('good')
    const bad = await q.enqueue('bad')
    await until(() => seen.length === 2, 'both jobs ran once')
    expect(await q.getJob(good)).toBeNull()
    expect(await q.getJob(bad)).toMatchObject({ state: 'pending', attempts: 1 })
    clock.advance(1_000)
    await until(() => seen.length === 3, 'the retry ran')
    await mb.idle()
    await settle()
    expect(seen).toEqual(['good#1', 'bad#1', 'bad#2'])
    expect(await q.getJob(bad)).toMatchObject({ state: 'dead', attempts: 2, lastError: 'max attempts exceeded', diedAt: start + 1_000 })
    await stop()
    await mb.close()
  })

  it('heartbeats keep a long handler’s claim alive; stop waits for the handler in flight', async () => {
    const { mb, clock } = await engine()
    const q = mb.queue('long', { visibilityTimeoutS: 30 })
    let release: () => void = () => {}
    let running: JobHandle | undefined
    let finished = false
    const stop = q.work(async (job) => {
      running = job
      await new Promise<void>((resolve) => {
        release = resolve
      })
      finished = true
    })
    const id = await q.enqueue('slow')
    await until(() => running !== undefined, 'the handler started')
    for (let i = 0; i < 12; i++) {
      clock.advance(10_000)
      await settle()
    }
    // Two minutes in, four visibility timeouts: the claim is still this handler's.
    expect(running?.deadline).toBeGreaterThan(clock.now())
    expect(await q.getJob(id)).toMatchObject({ state: 'processing', attempts: 1 })
    let stopped = false
    const stopping = stop().then(() => {
      stopped = true
    })
    await settle()
    expect(stopped).toBe(false)
    release()
    await stopping
    expect(finished).toBe(true)
    expect(await q.getJob(id)).toBeNull()
    await mb.close()
  })
})

describe('jobs API: schedules', () => {
  it('rejects bad specs with InvalidSpec and writes nothing', async () => {
    const { mb } = await engine()
    for (const spec of ['@every 0s', '@every 5d', '@every', '@hourly', '* * * *', '0 0 * * * *', '61 * * * *', 'nonsense']) {
      await expect(mb.schedule('s', spec, 'q', null), spec).rejects.toMatchObject({ _tag: 'InvalidSpec', spec })
    }
    await expect(mb.schedule('s', '@every 5s', 'q', () => 1)).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'payload' })
    expect(await mb.runSchedules()).toBe(0)
    await mb.close()
  })

  it('fires each due occurrence once, with runAt the occurrence time, and never twice', async () => {
    const { mb, clock } = await engine()
    await mb.schedule('tick', '@every 5m', 'ticks', { kind: 'tick' })
    await mb.schedule('quarter', '*/15 * * * *', 'ticks', { kind: 'quarter' })
    await mb.schedule('tick', '@every 5m', 'ticks', { kind: 'tick' })
    clock.advance(30 * 60_000)
    const fired = await mb.runSchedules()
    expect(await mb.runSchedules()).toBe(0)
    const q = mb.queue('ticks')
    const runAts: Record<string, number[]> = { tick: [], quarter: [] }
    for (let job = await q.claim(); job !== null; job = await q.claim()) {
      runAts[(job.payload as { kind: string }).kind]?.push((await q.getJob(job.id))?.runAt ?? 0)
      await job.ack()
    }
    const quarterHours = Array.from({ length: 3 }, (_, k) => Math.ceil(start / 900_000) * 900_000 + k * 900_000).filter((at) => at <= start + 30 * 60_000)
    expect(runAts.tick).toEqual(Array.from({ length: 6 }, (_, k) => start + (k + 1) * 300_000))
    expect(runAts.quarter).toEqual(quarterHours)
    expect(fired).toBe(6 + quarterHours.length)
    await mb.close()
  })

  it('the maintenance recipe: a schedule whose worker sweeps expired jobs to dead', async () => {
    const { mb, clock } = await engine()
    const emails = mb.queue('emails')
    const stale = await emails.enqueue('stale', { expiresAt: start + 60_000 })
    await mb.schedule('maintenance', '@every 300s', 'maintenance', { sweep: ['emails'] })
    const sweeps: Array<{ dead: number; purged: number }> = []
    const stop = mb.queue('maintenance').work(async (job) => {
      for (const name of (job.payload as { sweep: string[] }).sweep) sweeps.push(await mb.queue(name).sweepExpired())
    })
    clock.advance(300_000)
    await mb.runSchedules()
    await until(() => sweeps.length === 1, 'the maintenance job ran')
    expect(sweeps).toEqual([{ dead: 1, purged: 0 }])
    expect(await emails.getJob(stale)).toMatchObject({ state: 'dead', lastError: 'expired', diedAt: start + 300_000 })
    await stop()
    await mb.close()
  })
})

describe('jobs API: close', () => {
  it('refuses work after close with ShuttingDown', async () => {
    const { mb } = await engine()
    const q = mb.queue('closing')
    await mb.close()
    await expect(q.enqueue('late')).rejects.toMatchObject({ _tag: 'ShuttingDown' })
    await expect(q.claim()).rejects.toMatchObject({ _tag: 'ShuttingDown' })
    expect(() => mb.queue('other')).toThrow(expect.objectContaining({ _tag: 'ShuttingDown' }))
    await mb.close()
  })
})

describe('jobs API: partitions', () => {
  it('a work loop started first on a new queue stores its handle’s partition count, so the handle’s enqueue agrees', async () => {
    const { mb } = await engine()
    const q = mb.queue('partitioned', { partitions: 3 })
    const ran: unknown[] = []
    const stop = q.work(async (job) => {
      ran.push(job.payload)
    })
    // The loop's first claim loads the queue's routing before anything else touches the queue.
    await settle()
    await q.enqueue('after the worker')
    await until(() => ran.length === 1, 'the job ran')
    expect(ran).toEqual(['after the worker'])
    await expect(mb.queue('partitioned', { partitions: 2 }).enqueue('x')).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.partitions' })
    await stop()
    await mb.close()
  })
})
