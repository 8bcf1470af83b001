/**
 * SimRowLocks — the row-lock windows of a world's shared memory job store (JobsSwarm.ts
 * `rowLockChance`): PostgreSQL runs the engines' statements side by side, and a statement that
 * reads the head of a queue with `FOR UPDATE SKIP LOCKED` passes over the rows a statement of
 * another transaction still holds. The simulator's gate runs one statement at a time, so this
 * models the overlap: when a skipping statement runs, each head statement still parked in the
 * gate (issued, not yet answered) is, with the world's chance drawn on a stream of its own, one
 * that started first and holds its rows — the statement running skips them. The holder's rows
 * become claimable again when it ends, and nothing announces that (a lock's release sends no
 * signal on PostgreSQL either).
 *
 * The windows, each one PostgreSQL produces with the engine's real statements
 * (src/persistence/jobs/sql/jobSql.ts):
 * - the head statements that skip: `claimDue` and `ackAndClaimDue` with claim tokens
 *   (`claimHeadCtes`: each branch `FOR UPDATE SKIP LOCKED`) and `takeDue` with a limit
 *   (`takeDueSql`: its due branches `FOR UPDATE SKIP LOCKED`);
 * - the holders, those same statements in flight: a claim of n jobs holds the first n of each of
 *   its three branches (due pending rows, rows with Matching, lapsed claims) and claims only the
 *   first n of their merge, so up to 2n rows it never claims stay locked to its end (a fenced
 *   claim whose fence no longer holds reads, and holds, nothing); a takeDue of n holds the first n
 *   of its due pending and due processing rows (MemoryRowLocks.ts computes exactly those rows, as
 *   of the moment the skipping statement runs).
 * Statements that wait for a lock instead of skipping it (claims by id, acks, heartbeats) run
 * after their holder in the gate's order anyway, so they need no window.
 *
 * Only the memory store takes these windows (its `heldHeads` option); on PostgreSQL itself the
 * gate's one-at-a-time order leaves no statement in flight beside another, so the world makes no
 * window there.
 *
 * Does not: decide which statement runs next (the gate's world does), or hold a row past the
 * statement that skips it.
 */
import type { HeldHead } from '../../src/persistence/jobs/MemoryRowLocks.ts'
import type { Decisions } from '../core/Decisions.ts'
import type { IoGate } from '../core/IoGate.ts'

/** Where the world tells the shared memory store which head statements hold rows while one statement runs. */
export interface RowLockSlot {
  heads: ReadonlyArray<HeldHead>
}

/** An empty slot: no statement holds anything. */
export function makeRowLockSlot(): RowLockSlot {
  return { heads: [] }
}

/** What the row-lock windows need from the world. */
export interface SimRowLocksDeps {
  readonly slot: RowLockSlot
  readonly gate: IoGate
  /** The windows' own stream of decisions. */
  readonly decide: Decisions
  /** Chance that a head statement parked beside a skipping one started first and holds its rows. */
  readonly chance: number
  readonly log: (line: string) => void
}

interface InFlight {
  readonly hostId: string
  readonly label: string
  readonly head: HeldHead
  readonly run: () => Promise<unknown>
}

/** The row-lock windows of one world. */
export class SimRowLocks {
  readonly #deps: SimRowLocksDeps
  #inFlight: InFlight[] = []

  constructor(deps: SimRowLocksDeps) {
    this.#deps = deps
  }

  /**
   * The call to park for a head statement `head` of `hostId` (labelled `label` in the gate): when
   * the gate runs it, the head statements parked beside it that the windows' stream says started
   * first hold their rows while it runs, and it skips them.
   */
  statement<T>(hostId: string, label: string, head: HeldHead, run: () => Promise<T>): () => Promise<T> {
    const locked = async (): Promise<T> => {
      this.#inFlight = this.#inFlight.filter((entry) => entry.run !== locked)
      const holders = this.#holders(head)
      if (holders.length === 0) return run()
      this.#deps.log(`${hostId} ${label} skips the rows held by ${holders.map((holder) => `${holder.hostId} ${holder.label}`).join('; ')}`)
      this.#deps.slot.heads = holders.map((holder) => holder.head)
      try {
        return await run()
      } finally {
        this.#deps.slot.heads = []
      }
    }
    this.#inFlight.push({ hostId, label, head, run: locked })
    return locked
  }

  // The head statements still parked (a crash drops its host's) that read a queue `head` reads,
  // each with the stream's chance of having started first.
  #holders(head: HeldHead): InFlight[] {
    const parked = new Set(this.#deps.gate.pending().map((io) => io.run))
    this.#inFlight = this.#inFlight.filter((entry) => parked.has(entry.run))
    return this.#inFlight.filter((entry) => overlaps(entry.head, head) && this.#deps.decide.chance(this.#deps.chance))
  }
}

// Whether two head statements read a queue in common (null: every queue).
function overlaps(a: HeldHead, b: HeldHead): boolean {
  return a.queues === null || b.queues === null || a.queues.some((queue) => b.queues?.includes(queue) === true)
}
