import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type Book, bookEntries, bookGet, bookPut, bookRemove, bookValues, emptyBook } from './Book.ts'

type Op = { readonly kind: 'put'; readonly key: string; readonly value: number } | { readonly kind: 'remove'; readonly key: string }

// Few keys, so puts replace and removes hit; delivery-id-like keys share a prefix.
const key = fc.oneof(fc.constantFrom('q#delivery-1', 'q#delivery-2', 'q#delivery-10', 'q#delivery-33', '__proto__', 'constructor', ''), fc.string({ maxLength: 12 }))
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('put' as const), key, value: fc.integer() }),
  fc.record({ kind: fc.constant('remove' as const), key }),
)

describe('Book', () => {
  it('behaves as a Map under any sequence of puts and removes, and never changes a book it was given', () => {
    const seed = Number(process.env.SIM_SEED ?? Date.now() % 2 ** 31)
    console.log(`Book property seed=${seed}`)
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const model = new Map<string, number>()
        let book: Book<number> = emptyBook()
        for (const step of ops) {
          const before = book
          const beforeEntries = bookEntries(before)
          if (step.kind === 'put') {
            model.set(step.key, step.value)
            book = bookPut(book, step.key, step.value)
          } else {
            model.delete(step.key)
            book = bookRemove(book, step.key)
          }
          expect(bookEntries(before)).toEqual(beforeEntries)
          expect(book.size).toBe(model.size)
          expect(bookGet(book, step.key)).toBe(model.get(step.key))
        }
        expect(new Map(bookEntries(book))).toEqual(model)
        expect(bookValues(book).sort()).toEqual([...model.values()].sort())
        for (const name of ['toString', 'hasOwnProperty', '__proto__']) expect(bookGet(book, name)).toBe(model.get(name))
      }),
      { seed, numRuns: 300 },
    )
  })

  it('a remove of a missing key answers the same book', () => {
    const book = bookPut(emptyBook<number>(), 'a', 1)
    expect(bookRemove(book, 'b')).toBe(book)
  })
})
