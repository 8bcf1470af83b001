/**
 * Book — an immutable string-keyed map whose one-entry updates copy a small part of it, for a
 * machine context that changes one entry per event while holding many (a queue's deliveries
 * with History: a batching worker keeps a thousand in flight, and copying them all on every
 * start and every answer made that copy the queue's largest cost).
 *
 * Entries live in `bucketCount` buckets chosen by a hash of the key; `put` and `remove` copy the
 * bucket list and one bucket, about `bucketCount + size / bucketCount` slots instead of `size`.
 * Like the rest of the context, a book is never changed in place: every operation returns a new
 * one and leaves its argument alone. Iteration order is by bucket, then insertion.
 */

const bucketCount = 32

/** An immutable map from string keys to `T` (see the file header). */
export interface Book<T> {
  readonly size: number
  readonly buckets: ReadonlyArray<Readonly<Record<string, T>>>
}

const emptyBucket: Readonly<Record<string, never>> = Object.freeze({})

/** A book with no entries. */
export function emptyBook<T>(): Book<T> {
  return { size: 0, buckets: Array.from({ length: bucketCount }, () => emptyBucket) }
}

// FNV-1a over the key's last eight UTF-16 units: keys that differ in a trailing counter spread.
function bucketOf(key: string): number {
  let hash = 0x811c9dc5
  for (let index = Math.max(0, key.length - 8); index < key.length; index++) hash = Math.imul(hash ^ key.charCodeAt(index), 0x01000193)
  return (hash >>> 0) % bucketCount
}

/** The entry under `key`, if any. */
export function bookGet<T>(book: Book<T>, key: string): T | undefined {
  const bucket = book.buckets[bucketOf(key)] as Readonly<Record<string, T>>
  return Object.hasOwn(bucket, key) ? bucket[key] : undefined
}

/** The book with `key` set to `value` (added, or replacing the entry it had). */
export function bookPut<T>(book: Book<T>, key: string, value: T): Book<T> {
  const at = bucketOf(key)
  const bucket = book.buckets[at] as Readonly<Record<string, T>>
  const size = Object.hasOwn(bucket, key) ? book.size : book.size + 1
  const buckets = book.buckets.slice()
  buckets[at] = { ...bucket, [key]: value }
  return { size, buckets }
}

/** The book without `key` (the same book when it has no such entry). */
export function bookRemove<T>(book: Book<T>, key: string): Book<T> {
  const at = bucketOf(key)
  const bucket = book.buckets[at] as Readonly<Record<string, T>>
  if (!Object.hasOwn(bucket, key)) return book
  // Built fresh: `delete` would turn the copy into a slow dictionary object.
  const kept: Record<string, T> = {}
  for (const other in bucket) if (other !== key) kept[other] = bucket[other] as T
  const buckets = book.buckets.slice()
  buckets[at] = kept
  return { size: book.size - 1, buckets }
}

/** Every entry as [key, value] pairs. */
export function bookEntries<T>(book: Book<T>): Array<[string, T]> {
  const entries: Array<[string, T]> = []
  for (const bucket of book.buckets) for (const key in bucket) entries.push([key, bucket[key] as T])
  return entries
}

/** Every value. */
export function bookValues<T>(book: Book<T>): T[] {
  return bookEntries(book).map(([, value]) => value)
}
