/**
 * Rendezvous tests: the hash matches the published FNV-1a 64 vectors and a plain BigInt
 * reference; owners are pinned golden values (a change of hash would silently move every
 * partition of a mixed-version cluster); properties over random host sets: order does not
 * matter, removing a host moves only its partitions, adding one moves partitions only to it,
 * and the spread is roughly even. Prints its seed.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { encodePartitionKey, type PartitionKey, validateName } from './QueueKey.ts'
import { fnv1a64, ownerOf, ownerOfEncoded, rendezvousWeight } from './Rendezvous.ts'

const seed = Number(process.env.SIM_SEED ?? Date.now() % 2 ** 31)
console.log(`Rendezvous properties: seed ${seed} (replay with SIM_SEED=${seed})`)

// The textbook definition, one BigInt multiply per byte: what the fast path must equal.
function referenceFnv1a64(text: string): bigint {
  let hash = 0xcbf29ce484222325n
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= BigInt(byte)
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn
  }
  return hash
}

const partition = (family: string, index: number): PartitionKey => ({ namespace: 'default', family, type: 'workflow', partition: index })

// 1 000 distinct partitions, like a cluster with 250 families of 4.
const partitions: ReadonlyArray<PartitionKey> = Array.from({ length: 1_000 }, (_, index) => partition(`family-${index >> 2}`, index & 3))

function isValidHostId(id: string): boolean {
  try {
    validateName('hostId', id)
    return true
  } catch {
    return false
  }
}

const hostId = fc.string({ minLength: 1, maxLength: 12 }).filter(isValidHostId)
const hostSet = (min: number, max: number) => fc.uniqueArray(hostId, { minLength: min, maxLength: max })

describe('fnv1a64', () => {
  it('matches the published test vectors', () => {
    expect(fnv1a64('')).toBe(0xcbf29ce484222325n)
    expect(fnv1a64('a')).toBe(0xaf63dc4c8601ec8cn)
    expect(fnv1a64('foobar')).toBe(0x85944171f73967e8n)
  })

  it('equals the BigInt reference on any string, unicode included', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (text) => {
        expect(fnv1a64(text)).toBe(referenceFnv1a64(text))
      }),
      { seed, numRuns: 500 },
    )
  })
})

describe('ownerOf', () => {
  it('is pinned: the same owners on every run and machine', () => {
    const hosts = ['host-a', 'host-b', 'host-c']
    const owners = Array.from({ length: 8 }, (_, index) => ownerOf(partition('emails', index), hosts))
    expect(owners).toEqual(['host-c', 'host-b', 'host-c', 'host-c', 'host-a', 'host-c', 'host-a', 'host-b'])
    expect(rendezvousWeight('default/emails/workflow/0', 'host-a')).toBe(0xbc3c095af6fd0622n)
    expect(rendezvousWeight('default/emails/workflow/0', 'hôte-é')).toBe(0xbd6a6bf34c2b2751n)
  })

  it('is null with no hosts and the only host with one', () => {
    expect(ownerOf(partition('emails', 0), [])).toBeNull()
    expect(ownerOf(partition('emails', 0), ['solo'])).toBe('solo')
  })

  it('agrees with ownerOfEncoded on the canonical encoding', () => {
    const hosts = ['a', 'b', 'c', 'd']
    for (const key of partitions.slice(0, 50)) expect(ownerOf(key, hosts)).toBe(ownerOfEncoded(encodePartitionKey(key), hosts))
  })

  it('depends on the set of hosts, not their order or repetitions', () => {
    fc.assert(
      fc.property(hostSet(1, 8), fc.nat(), (hosts, shift) => {
        const rotated = [...hosts.slice(shift % hosts.length), ...hosts.slice(0, shift % hosts.length)].reverse()
        const repeated = [...rotated, ...hosts]
        for (const key of partitions.slice(0, 100)) {
          const owner = ownerOf(key, hosts)
          expect(ownerOf(key, rotated)).toBe(owner)
          expect(ownerOf(key, repeated)).toBe(owner)
        }
      }),
      { seed, numRuns: 50 },
    )
  })

  it('removing a host moves only that host’s partitions', () => {
    fc.assert(
      fc.property(hostSet(2, 8), fc.nat(), (hosts, pick) => {
        const removed = hosts[pick % hosts.length] as string
        const remaining = hosts.filter((host) => host !== removed)
        for (const key of partitions.slice(0, 300)) {
          const before = ownerOf(key, hosts)
          const after = ownerOf(key, remaining)
          if (before === removed) expect(remaining).toContain(after)
          else expect(after).toBe(before)
        }
      }),
      { seed, numRuns: 50 },
    )
  })

  it('adding a host moves partitions only to the new host', () => {
    fc.assert(
      fc.property(hostSet(2, 8), (hosts) => {
        const [added, ...existing] = hosts as [string, ...string[]]
        for (const key of partitions.slice(0, 300)) {
          const after = ownerOf(key, hosts)
          if (after !== added) expect(after).toBe(ownerOf(key, existing))
        }
      }),
      { seed, numRuns: 50 },
    )
  })

  it('spreads partitions roughly evenly', () => {
    fc.assert(
      fc.property(hostSet(2, 6), (hosts) => {
        const counts = new Map<string, number>(hosts.map((host) => [host, 0]))
        for (const key of partitions) {
          const owner = ownerOf(key, hosts) as string
          counts.set(owner, (counts.get(owner) ?? 0) + 1)
        }
        // Binomial(1000, 1/n): ±30 % of the mean is more than 4 standard deviations for n ≤ 6.
        const mean = partitions.length / hosts.length
        for (const [host, count] of counts) {
          expect(count, `host ${JSON.stringify(host)} of ${hosts.length} owns ${count}`).toBeGreaterThan(mean * 0.7)
          expect(count, `host ${JSON.stringify(host)} of ${hosts.length} owns ${count}`).toBeLessThan(mean * 1.3)
        }
      }),
      { seed, numRuns: 30 },
    )
  })
})
