/**
 * heldByKey — a work handler that holds each job until the test releases it, counting per key
 * how many run at once (and the most ever): how the concurrency-limit tests watch a limit
 * across work loops and engines without sleeping.
 */

// Every handler's gates made so far, for `releaseEveryHeld`.
const everyGates = new Set<Array<() => void>>()

/**
 * Releases every handler still held, of every `heldByKey` made so far: a test's teardown calls it
 * before closing its engines, whose close waits for running handlers (a case that failed with
 * handlers held would otherwise hang there instead of reporting its assertion).
 */
export function releaseEveryHeld(): void {
  for (const gates of everyGates) while (gates.length > 0) gates.shift()?.()
  everyGates.clear()
}

/** The handler, its release gates (first come first released), and the counts. */
export function heldByKey<P>(keyOf: (payload: P) => string) {
  const running = new Map<string, number>()
  const most = new Map<string, number>()
  const gates: Array<() => void> = []
  everyGates.add(gates)
  const state = { done: 0 }
  const handler = async (job: { readonly payload: P }): Promise<void> => {
    const key = keyOf(job.payload)
    running.set(key, (running.get(key) ?? 0) + 1)
    most.set(key, Math.max(most.get(key) ?? 0, running.get(key) ?? 0))
    await new Promise<void>((resume) => gates.push(resume))
    running.set(key, (running.get(key) ?? 0) - 1)
    state.done++
  }
  return { handler, gates, most, done: () => state.done }
}
