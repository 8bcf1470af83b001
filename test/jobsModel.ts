/**
 * jobsModel — a fast-check model-based test (`fc.commands`) of the whole job contract through the public API, against a small reference model, on a
 * ManualClock. Bound to memory, PGlite and PostgreSQL by test/jobsModel.*.test.ts.
 *
 * The model is independent of the implementation: a list of jobs with their state, stamps,
 * claim token and deadline, and two ordering keys — the ready time (max(runAt, enqueue time)
 * for a fresh job, the new runAt after a retry, the deadline of a lapsed claim) and the ready
 * sequence (the order in which jobs became ready: enqueue, retry, claim, heartbeat).
 *
 * Readings pinned here (reported in the notes):
 * - claim order is priority DESC, then ready time ASC, then ready sequence — so a job enqueued
 *   with a runAt already in the past is ordered by its enqueue time, and a lapsed claim by its
 *   deadline (Matching delivers in the order jobs became due);
 * - a lapsed claim at its budget died at its deadline ("max attempts exceeded") once any
 *   due-time pass ran — the model applies it after every clock advance;
 * - retry(err) draws its delay: the model checks it lies on the curve and adopts it.
 *
 * After every command the test waits for the engine's due-time passes (`mb.idle()`) and lets
 * Matching's fibers settle; time moves only by `clock.advance`.
 */
import fc from 'fast-check'
import { expect, it } from 'vitest'
import type { JobHandle, JobQueue, Matchbox } from '../src/index.ts'
import { ManualClock } from '../src/index.ts'
import { sizesOf } from '../src/kernel/Sizes.ts'
import { settle } from './harness/settle.ts'
import {
  applyExhaustion,
  die,
  isClaimable,
  isExhausted,
  isExpired,
  isLive,
  isValid,
  type Model,
  queueNames,
  type Real,
  snapshot,
  stampsOf,
  variants,
} from './jobsModelReference.ts'

async function quiesce(real: Real): Promise<void> {
  await real.mb.idle()
  await settle()
  await real.mb.idle()
}

// The handle of `name` opened with option variant `variant`.
function queueOf(real: Real, name: string, variant = 0): JobQueue {
  const queue = real.queues[name]?.[variant]
  if (queue === undefined) throw new Error(`no queue handle ${name}/${variant}`)
  return queue
}

type Command = fc.AsyncCommand<Model, Real, false>
// Counts from the most recent item, so commands keep meeting the jobs and claims just made.
const pick = <T>(items: ReadonlyArray<T>, index: number): T | undefined => (items.length === 0 ? undefined : items[items.length - 1 - (index % items.length)])

class Enqueue implements Command {
  constructor(
    readonly queue: string,
    readonly variant: number,
    readonly priority: number | undefined,
    readonly runAtOffset: number | undefined,
    readonly expiresOffset: number | undefined,
    readonly maxAttempts: number | undefined,
  ) {}
  check = () => true
  async run(model: Model, real: Real) {
    const payload = { n: model.jobs.length, tag: `${this.queue}-${this.variant}` }
    const runAt = this.runAtOffset === undefined ? undefined : model.now + this.runAtOffset
    const expiresAt = this.expiresOffset === undefined ? undefined : model.now + this.expiresOffset
    const queue = queueOf(real, this.queue, this.variant)
    const id = await queue.enqueue(payload, {
      ...(this.priority === undefined ? {} : { priority: this.priority }),
      ...(runAt === undefined ? {} : { runAt }),
      ...(expiresAt === undefined ? {} : { expiresAt }),
      ...(this.maxAttempts === undefined ? {} : { maxAttempts: this.maxAttempts }),
    })
    const stamps = stampsOf(this.variant)
    model.jobs.push({
      id,
      queue: this.queue,
      state: 'pending',
      payload,
      priority: this.priority ?? 0,
      attempts: 0,
      ...stamps,
      maxAttempts: this.maxAttempts ?? stamps.maxAttempts,
      createdAt: model.now,
      runAt: runAt ?? model.now,
      claimedAt: null,
      expiresAt: expiresAt ?? null,
      deadline: null,
      token: null,
      lastError: null,
      diedAt: null,
      readyAt: Math.max(runAt ?? model.now, model.now),
      readySeq: ++model.seq,
    })
    await quiesce(real)
  }
  toString = () => `enqueue(${this.queue}/v${this.variant}, p=${this.priority}, runAt+${this.runAtOffset}, exp+${this.expiresOffset}, max=${this.maxAttempts})`
}

/** A burst: several enqueues with the same options at the same instant (ties in claim order). */
class EnqueueBurst implements Command {
  constructor(
    readonly template: Enqueue,
    readonly count: number,
  ) {}
  check = () => true
  async run(model: Model, real: Real) {
    for (let i = 0; i < this.count; i++) await this.template.run(model, real)
  }
  toString = () => `${this.count}×${this.template.toString()}`
}

class Claim implements Command {
  constructor(readonly queue: string) {}
  check = () => true
  async run(model: Model, real: Real) {
    applyExhaustion(model)
    const candidates = model.jobs.filter((job) => job.queue === this.queue && isClaimable(job, model.now))
    candidates.sort((x, y) => y.priority - x.priority || x.readyAt - y.readyAt || x.readySeq - y.readySeq)
    const expected = candidates[0]
    const handle = await queueOf(real, this.queue).claim()
    await quiesce(real)
    if (expected === undefined) return expect(handle, 'no job is claimable').toBeNull()
    expect(handle?.id, `claim order among ${candidates.map((job) => `${job.id} (p${job.priority}, ready ${job.readyAt - model.now}, seq ${job.readySeq}, ${job.state})`).join(', ')}`).toBe(expected.id)
    if (handle === null) return
    Object.assign(expected, { state: 'processing', attempts: expected.attempts + 1, claimedAt: model.now, deadline: model.now + expected.visMs, token: handle.claimToken })
    expected.readyAt = expected.deadline as number
    expected.readySeq = ++model.seq
    expect({ attempts: handle.attempts, priority: handle.priority, payload: handle.payload, deadline: handle.deadline }).toEqual({
      attempts: expected.attempts,
      priority: expected.priority,
      payload: expected.payload,
      deadline: expected.deadline,
    })
    real.handles.push(handle)
    model.claims.push({ job: expected, token: handle.claimToken })
  }
  toString = () => `claim(${this.queue})`
}

class HandleOp implements Command {
  constructor(
    readonly op: 'ack' | 'heartbeat' | 'retry' | 'fail',
    readonly index: number,
    readonly seconds: number | undefined,
  ) {}
  check = () => true
  async run(model: Model, real: Real) {
    const handle = pick(real.handles, this.index)
    const claim = pick(model.claims, this.index)
    if (handle === undefined || claim === undefined) return
    const { job, token } = claim
    const valid = isValid(job, token, model.now)
    let result: boolean
    switch (this.op) {
      case 'ack':
        result = await handle.ack()
        if (valid) job.state = 'gone'
        break
      case 'heartbeat':
        result = await handle.heartbeat(this.seconds)
        if (valid) {
          job.deadline = model.now + (this.seconds === undefined ? job.visMs : this.seconds * 1000)
          job.readyAt = job.deadline
          job.readySeq = ++model.seq
          expect(handle.deadline).toBe(job.deadline)
        }
        break
      case 'retry':
        result = await handle.retry(new Error(`retry-${model.seq}`), this.seconds)
        if (valid && job.attempts >= job.maxAttempts) die(job, 'max attempts exceeded', model.now)
        else if (valid) {
          let runAt = model.now + (this.seconds ?? 0) * 1000
          if (this.seconds === undefined) {
            const ceiling = Math.min(3_600_000, job.backoffMs * 2 ** (job.attempts - 1))
            runAt = (await queueOf(real, job.queue).getJob(job.id))?.runAt ?? Number.NaN
            expect(runAt - model.now, `retry delay for attempt ${job.attempts}, base ${job.backoffMs}`).toBeGreaterThanOrEqual(Math.floor(ceiling / 2))
            expect(runAt - model.now).toBeLessThanOrEqual(ceiling)
          }
          Object.assign(job, { state: 'pending', runAt, deadline: null, token: null, readyAt: runAt, readySeq: ++model.seq })
        }
        break
      case 'fail':
        result = await handle.fail(new Error(`fail-${job.id}`))
        if (valid) die(job, `fail-${job.id}`, model.now)
        break
    }
    await quiesce(real)
    expect(result, `${this.op} validity`).toBe(valid)
  }
  toString = () => `${this.op}(#${this.index}${this.seconds === undefined ? '' : `, ${this.seconds}s`})`
}

class Cancel implements Command {
  constructor(readonly index: number) {}
  check = () => true
  async run(model: Model, real: Real) {
    const job = pick(model.jobs, this.index)
    if (job === undefined) return
    const cancelled = await queueOf(real, job.queue).cancel(job.id)
    await quiesce(real)
    expect(cancelled).toBe(isLive(job))
    if (isLive(job)) job.state = 'gone'
  }
  toString = () => `cancel(#${this.index})`
}

class GetJob implements Command {
  constructor(readonly index: number) {}
  check = () => true
  async run(model: Model, real: Real) {
    const job = pick(model.jobs, this.index)
    if (job === undefined) return
    // The model does not follow handler errors (test/jobsService.test.ts and the store
    // conformance suite do), nor the attempt history made of them, nor the claims kept for the
    // job's timeline (the conformance suite checks them).
    const got = await queueOf(real, job.queue).getJob(job.id)
    const { lastHandlerError: _handlerError, attemptErrors: _attemptErrors, claims: _claims, ...rest } = got ?? { lastHandlerError: undefined, attemptErrors: undefined, claims: undefined }
    expect(got === null ? null : rest).toEqual(snapshot(job))
  }
  toString = () => `getJob(#${this.index})`
}

class AckBatch implements Command {
  constructor(readonly indexes: ReadonlyArray<number>) {}
  check = () => true
  async run(model: Model, real: Real) {
    if (real.handles.length === 0) return
    const chosen = this.indexes.map((index) => real.handles.length - 1 - (index % real.handles.length))
    const valid = new Set(chosen.filter((index) => isValid((model.claims[index] as Model['claims'][number]).job, (model.claims[index] as Model['claims'][number]).token, model.now)).map((index) => model.claims[index]?.job))
    const acked = await queueOf(real, 'a').ackBatch(chosen.map((index) => real.handles[index] as JobHandle))
    await quiesce(real)
    expect(acked).toBe(valid.size)
    for (const job of valid) if (job !== undefined) job.state = 'gone'
  }
  toString = () => `ackBatch(${this.indexes.join(',')})`
}

class Sweep implements Command {
  constructor(readonly queue: string) {}
  check = () => true
  async run(model: Model, real: Real) {
    let purged = 0
    for (const job of model.jobs) {
      if (job.queue !== this.queue || job.state !== 'dead' || job.retentionMs === null) continue
      if ((job.diedAt as number) + job.retentionMs <= model.now) {
        job.state = 'gone'
        purged++
      }
    }
    let dead = 0
    for (const job of model.jobs) {
      if (job.queue !== this.queue || !isLive(job) || !isExpired(job, model.now)) continue
      if (isExhausted(job, model.now)) die(job, 'max attempts exceeded', job.deadline as number)
      else die(job, 'expired', model.now)
      dead++
    }
    const swept = await queueOf(real, this.queue).sweepExpired()
    await quiesce(real)
    expect(swept).toEqual({ dead, purged })
  }
  toString = () => `sweep(${this.queue})`
}

class Advance implements Command {
  constructor(readonly ms: number) {}
  check = () => true
  async run(model: Model, real: Real) {
    real.clock.advance(this.ms)
    model.now += this.ms
    await quiesce(real)
    applyExhaustion(model)
  }
  toString = () => `advance(${this.ms})`
}

/**
 * Advances the clock to a moment that matters to one job — its runAt, deadline, expiry or
 * retention end — plus `delta` ms (−1, 0 or +1), so boundaries are hit exactly.
 */
class AdvanceToEvent implements Command {
  constructor(
    readonly index: number,
    readonly event: number,
    readonly delta: number,
  ) {}
  check = () => true
  async run(model: Model, real: Real) {
    const job = this.event === 1 ? pick(model.claims, this.index)?.job : pick(model.jobs, this.index)
    if (job === undefined) return
    const times = [job.runAt, job.deadline, job.expiresAt, job.diedAt === null || job.retentionMs === null ? null : job.diedAt + job.retentionMs]
    const target = times[this.event % times.length]
    if (target === null || target === undefined || target + this.delta <= model.now) return
    await new Advance(target + this.delta - model.now).run(model, real)
  }
  toString = () => `advanceToEvent(#${this.index}, ${this.event}, ${this.delta})`
}

/** Every command, weighted toward enqueues, claims and handle operations. */
export function commandsArbitrary(maxCommands: number) {
  const queue = fc.constantFrom(...queueNames)
  const index = fc.oneof(fc.nat({ max: 3 }), fc.nat({ max: 40 }))
  const enqueue = fc
    .tuple(
      queue,
      fc.integer({ min: 0, max: variants.length - 1 }),
      fc.option(fc.integer({ min: 0, max: 9 }), { nil: undefined }),
      // A few shared offsets, so jobs become due together and ties are broken by ready order.
      fc.option(fc.oneof(fc.constantFrom(-1_000, 1_000, 5_000), fc.integer({ min: -5_000, max: 60_000 })), { nil: undefined, freq: 2 }),
      fc.option(fc.integer({ min: 1_000, max: 200_000 }), { nil: undefined, freq: 2 }),
      fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
    )
    .map(([q, variant, priority, runAt, expires, max]) => new Enqueue(q, variant, priority, runAt, expires, max))
  const handleOp = fc
    .tuple(
      fc.constantFrom('ack', 'heartbeat', 'retry', 'fail') as fc.Arbitrary<'ack' | 'heartbeat' | 'retry' | 'fail'>,
      index,
      fc.option(fc.integer({ min: 0, max: 600 }), { nil: undefined }),
    )
    .map(([op, i, seconds]) => new HandleOp(op, i, op === 'heartbeat' && seconds === 0 ? 1 : seconds))
  const advanceToEvent = fc.tuple(index, fc.oneof(fc.constant(1), fc.nat({ max: 3 })), fc.constantFrom(-1, 0, 0, 1)).map(([i, event, delta]) => new AdvanceToEvent(i, event, delta))
  return fc.commands(
    [
      enqueue,
      enqueue,
      fc.tuple(enqueue, fc.integer({ min: 2, max: 4 })).map(([template, count]) => new EnqueueBurst(template, count)),
      queue.map((q) => new Claim(q)),
      queue.map((q) => new Claim(q)),
      queue.map((q) => new Claim(q)),
      queue.map((q) => new Claim(q)),
      handleOp,
      handleOp,
      handleOp,
      handleOp,
      advanceToEvent,
      advanceToEvent,
      advanceToEvent,
      index.map((i) => new Cancel(i)),
      index.map((i) => new GetJob(i)),
      index.map((i) => new GetJob(i)),
      fc.array(index, { maxLength: 4 }).map((indexes) => new AckBatch(indexes)),
      queue.map((q) => new Sweep(q)),
      fc.oneof(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 2_000, max: 400_000 })).map((ms) => new Advance(ms)),
    ],
    { maxCommands, size: 'max' },
  )
}

/** Builds the real side for one run: opens an engine and its queue handles. */
export async function makeReal(open: (clock: ManualClock, seed: number) => Promise<Matchbox>, seed: number): Promise<{ model: Model; real: Real }> {
  const start = 1_700_000_000_000
  const clock = new ManualClock(start)
  const mb = await open(clock, seed)
  const queues: Record<string, JobQueue[]> = {}
  for (const name of queueNames) queues[name] = variants.map((options) => mb.queue(name, options))
  return { model: { now: start, seq: 0, jobs: [], claims: [] }, real: { mb, clock, queues, handles: [] } }
}

/** Real time one command may take before the run fails as hung (it names the command). */
const commandWatchdogMs = 20_000

// Wraps a command so a hang fails the run with the command's name instead of timing out the file.
function watched(command: Command): Command {
  return {
    check: (model) => command.check(model),
    run: (model, real) =>
      new Promise<void>((resolve, reject) => {
        // The engine's sizes say what it was still holding (claims waiting, hand-overs, due waiters).
        const timer = setTimeout(() => reject(new Error(`hung for ${commandWatchdogMs} ms in ${command.toString()}; engine sizes ${JSON.stringify(sizesOf(real.mb))}`)), commandWatchdogMs)
        command.run(model, real).then(
          () => {
            clearTimeout(timer)
            resolve()
          },
          (error: unknown) => {
            clearTimeout(timer)
            reject(error)
          },
        )
      }),
    toString: () => command.toString(),
  }
}

/**
 * Registers the model property: `runs` runs of up to `maxCommands` commands, each on a fresh
 * engine from `open`. The seed comes from `SIM_SEED` or is drawn, and is printed first;
 * `SIM_PATH` (fast-check's path from a failure) replays one run of that seed.
 */
export function describeJobsModel(name: string, open: (clock: ManualClock, seed: number, run: number) => Promise<Matchbox>, options: { readonly runs: number; readonly maxCommands: number }): void {
  const seed = process.env.SIM_SEED ? Number(process.env.SIM_SEED) : Math.floor(Math.random() * 2 ** 31)
  console.log(`jobs model (${name}): seed ${seed} (replay with SIM_SEED=${seed})`)
  it(`the job engine on ${name} behaves like the reference model (seed ${seed})`, async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(commandsArbitrary(options.maxCommands), fc.integer(), async (commands, engineSeed) => {
        const { model, real } = await makeReal((clock, s) => open(clock, s, ++run), engineSeed)
        try {
          await fc.asyncModelRun(() => ({ model, real }), [...commands].map(watched))
        } finally {
          await real.mb.close()
        }
      }),
      { numRuns: options.runs, seed, verbose: 1, ...(process.env.SIM_PATH ? { path: process.env.SIM_PATH } : {}) },
    )
  })
}
