/**
 * JobClients — what the end-to-end world's users do through the public job API: producers
 * enqueue (priority, runAt, expiresAt, maxAttempts, and on some seeds concurrency and fairness
 * keys, drawn from the seed), workers claim and then
 * ack, heartbeat, retry (with or without a delay), fail, drop the handle (the claim lapses) or
 * act late (after the deadline); others cancel, ack in batches, read jobs and sweep; after the
 * heal, producers may send waves of several jobs at one instant, headed by one tenant's (some
 * behind a job whose key a live job holds); operators
 * pause and resume queues and cancel jobs that handlers are running (when the world says so). Every call
 * is fire-and-forget: it parks in the gate and settles when the world runs its I/O. What each
 * call returned is reported to the job checkers.
 *
 * Invariants: a client only acts through a live host's current incarnation; handles die with
 * the process that claimed them; claims in flight per host are bounded; on a producer host
 * clients only enqueue. A claim goes, with the seed's `claimElsewhere` chance, to a worker whose
 * own view gives it none of the queue's partitions, so the poll is forwarded to the owner.
 *
 * Does not: move time, run I/O or inject faults (JobsWorld.ts does).
 *
 * Length: past 400 lines, as one class: every client action shares the tracking of calls
 * in flight and the handles held, which live here alone.
 */
import type { JobHandle } from '../../src/jobs/JobHandle.ts'
import type { ManualClock } from '../../src/kernel/Clock.ts'
import type { Decisions } from '../core/Decisions.ts'
import type { JobCheckers } from './JobCheckers.ts'
import type { JobsHost } from './JobsHost.ts'
import { type JobsSwarmOptions, simTenants } from './JobsSwarm.ts'

/** A claimed job a worker holds. */
export interface Held {
  readonly host: JobsHost
  readonly incarnation: number
  readonly handle: JobHandle
  /** Waiting for the deadline to pass before acking. */
  late: boolean
  /** An operation is in flight. */
  busy: boolean
}

/** What the clients need from the world. */
export interface JobClientsDeps {
  readonly options: JobsSwarmOptions
  readonly decide: Decisions
  readonly clock: ManualClock
  readonly hosts: ReadonlyArray<JobsHost>
  readonly checkers: JobCheckers
  /** A claim returned a handle for this job and token (the handler checkers: the claim is held). */
  readonly holds: (id: string, claimToken: string) => void
  /** A lone claim of `host`'s incarnation `incarnation` was answered job `id` of `queue` (the dispatch checker: no job ahead of it kept there). */
  readonly answered: (host: JobsHost, incarnation: number, queue: string, id: string) => void
  readonly log: (line: string) => void
}

// A worker process runs a few claims at once, as `work({ concurrency })` would.
const claimsPerHostMax = 3
// Keys are drawn from this few, so that they repeat while their holder is live.
const keysMax = 4
// Chance that an enqueue is a batch (`enqueueMany` of 2…4), and that a job carries a key.
const enqueueManyChance = 0.3
const keyChance = 0.3
// A wave's head of one tenant's jobs, the other jobs behind it, and how much later than now a
// wave that is not due at once comes due.
const waveHeadMin = 2
const waveHeadMax = 4
const waveTailMin = 1
const waveTailMax = 6
const waveLaterMsMin = 200
const waveLaterMsMax = 3_000
// The priority of a wave's head when it is urgent (ahead of every other due job of its queue).
const waveHeadPriority = 9
// A keyed wave's job for later is scheduled this far ahead: past the longest quiet spell between
// waves, so the next keyed wave finds its key held by a live job, and past the last of a world's
// waves (at most eight, each at most eight seconds after the last), so it takes no worker from one
// and comes due as idle workers have waited about the minute after which an engine drops a
// queue's dispatch that seems to hold nothing (`dispatchIdleUnloadMs`).
const keyedWaveLaterMs = 60_000

/** The options one simulated enqueue passes. */
interface DrawnEnqueue {
  priority?: number
  runAt?: number
  expiresAt?: number
  maxAttempts?: number
  key?: string
  concurrencyKey?: string
  fairnessKey?: string
  fairnessWeight?: number
}

/** The clients of one world. */
export class JobClients {
  readonly held: Held[] = []
  /** Handles claims have returned so far. */
  claimed = 0
  readonly #deps: JobClientsDeps
  readonly #queueNames: ReadonlyArray<string>
  readonly #claims = new Map<string, number>()
  readonly #calls = new Set<{ readonly host: JobsHost; readonly incarnation: number; readonly what: string }>()
  #payloads = 0
  // The job key of each job enqueued with one, by id (as its enqueue answered).
  readonly #keys = new Map<string, string>()

  constructor(deps: JobClientsDeps) {
    this.#deps = deps
    this.#queueNames = Object.keys(deps.options.queues)
  }

  /** Which client action runs next, by the seed's weights; false when nothing could run. */
  act(): boolean {
    const { weights } = this.#deps.options
    const choice = this.#deps.decide.weighted([weights.enqueue, weights.claim, weights.act, weights.cancel, weights.ackBatch, weights.getJob, weights.sweep])
    // Producers' clients only enqueue.
    const host = this.#aliveHost(choice !== 0)
    if (host === undefined) return false
    switch (choice) {
      case 0:
        return this.enqueue(host)
      case 1: {
        const queue = this.#deps.decide.pick(this.#queueNames)
        return this.claim(this.#claimHost(host, queue), queue, this.#deps.decide.pick([0, 0, 0, 500, 2_000]))
      }
      case 2:
        return this.#handleAction()
      case 3:
        return this.#cancel(host)
      case 4:
        return this.#ackBatch()
      case 5:
        return this.#getJob(host)
      default:
        return this.sweep(host, this.#deps.decide.pick(this.#queueNames))
    }
  }

  /** A host crashed: its handles and claims in flight are gone with it. */
  forget(host: JobsHost): void {
    for (let i = this.held.length - 1; i >= 0; i--) if (this.held[i]?.host === host) this.held.splice(i, 1)
    for (const call of this.#calls) if (call.host === host) this.#calls.delete(call)
    this.#claims.delete(host.id)
  }

  /**
   * A producer enqueues through `host`: one job, or a batch of a few. Drawn from `decide`, the
   * world's stream unless the caller names another (the producers that go on after the heal).
   */
  enqueue(host: JobsHost, decide: Decisions = this.#deps.decide): boolean {
    const queue = decide.pick(this.#queueNames)
    if (!decide.chance(enqueueManyChance)) this.#enqueueOne(host, queue, this.#drawJob(decide))
    else this.#enqueueBatch(host, queue, Array.from({ length: decide.int(2, 4) }, () => this.#drawJob(decide)))
    return true
  }

  /**
   * A wave (the world's `healedWaves`): several jobs of `queue` enqueued through `host` at one
   * instant, as one batch or one by one — a head of one tenant's jobs, then other tenants' and
   * unkeyed ones — each carrying its tenant as concurrency key on a queue limited per key, as
   * fairness key on a seed that names fairness keys (else no key), the head sometimes urgent (a
   * priority above every other job); all due now or all at one moment a little later. Drawn from
   * `decide` (the waves' own stream).
   */
  enqueueWave(host: JobsHost, queue: string, decide: Decisions): void {
    const limited = this.#deps.options.queues[queue]?.concurrencyPerKey !== undefined
    const fair = this.#deps.options.keyChances.fairnessKey > 0
    const head = decide.pick(simTenants)
    const headCount = decide.int(waveHeadMin, waveHeadMax)
    const tenants = [...Array.from({ length: headCount }, () => head), ...Array.from({ length: decide.int(waveTailMin, waveTailMax) }, () => (decide.chance(0.5) ? decide.pick(simTenants.filter((tenant) => tenant !== head)) : null))]
    const runAt = decide.chance(0.5) ? {} : { runAt: this.#deps.clock.now() + decide.int(waveLaterMsMin, waveLaterMsMax) }
    const urgent = decide.chance(0.5) ? { priority: waveHeadPriority } : {}
    const jobs = tenants.map((tenant, index) => ({
      n: ++this.#payloads,
      options: { ...runAt, ...(index < headCount ? urgent : {}), ...(tenant === null ? {} : limited ? { concurrencyKey: tenant } : fair ? { fairnessKey: tenant } : {}) } as DrawnEnqueue,
    }))
    if (decide.chance(0.5)) this.#enqueueBatch(host, queue, jobs, 'wave: ')
    else for (const job of jobs) this.#enqueueOne(host, queue, job, 'wave: ')
  }

  /**
   * A keyed wave's own jobs (JobsSwarm.ts `keyedWaves`), enqueued one by one through `host`: a
   * job due now under `heldKey` (a key a live job holds), unless null — issued before the wave's,
   * so that it is the enqueue eager dispatch sets an idle claim aside for — or, once the wave's
   * are issued, a job scheduled `keyedWaveLaterMs` ahead under `laterKey`, which a later keyed wave
   * may carry as its held key.
   */
  enqueueKeyed(host: JobsHost, queue: string, key: string, later: boolean): void {
    const options = later ? { key, runAt: this.#deps.clock.now() + keyedWaveLaterMs } : { key }
    this.#enqueueOne(host, queue, { n: ++this.#payloads, options }, 'keyed wave: ')
  }

  /**
   * One job of `queue` due now, with no key or limit, through `host` (a leave's race,
   * MembershipMoves.ts): a job eager dispatch may insert claimed for an idle worker of `host`, or
   * that an enqueue may hand to another engine's waiting claim.
   */
  enqueueDueNow(host: JobsHost, queue: string, prefix: string): void {
    this.#enqueueOne(host, queue, { n: ++this.#payloads, options: {} }, prefix)
  }

  /** The job key `id` was enqueued with, if any and if the enqueue's answer was heard. */
  keyOf(id: string): string | undefined {
    return this.#keys.get(id)
  }

  // One job enqueued through `host`; its log line starts with `prefix`.
  #enqueueOne(host: JobsHost, queue: string, { n, options }: { readonly n: number; readonly options: DrawnEnqueue }, prefix = ''): void {
    this.#deps.log(`${prefix}enqueue #${n} → ${host.id} ${queue} ${JSON.stringify(options)}`)
    this.#track(host, `enqueue #${n}`, host.queue(queue).enqueue({ n }, options), (id) => {
      if (options.key !== undefined) this.#keys.set(id, options.key)
      this.#deps.checkers.clientEnqueued(id)
      this.#deps.log(`enqueued #${n} as ${id}`)
    })
  }

  // Jobs enqueued through `host` as one batch; its log line starts with `prefix`.
  #enqueueBatch(host: JobsHost, queue: string, jobs: ReadonlyArray<{ readonly n: number; readonly options: DrawnEnqueue }>, prefix = ''): void {
    this.#deps.log(`${prefix}enqueueMany ${jobs.map((job) => `#${job.n}`).join(',')} → ${host.id} ${queue} ${JSON.stringify(jobs.map((job) => job.options))}`)
    this.#track(host, `enqueueMany #${jobs[0]?.n}`, host.queue(queue).enqueueMany(jobs.map((job) => ({ payload: { n: job.n }, ...job.options }))), (ids) => {
      ids.forEach((id, index) => {
        const key = jobs[index]?.options.key
        if (key !== undefined) this.#keys.set(id, key)
      })
      for (const id of ids) this.#deps.checkers.clientEnqueued(id)
      this.#deps.log(`enqueuedMany ${jobs.map((job) => `#${job.n}`).join(',')} as ${ids.join(',')}`)
    })
  }

  // One job's payload number and enqueue options, drawn from the seed's chances (for a single
  // enqueue or one job of a batch alike).
  #drawJob(decide: Decisions): { readonly n: number; readonly options: DrawnEnqueue } {
    const { clock, options } = this.#deps
    const chances = options.enqueueChances
    const keys = options.keyChances
    const now = clock.now()
    const drawn = {
      ...(decide.chance(chances.priority) ? { priority: decide.int(0, 9) } : {}),
      ...(decide.chance(chances.runAt) ? { runAt: now + decide.int(-1_000, 20_000) } : {}),
      ...(decide.chance(chances.expiresAt) ? { expiresAt: now + decide.int(500, 60_000) } : {}),
      ...(decide.chance(chances.maxAttempts) ? { maxAttempts: decide.int(1, 4) } : {}),
      ...(decide.chance(keyChance) ? { key: `key-${decide.int(0, keysMax - 1)}` } : {}),
      // Drawn last, and only on seeds that name keys, so that every other seed draws what it drew before.
      ...(decide.chance(keys.concurrencyKey) ? { concurrencyKey: decide.pick(simTenants) } : {}),
      ...(decide.chance(keys.fairnessKey) ? { fairnessKey: decide.pick(simTenants), ...(decide.chance(0.5) ? { fairnessWeight: decide.pick([0.5, 2, 8]) } : {}) } : {}),
    }
    return { n: ++this.#payloads, options: drawn }
  }

  /**
   * A worker on `host` claims from `queue`; false when the host has enough claims in flight.
   * With `ackAtOnce` (the final phase) the worker acks the moment the claim returns.
   */
  claim(host: JobsHost, queue: string, waitMs: number, ackAtOnce = false): boolean {
    const inFlight = this.#claims.get(host.id) ?? 0
    if (inFlight >= claimsPerHostMax) return false
    this.#claims.set(host.id, inFlight + 1)
    this.#deps.log(`claim → ${host.id} ${queue} wait ${waitMs}`)
    const incarnation = host.incarnation
    const settled = () => {
      if (host.incarnation === incarnation) this.#claims.set(host.id, (this.#claims.get(host.id) ?? 1) - 1)
    }
    this.#track(
      host,
      `claim ${queue}`,
      host.queue(queue).claim({ waitMs }),
      (handle) => {
        settled()
        if (handle === null) return
        this.claimed++
        this.#deps.checkers.clientClaimed(handle.id, handle.attempts, handle.maxAttempts)
        this.#deps.holds(handle.id, handle.claimToken)
        this.#deps.answered(host, incarnation, queue, handle.id)
        this.#deps.log(`claimed ${handle.id} on ${host.id}: attempt ${handle.attempts} of ${handle.maxAttempts}, deadline @${handle.deadline}`)
        const held = { host, incarnation, handle, late: false, busy: false }
        this.held.push(held)
        if (ackAtOnce) this.#operate(held, 'ack')
      },
      settled,
    )
    return true
  }

  /** Acks every held handle not busy (the final phase): valid ones succeed. */
  ackAll(): void {
    for (const held of this.held.filter((h) => !h.busy)) this.#operate(held, 'ack')
  }

  /** Sweeps `queue` through `host`. */
  sweep(host: JobsHost, queue: string): boolean {
    this.#deps.log(`sweep → ${host.id} ${queue}`)
    this.#track(host, `sweep ${queue}`, host.queue(queue).sweepExpired(), (result) => this.#deps.log(`swept ${queue}: ${result.dead} dead, ${result.purged} purged`))
    return true
  }

  #handleAction(): boolean {
    const now = this.#deps.clock.now()
    const ready = this.held.filter((held) => !held.busy && (!held.late || now >= held.handle.deadline))
    if (ready.length === 0) return false
    const held = this.#deps.decide.pick(ready)
    if (held.late) return this.#operate(held, 'ack')
    const a = this.#deps.options.actions
    const op = (['ack', 'heartbeat', 'retry', 'fail', 'drop', 'late'] as const)[this.#deps.decide.weighted([a.ack, a.heartbeat, a.retry, a.fail, a.drop, a.late])] ?? 'ack'
    if (op === 'drop') {
      this.#deps.log(`drop ${held.handle.id} (its claim will lapse)`)
      this.#release(held)
      return true
    }
    if (op === 'late') {
      this.#deps.log(`late ${held.handle.id}: will ack after its deadline @${held.handle.deadline}`)
      held.late = true
      return true
    }
    return this.#operate(held, op)
  }

  #operate(held: Held, op: 'ack' | 'heartbeat' | 'retry' | 'fail'): boolean {
    const { decide, clock, checkers } = this.#deps
    const { handle } = held
    const issuedAtMs = clock.now()
    const deadlineMs = handle.deadline
    let call: Promise<boolean>
    let detail = ''
    if (op === 'heartbeat') {
      const extendS = decide.chance(0.5) ? decide.int(1, 10) : undefined
      detail = extendS === undefined ? '' : ` ${extendS}s`
      call = handle.heartbeat(extendS)
    } else if (op === 'retry') {
      const delayS = decide.chance(0.5) ? decide.int(0, 5) : undefined
      detail = delayS === undefined ? '' : ` ${delayS}s`
      call = handle.retry(new Error('simulated failure'), delayS)
    } else call = op === 'ack' ? handle.ack() : handle.fail(new Error('simulated fatal failure'))
    this.#deps.log(`${op} ${handle.id}${detail} on ${held.host.id} (deadline @${deadlineMs})`)
    held.busy = true
    const done = () => this.#release(held)
    this.#track(
      held.host,
      `${op} ${handle.id}`,
      call,
      (ok) => {
        checkers.clientOp(op, handle.id, issuedAtMs, deadlineMs, ok)
        this.#deps.log(`${op} ${handle.id} → ${ok}`)
        // A renewed claim stays with its worker; anything else ends the worker's hold.
        if (op === 'heartbeat' && ok) held.busy = false
        else done()
      },
      done,
    )
    return true
  }

  #ackBatch(): boolean {
    const free = this.held.filter((held) => !held.busy)
    if (free.length === 0) return false
    const chosen = [...new Set(Array.from({ length: this.#deps.decide.int(1, 3) }, () => this.#deps.decide.pick(free)))]
    const host = (chosen[0] as Held).host
    const issuedAtMs = this.#deps.clock.now()
    const deadlines = chosen.map((held) => held.handle.deadline)
    for (const held of chosen) held.busy = true
    this.#deps.log(`ackBatch → ${host.id} ${chosen.map((held) => held.handle.id).join(',')}`)
    const done = () => {
      for (const held of chosen) this.#release(held)
    }
    const queue = this.#deps.decide.pick(this.#queueNames)
    this.#track(
      host,
      'ackBatch',
      host.queue(queue).ackBatch(chosen.map((held) => held.handle)),
      (count) => {
        this.#deps.checkers.clientBatch(chosen.map((held) => held.handle.id), issuedAtMs, deadlines, count)
        this.#deps.log(`ackBatch → ${count}`)
        done()
      },
      done,
    )
    return true
  }

  #cancel(host: JobsHost): boolean {
    const ids = this.#deps.checkers.jobIds()
    if (ids.length === 0) return false
    const id = this.#deps.decide.pick(ids)
    const queue = this.#deps.checkers.queueOf(id) as string
    this.#deps.log(`cancel → ${host.id} ${id}`)
    this.#track(host, `cancel ${id}`, host.queue(queue).cancel(id), (ok) => {
      if (ok) this.#deps.checkers.clientCancelled(id)
      this.#deps.log(`cancel ${id} → ${ok}`)
    })
    return true
  }

  /** An operator pauses (`pause`) or resumes `queue` through `host` (the world draws which, on its control stream). */
  control(host: JobsHost, queue: string, pause: boolean): void {
    const op = pause ? 'pause' : 'resume'
    this.#deps.log(`${op} → ${host.id} ${queue}`)
    this.#track(host, `${op} ${queue}`, pause ? host.queue(queue).pause() : host.queue(queue).resume(), (changed) => this.#deps.log(`${op} ${queue} → ${changed}`))
  }

  /** An operator cancels job `id` of `queue` through `host` while a work loop's handler runs it. */
  cancelRunning(host: JobsHost, queue: string, id: string): void {
    this.#deps.log(`cancel running → ${host.id} ${id}`)
    this.#track(host, `cancel ${id}`, host.queue(queue).cancel(id), (ok) => {
      if (ok) this.#deps.checkers.clientCancelled(id)
      this.#deps.log(`cancel ${id} → ${ok}`)
    })
  }

  #getJob(host: JobsHost): boolean {
    const ids = this.#deps.checkers.jobIds()
    if (ids.length === 0) return false
    const id = this.#deps.decide.pick(ids)
    this.#deps.log(`getJob → ${host.id} ${id}`)
    this.#track(host, `getJob ${id}`, host.queue(this.#deps.checkers.queueOf(id) as string).getJob(id), (job) => this.#deps.log(`getJob ${id} → ${job?.state ?? 'null'}`))
    return true
  }

  /** Client calls of live incarnations that have not settled yet (the final phase waits for them). */
  unsettled(): string[] {
    return [...this.#calls].filter((call) => call.host.incarnation === call.incarnation).map((call) => `${call.what} on ${call.host.id}`)
  }

  #release(held: Held): void {
    held.busy = false
    const index = this.held.indexOf(held)
    if (index >= 0) this.held.splice(index, 1)
  }

  #aliveHost(workersOnly: boolean): JobsHost | undefined {
    const alive = this.#deps.hosts.filter((host) => host.alive && (!workersOnly || host.role === 'worker'))
    return alive.length === 0 ? undefined : this.#deps.decide.pick(alive)
  }

  // With the seed's chance, a live worker owning none of `queue`'s partitions by its own view.
  #claimHost(drawn: JobsHost, queue: string): JobsHost {
    if (!this.#deps.decide.chance(this.#deps.options.claimElsewhere)) return drawn
    const elsewhere = this.#deps.hosts.filter((host) => host.alive && host.role === 'worker' && host.ownedPartitions(queue).length === 0)
    return elsewhere.length === 0 ? drawn : this.#deps.decide.pick(elsewhere)
  }

  // Runs `call`'s continuation only if the host is still the incarnation that issued it: a dead
  // process hears nothing. Failures are the engine's typed errors (an outage, a crash): ambiguous.
  #track<T>(host: JobsHost, what: string, call: Promise<T>, onValue: (value: T) => void, onError: () => void = () => {}): void {
    const incarnation = host.incarnation
    const entry = { host, incarnation, what }
    this.#calls.add(entry)
    // Calls of a crashed incarnation never settle: drop them from the set when it dies.
    call.then(
      (value) => {
        this.#calls.delete(entry)
        if (host.incarnation === incarnation) onValue(value)
      },
      (error: unknown) => {
        this.#calls.delete(entry)
        if (host.incarnation !== incarnation) return
        this.#deps.log(`client call on ${host.id} failed: ${(error as { _tag?: string })._tag ?? String(error)}`)
        onError()
      },
    )
  }
}
