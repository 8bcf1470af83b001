/**
 * Fuzzing the edges that take user data (fast-check, bounded by run counts; seed printed first):
 *
 * - snapshot import: a populated memory store's snapshot truncated, with characters garbled,
 *   with values replaced or fields dropped anywhere in the tree, or with another version →
 *   imported, or refused with `SnapshotInvalid` naming a path; a refused import leaves the
 *   target store exactly as it was;
 * - schedule specs: random strings and cron-like field soups → a spec or `InvalidSpec`, never
 *   another exception; a parsed spec yields occurrences without throwing;
 * - queue and enqueue options: random objects (known keys with any values, unknown keys) → a
 *   handle or job, or `InvalidInput` naming a field under `options` (or `payload`).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { InvalidInput, InvalidSpec, SnapshotInvalid } from '../src/domain/errors.ts'
import { makeTask } from '../src/domain/Task.ts'
import { ManualClock, open } from '../src/index.ts'
import { occurrencesOf, parseScheduleSpec } from '../src/jobs/ScheduleSpec.ts'
import { makeMemoryStore, type MemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { runsFor } from './harness/depth.ts'

const seed = Number(process.env.SIM_SEED ?? Date.now() % 2 ** 31)
console.log(`Input fuzz: seed ${seed} (replay with SIM_SEED=${seed})`)

const key = { namespace: 'default', family: 'emails', type: 'workflow', partition: 0, version: null } as const

async function populated(family: string): Promise<MemoryStore> {
  const store = makeMemoryStore()
  const queue = { ...key, family }
  await store.acquire({ key: queue, nowMs: 100 })
  await store.acquire({ key: { ...queue, type: 'activity', version: 'build/7' }, nowMs: 100 })
  await store.append({ key: queue, rangeId: 1, tasks: [0, 5, 0].map((priority, index) => makeTask({ jobId: `job-${index}`, priority, createdAtMs: 10 })), nowMs: 200 })
  await store.checkpoint({ key: queue, rangeId: 1, ackLevels: [{ subqueue: 0, ackLevel: 1 }], nowMs: 300 })
  await store.updateUserData({ namespace: 'default', family, expectedVersion: 0, data: { ramp: [1, 2] }, nowMs: 400 })
  return store
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

// Every path to a value inside `value`, as lists of keys and indexes.
function pathsOf(value: Json, prefix: Array<string | number> = []): Array<Array<string | number>> {
  const here = [prefix]
  if (Array.isArray(value)) return [...here, ...value.flatMap((item, index) => pathsOf(item, [...prefix, index]))]
  if (typeof value === 'object' && value !== null) return [...here, ...Object.entries(value).flatMap(([name, item]) => pathsOf(item, [...prefix, name]))]
  return here
}

// `value` with the thing at `path` replaced (or removed when `replacement` is undefined).
function edited(value: Json, path: ReadonlyArray<string | number>, replacement: Json | undefined): Json | undefined {
  if (path.length === 0) return replacement
  const [head, ...rest] = path as [string | number, ...Array<string | number>]
  if (Array.isArray(value)) {
    const copy = [...value]
    const inner = edited(copy[head as number] as Json, rest, replacement)
    if (inner === undefined) copy.splice(head as number, 1)
    else copy[head as number] = inner
    return copy
  }
  const copy = { ...(value as Record<string, Json>) }
  const inner = edited(copy[head as string] as Json, rest, replacement)
  if (inner === undefined) delete copy[head as string]
  else copy[head as string] = inner
  return copy
}

type Damage =
  | { readonly kind: 'truncate'; readonly at: number }
  | { readonly kind: 'garble'; readonly at: number; readonly text: string }
  | { readonly kind: 'replace'; readonly pick: number; readonly value: Json | undefined }
  | { readonly kind: 'version'; readonly version: Json }

const jsonValue = fc.oneof(
  fc.constantFrom<Json>(null, true, false, 0, -1, 1, 1.5, 2 ** 53, '', 'x', [], {}, 'default', 'workflow', 'matchbox.memory'),
  fc.json({ maxDepth: 2 }).map((text) => JSON.parse(text) as Json),
)
const damage: fc.Arbitrary<Damage> = fc.oneof(
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('garble' as const), at: fc.nat(), text: fc.string({ unit: 'binary', minLength: 1, maxLength: 3 }) }),
  fc.record({ kind: fc.constant('replace' as const), pick: fc.nat(), value: fc.option(jsonValue, { nil: undefined }) }),
  fc.record({ kind: fc.constant('version' as const), version: fc.constantFrom<Json>(0, 2, -1, '1', null, 1.5) }),
)

function damaged(snapshot: Json, hurt: Damage): unknown {
  const text = JSON.stringify(snapshot)
  switch (hurt.kind) {
    case 'truncate':
      return text.slice(0, hurt.at % text.length)
    case 'garble': {
      const at = hurt.at % text.length
      return `${text.slice(0, at)}${hurt.text}${text.slice(at + hurt.text.length)}`
    }
    case 'replace': {
      const paths = pathsOf(snapshot)
      return edited(snapshot, paths[hurt.pick % paths.length] as Array<string | number>, hurt.value) ?? null
    }
    case 'version':
      return { ...(snapshot as Record<string, Json>), version: hurt.version }
  }
}

describe('snapshot import under damage', () => {
  it('imports, or refuses with SnapshotInvalid naming a path and leaves the store unchanged', async () => {
    const source = JSON.parse(JSON.stringify((await populated('emails')).exportSnapshot())) as Json
    const target = await populated('other')
    const before = JSON.stringify(target.exportSnapshot())
    let refused = 0
    fc.assert(
      fc.property(damage, (hurt) => {
        const input = damaged(source, hurt)
        try {
          target.importSnapshot(input)
        } catch (error) {
          refused++
          expect(error, JSON.stringify(hurt)).toBeInstanceOf(SnapshotInvalid)
          // `<path>: <reason>`: the root is `(snapshot)`, fields dotted (odd keys quoted), items indexed.
          expect((error as SnapshotInvalid).problem, JSON.stringify(hurt)).toMatch(/^(\(snapshot\)|[A-Za-z]+)(\.[\w$]+|\[\d+\]|\["(?:[^"\\]|\\.)*"\])*: ./)
          expect(JSON.stringify(target.exportSnapshot()), JSON.stringify(hurt)).toBe(before)
          return
        }
        // A harmless edit: the store now holds a valid snapshot; put the original state back.
        target.importSnapshot(before)
      }),
      { seed, numRuns: runsFor(400, 10_000) },
    )
    expect(refused).toBeGreaterThan(0)
  })
})

const cronField = fc.oneof(
  fc.constantFrom('*', '?', 'L', 'W', '#', '-', ',', '/', '*/0', '*/5', '0', '59', '60', '24', '31', '32', '13', '7', '8', 'MON', 'JAN', 'FOO', '1-5', '5-1', '1,2,3', '1#2', '5L', '15W', 'LW', '*/999999999999'),
  fc.integer({ min: -100, max: 100_000 }).map(String),
  fc.string({ maxLength: 4 }),
)
const specText = fc.oneof(
  // Specs that parse, so every run also checks the occurrences of real schedules.
  fc.constantFrom('@every 5s', '@every 90m', '@every 2h', '*/5 * * * *', '0 2 * * *', '30 9 * * 1-5', '0 0 1 * *'),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.array(cronField, { minLength: 1, maxLength: 8 }).map((fields) => fields.join(' ')),
  fc.tuple(fc.constantFrom('@every ', '@every', '@EVERY ', '@daily', '@', ' @every  '), fc.oneof(fc.integer({ min: -5, max: 2 ** 40 }).map(String), fc.string({ maxLength: 5 })), fc.constantFrom('s', 'm', 'h', 'd', '', 'ms', ' s')).map((parts) => parts.join('')),
)

describe('schedule specs under random text', () => {
  it('parse to a spec or throw InvalidSpec, never anything else', () => {
    let parsed = 0
    fc.assert(
      fc.property(specText, (spec) => {
        let result
        try {
          result = parseScheduleSpec(spec)
        } catch (error) {
          expect(error, JSON.stringify(spec)).toBeInstanceOf(InvalidSpec)
          expect((error as InvalidSpec).spec).toBe(spec)
          return
        }
        parsed++
        const times = occurrencesOf(result, 0, null, 7 * 24 * 3_600_000, 3)
        expect(times.every((at, index) => at > 0 && (index === 0 || at > (times[index - 1] as number)))).toBe(true)
      }),
      { seed, numRuns: runsFor(1_000, 20_000) },
    )
    expect(parsed).toBeGreaterThan(0)
  })
})

const anyValue = fc.oneof(
  fc.constantFrom<unknown>(undefined, null, 0, -0, -1, 1, 0.5, 3, 9, 10, 300, 1e12, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY, '', '5', true, [], {}, new Date(0), new Date(Number.NaN)),
  fc.anything({ maxDepth: 1 }),
)
const optionsOf = (known: ReadonlyArray<string>) =>
  fc.oneof(
    fc.dictionary(fc.constantFrom(...known), anyValue, { maxKeys: known.length }),
    fc.dictionary(fc.oneof(fc.constantFrom(...known), fc.string({ maxLength: 6 })), anyValue, { maxKeys: 4 }),
    fc.constantFrom<unknown>(undefined, null, 5, 'x', [], true),
  )
const queueKeys = ['visibilityTimeoutS', 'maxAttempts', 'backoffBaseS', 'deadLetterRetentionS', 'partitions']
const enqueueKeys = ['priority', 'runAt', 'delayMs', 'expiresAt', 'key', 'maxAttempts', 'tx']

// Runs `attempt`; a refusal must be InvalidInput naming a field under one of `fields`.
async function acceptedOrNamed(attempt: () => unknown, fields: ReadonlyArray<string>, what: string): Promise<boolean> {
  try {
    await attempt()
    return true
  } catch (error) {
    expect(error, what).toBeInstanceOf(InvalidInput)
    const field = (error as InvalidInput).field
    expect(
      fields.some((prefix) => field === prefix || field.startsWith(`${prefix}.`) || field.startsWith(`${prefix}[`)),
      `${what}: field ${field}`,
    ).toBe(true)
    return false
  }
}

describe('queue and enqueue options under random objects', () => {
  it('are accepted or refused with InvalidInput naming the field', async () => {
    const mb = await open({ store: 'memory', clock: new ManualClock(1_700_000_000_000), seed: 5, hostId: 'fuzz' })
    let accepted = 0
    try {
      await fc.assert(
        fc.asyncProperty(optionsOf(queueKeys), optionsOf(enqueueKeys), fc.oneof(fc.constant({ n: 1 }), anyValue), async (queueOptions, enqueueOptions, payload) => {
          const what = `queue ${String(JSON.stringify(queueOptions))} enqueue ${String(JSON.stringify(enqueueOptions))}`
          let queue: ReturnType<typeof mb.queue> | undefined
          const made = await acceptedOrNamed(
            () => {
              queue = mb.queue('fuzzed', queueOptions as never)
            },
            ['options'],
            what,
          )
          if (!made || queue === undefined) return
          const handle = queue
          if (await acceptedOrNamed(() => handle.enqueue(payload, enqueueOptions as never), ['options', 'payload'], what)) accepted++
        }),
        { seed, numRuns: runsFor(500, 10_000) },
      )
    } finally {
      await mb.close()
    }
    expect(accepted).toBeGreaterThan(0)
  })
})
