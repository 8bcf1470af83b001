/**
 * The control checkers on hand-made boundary records: a claim committed between a queue's pause
 * and its resume fails, one after the resume does not; an ack accepted after a committed cancel
 * fails, a refused one does not; a handler that heard its heartbeat refused fails if its signal
 * did not abort by its return, and passes if it did (or if the refusal reached another claim).
 */
import { describe, expect, it } from 'vitest'
import type { JobRecord } from '../../src/persistence/jobs/JobStore.ts'
import type { JobBoundaryRecord } from './JobBoundary.ts'
import { ControlCheckers, type ControlCheckerName } from './ControlCheckers.ts'
import type { HandlerEvent } from './JobsHost.ts'

const at = (nowMs: number) => ({ hostId: 'host-1', nowMs, committedAtMs: nowMs })
// The checker reads only whether a claim committed, not the job it claimed.
const claim = (nowMs: number, committed: boolean): JobBoundaryRecord => ({
  op: 'claim', ...at(nowMs), id: 'job-1', claimToken: 't', ownership: null,
  outcome: committed ? { kind: 'claimed', job: {} as JobRecord } : { kind: 'obsolete', reason: 'paused' },
})

function checkers(): { readonly checkers: ControlCheckers; readonly failed: Array<[ControlCheckerName, string]> } {
  const failed: Array<[ControlCheckerName, string]> = []
  return { checkers: new ControlCheckers({ fail: (name, sentence) => failed.push([name, sentence]), queueOf: () => 'q' }), failed }
}

function handler(signal: AbortSignal, started: boolean): HandlerEvent {
  return { hostId: 'host-1', incarnation: 0, queue: 'q', id: 'job-1', claimToken: 't', started, signal, batched: false }
}

describe('ControlCheckers', () => {
  it('a claim committed while the queue is paused fails; after the resume it does not', () => {
    const { checkers: c, failed } = checkers()
    c.observe({ op: 'pause', ...at(100), queue: 'q', changed: true })
    c.observe(claim(150, false))
    expect(failed).toEqual([])
    c.observe(claim(200, true))
    c.observe({ op: 'resume', ...at(300), queue: 'q', changed: true })
    c.observe(claim(400, true))
    expect(failed.map(([name]) => name)).toEqual(['paused claims nothing'])
  })

  it('an ack accepted after a committed cancel fails; a refused one does not', () => {
    const { checkers: c, failed } = checkers()
    c.observe({ op: 'cancel', ...at(100), queue: 'q', id: 'job-1', ok: true })
    c.observe({ op: 'ack', ...at(200), id: 'job-1', claimToken: 't', ok: false })
    expect(failed).toEqual([])
    c.observe({ op: 'ackBatch', ...at(300), claims: [{ id: 'job-1', claimToken: 't' }], count: 1, ackedIds: ['job-1'] })
    expect(failed.map(([name]) => name)).toEqual(['cancelled never acked'])
  })

  it('a handler that heard its heartbeat refused must return with its signal aborted', () => {
    const { checkers: c, failed } = checkers()
    const ignored = new AbortController()
    c.handler(handler(ignored.signal, true), 0)
    c.heartbeatRefused('host-1', 'job-1', 'other', 50)
    c.heartbeatRefused('host-1', 'job-1', 't', 100)
    c.handler(handler(ignored.signal, false), 200)
    expect(failed.map(([name]) => name)).toEqual(['abort reaches handler'])

    const honoured = new AbortController()
    c.handler(handler(honoured.signal, true), 300)
    c.heartbeatRefused('host-1', 'job-1', 't', 400)
    honoured.abort()
    c.handler(handler(honoured.signal, false), 500)
    c.finish(600)
    expect(failed).toHaveLength(1)
  })
})
