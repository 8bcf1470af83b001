/**
 * MutationHunt — the loop the mutation tests share: run seeds 1, 2, … of a world with a
 * deliberate bug until a checker reports a violation, up to a bound. Whichever world and menu
 * (sim/matching/Mutations.ts for Matching, sim/jobs/JobMutations.ts for Jobs), the evidence reads the same.
 */

/** The first seed whose run failed, and its first violation; null when none of 1…seedsMax did. */
export async function huntMutation(seedsMax: number, runSeed: (seed: number) => Promise<{ readonly ok: boolean; readonly violations: ReadonlyArray<string> }>): Promise<{ readonly caughtAt: number | null; readonly violation: string }> {
  for (let seed = 1; seed <= seedsMax; seed++) {
    const result = await runSeed(seed)
    if (!result.ok) return { caughtAt: seed, violation: result.violations[0] ?? '(no message)' }
  }
  return { caughtAt: null, violation: '' }
}
