/**
 * JobInput's claim-token check: an accepted batch comes back as given; a refused token is named
 * by its index in the batch, and an oversized batch is refused whole.
 */
import { describe, expect, it } from 'vitest'
import { InvalidInput } from '../../domain/errors.ts'
import { ackBatchSizeMax } from '../../kernel/Limits.ts'
import { checkTokens } from './JobInput.ts'

describe('checkTokens', () => {
  it('accepts a batch of names as given', () => {
    expect(checkTokens(['a.0', 'a.1'])).toEqual(['a.0', 'a.1'])
  })

  it('names a refused token by its index', () => {
    let refused: unknown
    try {
      checkTokens(['ok', 'also-ok', 'bad\u0000token'])
    } catch (error) {
      refused = error
    }
    expect(refused).toBeInstanceOf(InvalidInput)
    expect((refused as InvalidInput).field).toBe('claimTokens[2]')
  })

  it('refuses more tokens than a batch holds', () => {
    expect(() => checkTokens(Array.from({ length: ackBatchSizeMax + 1 }, (_, index) => `t${index}`))).toThrow(InvalidInput)
  })
})
