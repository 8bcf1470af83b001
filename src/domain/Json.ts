/**
 * Json — the JSON value type and its validation. Payloads and user data must come back the same
 * from every store, the memory store (which copies values) and the SQL stores (which keep them
 * as PostgreSQL `jsonb`), so anything that would not is refused up front with `InvalidInput`
 * naming the path of the first offender (`payload.items[3]`, `payload["odd key"]`).
 *
 * Refused: undefined, functions, symbols, bigints, non-finite numbers; objects that are not
 * plain (class instances, dates, maps, boxed primitives) or that carry symbol keys; arrays with
 * holes or with properties besides their elements; cycles; strings — values and keys — holding
 * NUL (jsonb cannot store it) or a lone surrogate (half a UTF-16 pair: not Unicode, so neither
 * UTF-8 nor jsonb can hold it); containers nested deeper than `payloadDepthMax`; anything whose
 * JSON text is longer than `payloadBytesMax` bytes of UTF-8.
 *
 * What "the same" means for an accepted value: deep equality up to the order of object keys
 * (jsonb keeps keys in an order of its own). A `__proto__` key is an own key like any other,
 * and a null-prototype object comes back as a plain one. -0 becomes 0: JSON has no -0
 * (`JSON.stringify` writes 0, and jsonb reads -0 as 0), so `validateJson` returns the value with
 * every -0 replaced by 0 — a copy only where one was found — and every store keeps that.
 *
 * Invariants: the walk never recurses deeper than `payloadDepthMax`, so a value nested ten
 * thousand levels deep is refused, not a stack overflow; and it stops as soon as the JSON text
 * is known to be too long, so a huge string or array is refused before it is scanned.
 */
import { payloadBytesMax, payloadDepthMax } from '../kernel/Limits.ts'
import { InvalidInput } from './errors.ts'

/** A value that round-trips through JSON. */
export type JsonValue = null | boolean | number | string | ReadonlyArray<JsonValue> | { readonly [key: string]: JsonValue }

/**
 * Checks that `value` is plain JSON that every store keeps as it is (see the header) and returns
 * it, with -0 replaced by 0; throws `InvalidInput` naming the path of the first offender.
 */
export function validateJson(field: string, value: unknown): JsonValue {
  return validateJsonMeasured(field, value).value
}

/**
 * `validateJson`, also answering an upper bound of the value's JSON text in UTF-8 bytes (exact
 * when it had to be serialised), so a batch can bound its total without serialising each value.
 */
export function validateJsonMeasured(field: string, value: unknown): { readonly value: JsonValue; readonly bytesMax: number } {
  const flat = flatMeasured(value)
  if (flat !== null) return flat
  const { walk, worstBytes } = makeWalk(field)
  const checked = walk(value, 0)
  // Serialised only when the worst case could pass the limit: most payloads are far below it.
  if (worstBytes() <= payloadBytesMax) return { value: checked, bytesMax: worstBytes() }
  const bytes = Buffer.byteLength(JSON.stringify(checked), 'utf8')
  if (bytes > payloadBytesMax) throw tooLarge(field)
  return { value: checked, bytesMax: bytes }
}

// The most UTF-8 bytes one UTF-16 unit of a JSON string can take: a control character's `\u00XX`.
const escapedUnitBytesMax = 6
// The longest JSON text of a finite number (`-1.7976931348623157e+308`).
const numberTextMax = 24

function tooLarge(field: string): InvalidInput {
  return new InvalidInput({ field, reason: `serializes to more than ${payloadBytesMax} bytes` })
}

const identifier = /^[A-Za-z_$][\w$]*$/

// A text the walk accepts: no NUL, no lone surrogate.
const isStorableText = (text: string): boolean => !text.includes('\u0000') && text.isWellFormed()

// The most UTF-8 bytes the walk counts for a primitive it accepts as it is, or -1 for one it
// would refuse or change (a non-finite number, -0, a text it refuses) or that is not a primitive.
function primitiveWorstBytes(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return isStorableText(value) ? value.length * escapedUnitBytesMax + 2 : -1
    case 'boolean':
      return 5
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0) ? numberTextMax : -1
    case 'object':
      return value === null ? 4 : -1
    default:
      return -1
  }
}

/**
 * The common payload — a primitive, or a plain object whose values are all primitives —
 * checked without building the walk: the same answer `validateJsonMeasured` would give (the
 * value unchanged, the walk's upper bound), or null when the walk must run (anything nested,
 * anything it refuses or changes, anything whose bound passes `payloadBytesMax`).
 */
function flatMeasured(value: unknown): { readonly value: JsonValue; readonly bytesMax: number } | null {
  if (typeof value !== 'object' || value === null) {
    const worst = primitiveWorstBytes(value)
    return worst < 0 || worst > payloadBytesMax ? null : { value: value as JsonValue, bytesMax: worst }
  }
  if (Array.isArray(value)) return null
  const prototype = Object.getPrototypeOf(value)
  if ((prototype !== Object.prototype && prototype !== null) || Object.getOwnPropertySymbols(value).length > 0) return null
  const keys = Object.keys(value)
  let worst = 2 + Math.max(0, keys.length - 1)
  for (const key of keys) {
    const item = primitiveWorstBytes((value as Record<string, unknown>)[key])
    if (item < 0 || !isStorableText(key)) return null
    worst += key.length * escapedUnitBytesMax + 3 + item
  }
  return worst > payloadBytesMax ? null : { value: value as JsonValue, bytesMax: worst }
}

// A walk of one value: returns it checked (-0 made 0), or throws for its first offender; and an
// upper bound of its JSON text's UTF-8 length.
function makeWalk(field: string): { walk: (value: unknown, depth: number) => JsonValue; worstBytes: () => number } {
  // Path below `field` of the value being looked at; turned into text only for an error.
  const segments: Array<string | number> = []
  const ancestors = new Set<object>()
  // A lower bound of the JSON text's UTF-8 length so far: a UTF-16 unit is at least one byte.
  let bytes = 0
  // An upper bound of it: every text unit escaped, every number at its longest.
  let worst = 0

  const fail = (reason: string): never => {
    let path = field
    for (const segment of segments) {
      path += typeof segment === 'number' ? `[${segment}]` : identifier.test(segment) ? `.${segment}` : `[${JSON.stringify(segment)}]`
    }
    throw new InvalidInput({ field: path, reason })
  }
  const count = (length: number, most = length): void => {
    worst += most
    bytes += length
    if (bytes > payloadBytesMax) throw tooLarge(field)
  }
  const checkText = (text: string, what: string): void => {
    if (text.includes('\u0000')) fail(`${what} a NUL character, which jsonb cannot store`)
    if (!text.isWellFormed()) fail(`${what} a lone surrogate (half a UTF-16 pair), which is not Unicode and jsonb cannot store`)
  }

  const array = (items: ReadonlyArray<unknown>, depth: number): JsonValue => {
    count(2 + Math.max(0, items.length - 1))
    let copy: JsonValue[] | undefined
    for (let index = 0; index < items.length; index++) {
      segments.push(index)
      if (!(index in items)) fail('is a hole in the array, which JSON cannot keep')
      const item = walk(items[index], depth + 1)
      if (copy === undefined && !Object.is(item, items[index])) copy = items.slice(0, index) as JsonValue[]
      copy?.push(item)
      segments.pop()
    }
    if (Object.keys(items).length !== items.length) fail('has properties besides its elements, which JSON drops')
    return copy ?? (items as ReadonlyArray<JsonValue>)
  }

  const object = (record: object, depth: number): JsonValue => {
    const prototype = Object.getPrototypeOf(record)
    if (prototype !== Object.prototype && prototype !== null) fail('is not a plain object')
    if (Object.getOwnPropertySymbols(record).length > 0) fail('has symbol keys, which JSON drops')
    const entries = Object.entries(record)
    count(2 + Math.max(0, entries.length - 1))
    let copy: Array<[string, JsonValue]> | undefined
    entries.forEach(([key, item], index) => {
      segments.push(key)
      count(key.length + 3, key.length * escapedUnitBytesMax + 3)
      checkText(key, 'is a key holding')
      const checked = walk(item, depth + 1)
      if (copy === undefined && !Object.is(checked, item)) copy = entries.slice(0, index) as Array<[string, JsonValue]>
      copy?.push([key, checked])
      segments.pop()
    })
    // fromEntries defines own properties, so a `__proto__` key stays a key.
    return copy === undefined ? (record as JsonValue) : Object.fromEntries(copy)
  }

  const walk = (value: unknown, depth: number): JsonValue => {
    switch (typeof value) {
      case 'string':
        count(value.length + 2, value.length * escapedUnitBytesMax + 2)
        checkText(value, 'contains')
        return value
      case 'boolean':
        count(4, 5)
        return value
      case 'number':
        if (!Number.isFinite(value)) fail('is not a finite number')
        count(1, numberTextMax)
        return Object.is(value, -0) ? 0 : value
      case 'object': {
        if (value === null) {
          count(4)
          return null
        }
        if (ancestors.has(value)) fail('is a cycle')
        if (depth >= payloadDepthMax) fail(`nests containers deeper than ${payloadDepthMax} levels`)
        ancestors.add(value)
        const checked = Array.isArray(value) ? array(value, depth) : object(value, depth)
        ancestors.delete(value)
        return checked
      }
      default:
        return fail(`is a ${typeof value}, not JSON`)
    }
  }
  return { walk, worstBytes: () => worst }
}
