/**
 * Determinism — the self-check every workload's runs pass: the same seed run twice gives the
 * same trace, byte for byte (its hash), and when it does not, the first line where the two
 * runs part says where to look. Also which store a world runs on, which every workload's
 * runner takes.
 */

/** Which store the world runs on. */
export type SimStoreKind = 'memory' | 'embedded' | 'postgres'

/** What the check reads of a run: its trace hash and the lines it kept. */
export interface TracedRun {
  readonly traceHash: string
  readonly trace: ReadonlyArray<string>
}

/**
 * Runs `run` twice with its whole trace kept and reports the first trace line where the runs
 * diverge, or null. `earlier`, a result of the same run already made with `keepTrace`, stands in
 * for the first run.
 */
export async function checkTwice<Run extends object, Seeded extends { readonly result: TracedRun }>(
  run: Run,
  earlier: Seeded | undefined,
  runSeed: (run: Run & { readonly keepTrace: boolean }) => Promise<Seeded>,
): Promise<{ hash: string; divergence: string | null }> {
  const first = earlier ?? (await runSeed({ ...run, keepTrace: true }))
  const second = await runSeed({ ...run, keepTrace: true })
  return { hash: first.result.traceHash, divergence: firstDivergence(first.result, second.result) }
}

/** The first trace line where two runs of one seed part, or null when their hashes agree. */
export function firstDivergence(first: TracedRun, second: TracedRun): string | null {
  if (first.traceHash === second.traceHash) return null
  const a = first.trace
  const b = second.trace
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) return `line ${i + 1}:\n  first:  ${a[i] ?? '(end)'}\n  second: ${b[i] ?? '(end)'}`
  }
  return 'hashes differ but traces are equal (hash input differs)'
}
