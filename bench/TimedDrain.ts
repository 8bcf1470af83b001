/**
 * TimedDrain — one timed drain of a queue's pre-enqueued backlog, shared by the benches that
 * compare drains (claimLayout.ts, claimFence.ts): `count` no-op jobs are enqueued in chunks
 * (untimed), then `work(options)` drains them, timed from starting the workers to the last
 * handler start, with other processes' CPU over the drain (CpuWatch.ts).
 *
 * Does not: open or close the engine, or judge a figure.
 */
import type { JobQueue, WorkOptions } from '../src/index.ts'
import type { makeCpuWatch } from './CpuWatch.ts'

/** Other processes' CPU above this, in cores, flags a drain busy. */
export const busyCoresMax = 0.5
/** Connections per drain's pool. */
export const poolMax = 18
/** The drain modes these benches compare: concurrency 16, one at a time and in batches of 64. */
export const drainModes = [
  { name: 'concurrency 16', options: { concurrency: 16 } },
  { name: 'concurrency 16, batch 64', options: { concurrency: 16, batch: 64 } },
] as const

/** Jobs per enqueueMany when filling the backlog. */
const fillChunk = 1_000

/** What a drain measured. */
export interface DrainFigures {
  readonly jobsPerS: number
  readonly othersCores: number
}

/** Enqueues `count` jobs on `queue`, calls `beforeDrain`, then drains them with `work(options)`. */
export async function timedDrain(queue: JobQueue, count: number, options: WorkOptions, cpu: ReturnType<typeof makeCpuWatch>, beforeDrain: () => Promise<void> = async () => {}): Promise<DrainFigures> {
  for (let at = 0; at < count; at += fillChunk) await queue.enqueueMany(Array.from({ length: Math.min(fillChunk, count - at) }, (_, n) => ({ payload: { n: at + n } })))
  await beforeDrain()
  let handled = 0
  let finish = (): void => {}
  const finished = new Promise<void>((resolve) => (finish = resolve))
  const from = cpu.sample()
  const started = performance.now()
  const stop = queue.work(async () => {
    if (++handled === count) finish()
  }, options)
  await finished
  const elapsedMs = performance.now() - started
  const share = cpu.share(from, cpu.sample())
  await stop()
  return { jobsPerS: (count * 1000) / elapsedMs, othersCores: share.othersCores }
}
