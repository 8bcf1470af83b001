/**
 * JobTimeline on a real end-to-end run (memory store): some job's life reads enqueue →
 * claim → ack in commit order, its claim bar ends at the ack, every work handler's run is drawn
 * on its job's row with the claim it was given, and the page draws them and rings a job a
 * violation names; an engine that joins later gets a lane.
 */
import { describe, expect, it } from 'vitest'
import { jobsHostIdsOf, runJobsSeed } from './JobsSimulation.ts'
import { JobsTimelineRecorder, renderJobsTimelineHtml } from './JobTimeline.ts'

describe('JobTimeline', () => {
  it("records a job's enqueue, claim and ack in order, and the page draws them", async () => {
    const run = { seed: 2, store: 'memory' as const }
    const recorder = new JobsTimelineRecorder(jobsHostIdsOf(run))
    const { result } = await runJobsSeed({ ...run, onJobs: recorder.onJobs, onEvent: recorder.onEvent })
    expect(result.ok).toBe(true)
    const data = recorder.data()
    // The world's hosts first, in order (an engine that joins later comes after them).
    expect(data.hosts.slice(0, jobsHostIdsOf(run).length)).toEqual(jobsHostIdsOf(run))
    expect(data.healOrder).not.toBeNull()
    const acked = data.jobs.filter((life) => life.end === 'acked')
    expect(acked.length).toBeGreaterThan(0)
    const life = acked[0] as (typeof acked)[number]
    const marks = data.marks.filter((mark) => mark.jobId === life.id)
    const enqueue = marks.find((mark) => mark.kind === 'enqueue')
    const ack = marks.find((mark) => mark.kind === 'ack' && mark.tag === 'ok')
    const claimBeforeAck = marks.filter((mark) => mark.kind === 'claim' && ack !== undefined && mark.order < ack.order).at(-1)
    expect(enqueue).toBeDefined()
    expect(claimBeforeAck).toBeDefined()
    expect(ack).toBeDefined()
    expect((enqueue?.order ?? Infinity) < (claimBeforeAck?.order ?? -1)).toBe(true)
    expect((claimBeforeAck?.order ?? Infinity) < (ack?.order ?? -1)).toBe(true)
    expect(enqueue?.order).toBe(life.fromOrder)
    const span = data.claims.find((claim) => claim.jobId === life.id && claim.fromOrder === claimBeforeAck?.order)
    expect(span?.toOrder).toBe(ack?.order)
    expect(span?.hostId).toBe(claimBeforeAck?.hostId)
    // Every record has a time, in commit order, and time never runs backwards.
    expect(data.timeAt).toHaveLength(data.orderEnd)
    expect(data.timeAt.every((at, i) => i === 0 || at >= (data.timeAt[i - 1] as number))).toBe(true)

    // Every handler run is on its job's row, from its start to its return, with the claim it was given.
    expect(data.handlers.length).toBeGreaterThan(0)
    for (const run of data.handlers) {
      expect(run.toOrder).toBeGreaterThanOrEqual(run.fromOrder)
      expect(data.claims.some((claim) => claim.jobId === run.jobId && claim.claimToken === run.claimToken)).toBe(true)
    }
    const handled = data.handlers[0] as (typeof data.handlers)[number]

    const html = renderJobsTimelineHtml({ title: 'seed 2', summary: [], violations: [`claims reach a worker: job ${life.id}'s claim …`], highlightJobIds: [life.id], data })
    expect(html).toContain(`${handled.jobId}: handler on ${handled.hostId} for claim ${handled.claimToken}`)
    expect(html).toContain(`${life.id}: named by a violation`)
    expect(html).toContain('claims reach a worker: job')
    expect(html).toContain(`${life.queue} ${life.id}`)
    expect(html).toContain(`enqueued ${life.id}`)
    expect(html).toContain(`claimed ${life.id}`)
    expect(html).toContain(`acked ${life.id}`)
  })

  it('gives an engine that joins after the heal a lane of its own', async () => {
    // Seed 1 moves membership once healed: a new worker process joins.
    const run = { seed: 1, store: 'memory' as const }
    const recorder = new JobsTimelineRecorder(jobsHostIdsOf(run))
    await runJobsSeed({ ...run, onJobs: recorder.onJobs, onEvent: recorder.onEvent })
    const data = recorder.data()
    const joined = data.hosts.filter((host) => !jobsHostIdsOf(run).includes(host))
    expect(joined).toHaveLength(1)
    expect(data.marks.some((mark) => mark.hostId === joined[0] && mark.kind === 'view')).toBe(true)
  })
})
