/**
 * FaultChances — how a seed turns faults on (swarm testing, the same for every workload): a
 * third of the faults are off for any given seed and the rest get a per-step probability on a
 * log scale, drawn in the order the workload lists its fault names. Also the one line that
 * names the faults a seed turned on.
 */
import type { Random } from '../../src/kernel/Random.ts'

/** Draws each fault's per-step probability, in `names` order. */
export function drawFaultChances<Name extends string>(random: Random, names: ReadonlyArray<Name>, faultsOff: boolean): Record<Name, number> {
  const faults = {} as Record<Name, number>
  for (const name of names) {
    // A third of faults are off for any given seed; the rest get a probability on a log scale.
    faults[name] = faultsOff || random.chance(1 / 3) ? 0 : 0.002 * 2 ** random.int(0, 4)
  }
  return faults
}

/** `name=p` for every fault switched on, or `none`. */
export function describeFaults(faults: Readonly<Record<string, number>>): string {
  const on = Object.entries(faults)
    .filter(([, p]) => p > 0)
    .map(([name, p]) => `${name}=${p}`)
  return on.length === 0 ? 'none' : on.join(' ')
}
