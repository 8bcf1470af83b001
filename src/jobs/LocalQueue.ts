/**
 * LocalQueue — the claimed jobs a `work({ batch })` worker holds ahead of its handlers, in claim
 * order (graphile-worker's local queue). It holds at most `batch` jobs, counting the claims in
 * flight, and is filled two ways:
 *
 * - **Several at once**, while the store can serve them (`canClaimSeveral`: this engine delivers
 *   the queue and it is not drained): one claim loop at a time takes up to the free room in one
 *   statement, once the room reaches half the queue or the queue ran empty. A short answer means
 *   no other row is due, and the loops go on to park.
 * - **One poll per free slot** otherwise: each claim loop parks a poll (`claimNext`), which an
 *   enqueue or a due-time pass serves (for every poll waiting, in one statement) or another
 *   engine serves by forwarding.
 *
 * Handler loops take jobs in order, each running its next job while the previous one's ack is
 * on its way; a job whose claim lapsed while it waited is skipped (it is delivered again; running
 * it could only end in a refused ack). Loops sleep on two lists, so a claimed job wakes one
 * handler and a freed slot wakes one claim loop, which wakes the next while there is more to
 * claim: a loop is woken only when there is work for it.
 *
 * Once `running()` turns false the claim loops end (`wake` ends their sleep) and the handler
 * loops run what is left, then end.
 */
import type { JobHandle } from './JobHandle.ts'

/** What the local queue needs from its worker. */
export interface LocalQueueSource<Outcome> {
  /** False once the worker stops or the engine closes. */
  readonly running: () => boolean
  /** A parked poll for one job; null when none came within its wait (or stopping). */
  readonly claimOne: () => Promise<JobHandle | null>
  /** True when `claimSeveral` can take jobs from the store now. */
  readonly canClaimSeveral: () => boolean
  /** Up to `count` jobs in one statement; empty when the store could not serve them. */
  readonly claimSeveral: (count: number) => Promise<ReadonlyArray<JobHandle>>
  /** Runs a job's handler; says how it ended. */
  readonly handle: (job: JobHandle) => Promise<Outcome>
  /** Settles a job whose handler ended (ack or retry). */
  readonly finish: (job: JobHandle, outcome: Outcome) => Promise<void>
  readonly now: () => number
}

/** The local queue of `batch` jobs; `run(concurrency)` resolves once every loop has ended. */
export function makeLocalQueue<Outcome>(batch: number, source: LocalQueueSource<Outcome>): { run(concurrency: number): Promise<void>; wake(): void } {
  const queued: JobHandle[] = []
  let claiming = 0
  let severalInFlight = false
  let claimersDone = false
  const claimerSleepers: Array<() => void> = []
  const handlerSleepers: Array<() => void> = []
  const refillRoom = Math.ceil(batch / 2)
  // Whether a claim loop has work: a free slot to park a poll in, or (while the store serves
  // several) room enough for a several-job claim with none in flight.
  const claimWanted = (): boolean => {
    if (!source.running()) return true
    const room = batch - queued.length - claiming
    if (room <= 0) return false
    if (!source.canClaimSeveral()) return true
    return !severalInFlight && (room >= refillRoom || queued.length === 0)
  }
  const wakeClaimer = (): void => {
    if (claimerSleepers.length > 0 && claimWanted()) (claimerSleepers.shift() as () => void)()
  }
  const wakeHandlers = (count: number): void => {
    for (let woken = 0; woken < count && handlerSleepers.length > 0; woken++) (handlerSleepers.shift() as () => void)()
  }
  const wakeAll = (): void => {
    for (const resume of claimerSleepers.splice(0)) resume()
    for (const resume of handlerSleepers.splice(0)) resume()
  }
  const push = (jobs: ReadonlyArray<JobHandle>): void => {
    for (const job of jobs) queued.push(job)
    wakeHandlers(jobs.length)
  }

  const claimLoop = async (): Promise<void> => {
    while (source.running()) {
      if (!claimWanted()) {
        await new Promise<void>((resume) => claimerSleepers.push(resume))
        continue
      }
      const room = batch - queued.length - claiming
      if (!severalInFlight && source.canClaimSeveral()) {
        severalInFlight = true
        claiming += room
        let jobs: ReadonlyArray<JobHandle> = []
        try {
          jobs = await source.claimSeveral(room)
        } finally {
          claiming -= room
          severalInFlight = false
        }
        push(jobs)
        // After a short answer the loops asleep behind this claim go on to park polls.
        wakeClaimer()
        if (jobs.length > 0) continue
        // None came (no row due, a failure, an outage's back-off): park a poll, which waits.
      }
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
  // A handler loop runs its next job while the previous one's ack or retry is on its way to the
  // store; at most one settle per loop is in flight, and the loop ends once its last one landed.
  const handlerLoop = async (): Promise<void> => {
    let settling: Promise<void> = Promise.resolve()
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
      await settling
      settling = source.finish(job, outcome)
    }
    await settling
  }
  return {
    async run(concurrency) {
      const handlers = Array.from({ length: concurrency }, () => handlerLoop())
      await Promise.all(Array.from({ length: batch }, () => claimLoop()))
      claimersDone = true
      wakeAll()
      await Promise.all(handlers)
    },
    wake: wakeAll,
  }
}
