/**
 * A long-running engine — `npx tsx bench/longSoak.ts [--minutes 60] [--queues-per-s 5] [--seed S]`.
 *
 * An hour of load, compressed: one engine on the memory store with a ManualClock, stepped one
 * simulated second at a time (advance, then `idle()`). Each second: ten steady queues, worked
 * by `work` loops the whole run, get two jobs each (some delayed, some keyed, one in seven
 * throwing once, so retries and back-off run); and `--queues-per-s` new queues come and go —
 * three jobs each, claimed and acked through `claim()` on half of them, through a `work` loop
 * started for them and stopped a second later on the other half. Nothing is reused, so an hour
 * at five a second is 18,000 queues, past the 10,000 entries of the bounded caches (which start
 * over) and enough that a map with one entry per queue ever seen shows in the heap.
 *
 * Every simulated five minutes it prints, after a full GC: RSS, heap used, the Node handles and
 * requests alive (`process.getActiveResourcesInfo()`), the clock's pending timers, queues seen
 * and jobs handled, then what the engine keeps per queue and partition (its sizes, kernel/Sizes.ts). At the end: each figure's growth over the second half of the run per 1,000
 * queues, and whether every job was handled. Flat means bounded: a leak of one small entry per
 * queue is ~0.1–0.5 MB per 1,000 queues here.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { ManualClock, open } from '../src/index.ts'
import { sizesOf } from '../src/kernel/Sizes.ts'
import { seedFlag, wholeNumberFlag } from './Flags.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const minutes = wholeNumberFlag('minutes', 60)
const queuesPerS = wholeNumberFlag('queues-per-s', 5)
const seed = seedFlag()
console.log(`long soak: --minutes ${minutes} --queues-per-s ${queuesPerS} --seed ${seed} (memory store, ManualClock)`)

const steadyQueues = 10
const sampleEveryS = 300
const clock = new ManualClock(1_700_000_000_000)
const mb = await open({ store: 'memory', clock, seed })
let enqueued = 0
let handled = 0
let queuesSeen = steadyQueues
const thrownOnce = new Set<string>()

const handler = async (job: { readonly id: string; readonly payload: unknown }): Promise<void> => {
  const n = (job.payload as { n: number }).n
  if (n % 7 === 0 && !thrownOnce.has(job.id)) {
    thrownOnce.add(job.id)
    throw new Error('once')
  }
  thrownOnce.delete(job.id)
  handled++
}
const steadyStops = Array.from({ length: steadyQueues }, (_, index) => mb.queue(`steady-${index}`, { visibilityTimeoutS: 30, backoffBaseS: 1 }).work(handler, { concurrency: 4 }))

// The `work` loops of the queues that came in the previous second, stopped in this one.
let leaving: Array<() => Promise<void>> = []

async function second(s: number): Promise<void> {
  for (let index = 0; index < steadyQueues; index++) {
    const queue = mb.queue(`steady-${index}`)
    for (let k = 0; k < 2; k++) {
      const n = s * 2 + k
      await queue.enqueue({ n }, { ...(n % 5 === 0 ? { delayMs: (n % 10) * 1_000 } : {}), ...(n % 3 === 0 ? { key: `k-${index}-${n % 50}` } : {}) })
      enqueued++
    }
  }
  const stopping = leaving
  leaving = []
  await Promise.all(stopping.map((stop) => stop()))
  for (let index = 0; index < queuesPerS; index++) {
    const queue = mb.queue(`brief-${s}-${index}`)
    queuesSeen++
    const ids = await queue.enqueueMany([1, 2, 3].map((n) => ({ payload: { n } })))
    enqueued += ids.length
    if (index % 2 === 0) {
      for (let left = ids.length; left > 0; left--) {
        const job = await queue.claim({ waitMs: 0 })
        if (job !== null && (await job.ack())) handled++
      }
    } else {
      leaving.push(queue.work(async () => void handled++, { concurrency: 2 }))
    }
  }
  clock.advance(1_000)
  await mb.idle()
  for (let turn = 0; turn < 5; turn++) await new Promise<void>((resolve) => setImmediate(resolve))
}

interface Sample {
  readonly minute: number
  readonly wallS: number
  readonly rssMb: number
  readonly heapMb: number
  readonly handles: number
  readonly timers: number
  readonly queues: number
  readonly handled: number
}

const mb1 = (bytes: number) => bytes / 1_048_576
const samples: Sample[] = []
const startedMs = performance.now()
function sample(s: number): void {
  gc()
  const memory = process.memoryUsage()
  const resources = process.getActiveResourcesInfo()
  const sampled: Sample = { minute: s / 60, wallS: (performance.now() - startedMs) / 1000, rssMb: mb1(memory.rss), heapMb: mb1(memory.heapUsed), handles: resources.length, timers: clock.pendingTimerCount(), queues: queuesSeen, handled }
  samples.push(sampled)
  const kinds = new Map<string, number>()
  for (const kind of resources) kinds.set(kind, (kinds.get(kind) ?? 0) + 1)
  console.log(
    `${String(sampled.minute).padStart(3)} min (${sampled.wallS.toFixed(0).padStart(4)} s): RSS ${sampled.rssMb.toFixed(1)} MB, heap ${sampled.heapMb.toFixed(1)} MB, ` +
      `handles ${sampled.handles} (${[...kinds].map(([kind, count]) => `${kind} ${count}`).join(', ')}), clock timers ${sampled.timers}, queues ${sampled.queues}, handled ${sampled.handled}/${enqueued}`,
  )
  const kept = sizesOf(mb)
  console.log(`          kept now: ${Object.entries(kept).map(([name, count]) => `${name} ${count}`).join(', ')}`)
}

sample(0)
for (let s = 1; s <= minutes * 60; s++) {
  await second(s)
  if (s % sampleEveryS === 0) sample(s)
}
await Promise.all(leaving.map((stop) => stop()))
// Delayed jobs and retries still due: let them run.
for (let s = 0; s < 120 && handled < enqueued; s++) {
  clock.advance(1_000)
  await mb.idle()
  for (let turn = 0; turn < 5; turn++) await new Promise<void>((resolve) => setImmediate(resolve))
}
await Promise.all(steadyStops.map((stop) => stop()))
await mb.close()

const half = samples[Math.floor(samples.length / 2)] as Sample
const last = samples[samples.length - 1] as Sample
const perThousand = (field: 'rssMb' | 'heapMb' | 'handles' | 'timers') => ((last[field] - half[field]) / (last.queues - half.queues)) * 1_000
console.log(
  `second half (${half.minute}–${last.minute} min, ${last.queues - half.queues} more queues), growth per 1,000 queues: RSS ${perThousand('rssMb').toFixed(2)} MB, heap ${perThousand('heapMb').toFixed(2)} MB, ` +
    `handles ${perThousand('handles').toFixed(2)}, clock timers ${perThousand('timers').toFixed(2)}`,
)
console.log(`jobs: ${enqueued} enqueued, ${handled} handled${handled === enqueued ? '' : ` — ${enqueued - handled} NOT handled`}; ${((performance.now() - startedMs) / 1000).toFixed(0)} s of wall time`)
if (handled !== enqueued) process.exitCode = 1
