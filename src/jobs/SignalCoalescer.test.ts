import { describe, expect, it } from 'vitest'
import { makeSignalCoalescer } from './SignalCoalescer.ts'

describe('SignalCoalescer', () => {
  it('sends one signal per key at a time: asks while one is in flight become one more, with the latest due time', async () => {
    const sent: Array<{ key: string; dueMs: number }> = []
    const inFlight: Array<() => void> = []
    const signal = (key: string) => (dueMs: number) => {
      sent.push({ key, dueMs })
      return new Promise<void>((resolve) => inFlight.push(resolve))
    }
    const coalescer = makeSignalCoalescer(() => {})
    coalescer.send('a', signal('a'), 1)
    coalescer.send('a', signal('a'), 3)
    coalescer.send('a', signal('a'), 2)
    coalescer.send('b', signal('b'), 5)
    expect(sent).toEqual([{ key: 'a', dueMs: 1 }, { key: 'b', dueMs: 5 }])
    inFlight.shift()?.()
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(sent).toEqual([{ key: 'a', dueMs: 1 }, { key: 'b', dueMs: 5 }, { key: 'a', dueMs: 3 }])
    // Settled with nothing asked meanwhile: the next ask goes at once.
    inFlight.shift()?.()
    inFlight.shift()?.()
    await new Promise<void>((resolve) => setImmediate(resolve))
    coalescer.send('a', signal('a'), 9)
    expect(sent.at(-1)).toEqual({ key: 'a', dueMs: 9 })
  })

  it('reports a failed signal and sends the next ask', async () => {
    const errors: unknown[] = []
    const coalescer = makeSignalCoalescer((error) => errors.push(error))
    coalescer.send('a', () => Promise.reject(new Error('bus down')), 1)
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(errors).toHaveLength(1)
    let sent = 0
    coalescer.send('a', async () => void sent++, 2)
    expect(sent).toBe(1)
  })
})
