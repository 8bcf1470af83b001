/**
 * StoreHealth — a JobStore that wraps the engine's job store and notices outages: the first
 * `Unavailable` while healthy emits `store.unavailable`, the first success afterwards emits
 * `store.recovered` with how long the store was down (on the engine's clock). Wrap, don't
 * fork: the store underneath is unchanged, and every result and error passes through as is.
 *
 * Does not: retry, or judge other errors (`InvalidInput` is the caller's; a defect is a bug).
 */
import { Unavailable } from '../domain/errors.ts'
import type { JobStore } from '../persistence/jobs/JobStore.ts'
import type { EventHub } from './Events.ts'

/** Wraps `inner`; `now` is the engine's clock in whole ms. */
export function makeObservedJobStore(inner: JobStore, events: EventHub, now: () => number): JobStore {
  let downSinceMs: number | null = null
  const observed: Record<string, unknown> = { kind: inner.kind }
  // Own members and, for a store written as a class, its prototype's methods.
  const names = new Set([...Object.keys(inner), ...Object.getOwnPropertyNames(Object.getPrototypeOf(inner) ?? {})])
  names.delete('constructor')
  for (const name of names) {
    const member = (inner as unknown as Record<string, unknown>)[name]
    if (typeof member !== 'function') continue
    const call = member as (...args: unknown[]) => Promise<unknown>
    observed[name] = async (...args: unknown[]) => {
      try {
        const result = await call.apply(inner, args)
        if (downSinceMs !== null && name !== 'close') {
          const downMs = now() - downSinceMs
          downSinceMs = null
          events.emit({ type: 'store.recovered', downMs, at: now() })
        }
        return result
      } catch (error) {
        if (error instanceof Unavailable && downSinceMs === null) {
          downSinceMs = now()
          events.emit({ type: 'store.unavailable', operation: name, error: error.message, at: downSinceMs })
        }
        throw error
      }
    }
  }
  return observed as unknown as JobStore
}
