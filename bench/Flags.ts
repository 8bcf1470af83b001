/**
 * Flags — the command-line options the bench scripts share: `--name <whole number>` and the
 * `--seed` every seeded script prints first, so a run can be repeated.
 *
 * Does not: parse anything else; a script reads its other flags itself.
 */
import { seedFromEntropy } from '../src/kernel/Random.ts'

/** The whole number after `--name`, or `fallback` without the flag; throws on anything else. */
export function wholeNumberFlag(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`)
  if (index < 0) return fallback
  const value = Number(process.argv[index + 1])
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${name} needs a whole number`)
  return value
}

/** `--seed`, or one drawn from entropy (a non-negative 31-bit integer). */
export function seedFlag(): number {
  return wholeNumberFlag('seed', (seedFromEntropy() >>> 0) % 2 ** 31)
}
