/**
 * gate — holds chosen store calls so a test can act while they are in flight: while the gate is
 * closed, `pass()` waits until `open()`; while it is open, `pass()` goes straight through.
 */

/** A gate for store calls; it starts open. */
export interface Gate {
  /** Resolves at once while open; while closed, once the gate opens. */
  pass(): Promise<void>
  close(): void
  /** Opens the gate and lets every held call through. */
  open(): void
  /** How many calls wait at the gate now. */
  held(): number
}

/** Makes an open gate. */
export function makeGate(): Gate {
  let closed = false
  const waiting: Array<() => void> = []
  return {
    pass: () => (closed ? new Promise<void>((resume) => waiting.push(resume)) : Promise.resolve()),
    close: () => {
      closed = true
    },
    open: () => {
      closed = false
      for (const resume of waiting.splice(0)) resume()
    },
    held: () => waiting.length,
  }
}
