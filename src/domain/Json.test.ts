/**
 * Json validation: every refusal is an InvalidInput naming the path of the offender — deep
 * nesting (a 10,000-level value included: no RangeError), NUL and lone surrogates in values and
 * keys, holes, extra array properties, symbol keys, values that are not JSON, size — and
 * accepted values come back as they are, except -0, which becomes 0 in a copy that leaves the
 * input untouched. A flat value (a primitive, or an object of primitives), checked without the
 * full walk, gets the walk's answer. The round trip through every store is test/payloadRoundTrip.test.ts.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { payloadBytesMax, payloadDepthMax } from '../kernel/Limits.ts'
import { InvalidInput } from './errors.ts'
import { validateJson, validateJsonMeasured } from './Json.ts'

function refusal(value: unknown): { field: string; reason: string } {
  try {
    validateJson('payload', value)
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInput)
    const { field, reason } = error as InvalidInput
    return { field, reason }
  }
  return expect.fail(`accepted ${String(value)}`)
}

/** `levels` arrays, each the only element of the one around it, around `inner`. */
function nestedArrays(levels: number, inner: unknown = 1): unknown {
  let value = inner
  for (let level = 0; level < levels; level++) value = [value]
  return value
}

function nestedObjects(levels: number): unknown {
  let value: unknown = 1
  for (let level = 0; level < levels; level++) value = { a: value }
  return value
}

describe('validateJson', () => {
  it(`accepts ${payloadDepthMax} levels of nesting and refuses one more, naming where`, () => {
    expect(validateJson('payload', nestedArrays(payloadDepthMax))).toEqual(nestedArrays(payloadDepthMax))
    expect(refusal(nestedArrays(payloadDepthMax + 1))).toEqual({
      field: `payload${'[0]'.repeat(payloadDepthMax)}`,
      reason: `nests containers deeper than ${payloadDepthMax} levels`,
    })
    expect(refusal(nestedObjects(payloadDepthMax + 1)).field).toBe(`payload${'.a'.repeat(payloadDepthMax)}`)
  })

  it('refuses a value 10,000 levels deep as InvalidInput, not a stack overflow', () => {
    expect(refusal(nestedArrays(10_000)).reason).toMatch(/^nests containers deeper than/)
    expect(refusal(nestedObjects(10_000)).reason).toMatch(/^nests containers deeper than/)
    // A cycle is named as one, before the depth bound.
    const cycle: Record<string, unknown> = {}
    cycle.self = { back: cycle }
    expect(refusal(cycle)).toEqual({ field: 'payload.self.back', reason: 'is a cycle' })
  })

  it('refuses NUL and lone surrogates in values and keys, naming the key readably', () => {
    expect(refusal({ text: 'a\u0000b' })).toEqual({ field: 'payload.text', reason: 'contains a NUL character, which jsonb cannot store' })
    expect(refusal({ 'a\u0000b': 1 })).toEqual({ field: 'payload["a\\u0000b"]', reason: 'is a key holding a NUL character, which jsonb cannot store' })
    for (const lone of ['\ud83d', '\ude00', 'x\ud83d', '\ude00\ud83d', 'a\ud83dz']) {
      expect(refusal([lone]).field).toBe('payload[0]')
      expect(refusal([lone]).reason).toMatch(/^contains a lone surrogate/)
      expect(refusal({ [lone]: true }).reason).toMatch(/^is a key holding a lone surrogate/)
    }
    expect(refusal({ ['\udc00']: true }).field).toBe('payload["\\udc00"]')
    // A pair is one code point: fine.
    expect(validateJson('payload', { '🚀': '名前 😀' })).toEqual({ '🚀': '名前 😀' })
  })

  it('refuses what JSON would drop or change, naming the path', () => {
    const sparse = [1, , 3] // oxlint-disable-line no-sparse-arrays
    const extra = Object.assign([1, 2], { label: 'x' })
    class Point {
      x = 1
    }
    const cases: Array<[unknown, string, RegExp]> = [
      [{ list: sparse }, 'payload.list[1]', /^is a hole/],
      [{ list: extra }, 'payload.list', /^has properties besides its elements/],
      [{ [Symbol('s')]: 1, ok: 2 }, 'payload', /^has symbol keys/],
      [{ when: new Date(0) }, 'payload.when', /^is not a plain object$/],
      [{ map: new Map() }, 'payload.map', /^is not a plain object$/],
      [{ boxed: new Number(1) }, 'payload.boxed', /^is not a plain object$/], // oxlint-disable-line no-new-wrappers
      [new Point(), 'payload', /^is not a plain object$/],
      [{ 'odd key': [undefined] }, 'payload["odd key"][0]', /^is a undefined, not JSON$/],
      [{ n: 10n }, 'payload.n', /^is a bigint/],
      [{ f: () => 1 }, 'payload.f', /^is a function/],
      [{ 0: Number.NaN }, 'payload["0"]', /^is not a finite number$/],
      [[Number.NEGATIVE_INFINITY], 'payload[0]', /^is not a finite number$/],
    ]
    for (const [value, field, reason] of cases) {
      const refused = refusal(value)
      expect(refused.field).toBe(field)
      expect(refused.reason).toMatch(reason)
    }
  })

  it('refuses more than payloadBytesMax bytes, before scanning a huge string or array', () => {
    expect(refusal('x'.repeat(payloadBytesMax))).toEqual({ field: 'payload', reason: `serializes to more than ${payloadBytesMax} bytes` })
    // The NUL at the end is never reached: the length alone is too much.
    expect(refusal(`${'x'.repeat(payloadBytesMax)}\u0000`).reason).toMatch(/^serializes to more than/)
    const huge: unknown[] = []
    huge.length = 10_000_000
    expect(refusal(huge).reason).toMatch(/^serializes to more than/)
    // Escapes count: three strings of 200,000 newlines are 600,000 characters but 1,200,000 bytes of JSON.
    expect(refusal(['\n'.repeat(200_000), '\n'.repeat(200_000), '\n'.repeat(200_000)]).reason).toMatch(/^serializes to more than/)
    expect(validateJson('payload', 'é'.repeat(payloadBytesMax / 2 - 1))).toHaveLength(payloadBytesMax / 2 - 1)
  })

  it('turns -0 into 0 in a copy, only where it was, and keeps __proto__ as a key', () => {
    expect(Object.is(validateJson('payload', -0), 0)).toBe(true)
    const shared = { deep: [1, 2] }
    const input = JSON.parse('{"__proto__": {"x": -1}, "a": [0, 1], "b": {"c": 5}}') as Record<string, unknown>
    input.a = [1, -0, 2]
    input.b = shared
    const output = validateJson('payload', input) as Record<string, unknown>
    expect(output).not.toBe(input)
    expect(Object.is((input.a as number[])[1], -0)).toBe(true)
    expect(Object.is((output.a as number[])[1], 0)).toBe(true)
    expect(output.b).toBe(shared)
    expect(Object.getPrototypeOf(output)).toBe(Object.prototype)
    expect(Object.hasOwn(output, '__proto__')).toBe(true)
    expect(Object.keys(output)).toEqual(['__proto__', 'a', 'b'])
    // Nothing to change: the very same value comes back.
    const clean = { list: [1, 'two', null, true, { three: 3.5 }] }
    expect(validateJson('payload', clean)).toBe(clean)
    const nullPrototype = Object.assign(Object.create(null) as object, { z: 1 })
    expect(validateJson('payload', nullPrototype)).toBe(nullPrototype)
  })

  it("answers a flat value as the walk does: the same value, refusal and byte bound", () => {
    // An array always takes the walk, and adds 2 to its only element's bound: so [value]'s bound less 2 is the walk's bound of value.
    const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('\u0000', '\ud800', 'a\udc00b', 'é'))
    const primitive = fc.oneof(text, fc.boolean(), fc.constant(null), fc.double(), fc.constantFrom(-0, 0, Number.NaN, Number.POSITIVE_INFINITY))
    const flat = fc.oneof(primitive, fc.dictionary(text, primitive, { maxKeys: 8 }), fc.dictionary(text, primitive, { maxKeys: 3, noNullPrototype: false }))
    fc.assert(
      fc.property(flat, (value) => {
        const outcome = (checked: unknown) => {
          try {
            return validateJsonMeasured('payload', checked)
          } catch (error) {
            expect(error).toBeInstanceOf(InvalidInput)
            return { refused: (error as InvalidInput).reason }
          }
        }
        const alone = outcome(value)
        const wrapped = outcome([value])
        if ('refused' in wrapped || 'refused' in alone) {
          expect(alone).toEqual(wrapped)
          return
        }
        expect(alone.bytesMax).toBe(wrapped.bytesMax - 2)
        expect(alone.value).toEqual((wrapped.value as unknown[])[0])
        expect(Object.is(alone.value, value)).toBe(Object.is((wrapped.value as unknown[])[0], value))
      }),
      { numRuns: 1_000 },
    )
  })
})
