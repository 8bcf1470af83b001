/**
 * Validate, then act — on the stores that need no server: an option the chosen store would
 * ignore, or a null given where a value is expected, is refused with `InvalidInput` naming it
 * before anything is created or written (a data directory keeps no file; a queue keeps no job).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock, type Matchbox, open } from '../src/index.ts'

const scratch = mkdtempSync(join(tmpdir(), 'matchbox-validate-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe('open refuses what its store would ignore, before creating anything', () => {
  it.each([
    [{ store: 'memory', role: 'worker' }, 'options.role'],
    [{ store: 'memory', role: 'producer' }, 'options.role'],
    [{ store: 'embedded', role: 'worker' }, 'options.role'],
    [{ role: 'producer' }, 'options.role'],
    [{ store: 'memory', schema: 'elsewhere' }, 'options.schema'],
    [{ store: null }, 'options.store'],
  ] as const)('%j → InvalidInput naming %s', async (options, field) => {
    await expect(open(options as never)).rejects.toMatchObject({ _tag: 'InvalidInput', field })
  })

  it('{ dataDir } with a role creates no directory and writes no file in an existing one', async () => {
    const missing = join(scratch, 'never-made')
    await expect(open({ store: { dataDir: missing }, role: 'worker' })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.role' })
    expect(existsSync(missing)).toBe(false)
    const empty = mkdtempSync(join(scratch, 'empty-'))
    await expect(open({ store: { dataDir: empty }, role: 'producer' })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.role' })
    expect(readdirSync(empty)).toEqual([])
  })
})

describe('a null is refused like any other value that is not an option’s', () => {
  let mb: Matchbox
  beforeAll(async () => {
    mb = await open({ store: 'memory', clock: new ManualClock(1_700_000_000_000), seed: 3 })
  })
  afterAll(async () => {
    await mb.close()
  })

  it('list({ state: null }) and list({ limit: null })', async () => {
    const q = mb.queue('nulls')
    await q.enqueue('one')
    await expect(q.list({ state: null } as never)).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.state' })
    await expect(q.list({ limit: null } as never)).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.limit' })
    expect((await q.list()).jobs).toHaveLength(1)
  })

  it('schedule(…, { timezone: null }) writes no schedule', async () => {
    await expect(mb.schedule('nightly', '0 3 * * *', 'nulls', {}, { timezone: null } as never)).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.timezone' })
    expect(await mb.listSchedules()).toEqual([])
  })

  it('work refuses a null concurrency, an unknown option and a bad onError, starting no loop', async () => {
    const q = mb.queue('nulls')
    const handler = async () => {}
    expect(() => q.work(handler, { concurrency: null } as never)).toThrow(expect.objectContaining({ _tag: 'InvalidInput', field: 'options.concurrency' }))
    expect(() => q.work(handler, { concurency: 8 } as never)).toThrow(expect.objectContaining({ _tag: 'InvalidInput', field: 'options.concurency' }))
    expect(() => q.work(handler, { onError: 'log' } as never)).toThrow(expect.objectContaining({ _tag: 'InvalidInput', field: 'options.onError' }))
    expect(() => q.work(handler, null as never)).toThrow(expect.objectContaining({ _tag: 'InvalidInput', field: 'options' }))
    // No loop claimed the pending job.
    expect(await q.counts()).toMatchObject({ pending: 1, processing: 0 })
  })

  it('claim({ waitMs: null }) claims nothing', async () => {
    const q = mb.queue('nulls-claim')
    await q.enqueue('due')
    await expect(q.claim({ waitMs: null } as never)).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.waitMs' })
    expect(await q.counts()).toMatchObject({ pending: 1, processing: 0 })
  })

  it('startMaintenance({ queues: null }) starts nothing', () => {
    expect(() => mb.startMaintenance({ sweepEveryMs: 1_000, queues: null } as never)).toThrow(expect.objectContaining({ _tag: 'InvalidInput', field: 'options.queues' }))
  })

  it('a transactional enqueue on the memory store is refused before the queue is touched', async () => {
    const client = { query: async () => ({ rows: [] }), getTransactionStatus: () => 'T' }
    await expect(mb.queue('untouched').enqueue('x', { tx: client as never })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.tx' })
    await expect(mb.queue('untouched').enqueueMany([{ payload: 'x' }], { tx: client as never })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.tx' })
    expect(await mb.queue('untouched').counts()).toEqual({ pending: 0, processing: 0, dead: 0 })
  })
})
