/**
 * Swarm — every option of one simulated run, drawn from its seed (swarm testing: each seed
 * turns some faults up, some down, some off entirely, so many seeds explore many regimes).
 * The simulator prints these before it runs, so a failing seed explains itself.
 */
import { Random } from '../../src/kernel/Random.ts'
import { describeFaults, drawFaultChances } from '../core/FaultChances.ts'

/** The faults the simulator injects, each by name. Only faults the system claims to survive. */
export const faultNames = [
  'crash.beforeStore',
  'crash.afterCommit',
  'crash.midBatch',
  'restart',
  'takeover',
  'membership.disagree',
  'idleUnload',
  'store.unavailable',
  'store.maybeCommitted',
  'store.latency',
  'history.retryable',
  'history.alreadyStarted',
  'history.obsolete',
  'history.slow',
  'clock.jump',
] as const

/** One fault's name. */
export type FaultName = (typeof faultNames)[number]

/** Every option of a run. */
export interface SwarmOptions {
  readonly seed: number
  readonly hosts: number
  readonly families: number
  readonly partitionCount: number
  /** Safety-phase steps (with faults). */
  readonly steps: number
  /** Liveness-phase step budget (no faults) before a run is declared stuck. */
  readonly livenessStepsMax: number
  /** Probability per step of each fault (0 = off for this seed). */
  readonly faults: Readonly<Record<FaultName, number>>
  /** Relative weights of client actions. */
  readonly produceWeight: number
  readonly pollWeight: number
  /** Probability an add carries a priority above 0. */
  readonly priorityChance: number
  /** Probability an add is pinned to deployment version `v1` (and a poll runs as `v1`). */
  readonly versionChance: number
  /** Relative weight of a user-data update (a read, then a CAS with the version read). */
  readonly userDataWeight: number
  /** Relative weight of retiring version `v1` of a family on a host (its backlog relocates to the default queue); 0 without versions. */
  readonly retireWeight: number
}

/** Overrides a caller may pin (CLI flags); everything else comes from the seed. */
export interface SwarmOverrides {
  readonly hosts?: number
  readonly steps?: number
  /** Turn every fault off (a pure liveness run). */
  readonly faultsOff?: boolean
}

/** Draws a run's options from its seed. */
export function swarmOptions(seed: number, overrides: SwarmOverrides = {}): SwarmOptions {
  const random = Random.make(seed)
  const faults = drawFaultChances(random, faultNames, overrides.faultsOff === true)
  const drawn = {
    seed,
    hosts: overrides.hosts ?? random.int(2, 5),
    families: random.int(1, 3),
    partitionCount: random.int(1, 4),
    steps: overrides.steps ?? 2_000,
    livenessStepsMax: 20_000,
    faults,
    produceWeight: random.int(1, 6),
    pollWeight: random.int(1, 6),
    priorityChance: random.pick([0, 0.1, 0.5]),
    versionChance: random.pick([0, 0, 0.2]),
    userDataWeight: random.pick([0, 1]),
  }
  // Drawn last, so every option drawn before it stays what it was for each seed.
  const retireWeight = random.pick([0, 1])
  return { ...drawn, retireWeight: drawn.versionChance > 0 ? retireWeight : 0 }
}

/** One line per option, for the run's header. */
export function describeOptions(options: SwarmOptions): string[] {
  return [
    `seed=${options.seed} hosts=${options.hosts} families=${options.families} partitions=${options.partitionCount} steps=${options.steps}`,
    `weights produce=${options.produceWeight} poll=${options.pollWeight} userData=${options.userDataWeight} retire=${options.retireWeight} priorityChance=${options.priorityChance} versionChance=${options.versionChance}`,
    `faults ${describeFaults(options.faults)}`,
  ]
}
