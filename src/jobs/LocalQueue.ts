/**
 * LocalQueue — the claimed jobs a `work({ batch })` worker holds ahead of its handlers, in claim
 * order (graphile-worker's local queue). It holds at most `batch` jobs, counting the claims in
 * flight, and is filled two ways:
 *
 * - **Several at once**, while the store can serve them (`canClaimSeveral`: this engine delivers
 *   the queue and it is not drained): a claim loop takes up to the free room in one statement,
 *   once the room reaches half the queue or the queue ran empty. Up to `localClaimsInFlightMax`
 *   such statements are at the store at once, so the server claims the next jobs while this
 *   process decodes and runs the last ones (rows one statement holds, the other skips). A short
 *   answer means no other row is due, and the loops go on to park.
 * - **One poll per free slot** otherwise: each claim loop parks a poll (`claimNext`), which an
 *   enqueue or a due-time pass serves (for every poll waiting, in one statement) or another
 *   engine serves by forwarding.
 *
 * Handler loops take jobs in order and settle each (ack or retry) without waiting for it: at
 * most `batch` settles are in flight, and a handler that finishes a job beyond that waits for
 * one to land. The ack of a job finished while a several-job claim is at the store rides on the
 * next one: the returning claim loop sends it at once, whatever the room, when no other claim is
 * at the store; while another is, the acks wait for it to return (or for a claim the room calls
 * for anyway), so a statement does not go out for the few slots freed meanwhile. So while jobs
 * flow, each statement both acks what the handlers finished and claims about half the queue, and
 * an ack waits at most for the claims at the store. Acks
 * that cannot ride (no claim at the store, or the store cannot serve several any more) go alone,
 * batched with the engine's other acks. A job whose claim lapsed while it waited is skipped (it
 * is delivered again; running it could only end in a refused ack).
 *
 * Loops sleep on separate lists, so a claimed job wakes one handler and a freed slot wakes one
 * claim loop, which wakes the next while there is more to claim: a loop is woken only when
 * there is work for it.
 *
 * Once `running()` turns false the claim loops end (`wake` ends their sleep), the handler loops
 * run what is left, and `run` resolves once every settle has landed.
 */
import { localClaimsInFlightMax } from '../kernel/Limits.ts'
import type { JobHandle } from './JobHandle.ts'

/** What the local queue needs from its worker. */
export interface LocalQueueSource<Outcome> {
  /** False once the worker stops or the engine closes. */
  readonly running: () => boolean
  /** A parked poll for one job; null when none came within its wait (or stopping). */
  readonly claimOne: () => Promise<JobHandle | null>
  /** True when `claimSeveral` can take jobs from the store now. */
  readonly canClaimSeveral: () => boolean
  /**
   * Up to `count` jobs in one statement that also acks `acks` (distinct ids); undefined when the
   * store could not serve it, with nothing acked. A failed statement answers no jobs, its acks
   * settled as failed acks are (reported; the jobs lapse and are delivered again).
   */
  readonly claimSeveral: (count: number, acks: ReadonlyArray<JobHandle>) => Promise<ReadonlyArray<JobHandle> | undefined>
  /** Runs a job's handler; says how it ended. */
  readonly handle: (job: JobHandle) => Promise<Outcome>
  /** True when `outcome` is settled by an ack, which may ride on a claim statement. */
  readonly acks: (outcome: Outcome) => boolean
  /** Settles a job whose handler ended (ack or retry) on its own; never rejects. */
  readonly finish: (job: JobHandle, outcome: Outcome) => Promise<void>
  readonly now: () => number
}

// A finished job whose ack waits for the next several-job claim; `done` ends its settle.
interface Rider<Outcome> {
  readonly job: JobHandle
  readonly outcome: Outcome
  readonly done: () => void
}

// Resumes the first `count` of `sleepers` (fewer if fewer sleep), in the order they slept.
function resumeFirst(sleepers: Array<() => void>, count: number): void {
  for (let woken = 0; woken < count && sleepers.length > 0; woken++) (sleepers.shift() as () => void)()
}

// Whether a claim loop has work: acks waiting to ride (sent at once only when no other several-job
// claim is at the store to take them on its return, or with a claim the room calls for anyway), a
// free slot to park a poll in, or (while the store serves several) room enough for a several-job
// claim (at least half the queue, or any once the queue ran empty), with fewer than the most at
// the store.
// (Positional, as it runs on every wake-up: no object per call.)
function isClaimWanted(
  source: Pick<LocalQueueSource<unknown>, 'running' | 'canClaimSeveral'>,
  severalInFlight: number,
  riders: number,
  room: number,
  queued: number,
  refillRoom: number,
): boolean {
  if (!source.running()) return true
  const several = severalInFlight < localClaimsInFlightMax && source.canClaimSeveral()
  const refill = room > 0 && (room >= refillRoom || queued === 0)
  if (several && riders > 0 && (severalInFlight === 0 || refill)) return true
  if (room <= 0) return false
  if (!source.canClaimSeveral()) return true
  return several && refill
}

// The riders for the next statement, one per job id (a job claimed twice on this engine acks
// each claim in its own statement), and the others, which wait for the one after.
function ridersOnePerJob<R extends { readonly job: JobHandle }>(riders: ReadonlyArray<R>): [R[], R[]] {
  const ids = new Set<string>()
  const taken: R[] = []
  const left: R[] = []
  for (const rider of riders) {
    if (ids.has(rider.job.id)) left.push(rider)
    else {
      ids.add(rider.job.id)
      taken.push(rider)
    }
  }
  return [taken, left]
}

/** The local queue of `batch` jobs; `run(concurrency)` resolves once every loop has ended and every settle landed. */
export function makeLocalQueue<Outcome>(batch: number, source: LocalQueueSource<Outcome>): { run(concurrency: number): Promise<void>; wake(): void } {
  const queued: JobHandle[] = []
  let claiming = 0
  let severalInFlight = 0
  let claimersDone = false
  const claimerSleepers: Array<() => void> = []
  const handlerSleepers: Array<() => void> = []
  const refillRoom = Math.ceil(batch / 2)
  const settling = new Set<Promise<void>>()
  const settleSleepers: Array<() => void> = []
  let riders: Array<Rider<Outcome>> = []

  const claimWanted = (): boolean => isClaimWanted(source, severalInFlight, riders.length, batch - queued.length - claiming, queued.length, refillRoom)
  const wakeClaimer = (): void => {
    if (claimerSleepers.length > 0 && claimWanted()) (claimerSleepers.shift() as () => void)()
  }
  const wakeHandlers = (count: number): void => resumeFirst(handlerSleepers, count)
  const wakeAll = (): void => (resumeFirst(claimerSleepers, claimerSleepers.length), resumeFirst(handlerSleepers, handlerSleepers.length))
  const push = (jobs: ReadonlyArray<JobHandle>): void => {
    for (const job of jobs) queued.push(job)
    wakeHandlers(jobs.length)
  }

  // Counts a settle in flight until it lands, then lets a handler waiting for room go on.
  const track = (settle: Promise<void>): void => {
    const tracked = settle.finally(() => {
      settling.delete(tracked)
      settleSleepers.shift()?.()
    })
    settling.add(tracked)
  }
  const ride = (job: JobHandle, outcome: Outcome): void => {
    track(new Promise<void>((done) => riders.push({ job, outcome, done })))
  }
  const takeRiders = (): Array<Rider<Outcome>> => {
    const [taken, left] = ridersOnePerJob(riders)
    riders = left
    return taken
  }
  const settleAlone = (group: ReadonlyArray<Rider<Outcome>>): void => {
    for (const rider of group) void source.finish(rider.job, rider.outcome).finally(rider.done)
  }

  const claimLoop = async (): Promise<void> => {
    while (source.running()) {
      if (!claimWanted()) {
        await new Promise<void>((resume) => claimerSleepers.push(resume))
        continue
      }
      const room = Math.max(0, batch - queued.length - claiming)
      if (severalInFlight < localClaimsInFlightMax && source.canClaimSeveral()) {
        severalInFlight++
        claiming += room
        const aboard = takeRiders()
        let jobs: ReadonlyArray<JobHandle> | undefined
        try {
          jobs = await source.claimSeveral(
            room,
            aboard.map((rider) => rider.job),
          )
        } finally {
          claiming -= room
          severalInFlight--
          if (jobs === undefined) settleAlone(aboard)
          else for (const rider of aboard) rider.done()
        }
        push(jobs ?? [])
        // The acks of jobs finished meanwhile go with the next claim (sent now, unless another
        // claim at the store takes them when it returns); or alone.
        if (riders.length > 0 && !(source.running() && source.canClaimSeveral())) settleAlone(riders.splice(0))
        // After a short answer the loops asleep behind this claim go on to park polls.
        wakeClaimer()
        if (room === 0 || (jobs?.length ?? 0) > 0 || riders.length > 0) continue
        // None came (no row due, a failure, an outage's back-off): park a poll, which waits.
      }
      if (room === 0) continue
      claiming++
      // The next loop, if there is still a slot, parks its poll beside this one.
      wakeClaimer()
      let job: JobHandle | null
      try {
        job = await source.claimOne()
      } finally {
        claiming--
      }
      if (job !== null) push([job])
      wakeClaimer()
    }
  }
  const handlerLoop = async (): Promise<void> => {
    for (;;) {
      const job = queued.shift()
      if (job === undefined) {
        if (claimersDone) break
        await new Promise<void>((resume) => handlerSleepers.push(resume))
        continue
      }
      // A slot is free: a claim loop may claim again.
      wakeClaimer()
      if (job.deadline <= source.now()) continue
      const outcome = await source.handle(job)
      while (settling.size >= batch) await new Promise<void>((resume) => settleSleepers.push(resume))
      if (severalInFlight > 0 && source.acks(outcome) && source.running()) ride(job, outcome)
      else track(source.finish(job, outcome))
    }
  }
  return {
    async run(concurrency) {
      const handlers = Array.from({ length: concurrency }, () => handlerLoop())
      await Promise.all(Array.from({ length: batch }, () => claimLoop()))
      claimersDone = true
      wakeAll()
      await Promise.all(handlers)
      settleAlone(riders.splice(0))
      while (settling.size > 0) await Promise.all(settling)
    },
    wake: wakeAll,
  }
}
