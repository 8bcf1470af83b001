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
const twoTo16 = 2 ** 16
const twoTo32 = 2 ** 32

const utf8 = new TextEncoder()

/**
 * A 64-bit value as two unsigned 32-bit halves: plain numbers, because BigInt arithmetic
 * allocates on every operation and routing hashes one value per host on every cache miss.
 */
interface Word64 {
  high: number
  low: number
}

function fnvUpdateByte(state: Word64, byte: number): void {
  const low = (state.low ^ byte) >>> 0
  // low * 435 < 2^41 is exact in a double; its upper part carries into the high half.
  const lowProduct = low * fnvPrimeLow
  state.high = (Math.imul(state.high, fnvPrimeLow) + Math.floor(lowProduct / twoTo32) + (low << 8)) >>> 0
  state.low = lowProduct >>> 0
}

// Hashes the UTF-8 bytes of `text`: an ASCII string's code units are its bytes, so only a string
// with other characters is encoded first.
function fnvUpdateText(state: Word64, text: string): void {
  const { high, low } = state
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (code >= 0x80) {
      state.high = high
      state.low = low
      for (const byte of utf8.encode(text)) fnvUpdateByte(state, byte)
      return
    }
    fnvUpdateByte(state, code)
  }
}

// (high, low) * (multiplierHigh, multiplierLow) mod 2^64, into `state`. The low halves' full
// product is taken in 16-bit pieces so every partial product is exact in a double.
function multiply64(state: Word64, multiplierHigh: number, multiplierLow: number): void {
  const { high, low } = state
  const low0 = low & 0xffff
  const low1 = low >>> 16
  const multiplier0 = multiplierLow & 0xffff
  const multiplier1 = multiplierLow >>> 16
  const middle = low0 * multiplier1 + low1 * multiplier0
  const lowFull = low0 * multiplier0 + (middle % twoTo16) * twoTo16
  const highOfLows = low1 * multiplier1 + Math.floor(middle / twoTo16) + Math.floor(lowFull / twoTo32)
  state.low = lowFull >>> 0
  state.high = (highOfLows + Math.imul(high, multiplierLow) + Math.imul(low, multiplierHigh)) >>> 0
}

// MurmurHash3's 64-bit finalizer, in place.
function fmix64(state: Word64): void {
  state.low = (state.low ^ (state.high >>> 1)) >>> 0
  multiply64(state, 0xff51afd7, 0xed558ccd)
  state.low = (state.low ^ (state.high >>> 1)) >>> 0
  multiply64(state, 0xc4ceb9fe, 0x1a85ec53)
  state.low = (state.low ^ (state.high >>> 1)) >>> 0
}

const toBigInt = (word: Word64): bigint => (BigInt(word.high) << 32n) | BigInt(word.low)

/** FNV-1a 64 of the UTF-8 bytes of `text`, unfinalized (the published test vectors apply). */
export function fnv1a64(text: string): bigint {
  const state = { high: fnvOffsetHigh, low: fnvOffsetLow }
  fnvUpdateText(state, text)
  return toBigInt(state)
}

function prefixState(partitionEncoded: string): Word64 {
  const state = { high: fnvOffsetHigh, low: fnvOffsetLow }
  fnvUpdateText(state, partitionEncoded)
  fnvUpdateByte(state, 0)
  return state
}

function weightFrom(prefix: Word64, hostId: string): Word64 {
  const state = { high: prefix.high, low: prefix.low }
  fnvUpdateText(state, hostId)
  fmix64(state)
  return state
}

/** The score of `hostId` for the partition whose canonical encoding is `partitionEncoded`: an unsigned 64-bit integer. */
export function rendezvousWeight(partitionEncoded: string, hostId: string): bigint {
  return toBigInt(weightFrom(prefixState(partitionEncoded), hostId))
}

/** The owner among `hosts` of the partition encoded as `partitionEncoded`; null when `hosts` is empty. */
export function ownerOfEncoded(partitionEncoded: string, hosts: ReadonlyArray<string>): string | null {
  const prefix = prefixState(partitionEncoded)
  let best: string | null = null
  let bestWeight: Word64 | null = null
  for (const host of hosts) {
    const weight = weightFrom(prefix, host)
    const order = bestWeight === null ? 1 : weight.high !== bestWeight.high ? weight.high - bestWeight.high : weight.low - bestWeight.low
    if (order > 0 || (order === 0 && best !== null && host < best)) {
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
