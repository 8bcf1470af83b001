/**
 * IoGate — the simulator's control over the order in which I/O completes. Every store call and
 * History call a simulated host makes is parked here; the world decides which one runs next,
 * runs exactly one at a time (so a run on PostgreSQL or PGlite is as reproducible as one on
 * memory), and decides whether its caller ever sees the outcome (a crash after commit is an
 * ambiguous commit: the write happened, the caller never learns).
 */

/** One parked call. */
export interface PendingIo {
  readonly id: number
  readonly hostId: string
  /** What it is, for traces: `append default/emails/activity/0 r3`. */
  readonly label: string
  /** True for calls that may change the store. */
  readonly isWrite: boolean
  /** Performs the real call. */
  readonly run: () => Promise<unknown>
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
}

/** Parked calls, in arrival order; the world picks among them. */
export class IoGate {
  #sequence = 0
  #pending: PendingIo[] = []

  /** Parks a call; the returned promise settles when the world runs it (or never, if the host dies). */
  park<T>(hostId: string, label: string, isWrite: boolean, run: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ id: ++this.#sequence, hostId, label, isWrite, run, resolve: resolve as (value: unknown) => void, reject })
    })
  }

  /** Calls waiting, oldest first. */
  pending(): ReadonlyArray<PendingIo> {
    return this.#pending
  }

  /** Removes and returns the call at `index`. */
  take(index: number): PendingIo {
    const [io] = this.#pending.splice(index, 1)
    if (io === undefined) throw new Error(`no pending io at ${index}`)
    return io
  }

  /** Drops every call of a crashed host: they never run, their callers never hear back. */
  dropHost(hostId: string): number {
    const before = this.#pending.length
    this.#pending = this.#pending.filter((io) => io.hostId !== hostId)
    return before - this.#pending.length
  }
}
