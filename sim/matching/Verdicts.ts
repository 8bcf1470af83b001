/**
 * Verdicts — which checker a violation sentence came from, and one verdict per checker over a
 * batch of seeds (what `matchbox sim` prints at the end). Checkers speak in sentences
 * (Checkers.ts); this file reads their shapes back, so a new sentence shape in Checkers.ts
 * belongs here too — an unknown one is reported as `other`, never dropped.
 *
 * Does not: judge anything itself; it only sorts and counts what the checkers said.
 */
import type { DeliveryReport } from '../core/Checkers.ts'

/** The checkers, in the order a summary lists them; `other` holds defects and stuck closes. */
export const checkerNames = ['fencing', 'at-least-once', 'ack safety', 'id uniqueness', 'user data', 'ownership loss', 'relocation', 'idle poll moves', 'other'] as const

/** One checker's name. */
export type CheckerName = (typeof checkerNames)[number]

// Each pattern matches the sentences one checker writes (see Checkers.ts #fence, #checkAck, …,
// OwnershipLossChecker.ts and IdlePollChecker.ts).
const patterns: ReadonlyArray<readonly [CheckerName, RegExp]> = [
  ['fencing', /: range \d+ (appended|checkpointed|relocated from|relocated into) (after range|but no acquire)|: acquire returned range|checkpoint was refused for its range, yet deleted/],
  ['id uniqueness', /task id allocated twice/],
  ['ack safety', /ack level moved backwards|checkpoint deleted the row of|was saved, past the handled prefix|above the ack level it asked for/],
  ['user data', /^user data /],
  ['ownership loss', /after its \w+ was answered OwnershipLost|skipping the restart back-off/],
  ['relocation', /^relocate .*(removed row|left row|lost the row|duplicated the row|added a row|rows moved, but)/],
  ['at-least-once', /never delivered|started but never added/],
  ['idle poll moves', /^a poll waited on partition \d+ of .* had a task ready/],
]

/** The checker a violation sentence belongs to. */
export function checkerOf(violation: string): CheckerName {
  for (const [name, pattern] of patterns) if (pattern.test(violation)) return name
  return 'other'
}

/** Jepsen's delivery categories summed over seeds. */
export interface DeliveryTotals {
  accepted: number
  delivered: number
  lost: number
  duplicated: number
  unexpected: number
  recovered: number
}

/** Per-checker violation counts and the delivery categories over a batch of seeds. */
export class Verdicts {
  readonly violations = Object.fromEntries(checkerNames.map((name) => [name, 0])) as Record<CheckerName, number>
  /** The first seed each checker failed on. */
  readonly firstSeed: Partial<Record<CheckerName, number>> = {}
  readonly deliveries: DeliveryTotals = { accepted: 0, delivered: 0, lost: 0, duplicated: 0, unexpected: 0, recovered: 0 }

  /** Adds one seed's violations and delivery report. */
  add(seed: number, violations: ReadonlyArray<string>, report: DeliveryReport): void {
    for (const violation of violations) {
      const name = checkerOf(violation)
      this.violations[name]++
      this.firstSeed[name] ??= seed
    }
    this.deliveries.accepted += report.accepted
    this.deliveries.delivered += report.delivered
    this.deliveries.lost += report.lost.length
    this.deliveries.duplicated += report.duplicated
    this.deliveries.unexpected += report.unexpected.length
    this.deliveries.recovered += report.recovered
  }

  /** `pass` or `FAIL` with a count and the first failing seed, per checker. */
  verdict(name: CheckerName): string {
    const count = this.violations[name]
    return count === 0 ? 'pass' : `FAIL (${count} ${count === 1 ? 'violation' : 'violations'}, first on seed ${this.firstSeed[name]})`
  }
}
