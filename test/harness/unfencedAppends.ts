/**
 * withUnfencedAppends — a planted bug for the fencing test: a store whose appends are not fenced.
 * Each append reads the queue's current range and appends under it, so a stale owner's write
 * succeeds after another owner acquired the queue — what an append statement without its range
 * check would let through. The fencing checker must catch it. Test-only; production SQL has no
 * switch for it.
 */
import type { Store } from '../../src/persistence/queues/Store.ts'

/** `store` with appends that ignore the caller's range. */
export function withUnfencedAppends(store: Store): Store {
  return {
    ...store,
    async append(params) {
      const current = await store.inspect(params.key)
      return store.append({ ...params, rangeId: current?.metadata.rangeId ?? params.rangeId })
    },
  }
}
