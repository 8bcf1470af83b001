/**
 * ParallelSeeds — runs the seeds of a batch several at a time and hands their results on in
 * seed order, so a batch prints and sums exactly as a serial one does. A seed runs either in
 * this thread or on a `node:worker_threads` worker of a `SeedWorkers` pool; each seed is a whole
 * world on its own, so where it runs changes nothing in it (same decisions, same trace).
 *
 * How a worker loads the code: the worker is started from a few lines of inline JavaScript
 * (`eval`), which import the module that runs a seed by URL — the module's own
 * `import.meta.url`, handed over by the caller. From dist/ that is compiled `.js` and plain Node
 * loads it. From source (vitest, `npx tsx`) it is a `.ts` file: the worker first registers tsx's
 * loader (`tsx/esm/api`, a development dependency, resolved from this file with
 * `import.meta.resolve`) and then imports it.
 * So one mechanism serves both, with no worker file of its own to build or ship.
 *
 * Does not: decide what a seed does or what it returns (the workload's batch does); results and
 * inputs cross threads by structured clone, so they must be plain data.
 */
import { Worker } from 'node:worker_threads'

/** One call a worker makes: `module`'s export `name`, applied to `input`. */
export interface SeedCall {
  /** The module's URL (`import.meta.url` of the module that exports `name`). */
  readonly module: string
  readonly name: string
  readonly input: unknown
}

interface Reply {
  readonly id: number
  readonly ok: boolean
  readonly value?: unknown
  readonly error?: string
}

// The worker: registers tsx when it must load TypeScript, then answers calls one at a time.
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads')
const ready = workerData.tsx === null ? Promise.resolve() : import(workerData.tsx).then((api) => api.register())
parentPort.on('message', async ({ id, module, name, input }) => {
  try {
    await ready
    const value = await (await import(module))[name](input)
    parentPort.postMessage({ id, ok: true, value })
  } catch (error) {
    parentPort.postMessage({ id, ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) })
  }
})
`

// tsx's loader when this module runs from TypeScript source; null from compiled JavaScript.
function tsxLoaderUrl(): string | null {
  if (!import.meta.url.endsWith('.ts')) return null
  // The ES module entry: tsx's CommonJS API build cannot register its loader from a worker.
  return import.meta.resolve('tsx/esm/api')
}

/** A pool of worker threads, each running one seed at a time; `close()` when done. */
export class SeedWorkers {
  readonly #idle: Worker[] = []
  readonly #waiting: Array<(worker: Worker) => void> = []
  readonly #all: Worker[] = []
  #sequence = 0

  /** @param size how many workers (each seed uses one core while it runs). */
  constructor(size: number) {
    const tsx = tsxLoaderUrl()
    for (let i = 0; i < size; i++) {
      const worker = new Worker(workerSource, { eval: true, workerData: { tsx } })
      this.#all.push(worker)
      this.#idle.push(worker)
    }
  }

  /** Runs one call on the next free worker; rejects with the worker's error text if it throws. */
  async run<T>(call: SeedCall): Promise<T> {
    const worker = this.#idle.pop() ?? (await new Promise<Worker>((resolve) => this.#waiting.push(resolve)))
    try {
      return await new Promise<T>((resolve, reject) => {
        const id = ++this.#sequence
        const onMessage = (reply: Reply): void => {
          if (reply.id !== id) return
          cleanup()
          if (reply.ok) resolve(reply.value as T)
          else reject(new Error(`seed worker: ${reply.error ?? 'failed'}`))
        }
        const onError = (error: Error): void => {
          cleanup()
          reject(error)
        }
        const onExit = (code: number): void => {
          cleanup()
          reject(new Error(`seed worker exited with code ${code}`))
        }
        const cleanup = (): void => {
          worker.off('message', onMessage)
          worker.off('error', onError)
          worker.off('exit', onExit)
        }
        worker.on('message', onMessage)
        worker.on('error', onError)
        worker.on('exit', onExit)
        worker.postMessage({ id, ...call })
      })
    } finally {
      const next = this.#waiting.shift()
      if (next === undefined) this.#idle.push(worker)
      else next(worker)
    }
  }

  /** Stops every worker. */
  async close(): Promise<void> {
    await Promise.all(this.#all.map((worker) => worker.terminate()))
  }
}

/**
 * Runs seeds 0…count-1 with up to `parallel` in flight and calls `onResult` for each in index
 * order (a fast later seed waits for the slower ones before it). `onStarted` hears each seed
 * once, in index order too: as soon as the seed has started and every earlier seed was handed
 * on — so a seed's header (printed there) is followed by its own result, never by another
 * seed's. A failure stops new seeds from starting and rejects once the seeds before it were
 * handed on.
 */
export async function runInSeedOrder<T>(
  count: number,
  parallel: number,
  run: (index: number) => Promise<T>,
  onResult: (value: T, index: number) => void | Promise<void>,
  onStarted: (index: number) => void = () => {},
): Promise<void> {
  const settled: Array<Promise<T>> = []
  let inFlight = 0
  let failed = false
  // The next seed `onStarted` owes, and how many seeds were handed on.
  let announced = 0
  let handedOn = 0
  const announce = (): void => {
    while (announced < settled.length && announced <= handedOn) onStarted(announced++)
  }
  const launch = (): void => {
    while (!failed && settled.length < count && inFlight < parallel) {
      inFlight++
      const index = settled.length
      const result = run(index)
      settled.push(result)
      result.then(
        () => {
          inFlight--
          launch()
        },
        () => {
          inFlight--
          failed = true
        },
      )
    }
    announce()
  }
  launch()
  for (let index = 0; index < count; index++) {
    const result = settled[index]
    if (result === undefined) throw new Error(`seed ${index} never started`)
    const value = await result
    announce()
    await onResult(value, index)
    handedOn = index + 1
    announce()
  }
}

/** A batch plan as the seed runner sees it: how many seeds, on how many threads. */
export interface SeedPlan {
  readonly seedCount: number
  /** Worker threads to run seeds on; 1 (the default) runs them in this thread. */
  readonly parallel?: number
}

/** The unit a batch runs per seed: `run`, exported as `name` from the module at `module` (so a worker can load it). */
export interface PlanSeedUnit<Plan extends SeedPlan, Report> {
  readonly module: string
  readonly name: string
  readonly run: (input: { readonly plan: Plan; readonly index: number }) => Promise<Report>
}

/**
 * Runs every seed of `plan` through `unit`, on `plan.parallel` worker threads (a pool started
 * and stopped here) or in this thread, and hands each report on in seed order (`runInSeedOrder`).
 */
export async function runPlanSeeds<Plan extends SeedPlan, Report>(
  plan: Plan,
  unit: PlanSeedUnit<Plan, Report>,
  onReport: (report: Report, index: number) => void | Promise<void>,
  onStarted?: (index: number) => void,
): Promise<void> {
  const parallel = Math.min(plan.parallel ?? 1, plan.seedCount)
  const workers = parallel > 1 ? new SeedWorkers(parallel) : undefined
  const runIndex = (index: number): Promise<Report> => (workers === undefined ? unit.run({ plan, index }) : workers.run<Report>({ module: unit.module, name: unit.name, input: { plan, index } }))
  try {
    await runInSeedOrder(plan.seedCount, parallel, runIndex, onReport, onStarted)
  } finally {
    await workers?.close()
  }
}
