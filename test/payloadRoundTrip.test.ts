/**
 * Payloads round-trip through every job store: memory, embedded (PGlite) and PostgreSQL. A
 * property over arbitrary values — fast-check's `anything` with strings of any UTF-16 units
 * (NUL and lone surrogates included), odd keys (`__proto__`, ''), -0, nesting around
 * `payloadDepthMax` — asserts that every store accepts or refuses alike; an accepted value comes
 * back from `enqueue`, `enqueueMany` and `getJob` deep-equal to what was given, -0 read as 0 (see Json.ts: key
 * order is jsonb's); a refused one is `InvalidInput` naming a path under `job.payload`, the
 * same on every store, and nothing is written. Prints its seed first.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InvalidInput } from '../src/domain/errors.ts'
import { payloadDepthMax } from '../src/kernel/Limits.ts'
import type { JobStore, NewJob } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { makePgliteDriver } from '../src/persistence/sql/PgliteDriver.ts'
import { freshDatabase } from './harness/database.ts'

const seed = Number(process.env.SIM_SEED ?? Date.now() % 2 ** 31)
console.log(`Payload round trip: seed ${seed} (replay with SIM_SEED=${seed})`)

const stores: Array<{ readonly name: string; store: JobStore }> = []
beforeAll(async () => {
  stores.push({ name: 'memory', store: makeMemoryJobStore() })
  stores.push({ name: 'embedded', store: await openSqlJobStore(await makePgliteDriver()) })
  stores.push({ name: 'postgres', store: await openSqlJobStore(makePgDriver({ connectionString: await freshDatabase('payload_round_trip') })) })
})
afterAll(async () => {
  for (const { store } of stores) await store.close()
})

// The expected read-back, computed apart from Json.ts: the same value with -0 as 0.
function withoutNegativeZero(value: unknown): unknown {
  if (Object.is(value, -0)) return 0
  if (Array.isArray(value)) return value.map(withoutNegativeZero)
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withoutNegativeZero(item)]))
  return value
}

function nested(levels: number, inner: unknown): unknown {
  let value = inner
  for (let level = 0; level < levels; level++) value = level % 2 === 0 ? [value] : { n: value }
  return value
}

// UTF-16 units of every kind: any unit (lone surrogates included), NUL, the surrogate range's
// edges, a well-formed pair, and code points that JSON escapes or that look like line breaks.
const unit = fc.oneof(
  fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
  fc.constantFrom('\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '\ud83d\ude00', '\u2028', '\ufeff', '\u007f', '"', '\\'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  fc.constantFrom('a', 'b', 'é', '名'),
)
const key = fc.oneof(fc.string({ unit, maxLength: 4 }), fc.constantFrom('__proto__', 'constructor', 'toString', '', '0', '-1', 'a.b'))
const numbers = fc.constantFrom(-0, 0, 5e-324, -1e-7, 1e21, 2 ** 53 + 2, Number.MAX_VALUE, -Number.MAX_VALUE, 0.1 + 0.2)

const payload: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.anything({ key, stringUnit: unit, maxDepth: 3, maxKeys: 4, withNullPrototype: true, withSparseArray: true, withBoxedValues: true, withBigInt: true, withDate: true, withMap: true }) },
  { weight: 2, arbitrary: fc.dictionary(key, fc.oneof(numbers, fc.string({ unit, maxLength: 3 })), { maxKeys: 4 }) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: payloadDepthMax - 2, max: payloadDepthMax + 1 }), numbers).map(([levels, inner]) => nested(levels, inner)) },
)

let counter = 0
function job(value: unknown): NewJob {
  counter += 1
  return {
    id: `payload-${seed}-${counter}`,
    queue: 'payloads',
    payload: value as NewJob['payload'],
    priority: 0,
    runAtMs: 1_000,
    expiresAtMs: null,
    maxAttempts: 3,
    visibilityTimeoutMs: 30_000,
    backoffBaseMs: 5_000,
    deadLetterRetentionMs: null,
  }
}

type Outcome = { readonly kind: 'stored'; readonly payload: unknown } | { readonly kind: 'refused'; readonly field: string; readonly reason: string }

async function roundTrip(store: JobStore, value: unknown): Promise<Outcome> {
  const submitted = job(value)
  const outcome = await (async (): Promise<Outcome> => {
    try {
      const enqueued = await store.enqueue({ job: submitted, nowMs: 1_000 })
      const read = await store.getJob({ queue: submitted.queue, id: submitted.id })
      expect(read?.payload).toEqual(enqueued.payload)
      return { kind: 'stored', payload: read?.payload }
    } catch (error) {
      if (!(error instanceof InvalidInput)) throw error
      expect(await store.getJob({ queue: submitted.queue, id: submitted.id })).toBeNull()
      return { kind: 'refused', field: error.field, reason: error.reason }
    }
  })()
  // enqueueMany sends its payloads another way (one JSON document): it stores or refuses alike.
  const batched = job(value)
  try {
    await store.enqueueMany({ jobs: [batched], nowMs: 1_000 })
    expect(outcome.kind, 'enqueueMany stored what enqueue refused').toBe('stored')
    expect((await store.getJob({ queue: batched.queue, id: batched.id }))?.payload).toEqual(outcome.kind === 'stored' ? outcome.payload : undefined)
  } catch (error) {
    if (!(error instanceof InvalidInput)) throw error
    expect(await store.getJob({ queue: batched.queue, id: batched.id })).toBeNull()
    expect(outcome.kind === 'refused' ? { field: `jobs[0]${outcome.field.slice('job'.length)}`, reason: outcome.reason } : outcome).toEqual({ field: error.field, reason: error.reason })
  }
  return outcome
}

describe('payload round trip through every job store', () => {
  it('accepted payloads come back deep-equal (-0 as 0) from every store; refused ones alike everywhere, nothing written', async () => {
    const tally = { stored: 0, refused: 0 }
    await fc.assert(
      fc.asyncProperty(payload, async (value) => {
        const outcomes: Array<{ name: string; outcome: Outcome }> = []
        for (const { name, store } of stores) outcomes.push({ name, outcome: await roundTrip(store, value) })
        const [first] = outcomes
        for (const { name, outcome } of outcomes) expect({ name, outcome }).toEqual({ name, outcome: first?.outcome })
        if (first?.outcome.kind === 'stored') {
          tally.stored += 1
          expect(first.outcome.payload).toEqual(withoutNegativeZero(value))
        } else if (first?.outcome.kind === 'refused') {
          tally.refused += 1
          expect(first.outcome.field).toMatch(/^job\.payload/)
        }
      }),
      { seed, numRuns: 300 },
    )
    console.log(`Payload round trip: ${tally.stored} stored, ${tally.refused} refused`)
    expect(tally.stored).toBeGreaterThan(0)
    expect(tally.refused).toBeGreaterThan(0)
  })

  it('keeps the awkward accepted cases: -0, __proto__ keys, extreme numbers, the deepest nesting, any Unicode', async () => {
    const awkward = JSON.parse('{"__proto__": {"polluted": true}, "": "", "0": -1, "constructor": null}') as Record<string, unknown>
    const values: unknown[] = [
      null,
      -0,
      { zero: -0, list: [-0, 0, [-0]] },
      awkward,
      [5e-324, -5e-324, Number.MAX_VALUE, 1e21, 1e-7, 2 ** 53 + 2, 0.1 + 0.2, -123.456e-300],
      nested(payloadDepthMax - 1, { deepest: -0 }),
      { text: '😀 名前 \u2028\u2029 \ufeff \u0001\u001f\u007f \ud83d\ude00 "quoted" \\ back', 'é': 'e\u0301' },
      Object.assign(Object.create(null) as object, { bare: [] }),
    ]
    for (const value of values) {
      for (const { name, store } of stores) {
        const outcome = await roundTrip(store, value)
        expect({ name, outcome }).toEqual({ name, outcome: { kind: 'stored', payload: withoutNegativeZero(value) } })
        if (outcome.kind === 'stored' && value === awkward) {
          expect(Object.hasOwn(outcome.payload as object, '__proto__')).toBe(true)
          expect(({} as Record<string, unknown>).polluted).toBeUndefined()
        }
      }
    }
    // A -0 comes back as the number 0 from every store, memory included.
    for (const { name, store } of stores) {
      const outcome = await roundTrip(store, [-0])
      expect(outcome.kind === 'stored' && Object.is((outcome.payload as number[])[0], 0), name).toBe(true)
    }
  })
})
