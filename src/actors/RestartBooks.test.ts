import { Duration, Effect, Schedule } from 'effect'
import { describe, expect, it } from 'vitest'
import { cappedExponentialMs } from '../domain/Backoff.ts'
import type { PartitionKey } from '../domain/QueueKey.ts'
import { acquireRetryInitialMs, acquireRetryMaxMs } from '../kernel/Limits.ts'
import { bookQueueEnd, makeRestartBooks, makeRestartDelays, partitionRestartSchedule, type RestartBook } from './RestartBooks.ts'

describe('partitionRestartSchedule', () => {
  it('steps 1 s, 2 s, 4 s, 8 s, then 10 s for ever', async () => {
    const delays = await Effect.runPromise(
      Effect.gen(function* () {
        const step = yield* Schedule.toStep(partitionRestartSchedule)
        const out: number[] = []
        for (let attempt = 0; attempt < 8; attempt++) out.push(Duration.toMillis((yield* step(attempt * 1_000, undefined))[1]))
        return out
      }),
    )
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000, 10_000])
  })

  it('gives the capped doubling curve for every attempt, past any overflow', () => {
    const next = makeRestartDelays()
    for (let attempt = 1; attempt <= 1_200; attempt++) expect(next(attempt)).toBe(cappedExponentialMs(acquireRetryInitialMs, acquireRetryMaxMs, attempt))
  })

  it('does not depend on the time the step is taken at', () => {
    const early = makeRestartDelays()
    const late = makeRestartDelays()
    expect([0, 1, 2].map((i) => early(i))).toEqual([5e9, 5e9 + 3, 9e12].map((now) => late(now)))
  })
})

describe('bookQueueEnd', () => {
  it('lengthens the delay with each failure in a row, on the caller clock', () => {
    const book: RestartBook = new Map()
    bookQueueEnd(book, '', true, 100)
    expect(book.get('')).toMatchObject({ attempts: 1, notBeforeMs: 1_100 })
    bookQueueEnd(book, '', true, 1_200)
    expect(book.get('')).toMatchObject({ attempts: 2, notBeforeMs: 3_200 })
    bookQueueEnd(book, '', true, 3_300)
    expect(book.get('')).toMatchObject({ attempts: 3, notBeforeMs: 7_300 })
  })

  it('keeps a running delay past a clean unload and forgets it once it ran out', () => {
    const book: RestartBook = new Map()
    bookQueueEnd(book, '@v1', true, 0)
    bookQueueEnd(book, '@v1', true, 1_000)
    bookQueueEnd(book, '@v1', false, 2_999)
    expect(book.get('@v1')).toMatchObject({ attempts: 2, notBeforeMs: 3_000 })
    bookQueueEnd(book, '@v1', false, 3_000)
    expect(book.has('@v1')).toBe(false)
    // A fresh run of the schedule: the next failure waits the first delay again.
    bookQueueEnd(book, '@v1', true, 5_000)
    expect(book.get('@v1')).toMatchObject({ attempts: 1, notBeforeMs: 6_000 })
  })

  it('keeps a run per slot', () => {
    const book: RestartBook = new Map()
    bookQueueEnd(book, '', true, 0)
    bookQueueEnd(book, '', true, 0)
    bookQueueEnd(book, '@v1', true, 0)
    expect(book.get('')?.notBeforeMs).toBe(2_000)
    expect(book.get('@v1')?.notBeforeMs).toBe(1_000)
  })
})

const partitionKey = (partition: number): PartitionKey => ({ namespace: 'jobs', family: 'q', type: 'activity', partition })

describe('makeRestartBooks', () => {
  it('keeps a finished partition book only while a delay of it runs', () => {
    const books = makeRestartBooks()
    bookQueueEnd(books.open('p', partitionKey(0)), '', true, 0)
    books.finished('p', 500)
    expect(books.size()).toBe(1)
    expect(books.open('p', partitionKey(0)).get('')?.attempts).toBe(1)
    books.finished('p', 1_000)
    expect(books.size()).toBe(0)
  })

  it('a view that gives a partition to this host cuts its delays to the first step, keeping the run of failures; others keep theirs', () => {
    const books = makeRestartBooks()
    const ours = books.open('p0', partitionKey(0))
    const theirs = books.open('p1', partitionKey(1))
    for (const book of [ours, theirs]) {
      bookQueueEnd(book, '', true, 0)
      bookQueueEnd(book, '', true, 1_000)
    }
    // The second failure in a row waits 2 s, until 3,000.
    expect(ours.get('')?.notBeforeMs).toBe(3_000)
    // One partition's book lingers after its instance finished: a later instance reads it. A view
    // at 1,500 cuts its delay to the first step after the failure (2,000); one at 2,500 to now.
    books.finished('p0', 1_500)
    books.waiveOurs((key) => key.partition === 0, 1_500)
    expect(books.open('p0', partitionKey(0)).get('')?.notBeforeMs).toBe(2_000)
    expect(theirs.get('')?.notBeforeMs).toBe(3_000)
    books.waiveOurs((key) => key.partition === 1, 2_500)
    expect(theirs.get('')?.notBeforeMs).toBe(2_500)
    // Lost again: the run goes on from where it was (4 s, the third step).
    bookQueueEnd(ours, '', true, 2_000)
    expect(ours.get('')).toMatchObject({ attempts: 3, notBeforeMs: 6_000 })
  })
})
