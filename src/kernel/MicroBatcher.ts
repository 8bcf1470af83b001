/**
 * MicroBatcher — many concurrent calls, few store round trips. A call joins the batch being
 * gathered; a batch leaves at the end of the current turn (a microtask), or — while
 * `inFlightMax` batches are already at the store — when one of them returns. So a lone call
 * costs no added wait, and under load batches grow by themselves to `sizeMax`, the way
 * graphile-worker batches its completions.
 *
 * Invariants: every call is answered once, with its own result or with the batch's failure;
 * results come back in call order; at most `inFlightMax` batches and `sizeMax` calls per batch
 * (named limits), and calls wait in an array no longer than the calls made (each caller waits on
 * its own answer, so the producers are the callers themselves).
 *
 * Does not: time anything (no timers: the turn is the window), retry, or reorder.
 */

/** What a batcher needs: the batched operation and its bounds. */
export interface MicroBatcherOptions<In, Out> {
  /** Runs one batch; must answer one result per input, in order. */
  readonly run: (inputs: ReadonlyArray<In>) => Promise<ReadonlyArray<Out>>
  readonly sizeMax: number
  readonly inFlightMax: number
}

interface Waiting<In, Out> {
  readonly input: In
  readonly resolve: (value: Out) => void
  readonly reject: (error: unknown) => void
}

/** Makes a batcher; the returned function is one call. */
export function makeMicroBatcher<In, Out>(options: MicroBatcherOptions<In, Out>): (input: In) => Promise<Out> {
  const waiting: Array<Waiting<In, Out>> = []
  let inFlight = 0
  let scheduled = false

  const schedule = (): void => {
    if (scheduled || inFlight >= options.inFlightMax || waiting.length === 0) return
    scheduled = true
    queueMicrotask(flush)
  }

  const flush = (): void => {
    scheduled = false
    if (inFlight >= options.inFlightMax || waiting.length === 0) return
    const batch = waiting.splice(0, options.sizeMax)
    inFlight++
    options
      .run(batch.map((entry) => entry.input))
      .then(
        (results) => {
          if (results.length !== batch.length) throw new Error(`a batch of ${batch.length} answered ${results.length} results`)
          batch.forEach((entry, index) => entry.resolve(results[index] as Out))
        },
        (error: unknown) => {
          for (const entry of batch) entry.reject(error)
        },
      )
      .catch((defect: unknown) => {
        for (const entry of batch) entry.reject(defect)
      })
      .finally(() => {
        inFlight--
        schedule()
      })
    schedule()
  }

  return (input) =>
    new Promise<Out>((resolve, reject) => {
      waiting.push({ input, resolve, reject })
      schedule()
    })
}
