import { describe, expect, it } from 'vitest'
import { deadReasonExhausted, deadReasonExpired } from '../domain/JobRules.ts'
import { jobClaimsKept } from '../kernel/Limits.ts'
import { insertedJobRecord, type JobRecord } from '../persistence/jobs/JobStore.ts'
import { makeJobFixture } from '../persistence/jobs/conformance/JobFixture.ts'
import { jobTimeline, timelineSection } from './JobTimeline.ts'

// A pending job enqueued at 1 000 with nothing else; each case adds what its life kept.
const base: JobRecord = insertedJobRecord(makeJobFixture('timeline', () => expect.fail('no store'), 1).job('emails', { id: 'job-1', payload: null }), 1_000, null, null)

const kinds = (job: JobRecord, nowMs: number) => jobTimeline(job, nowMs).map((entry) => `${entry.kind}@${entry.atMs}`)

describe('jobTimeline', () => {
  it('a running job: enqueued, a retried attempt with its due time, a lapsed one, the running claim and its progress', () => {
    const job: JobRecord = {
      ...base,
      state: 'processing',
      attempts: 3,
      claimedAtMs: 40_000,
      claimToken: 't3',
      deadlineMs: 70_000,
      claims: [
        { attempt: 1, atMs: 2_000 },
        { attempt: 2, atMs: 7_000 },
        { attempt: 3, atMs: 40_000 },
      ],
      attemptErrors: [{ attempt: 1, error: 'smtp 451', stack: null, atMs: 2_500, retryAtMs: 7_000 }],
      progress: { sent: 3 },
      progressAtMs: 41_000,
    }
    expect(kinds(job, 45_000)).toEqual(['enqueued@1000', 'claimed@2000', 'retried@2500', 'claimed@7000', 'lapsed@40000', 'claimed@40000', 'progress@41000'])
    const entries = jobTimeline(job, 45_000)
    expect(entries.find((entry) => entry.kind === 'retried')).toMatchObject({ text: expect.stringContaining('due at 1970-01-01 00:00:07.000 UTC (after 4 s)'), detail: 'smtp 451' })
    expect(entries.find((entry) => entry.kind === 'lapsed')).toMatchObject({ by: true, text: expect.stringContaining("attempt 2's claim lapsed") })
    expect(entries.at(-2)?.text).toContain('running, its claim deadline in 25 s')
    expect(entries.at(-1)?.detail).toBe('{"sent":3}')
  })

  it('keeps the order of a life lived within one millisecond: attempt by attempt, claim before error', () => {
    const job: JobRecord = {
      ...base,
      state: 'processing',
      attempts: 2,
      claimedAtMs: 1_000,
      claimToken: 't2',
      deadlineMs: 31_000,
      claims: [
        { attempt: 1, atMs: 1_000 },
        { attempt: 2, atMs: 1_000 },
      ],
      attemptErrors: [{ attempt: 1, error: 'once', stack: null, atMs: 1_000, retryAtMs: 1_000 }],
      progress: 1,
      progressAtMs: 1_000,
    }
    expect(jobTimeline(job, 1_000).map((entry) => `${entry.kind}:${entry.attempt}`)).toEqual(['enqueued:0', 'claimed:1', 'retried:1', 'claimed:2', 'progress:2'])
  })

  it('a job dead at its budget after a lapse, one dead by fail, and one the sweep expired', () => {
    const claims = [
      { attempt: 1, atMs: 2_000 },
      { attempt: 2, atMs: 10_000 },
    ]
    const retried = { attempt: 1, error: 'e1', stack: null, atMs: 3_000, retryAtMs: 10_000 }
    const dead = { ...base, state: 'dead' as const, attempts: 2, maxAttempts: 2, claimedAtMs: 10_000, claims, attemptErrors: [retried] }
    expect(kinds({ ...dead, lastError: deadReasonExhausted, diedAtMs: 40_000 }, 50_000)).toEqual(['enqueued@1000', 'claimed@2000', 'retried@3000', 'claimed@10000', 'lapsed@40000', 'died@40000'])
    const failed = { ...dead, lastError: 'bad payload', diedAtMs: 12_000, attemptErrors: [retried, { attempt: 2, error: 'bad payload', stack: 'at f', atMs: 12_000 }] }
    expect(kinds(failed, 50_000)).toEqual(['enqueued@1000', 'claimed@2000', 'retried@3000', 'claimed@10000', 'failed@12000', 'died@12000'])
    expect(kinds({ ...dead, lastError: deadReasonExpired, diedAtMs: 20_000 }, 50_000)).toEqual(['enqueued@1000', 'claimed@2000', 'retried@3000', 'claimed@10000', 'died@20000'])
  })

  it('a job retried from dead: its earlier life, then its return (attempt 0 in its claims), then what it waits for', () => {
    const job: JobRecord = {
      ...base,
      createdAtMs: 2_000,
      runAtMs: 2_000,
      claims: [
        { attempt: 1, atMs: 2_000 },
        { attempt: 0, atMs: 2_000 },
      ],
      attemptErrors: [{ attempt: 1, error: 'boom', stack: null, atMs: 2_000 }],
    }
    // All within one millisecond, as under a manual clock: the write order tells the story.
    expect(kinds(job, 3_000)).toEqual(['claimed@2000', 'failed@2000', 'revived@2000', 'due@2000'])
    expect(jobTimeline(job, 3_000).at(-1)?.text).toBe('due: waiting for a worker')
    // A claim of the earlier life that no handler settled lapsed by the return.
    expect(kinds({ ...job, attemptErrors: [] }, 3_000)).toEqual(['claimed@2000', 'lapsed@2000', 'revived@2000', 'due@2000'])
    // Claimed again: attempt 1 of its new life.
    const again: JobRecord = { ...job, state: 'processing', attempts: 1, claimedAtMs: 4_000, claimToken: 't', deadlineMs: 34_000, claims: [...(job.claims ?? []), { attempt: 1, atMs: 4_000 }] }
    expect(kinds(again, 5_000)).toEqual(['claimed@2000', 'failed@2000', 'revived@2000', 'claimed@4000'])
  })

  it('a delayed job says when it is due; a long life says its earlier attempts were not kept', () => {
    expect(jobTimeline({ ...base, runAtMs: 9_000 }, 2_000).map((entry) => entry.text)).toEqual(['enqueued, due at 1970-01-01 00:00:09.000 UTC', 'next attempt due (in 7 s)'])
    const attempts = jobClaimsKept + 3
    const claims = Array.from({ length: jobClaimsKept }, (_, index) => ({ attempt: attempts - jobClaimsKept + 1 + index, atMs: 10_000 * (index + 1) }))
    const long: JobRecord = { ...base, state: 'processing', attempts, claimedAtMs: claims.at(-1)?.atMs ?? null, claimToken: 't', deadlineMs: 1_000_000, maxAttempts: 20, claims }
    const entries = jobTimeline(long, 200_000)
    expect(entries.slice(0, 3).map((entry) => entry.kind)).toEqual(['enqueued', 'earlier', 'claimed'])
    expect(entries[1]?.text).toContain(`last ${jobClaimsKept} claims`)
  })
})

describe('timelineSection', () => {
  it('renders every entry escaped, in order, with the handler error as text', () => {
    const job: JobRecord = {
      ...base,
      state: 'dead',
      attempts: 1,
      claimedAtMs: 2_000,
      claims: [{ attempt: 1, atMs: 2_000 }],
      attemptErrors: [{ attempt: 1, error: '"><img src=x onerror=alert(1)>', stack: null, atMs: 2_500 }],
      lastError: '<script>alert(1)</script>',
      diedAtMs: 2_500,
    }
    const text = timelineSection(job, 3_000).toString()
    expect(text).toContain('<table id="timeline">')
    expect(text).toContain('&quot;&gt;&lt;img src=x onerror=alert(1)&gt;')
    expect(text).toContain('dead: &lt;script&gt;alert(1)&lt;/script&gt;')
    expect(text).not.toContain('<img')
    expect(text).not.toContain('<script>')
    expect([...text.matchAll(/<tr class="timeline-(\w+)">/g)].map((match) => match[1])).toEqual(['enqueued', 'claimed', 'failed', 'died'])
  })
})
