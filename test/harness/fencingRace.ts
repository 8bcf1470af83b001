/**
 * fencingRace — runs one ownership race between two independent stores (two connection
 * pools): owner A acquires a queue and fires writes (appends, checkpoints or relocates) while
 * owner B acquires the same queue, and records everything each side observed for the checker
 * (fencingChecker.ts). It asserts nothing itself.
 *
 * Interleavings vary by a seeded stream: A's writes go out all at once (they queue on the row
 * lock with B's acquire) or one after another (as a queue actor issues them), and B joins
 * after 0–3 of A's writes have settled. Waiting is on promises only: no sleeps, no timers.
 */
import { encodeQueueKey, type QueueKey } from '../../src/domain/QueueKey.ts'
import { makeTask } from '../../src/domain/Task.ts'
import type { Random } from '../../src/kernel/Random.ts'
import type { QueueMetadata, Store } from '../../src/persistence/queues/Store.ts'
import type { RaceRecord, StoredRows, WriteOutcome } from './fencingChecker.ts'

/** Which write A races against B's acquire. */
export type RaceVariant = 'append' | 'checkpoint' | 'relocate'

// A's writes stamp 1000+; B's acquire stamps 2000, so a late checkpoint shows in updatedAtMs.
const ownerANowMs = 1_000
const ownerBNowMs = 2_000
const writesPerRace = 6
const seededPerRace = 12

async function rowsOf(store: Store, key: QueueKey): Promise<StoredRows> {
  const rows = new Map<number, string>()
  let afterTaskId = 0
  for (;;) {
    const page = await store.read({ key, subqueue: 0, afterTaskId, limit: 1000 })
    for (const stored of page) rows.set(stored.taskId, stored.task.jobId)
    if (page.length < 1000) return rows
    afterTaskId = page[page.length - 1]?.taskId ?? afterTaskId
  }
}

function describeError(error: unknown): { errorTag: string; detail: string } {
  const tag = (error as { _tag?: unknown } | null)?._tag
  return { errorTag: typeof tag === 'string' ? tag : 'defect', detail: error instanceof Error ? error.message : String(error) }
}

/** Runs one race on fresh queues under `namespace` and returns what was observed. */
export async function runRace(params: {
  readonly a: Store
  readonly b: Store
  readonly variant: RaceVariant
  readonly iteration: number
  readonly namespace: string
  readonly random: Random
}): Promise<RaceRecord> {
  const { a, b, variant, iteration, random } = params
  const source: QueueKey = { namespace: params.namespace, family: `race${iteration}`, type: 'workflow', partition: 0, version: variant === 'relocate' ? 'v1' : null }
  const destination: QueueKey = { ...source, version: null }
  const involved = variant === 'relocate' ? [source, destination] : [source]
  const job = (label: string) => makeTask({ jobId: `${variant}-${iteration}-${label}`, createdAtMs: ownerANowMs })

  const range = (await a.acquire({ key: source, nowMs: ownerANowMs })).rangeId
  const destinationRange = variant === 'relocate' ? (await a.acquire({ key: destination, nowMs: ownerANowMs })).rangeId : 0
  const seeded = new Map<string, StoredRows>()
  if (variant !== 'append') {
    const tasks = Array.from({ length: seededPerRace }, (_, index) => job(`seed${index + 1}`))
    const { firstTaskId } = await a.append({ key: source, rangeId: range, tasks, nowMs: ownerANowMs })
    seeded.set(encodeQueueKey(source), new Map(tasks.map((task, index) => [firstTaskId + index, task.jobId])))
    if (variant === 'relocate') seeded.set(encodeQueueKey(destination), new Map())
  }

  const write = async (index: number): Promise<WriteOutcome> => {
    const queue = encodeQueueKey(source)
    const nowMs = ownerANowMs + index + 1
    try {
      if (variant === 'append') {
        const jobIds = [job(`w${index}a`), job(`w${index}b`)]
        const result = await a.append({ key: source, rangeId: range, tasks: jobIds, nowMs })
        return { kind: 'append', queue, ok: true, ...result, jobIds: jobIds.map((task) => task.jobId) }
      }
      if (variant === 'checkpoint') {
        const ackLevel = (index + 1) * 2
        await a.checkpoint({ key: source, rangeId: range, ackLevels: [{ subqueue: 0, ackLevel }], nowMs })
        return { kind: 'checkpoint', queue, ok: true, ackLevel }
      }
      const taskIds = [index * 2 + 1, index * 2 + 2]
      const moved = await a.relocate({ from: source, fromRangeId: range, to: destination, toRangeId: destinationRange, taskIds, nowMs })
      return { kind: 'relocate', queue, to: encodeQueueKey(destination), ok: true, moved }
    } catch (error) {
      return { kind: variant, queue, ok: false, ...describeError(error) }
    }
  }

  const contestedKey = variant === 'relocate' && random.chance(0.5) ? destination : source
  const lead = random.int(0, 3)
  const sequential = random.chance(0.5)
  let writes: Promise<WriteOutcome[]>
  let joined: Promise<unknown>
  if (sequential) {
    let settled = 0
    let signal: () => void = () => {}
    joined = new Promise<void>((resolve) => {
      signal = resolve
      if (lead === 0) resolve()
    })
    writes = (async () => {
      const outcomes: WriteOutcome[] = []
      for (let index = 0; index < writesPerRace; index++) {
        outcomes.push(await write(index))
        if (++settled === lead) signal()
      }
      return outcomes
    })()
  } else {
    const all = Array.from({ length: writesPerRace }, (_, index) => write(index))
    writes = Promise.all(all)
    joined = lead === 0 ? Promise.resolve() : (all[lead - 1] as Promise<WriteOutcome>)
  }
  await joined
  const acquired: QueueMetadata = await b.acquire({ key: contestedKey, nowMs: ownerBNowMs })
  const afterAcquire = new Map<string, StoredRows>()
  for (const key of involved) afterAcquire.set(encodeQueueKey(key), await rowsOf(b, key))
  const outcomes = await writes

  const finalMetadata = new Map<string, QueueMetadata>()
  const finalRows = new Map<string, StoredRows>()
  for (const key of involved) {
    const inspection = await b.inspect(key)
    if (inspection !== null) finalMetadata.set(encodeQueueKey(key), inspection.metadata)
    finalRows.set(encodeQueueKey(key), await rowsOf(b, key))
  }
  return {
    variant,
    iteration,
    contested: encodeQueueKey(contestedKey),
    acquired,
    acquireNowMs: ownerBNowMs,
    afterAcquire,
    writes: outcomes,
    finalMetadata,
    finalRows,
    seeded,
  }
}
