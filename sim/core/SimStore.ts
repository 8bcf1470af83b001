/**
 * SimStore — the Store one simulated host process sees. Every call is parked in the IoGate until
 * the world runs it; when it commits, it is reported to the boundary log (for the checkers)
 * before the host hears back. Wrap, don't fork: the store underneath is the real one (memory,
 * PGlite or PostgreSQL), possibly wrapped by a mutant (sim/matching/Mutations.ts).
 *
 * Attempts: every acquire, append, checkpoint and relocate is also reported when the host makes
 * it (`attempt`) and when the host hears its answer (`answered`), tagged with the queue instance
 * that made it (CallerTag in Boundary.ts). The Store contract carries no instance id; the tags
 * (InstanceTags) tie calls to the physical-queue actor whose step made them.
 *
 * Rows: around each checkpoint and relocation the wrapper reads the rows of the queues involved
 * (every subqueue) just before and just after the call runs — nothing else runs in between —
 * so the checkers judge what disappeared and appeared, not what the request implied.
 */
import { encodeQueueKey, type QueueKey } from '../../src/domain/QueueKey.ts'
import type { Store } from '../../src/persistence/queues/Store.ts'
import type { AttemptCall, BoundaryListener, CallerTag, RowRef } from './Boundary.ts'
import type { IoGate } from './IoGate.ts'

const pageSize = 1_000

/** Every stored row of a queue, all subqueues, in subqueue then id order (simulation only). */
async function rowsOf(inner: Store, key: QueueKey): Promise<RowRef[]> {
  const inspection = await inner.inspect(key)
  if (inspection === null) return []
  const rows: RowRef[] = []
  for (const subqueue of Object.keys(inspection.metadata.ackLevels).map(Number).sort((a, b) => a - b)) {
    for (let afterTaskId = 0; ;) {
      const page = await inner.read({ key, subqueue, afterTaskId, limit: pageSize })
      for (const stored of page) rows.push({ subqueue, taskId: stored.taskId, jobId: stored.task.jobId })
      const last = page.at(-1)
      if (last === undefined || page.length < pageSize) break
      afterTaskId = last.taskId
    }
  }
  return rows
}

/** Rows of `before` whose task id is absent from `after`. */
function missingFrom(before: ReadonlyArray<RowRef>, after: ReadonlyArray<RowRef>): RowRef[] {
  const kept = new Set(after.map((row) => row.taskId))
  return before.filter((row) => !kept.has(row.taskId))
}

const tagOf = (error: unknown): string => ((error as { _tag?: unknown } | null)?._tag as string | undefined) ?? 'defect'

/** What the tags need of a physical-queue actor (PhysicalQueueActor has it). */
export interface SteppingQueue {
  readonly key: QueueKey
  readonly state: string
}

/**
 * One host process's queue instances. A queue actor carries out the store commands of a step
 * synchronously right after the host reports the step (`stepped`), so the calls those commands
 * name, made next, are that actor's; its first acquire runs at start,
 * before any step, and the actor's first step binds it to that acquire: the step its answer
 * causes, or a step right after the start. Calls made outside
 * any step (a retirement's acquire and relocation, the jobs world, which reports no steps) fall
 * back to the call sequence: an acquire starts an instance unless the latest acquire of the
 * queue failed, and a write belongs to the instance whose acquire returned its range.
 */
export class InstanceTags {
  readonly #hostId: string
  readonly #incarnation: number
  readonly #count = new Map<string, number>()
  readonly #latestAcquire = new Map<string, { id: string; failed: boolean | null }>()
  readonly #byRange = new Map<string, string>()
  readonly #ofActor = new WeakMap<SteppingQueue, string>()
  // The actor whose step is being carried out, and the store calls of that step not yet made.
  #stepping: { readonly actor: SteppingQueue; readonly calls: string[] } | null = null
  // Per queue, the instance of the latest acquire made outside a step: an actor's first one (or a retirement's).
  readonly #started = new Map<string, string>()
  // The acquire answered last: an actor stepping on an acquire's answer steps on this one.
  #answered: { readonly queue: string; readonly id: string } | null = null
  readonly #reportsSteps: boolean

  /** `reportsSteps`: the host calls `stepped` for every queue step (then an acquire outside a step is never a retry). */
  constructor(hostId: string, incarnation: number, reportsSteps: boolean) {
    this.#hostId = hostId
    this.#incarnation = incarnation
    this.#reportsSteps = reportsSteps
  }

  /** A queue actor took a step asking for `commands`; the store calls they name, made next, are its own. */
  stepped(actor: SteppingQueue, eventType: string, commands: ReadonlyArray<{ readonly type: string }>): void {
    const queue = encodeQueueKey(actor.key)
    if (!this.#ofActor.has(actor)) {
      // Its acquire's answer causes this step (nothing runs between the answer and the step), or
      // the step came right after the start, before the answer.
      const answered = this.#answered
      const isAnswer = (eventType === 'queue.acquired' || eventType === 'queue.acquire.failed') && answered?.queue === queue
      this.#ofActor.set(actor, isAnswer ? answered.id : (this.#started.get(queue) ?? this.#next(queue)))
      this.#started.delete(queue)
    }
    let calls: string[] | null = null
    for (const { type } of commands) if (type === 'store.acquire' || type === 'store.append' || type === 'store.checkpoint') (calls ??= []).push(type)
    this.#stepping = calls === null ? null : { actor, calls }
  }

  /** The instance a stepping actor is (after `stepped` bound it). */
  instanceOf(actor: SteppingQueue): CallerTag {
    return this.#tag(this.#ofActor.get(actor) ?? `${this.#prefix()} ${encodeQueueKey(actor.key)}#?`)
  }

  /** The instance an acquire of `queue` belongs to, and whether it retries that instance's failed acquire. */
  acquire(key: QueueKey): { caller: CallerTag; retry: boolean; unloaded: () => boolean | null } {
    const queue = encodeQueueKey(key)
    const actor = this.#steppingOf(queue, 'store.acquire')
    const latest = this.#latestAcquire.get(queue)
    const retry = actor !== null ? actor.state === 'loading' : !this.#reportsSteps && latest?.failed === true
    const id = actor !== null ? (this.#ofActor.get(actor) as string) : retry && latest !== undefined ? latest.id : this.#next(queue)
    this.#latestAcquire.set(queue, { id, failed: null })
    if (actor === null) this.#started.set(queue, id)
    return { caller: this.#tag(id), retry, unloaded: unloadedOf(actor) }
  }

  /** Records how an acquire ended (its range, or null when it failed), before the caller hears. */
  acquired(queue: string, caller: CallerTag, rangeId: number | null): void {
    const latest = this.#latestAcquire.get(queue)
    if (latest?.id === caller.instance) latest.failed = rangeId === null
    if (rangeId !== null) this.#byRange.set(`${queue} r${rangeId}`, caller.instance)
    this.#answered = { queue, id: caller.instance }
  }

  /** The instance that writes `rangeId` of `queue`. */
  writer(key: QueueKey, rangeId: number, call: 'append' | 'checkpoint' | 'relocate'): { caller: CallerTag; unloaded: () => boolean | null } {
    const queue = encodeQueueKey(key)
    const actor = this.#steppingOf(queue, `store.${call}`)
    const id = actor !== null ? (this.#ofActor.get(actor) as string) : (this.#byRange.get(`${queue} r${rangeId}`) ?? `${this.#prefix()} ${queue}#?r${rangeId}`)
    return { caller: this.#tag(id), unloaded: unloadedOf(actor) }
  }

  // The stepping actor, when this call (of `queue`, by command `type`) is one its step asked for.
  #steppingOf(queue: string, type: string): SteppingQueue | null {
    const stepping = this.#stepping
    if (stepping === null || encodeQueueKey(stepping.actor.key) !== queue) return null
    const index = stepping.calls.indexOf(type)
    if (index < 0) return null
    stepping.calls.splice(index, 1)
    if (stepping.calls.length === 0) this.#stepping = null
    return stepping.actor
  }

  #next(queue: string): string {
    const n = (this.#count.get(queue) ?? 0) + 1
    this.#count.set(queue, n)
    return `${this.#prefix()} ${queue}#${n}`
  }

  #prefix(): string {
    return `${this.#hostId}.${this.#incarnation}`
  }

  #tag(instance: string): CallerTag {
    return { hostId: this.#hostId, incarnation: this.#incarnation, instance }
  }
}

// Whether the actor behind a call had unloaded; null when no actor is known (calls outside a step).
const unloadedOf = (actor: SteppingQueue | null) => (): boolean | null => (actor === null ? null : actor.state === 'unloaded')

/** A host process's view of the shared store, through the gate; `tags` names the process and its queue instances. */
export function makeSimStore(hostId: string, tags: InstanceTags, inner: Store, gate: IoGate, record: BoundaryListener): Store {
  const q = encodeQueueKey

  // Parks a physical-queue call, reporting it as attempted now and answered when the host hears.
  const attempted = <T>(by: { caller: CallerTag; unloaded: () => boolean | null; retry?: boolean }, call: AttemptCall, queue: string, rangeId: number | null, label: string, run: () => Promise<T>, onAnswer?: (value: T | null) => void): Promise<T> => {
    const { caller } = by
    record({ op: 'attempt', caller, call, queue, rangeId, retry: by.retry === true })
    return gate.park(hostId, label, true, run).then(
      (value) => {
        onAnswer?.(value)
        record({ op: 'answered', caller, call, queue, rangeId, answer: 'ok', lostQueue: null, afterUnload: by.unloaded() })
        return value
      },
      (error: unknown) => {
        onAnswer?.(null)
        const lostQueue = tagOf(error) === 'OwnershipLost' ? (error as { queue: string }).queue : null
        record({ op: 'answered', caller, call, queue, rangeId, answer: tagOf(error), lostQueue, afterUnload: by.unloaded() })
        throw error
      },
    )
  }

  return {
    kind: inner.kind,
    acquire: (params) => {
      const queue = q(params.key)
      const by = tags.acquire(params.key)
      return attempted(by, 'acquire', queue, null, `acquire ${queue}`, async () => {
        const metadata = await inner.acquire(params)
        record({ op: 'acquire', hostId, queue, metadata })
        return metadata
      }, (metadata) => tags.acquired(queue, by.caller, metadata?.rangeId ?? null))
    },
    append: (params) => {
      const queue = q(params.key)
      return attempted(tags.writer(params.key, params.rangeId, 'append'), 'append', queue, params.rangeId, `append ${queue} r${params.rangeId} ×${params.tasks.length}`, async () => {
        const result = await inner.append(params)
        const taskIds = Array.from({ length: params.tasks.length }, (_, i) => result.firstTaskId + i)
        record({ op: 'append', hostId, queue, rangeId: params.rangeId, taskIds, jobIds: params.tasks.map((task) => task.jobId) })
        return result
      })
    },
    read: (params) =>
      gate.park(hostId, `read ${q(params.key)}/${params.subqueue} >${params.afterTaskId}`, false, () => inner.read(params)),
    checkpoint: (params) => {
      const queue = q(params.key)
      const label = `checkpoint ${queue} r${params.rangeId} ${params.ackLevels.map((l) => `${l.subqueue}:${l.ackLevel}`).join(',')}`
      return attempted(tags.writer(params.key, params.rangeId, 'checkpoint'), 'checkpoint', queue, params.rangeId, label, async () => {
        const before = await rowsOf(inner, params.key)
        let result: Awaited<ReturnType<Store['checkpoint']>>
        try {
          result = await inner.checkpoint(params)
        } catch (error) {
          // A refused write must change nothing: look again at the rows.
          if (tagOf(error) === 'OwnershipLost' && before.length > 0) {
            const deleted = missingFrom(before, await rowsOf(inner, params.key))
            if (deleted.length > 0) record({ op: 'refusedCheckpoint', hostId, queue, rangeId: params.rangeId, deletedJobIds: deleted.map((row) => row.jobId) })
          }
          throw error
        }
        const deletedRows = missingFrom(before, await rowsOf(inner, params.key))
        record({ op: 'checkpoint', hostId, queue, rangeId: params.rangeId, ackLevels: params.ackLevels, metadata: result.metadata, deletedJobIds: deletedRows.map((row) => row.jobId), deletedRows })
        return result
      })
    },
    relocate: (params) => {
      const from = q(params.from)
      const to = q(params.to)
      return attempted(tags.writer(params.from, params.fromRangeId, 'relocate'), 'relocate', from, params.fromRangeId, `relocate ${from} → ${to} ×${params.taskIds.length}`, async () => {
        const [fromBefore, toBefore] = [await rowsOf(inner, params.from), await rowsOf(inner, params.to)]
        const moved = await inner.relocate(params)
        const [fromAfter, toAfter] = [await rowsOf(inner, params.from), await rowsOf(inner, params.to)]
        const asked = new Set(params.taskIds)
        record({
          op: 'relocate',
          hostId,
          from,
          fromRangeId: params.fromRangeId,
          to,
          toRangeId: params.toRangeId,
          moved: moved.length,
          taskIds: params.taskIds,
          sourceRows: fromBefore.filter((row) => asked.has(row.taskId)),
          removedRows: missingFrom(fromBefore, fromAfter),
          addedRows: missingFrom(toAfter, toBefore),
        })
        return moved
      })
    },
    inspect: (key) => gate.park(hostId, `inspect ${q(key)}`, false, () => inner.inspect(key)),
    list: (filter) => gate.park(hostId, 'list', false, () => inner.list(filter)),
    getUserData: (params) => gate.park(hostId, `userData.get ${params.namespace}/${params.family}`, false, () => inner.getUserData(params)),
    updateUserData: (params) =>
      gate.park(hostId, `userData.update ${params.namespace}/${params.family} v${params.expectedVersion}`, true, async () => {
        const family = `${params.namespace}/${params.family}`
        try {
          const updated = await inner.updateUserData(params)
          record({ op: 'userData', hostId, family, expectedVersion: params.expectedVersion, outcome: updated.version })
          return updated
        } catch (error) {
          if (tagOf(error) === 'VersionConflict') record({ op: 'userData', hostId, family, expectedVersion: params.expectedVersion, outcome: 'conflict' })
          throw error
        }
      }),
    close: async () => {},
  }
}
