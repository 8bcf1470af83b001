/**
 * Rendezvous — which host owns a partition, by rendezvous (highest-random-weight) hashing.
 *
 * Every host scores every partition with a hash of (partition, host) and the highest score
 * wins. Removing a host moves only the partitions it owned (each to its runner-up); adding a
 * host moves to it only the partitions it now wins; every other partition stays put. With a
 * well-mixed hash each host wins about 1/n of the partitions.
 *
 * The score is FNV-1a 64 over the UTF-8 bytes of `encodePartitionKey(partition)`, a 0x00
 * separator and the host id, passed through MurmurHash3's 64-bit finalizer: FNV-1a alone lets a
 * change in the last bytes reach only the upper bits, and the finalizer spreads every input bit
 * over the whole word. All arithmetic is exact integer arithmetic, so the result is the same on
 * every run, machine and Node version — hosts that agree on the host list agree on owners.
 *
 * Invariants: the owner depends on the set of hosts only, not their order or repetitions; ties
 * (astronomically unlikely) go to the host id first in code-unit order. The separator cannot
 * occur inside either part (partition encodings are percent-encoded ASCII; host ids are valid
 * names, which exclude control characters), so distinct pairs hash distinct byte strings.
 *
 * Does not: know which hosts are alive (actors/Membership.ts), validate host ids, or weight
 * hosts unequally.
 */
import { encodePartitionKey, type PartitionKey } from './QueueKey.ts'

const fnvOffsetHigh = 0xcbf29ce4
const fnvOffsetLow = 0x84222325
// The FNV-1a 64 prime is 2^40 + 435: multiplying is a multiply by 435 plus a 40-bit shift.
const fnvPrimeLow = 435
const twoTo32 = 2 ** 32
const mask64 = (1n << 64n) - 1n

const utf8 = new TextEncoder()

/** FNV-1a 64 state as two unsigned 32-bit halves (plain numbers: BigInt per byte is slow). */
interface FnvState {
  high: number
  low: number
}

function fnvUpdate(state: FnvState, bytes: Uint8Array): void {
  let { high, low } = state
  for (const byte of bytes) {
    low = (low ^ byte) >>> 0
    // low * 435 < 2^41 is exact in a double; its upper part carries into the high half.
    const lowProduct = low * fnvPrimeLow
    high = (Math.imul(high, fnvPrimeLow) + Math.floor(lowProduct / twoTo32) + (low << 8)) >>> 0
    low = lowProduct >>> 0
  }
  state.high = high
  state.low = low
}

function fmix64(value: bigint): bigint {
  let k = value
  k ^= k >> 33n
  k = (k * 0xff51afd7ed558ccdn) & mask64
  k ^= k >> 33n
  k = (k * 0xc4ceb9fe1a85ec53n) & mask64
  k ^= k >> 33n
  return k
}

/** FNV-1a 64 of the UTF-8 bytes of `text`, unfinalized (the published test vectors apply). */
export function fnv1a64(text: string): bigint {
  const state = { high: fnvOffsetHigh, low: fnvOffsetLow }
  fnvUpdate(state, utf8.encode(text))
  return (BigInt(state.high) << 32n) | BigInt(state.low)
}

const separator = new Uint8Array([0])

function prefixState(partitionEncoded: string): FnvState {
  const state = { high: fnvOffsetHigh, low: fnvOffsetLow }
  fnvUpdate(state, utf8.encode(partitionEncoded))
  fnvUpdate(state, separator)
  return state
}

function weightFrom(prefix: FnvState, hostId: string): bigint {
  const state = { high: prefix.high, low: prefix.low }
  fnvUpdate(state, utf8.encode(hostId))
  return fmix64((BigInt(state.high) << 32n) | BigInt(state.low))
}

/** The score of `hostId` for the partition whose canonical encoding is `partitionEncoded`: an unsigned 64-bit integer. */
export function rendezvousWeight(partitionEncoded: string, hostId: string): bigint {
  return weightFrom(prefixState(partitionEncoded), hostId)
}

/** The owner among `hosts` of the partition encoded as `partitionEncoded`; null when `hosts` is empty. */
export function ownerOfEncoded(partitionEncoded: string, hosts: ReadonlyArray<string>): string | null {
  const prefix = prefixState(partitionEncoded)
  let best: string | null = null
  let bestWeight = -1n
  for (const host of hosts) {
    const weight = weightFrom(prefix, host)
    if (weight > bestWeight || (weight === bestWeight && best !== null && host < best)) {
      best = host
      bestWeight = weight
    }
  }
  return best
}

/** The host among `hosts` that owns `partition` by rendezvous hashing; null when `hosts` is empty. */
export function ownerOf(partition: PartitionKey, hosts: ReadonlyArray<string>): string | null {
  return ownerOfEncoded(encodePartitionKey(partition), hosts)
}
