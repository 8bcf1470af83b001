/**
 * LifecycleWalkthrough — upstream Matching's "follow one queue", run for real: one PhysicalQueueActor
 * over a memory store, a ManualClock and a History that answers when told to. It loads
 * `default/emails/activity/0`, spools tasks 1–3, dispatches task 2 before task 1 (an
 * acknowledgement gap), lets the checkpoint advance the ack level, unloads, reloads and
 * finishes. After every stage it records what the store holds (persistedQueue) and what the
 * loaded owner holds in memory (loadedQueueProgress).
 *
 * Invariants: deterministic — a fixed clock start and seed, the memory store (whose work is all
 * promise continuations, so one event-loop turn runs it to rest), and answers released in a
 * fixed order. Every stage checks the state it is about to describe; a mismatch is a defect.
 *
 * Does not: print (lifecycle.ts renders the report) or touch any durable store.
 */
import { PhysicalQueueActor } from '../actors/PhysicalQueueActor.ts'
import type { QueueKey } from '../domain/QueueKey.ts'
import { makeTask } from '../domain/Task.ts'
import { assert } from '../kernel/assert.ts'
import { ManualClock, RealClock } from '../kernel/Clock.ts'
import { checkpointAckCountMax, checkpointIntervalMs } from '../kernel/Limits.ts'
import { Random } from '../kernel/Random.ts'
import type { QueueProgress } from '../machines/PhysicalQueueProtocol.ts'
import { makeMemoryStore } from '../persistence/queues/MemoryStore.ts'
import type { Store } from '../persistence/queues/Store.ts'
import { DeferredHistory } from './DeferredHistory.ts'
import { type PersistedQueue, readPersistedQueue } from './PersistedQueue.ts'

/** The queue the walkthrough follows. */
export const lifecycleQueueKey: QueueKey = { namespace: 'default', family: 'emails', type: 'activity', partition: 0, version: null }

/** Virtual start time: 2026-01-01T00:00:00Z, fixed so the walkthrough is reproducible. */
export const lifecycleStartMs = 1_767_225_600_000

/** Seed of the actor's Random (retry jitter; the walkthrough never retries, but it is fixed anyway). */
export const lifecycleSeed = 0

// Far beyond anything the walkthrough waits for, so no poll times out mid-story.
const pollWaitMs = 60_000

/** One subqueue of the loaded owner's memory. */
export interface SubqueueProgress {
  readonly subqueue: number
  /** Highest task id read (memory only). */
  readonly readLevel: number
  /** Ack level in memory: through the fully handled prefix. */
  readonly ackLevel: number
  /** Ack level as last saved by a checkpoint. */
  readonly savedAckLevel: number
  /** Read and not yet handled: with History, or waiting in the buffer for a poller. */
  readonly outstandingTaskIds: ReadonlyArray<number>
  /** Handled above the ack level: completions beyond the gap. */
  readonly completedAboveAck: ReadonlyArray<number>
}

/** What the loaded owner holds in memory (all of it vanishes on unload). */
export interface LoadedQueueProgress {
  /** In-process instance number; not the range id. */
  readonly generation: number
  readonly state: PhysicalQueueActor['state']
  readonly rangeId: number
  readonly subqueues: ReadonlyArray<SubqueueProgress>
  /** Outstanding deliveries, all subqueues. */
  readonly outstanding: number
  /** Deliveries whose start History has not answered yet. */
  readonly deliveriesWithHistory: number
}

/** One step of the story. */
export interface LifecycleStage {
  readonly step: number
  readonly name: string
  readonly title: string
  /** What happened and why, one sentence per entry. */
  readonly narration: ReadonlyArray<string>
  readonly persistedQueue: PersistedQueue
  /** null when no owner is loaded. */
  readonly loadedQueueProgress: LoadedQueueProgress | null
  /** The progress the owner reported when it unloaded, on the stage that unloaded it. */
  readonly unloadedProgress?: QueueProgress
}

/** The whole walkthrough. */
export interface LifecycleReport {
  readonly queue: string
  readonly store: 'memory'
  readonly clockStartMs: number
  readonly seed: number
  readonly stages: ReadonlyArray<LifecycleStage>
}

function loadedProgressOf(queue: PhysicalQueueActor): LoadedQueueProgress {
  const { rangeId, savedAckLevels, windows, deliveriesInFlight } = queue.progress()
  const subqueues = Object.entries(windows).map(([subqueue, window]) => ({
    subqueue: Number(subqueue),
    readLevel: window.readLevel,
    ackLevel: window.ackLevel,
    savedAckLevel: savedAckLevels[Number(subqueue)] ?? 0,
    outstandingTaskIds: window.unhandled,
    completedAboveAck: window.handledAboveAck,
  }))
  return {
    generation: queue.generation,
    state: queue.state,
    rangeId,
    subqueues,
    outstanding: subqueues.reduce((sum, subqueue) => sum + subqueue.outstandingTaskIds.length, 0),
    deliveriesWithHistory: deliveriesInFlight,
  }
}

async function persistedQueueOf(store: Store): Promise<PersistedQueue> {
  const inspection = await store.inspect(lifecycleQueueKey)
  assert(inspection !== null, 'the walkthrough queue was never acquired')
  return readPersistedQueue(store, inspection, Number.POSITIVE_INFINITY)
}

function offScript(what: string): string {
  return `lifecycle walkthrough went off script: ${what}`
}

/** Runs the walkthrough on a fresh memory store and returns every stage. */
export async function runLifecycleWalkthrough(): Promise<LifecycleReport> {
  const store = makeMemoryStore()
  const clock = new ManualClock(lifecycleStartMs)
  const history = new DeferredHistory()
  const random = Random.make(lifecycleSeed)
  const realClock = new RealClock()
  const defects: unknown[] = []
  const stages: LifecycleStage[] = []

  // The memory store and the actor only chain promises; after one real event-loop turn every
  // chain that can move has moved, and the story can be checked and told.
  const turn = async (): Promise<void> => {
    await new Promise<void>((resolve) => realClock.setTimer(0, resolve))
    if (defects.length > 0) throw defects[0]
  }
  const load = (generation: number): PhysicalQueueActor => {
    const queue = new PhysicalQueueActor({ key: lifecycleQueueKey, store, history, clock, random, generation, onDefect: (defect) => defects.push(defect) })
    queue.start()
    return queue
  }
  const record = async (name: string, title: string, narration: ReadonlyArray<string>, queue: PhysicalQueueActor | null, unloadedProgress?: QueueProgress) => {
    const stage: LifecycleStage = {
      step: stages.length + 1,
      name,
      title,
      narration,
      persistedQueue: await persistedQueueOf(store),
      loadedQueueProgress: queue === null ? null : loadedProgressOf(queue),
      ...(unloadedProgress === undefined ? {} : { unloadedProgress }),
    }
    stages.push(stage)
    return stage
  }
  const rowsOf = (stage: LifecycleStage) => stage.persistedQueue.tasks.map((task) => task.taskId).join(',')
  const poll = (queue: PhysicalQueueActor, identity: string) => queue.poll({ identity, version: null }, clock.now() + pollWaitMs)

  let queue = load(1)
  await turn()
  assert(queue.state === 'owned', offScript(`generation 1 is ${queue.state}, not owned`))
  await record('load', 'Load', [
    'A PhysicalQueueActor (generation 1) loads default/emails/activity/0 and acquires it in one transaction.',
    'A new queue starts at range 1, ack level 0, last task id 0.',
  ], queue)

  const adds = await Promise.all(['email-1', 'email-2', 'email-3'].map((jobId) => queue.addTask(makeTask({ jobId, createdAtMs: clock.now() }))))
  assert(adds.every((add, index) => add.kind === 'spooled' && add.taskId === index + 1), offScript(`adds were ${JSON.stringify(adds)}`))
  await turn()
  const spooled = await record('spool', 'Spool and read', [
    'Tasks 1, 2 and 3 arrive while no worker polls, so none can sync-match: each is appended.',
    'Each append checks the range, allocates the next task id and updates last_task_id in one transaction.',
    'The owner reads the backlog in task-id order: read level 3, nothing handled yet.',
  ], queue)
  assert(spooled.loadedQueueProgress?.subqueues[0]?.readLevel === 3, offScript('tasks 1-3 were not read'))

  const [first, second] = [poll(queue, 'worker-1'), poll(queue, 'worker-2')]
  await turn()
  assert(history.waiting().join() === 'email-1,email-2', offScript(`History was asked about ${history.waiting().join()}`))
  history.release('email-2')
  const secondResult = await second
  assert(secondResult.kind === 'task' && secondResult.taskId === 2, offScript('worker-2 did not get task 2'))
  await turn()
  const gap = await record('gap', 'Dispatch out of order: the acknowledgement gap', [
    'Two workers poll; the owner asks History to start task 1 (for worker-1) and task 2 (for worker-2).',
    'History answers task 2 first: its delivery is handled, but task 1 is still with History.',
    'The ack level can only advance through a fully handled prefix, so it stays 0 and task 2 waits above the gap.',
    'Rows 1, 2 and 3 all stay stored: stored rows are not the tasks still awaiting dispatch.',
  ], queue)
  const gapWindow = gap.loadedQueueProgress?.subqueues[0]
  assert(gapWindow?.readLevel === 3 && gapWindow.ackLevel === 0 && gapWindow.completedAboveAck.join() === '2' && rowsOf(gap) === '1,2,3', offScript('no gap'))

  history.release('email-1')
  const firstResult = await first
  assert(firstResult.kind === 'task' && firstResult.taskId === 1, offScript('worker-1 did not get task 1'))
  await turn()
  const handled = await record('handled', 'Task 1 is handled', [
    'History answers task 1: the prefix through task 2 is now fully handled, so the ack level in memory advances to 2.',
    `Nothing is saved yet: the owner checkpoints every ${checkpointAckCountMax} acks or ${checkpointIntervalMs} ms, so the saved ack level is still 0.`,
  ], queue)
  assert(handled.loadedQueueProgress?.subqueues[0]?.ackLevel === 2, offScript('ack level did not advance to 2'))

  clock.advance(checkpointIntervalMs)
  await turn()
  const checkpointed = await record('checkpoint', 'Checkpoint', [
    `${checkpointIntervalMs} ms later the checkpoint checks the range, saves ack level 2 and deletes rows 1 and 2, in one transaction.`,
    'Task 3 remains: it was read but never dispatched, so it is still outstanding.',
  ], queue)
  assert(checkpointed.persistedQueue.ackLevels[0] === 2 && rowsOf(checkpointed) === '3', offScript('checkpoint did not save ack 2 and keep row 3'))

  const unloadedProgress = await queue.drain('lifecycle walkthrough: unload')
  assert(unloadedProgress.reason.kind === 'drained', offScript(`unload reason ${unloadedProgress.reason.kind}`))
  await record('unload', 'Unload', [
    'The owner drains: it refuses new work, writes one final checkpoint (ack level 2) and unloads.',
    'Its read level and outstanding set vanish with it; the metadata and row 3 remain.',
    'Unloading does not reset the range, and the metadata alone cannot tell whether an owner is loaded.',
  ], null, unloadedProgress)

  queue = load(2)
  await turn()
  const reloaded = await record('reload', 'Reload', [
    'A new owner (generation 2) acquires the queue: range 1 becomes 2, and the saved ack level 2 is intact.',
    'It resumes reading above the saved ack level and rereads task 3: read level 3, one outstanding.',
    'Had the first owner crashed before task 1 was handled, this one would reread task 2 too; History answers a repeated start with already-started or obsolete, so the replay is safe.',
  ], queue)
  assert(reloaded.persistedQueue.rangeId === 2 && reloaded.loadedQueueProgress?.subqueues[0]?.readLevel === 3, offScript('reload did not reread task 3 at range 2'))

  const third = poll(queue, 'worker-3')
  await turn()
  history.release('email-3')
  await third
  clock.advance(checkpointIntervalMs)
  await turn()
  const finished = await record('finish', 'Finish', [
    'A worker polls; History starts task 3; the next checkpoint saves ack level 3 and deletes row 3.',
    'The tasks table is empty, which does not mean the jobs completed: History owns their execution state.',
  ], queue)
  assert(finished.persistedQueue.storedRows === 0, offScript('row 3 was not deleted'))

  await queue.drain('lifecycle walkthrough: done')
  await store.close()
  return { queue: finished.persistedQueue.queue, store: 'memory', clockStartMs: lifecycleStartMs, seed: lifecycleSeed, stages }
}
