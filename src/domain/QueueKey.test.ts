/**
 * QueueKey tests: the canonical encoding round-trips every valid key (fast-check over names full
 * of '/', '@', '%' and unicode), distinct keys never share an encoding, decoding accepts only
 * canonical text, and every refusal is an InvalidInput naming its field. Prints its seed.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { InvalidInput } from './errors.ts'
import {
  decodeQueueKey,
  defaultQueueOf,
  encodePartitionKey,
  encodeQueueKey,
  isSameQueue,
  makePartitionKey,
  makeQueueKey,
  partitionOf,
  type QueueKey,
  validateName,
} from './QueueKey.ts'

const seed = Number(process.env.SIM_SEED ?? Date.now() % 2 ** 31)
console.log(`QueueKey properties: seed ${seed} (replay with SIM_SEED=${seed})`)

function isValidName(value: string): boolean {
  try {
    validateName('name', value)
    return true
  } catch {
    return false
  }
}

// Names built from the characters that stress the encoding, plus arbitrary code points.
const name: fc.Arbitrary<string> = fc
  .array(
    fc.oneof(
      fc.constantFrom('/', '@', '%', '%2F', '%25', '#', '?', ' ', '+', 'é', '🚀', '名', 'A', 'a', '0'),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 4 }),
    ),
    { minLength: 1, maxLength: 6 },
  )
  .map((parts) => parts.join(''))
  .filter(isValidName)

const queueKey: fc.Arbitrary<QueueKey> = fc.record({
  namespace: name,
  family: name,
  type: fc.constantFrom('workflow' as const, 'activity' as const),
  partition: fc.oneof(fc.nat({ max: 20 }), fc.nat()),
  version: fc.option(name, { nil: null }),
})

function fieldOf(run: () => unknown): string {
  try {
    run()
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInput)
    return (error as InvalidInput).field
  }
  return expect.fail('expected InvalidInput')
}

const base: QueueKey = { namespace: 'default', family: 'emails', type: 'workflow', partition: 0, version: null }

describe('QueueKey encoding', () => {
  it('encodes as namespace/family/type/partition[@version]', () => {
    expect(encodeQueueKey(base)).toBe('default/emails/workflow/0')
    expect(encodeQueueKey({ ...base, type: 'activity', partition: 3, version: 'build 7' })).toBe('default/emails/activity/3@build%207')
    expect(encodePartitionKey({ namespace: 'a/b', family: 'c@d', type: 'workflow', partition: 12 })).toBe('a%2Fb/c%40d/workflow/12')
  })

  it('round-trips every valid key, including "/", "@", "%" and unicode in names', () => {
    fc.assert(
      fc.property(queueKey, (key) => {
        const encoded = encodeQueueKey(key)
        expect(decodeQueueKey(encoded)).toEqual(key)
        expect(encoded).toMatch(/^[\x21-\x7e]+$/)
        expect(encoded.split('/')).toHaveLength(4)
        expect(encoded.split('@')).toHaveLength(key.version === null ? 1 : 2)
      }),
      { seed, numRuns: 500 },
    )
  })

  it('gives distinct keys distinct encodings', () => {
    fc.assert(
      fc.property(queueKey, queueKey, (a, b) => {
        const same = JSON.stringify(a) === JSON.stringify(b)
        expect(encodeQueueKey(a) === encodeQueueKey(b)).toBe(same)
        expect(isSameQueue(a, b)).toBe(same)
      }),
      { seed, numRuns: 500 },
    )
  })

  it('keeps separators inside names from shifting fields', () => {
    const pairs: Array<[QueueKey, QueueKey]> = [
      [
        { ...base, namespace: 'a/b', family: 'c' },
        { ...base, namespace: 'a', family: 'b/c' },
      ],
      [
        { ...base, family: 'x', version: 'y@z' },
        { ...base, family: 'x@y', version: 'z' },
      ],
      [
        { ...base, version: 'v' },
        { ...base, family: 'emails@v' },
      ],
      [
        { ...base, family: '%41' },
        { ...base, family: 'A' },
      ],
    ]
    for (const [a, b] of pairs) expect(encodeQueueKey(a)).not.toBe(encodeQueueKey(b))
  })

  it('decodes only canonical encodings', () => {
    expect(decodeQueueKey('a%2Fb/c/activity/7@v%401')).toEqual({ namespace: 'a/b', family: 'c', type: 'activity', partition: 7, version: 'v@1' })
    const refusals: Array<[string, string]> = [
      ['default/emails/workflow', 'queue'],
      ['default/emails/timer/0', 'queue'],
      ['default/emails/workflow/00', 'queue'],
      ['default/emails/workflow/-1', 'queue'],
      ['default/emails/workflow/0@', 'queue'],
      ['default//workflow/0', 'queue'],
      ['default/emails/workflow/0@a@b', 'queue'],
      ['a%2fb/c/workflow/0', 'queue'],
      ['%61/c/workflow/0', 'queue'],
      ['%E0%A4%A/c/workflow/0', 'queue.namespace'],
      ['ok/%ZZ/workflow/0', 'queue.family'],
      ['ok/c/workflow/0@%C3', 'queue.version'],
      ['de%07fault/c/workflow/0', 'queue.namespace'],
    ]
    for (const [encoded, field] of refusals) expect([encoded, fieldOf(() => decodeQueueKey(encoded))]).toEqual([encoded, field])
    expect(fieldOf(() => decodeQueueKey(42 as unknown as string, 'from'))).toBe('from')
  })
})

describe('QueueKey validation', () => {
  it('accepts names up to 1000 UTF-8 bytes and refuses longer ones', () => {
    expect(validateName('n', 'é'.repeat(500))).toBe('é'.repeat(500))
    expect(fieldOf(() => validateName('n', 'é'.repeat(500) + 'x'))).toBe('n')
    expect(fieldOf(() => validateName('n', '🚀'.repeat(251)))).toBe('n')
  })

  it('refuses non-strings, empty names, control characters and lone surrogates, naming the field', () => {
    for (const bad of [undefined, null, 7, {}, '', 'a\u0000', 'tab\t', 'del\u007f', 'c1\u0085', 'lone\ud800']) {
      expect(fieldOf(() => validateName('key.family', bad))).toBe('key.family')
    }
  })

  it('names every bad field of a key, under its prefix', () => {
    const cases: Array<[Partial<Record<keyof QueueKey, unknown>>, string]> = [
      [{ namespace: '' }, 'key.namespace'],
      [{ namespace: 3 }, 'key.namespace'],
      [{ family: 'x\n' }, 'key.family'],
      [{ family: 'é'.repeat(501) }, 'key.family'],
      [{ type: 'timer' }, 'key.type'],
      [{ type: undefined }, 'key.type'],
      [{ partition: -1 }, 'key.partition'],
      [{ partition: 1.5 }, 'key.partition'],
      [{ partition: '1' }, 'key.partition'],
      [{ partition: 2 ** 53 }, 'key.partition'],
      [{ version: '' }, 'key.version'],
      [{ version: 'v\u0007' }, 'key.version'],
      [{ version: 5 }, 'key.version'],
    ]
    for (const [override, field] of cases) {
      expect(fieldOf(() => makeQueueKey({ ...base, ...override } as QueueKey))).toBe(field)
    }
    expect(fieldOf(() => makeQueueKey({ ...base, partition: -1 }, 'to'))).toBe('to.partition')
    expect(fieldOf(() => makeQueueKey(null as unknown as QueueKey, 'from'))).toBe('from')
    expect(fieldOf(() => makePartitionKey('x' as unknown as QueueKey))).toBe('key')
  })

  it('returns a fresh key without extra fields', () => {
    const input = { ...base, version: 'v1', extra: true } as QueueKey
    const key = makeQueueKey(input)
    expect(key).toEqual({ ...base, version: 'v1' })
    expect(key).not.toBe(input)
  })

  it('relates partitions and their physical queues', () => {
    const versioned: QueueKey = { ...base, partition: 2, version: 'v9' }
    expect(partitionOf(versioned)).toEqual({ namespace: 'default', family: 'emails', type: 'workflow', partition: 2 })
    expect(defaultQueueOf(partitionOf(versioned))).toEqual({ ...versioned, version: null })
    expect(isSameQueue(versioned, defaultQueueOf(versioned))).toBe(false)
    expect(isSameQueue(base, { ...base, type: 'activity' })).toBe(false)
  })
})
