/**
 * QueueKey — names a physical queue: (namespace, family, task type, partition, deployment
 * version or default). Upstream Matching: each physical queue has its own range id and task sequence;
 * a workflow and an activity queue of one family are separate queues.
 *
 * Owns: validation and the canonical encoding `namespace/family/type/partition[@version]`,
 * with each name percent-encoded, so any valid key round-trips through `encodeQueueKey` /
 * `decodeQueueKey` and distinct keys never share an encoding.
 *
 * Does not: route. Which host owns a partition is membership's business (actors/).
 */
import { encodedNamesMax, nameBytesMax } from '../kernel/Limits.ts'
import { InvalidInput } from './errors.ts'

/** `workflow` or `activity`: same family name, separate physical queues. */
export type TaskType = 'workflow' | 'activity'

/** A partition of a queue family: the unit routed to one host. */
export interface PartitionKey {
  readonly namespace: string
  readonly family: string
  readonly type: TaskType
  readonly partition: number
}

/** A physical queue: a partition plus a deployment version (`null` = the default queue). */
export interface QueueKey extends PartitionKey {
  readonly version: string | null
}

// Control characters (C0, DEL, C1) make keys unprintable in traces and logs.
// oxlint-disable-next-line no-control-regex -- matching control characters is the point
const controlCharacter = /[\u0000-\u001f\u007f-\u009f]/

/** Checks one name; throws `InvalidInput` naming `field`. */
export function validateName(field: string, value: unknown): string {
  if (typeof value !== 'string') throw new InvalidInput({ field, reason: 'must be a string' })
  if (value.length === 0) throw new InvalidInput({ field, reason: 'must not be empty' })
  // A UTF-16 unit is at most three UTF-8 bytes: only a long name needs counting.
  if (value.length * 3 > nameBytesMax && Buffer.byteLength(value, 'utf8') > nameBytesMax) {
    throw new InvalidInput({ field, reason: `must be at most ${nameBytesMax} UTF-8 bytes` })
  }
  if (controlCharacter.test(value)) throw new InvalidInput({ field, reason: 'must not contain control characters' })
  if (!value.isWellFormed()) {
    throw new InvalidInput({ field, reason: 'must be well-formed Unicode' })
  }
  return value
}

// Keys are checked on every store call and route, from a handful of names: names that passed
// `validateName` are remembered (up to encodedNamesMax, like their encodings), so a key of known
// names is checked with lookups. Validity depends on the name alone, so remembering changes no answer.
let validNames = new Set<string>()
function validKeyName(fieldPrefix: string, part: string, value: unknown): string {
  if (typeof value === 'string' && validNames.has(value)) return value
  const name = validateName(`${fieldPrefix}.${part}`, value)
  if (validNames.size >= encodedNamesMax) validNames = new Set()
  validNames.add(name)
  return name
}

// Checks the partition fields of `input`; throws `InvalidInput` naming the bad field.
function checkPartitionFields(input: PartitionKey, fieldPrefix: string): void {
  if (typeof input !== 'object' || input === null) throw new InvalidInput({ field: fieldPrefix, reason: 'must be an object' })
  validKeyName(fieldPrefix, 'namespace', input.namespace)
  validKeyName(fieldPrefix, 'family', input.family)
  if (input.type !== 'workflow' && input.type !== 'activity') {
    throw new InvalidInput({ field: `${fieldPrefix}.type`, reason: `must be "workflow" or "activity", got ${JSON.stringify(input.type)}` })
  }
  if (typeof input.partition !== 'number' || !Number.isSafeInteger(input.partition) || input.partition < 0) {
    throw new InvalidInput({ field: `${fieldPrefix}.partition`, reason: 'must be an integer ≥ 0' })
  }
}

/** Validates and returns a partition key; throws `InvalidInput` naming the bad field. */
export function makePartitionKey(input: PartitionKey, fieldPrefix = 'key'): PartitionKey {
  checkPartitionFields(input, fieldPrefix)
  return { namespace: input.namespace, family: input.family, type: input.type, partition: input.partition }
}

/** Validates and returns a physical queue key; throws `InvalidInput` naming the bad field. */
export function makeQueueKey(input: QueueKey, fieldPrefix = 'key'): QueueKey {
  checkPartitionFields(input, fieldPrefix)
  const version = input.version === null ? null : validKeyName(fieldPrefix, 'version', input.version)
  return { namespace: input.namespace, family: input.family, type: input.type, partition: input.partition, version }
}

/** The default physical queue of a partition. */
export function defaultQueueOf(partition: PartitionKey): QueueKey {
  return { namespace: partition.namespace, family: partition.family, type: partition.type, partition: partition.partition, version: null }
}

/** The partition a physical queue belongs to. */
export function partitionOf(key: QueueKey): PartitionKey {
  return { namespace: key.namespace, family: key.family, type: key.type, partition: key.partition }
}

// The same few names are encoded on every store call and route, and percent-encoding one costs
// several times a lookup: encodings are remembered, up to encodedNamesMax names.
let encodedNames = new Map<string, string>()
function encodeName(name: string): string {
  let encoded = encodedNames.get(name)
  if (encoded === undefined) {
    encoded = encodeURIComponent(name)
    if (encodedNames.size >= encodedNamesMax) encodedNames = new Map()
    encodedNames.set(name, encoded)
  }
  return encoded
}

/** Canonical encoding of a partition: `namespace/family/type/partition`. */
export function encodePartitionKey(key: PartitionKey): string {
  return `${encodeName(key.namespace)}/${encodeName(key.family)}/${key.type}/${key.partition}`
}

/** Canonical encoding of a physical queue: `namespace/family/type/partition[@version]`. */
export function encodeQueueKey(key: QueueKey): string {
  const base = encodePartitionKey(key)
  return key.version === null ? base : `${base}@${encodeName(key.version)}`
}

const encodedShape = /^([^/@]+)\/([^/@]+)\/(workflow|activity)\/(0|[1-9][0-9]*)(?:@([^/@]+))?$/

/** Parses a canonical encoding; throws `InvalidInput` if it is not one. */
export function decodeQueueKey(encoded: string, field = 'queue'): QueueKey {
  const match = typeof encoded === 'string' ? encodedShape.exec(encoded) : null
  if (match === null) throw new InvalidInput({ field, reason: `not a queue key encoding: ${JSON.stringify(encoded)}` })
  const [, namespace, family, type, partition, version] = match
  const decode = (part: string, name: string): string => {
    try {
      return decodeURIComponent(part)
    } catch {
      throw new InvalidInput({ field: `${field}.${name}`, reason: 'bad percent-encoding' })
    }
  }
  const key = makeQueueKey(
    {
      namespace: decode(namespace as string, 'namespace'),
      family: decode(family as string, 'family'),
      type: type as TaskType,
      partition: Number(partition),
      version: version === undefined ? null : decode(version, 'version'),
    },
    field,
  )
  if (encodeQueueKey(key) !== encoded) throw new InvalidInput({ field, reason: 'not in canonical form' })
  return key
}

/** True when two keys name the same physical queue. */
export function isSameQueue(a: QueueKey, b: QueueKey): boolean {
  return encodeQueueKey(a) === encodeQueueKey(b)
}
