import { describe, expect, it } from 'vitest'
import { isMatchboxError, refusal, ShuttingDown, Unavailable } from './errors.ts'

describe('refusal', () => {
  it('builds the same typed error without stack frames, and leaves the stack limit as it was', () => {
    const limit = Error.stackTraceLimit
    const refused = refusal(() => new Unavailable({ operation: 'route', detail: 'no partition here', maybeCommitted: false }))
    const thrown = new Unavailable({ operation: 'route', detail: 'no partition here', maybeCommitted: false })
    expect(refused).toBeInstanceOf(Unavailable)
    expect(isMatchboxError(refused)).toBe(true)
    expect({ ...refused, message: refused.message, retryable: refused.retryable }).toEqual({ ...thrown, message: thrown.message, retryable: thrown.retryable })
    expect(refused.stack?.split('\n').filter((line) => line.trimStart().startsWith('at '))).toEqual([])
    expect(thrown.stack?.split('\n').some((line) => line.trimStart().startsWith('at '))).toBe(true)
    expect(Error.stackTraceLimit).toBe(limit)
  })

  it('restores the stack limit when building the error throws', () => {
    const limit = Error.stackTraceLimit
    expect(() =>
      refusal((): ShuttingDown => {
        throw new Error('cannot build')
      }),
    ).toThrow('cannot build')
    expect(Error.stackTraceLimit).toBe(limit)
  })
})
