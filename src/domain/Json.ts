/**
 * Json — the JSON value type and its validation. Payloads and user data must survive a round
 * trip through JSON (and PostgreSQL `jsonb`) unchanged, so anything else is rejected up front.
 */
import { payloadBytesMax } from '../kernel/Limits.ts'
import { InvalidInput } from './errors.ts'

/** A value that round-trips through JSON. */
export type JsonValue = null | boolean | number | string | ReadonlyArray<JsonValue> | { readonly [key: string]: JsonValue }

/**
 * Checks that `value` is plain JSON (no undefined, functions, symbols, bigints, non-finite
 * numbers, class instances or cycles) within `payloadBytesMax`; throws `InvalidInput` naming
 * the path of the first offender.
 */
export function validateJson(field: string, value: unknown): JsonValue {
  walk(field, value, new Set())
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8')
  if (bytes > payloadBytesMax) throw new InvalidInput({ field, reason: `is ${bytes} bytes, more than ${payloadBytesMax}` })
  return value as JsonValue
}

function walk(path: string, value: unknown, seen: Set<object>): void {
  switch (typeof value) {
    case 'string':
      if (value.includes('\u0000')) throw new InvalidInput({ field: path, reason: 'contains a NUL character, which jsonb cannot store' })
      return
    case 'boolean':
      return
    case 'number':
      if (!Number.isFinite(value)) throw new InvalidInput({ field: path, reason: 'is not a finite number' })
      return
    case 'object': {
      if (value === null) return
      if (seen.has(value)) throw new InvalidInput({ field: path, reason: 'is a cycle' })
      seen.add(value)
      if (Array.isArray(value)) {
        value.forEach((item, index) => walk(`${path}[${index}]`, item, seen))
      } else {
        const prototype = Object.getPrototypeOf(value)
        if (prototype !== Object.prototype && prototype !== null) {
          throw new InvalidInput({ field: path, reason: 'is not a plain object' })
        }
        for (const [key, item] of Object.entries(value)) walk(`${path}.${key}`, item, seen)
      }
      seen.delete(value)
      return
    }
    default:
      throw new InvalidInput({ field: path, reason: `is a ${typeof value}, not JSON` })
  }
}
