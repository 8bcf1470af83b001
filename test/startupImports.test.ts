/**
 * What importing Matchbox loads: the modules `src/index.ts` reaches through static imports
 * (`import type` is erased; with verbatimModuleSyntax an `import { type X }` is not, so it
 * counts). PGlite's WASM build must not be among them — it is imported when an embedded store is
 * opened (src/persistence/sql/PgliteDriver.ts), so a service on PostgreSQL never pays for it.
 * bench/startup.ts measures the import and open times themselves.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '..')

// Static import and re-export statements that survive compilation: not `import type` / `export type`.
const staticImport = /(?:^|\n)\s*(import|export)\s+(?!type\s)[^'"`;]*?from\s+['"]([^'"]+)['"]|(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g

/** The bare package specifiers loaded by importing `entry`, following relative imports. */
function packagesLoadedBy(entry: string): Set<string> {
  const packages = new Set<string>()
  const seen = new Set<string>()
  const pending = [entry]
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue
    seen.add(file)
    for (const match of readFileSync(file, 'utf8').matchAll(staticImport)) {
      const specifier = (match[2] ?? match[3]) as string
      if (specifier.startsWith('.')) {
        const target = join(dirname(file), specifier)
        expect(existsSync(target), `${file} imports ${specifier}`).toBe(true)
        pending.push(target)
      } else if (!specifier.startsWith('node:')) {
        packages.add(specifier)
      }
    }
  }
  return packages
}

describe('start-up imports', () => {
  it('importing the package loads pg but not PGlite', () => {
    const packages = packagesLoadedBy(join(root, 'src/index.ts'))
    expect(packages.has('pg')).toBe(true)
    expect([...packages].filter((name) => name.startsWith('@electric-sql/'))).toEqual([])
  })
})
