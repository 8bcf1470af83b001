/**
 * Architecture checks (DESIGN.md §3): imports point down the layer stack and never in a cycle,
 * only the CLI sees `sim/` (through `sim/index.ts`), the simulator's two workloads (`sim/jobs`,
 * `sim/matching`) import only `sim/core` and themselves, machines never import Effect, only the SQL
 * stores touch a database driver, and nothing under `src/` outside `src/kernel/` reads the real
 * clock, randomness or timers.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '..')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return path.endsWith('.ts') && !path.endsWith('.test.ts') ? [path] : []
  })
}

// Every .ts file below `dir`, tests included (a test reaching into the other workload is as wrong as a source file doing it).
function allTsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return allTsFiles(path)
    return path.endsWith('.ts') ? [path] : []
  })
}

type Layer = 'kernel' | 'domain' | 'persistence' | 'machines' | 'actors' | 'jobs' | 'dashboard' | 'cli' | 'api' | 'sim' | 'other'

function layerOf(path: string): Layer {
  const rel = relative(root, path)
  if (rel === 'src/index.ts') return 'api'
  const match = /^src\/(kernel|domain|persistence|machines|actors|jobs|dashboard|cli)\//.exec(rel)
  if (match) return match[1] as Layer
  if (rel.startsWith('sim/')) return 'sim'
  return 'other'
}

// Which layers each layer may import (itself included). Lower layers never see higher ones.
const allowed: Record<Layer, ReadonlyArray<Layer>> = {
  kernel: ['kernel'],
  domain: ['kernel', 'domain'],
  persistence: ['kernel', 'domain', 'persistence'],
  machines: ['kernel', 'domain', 'persistence', 'machines'],
  actors: ['kernel', 'domain', 'persistence', 'machines', 'actors'],
  jobs: ['kernel', 'domain', 'persistence', 'machines', 'actors', 'jobs'],
  // The dashboard sits beside the CLI, above jobs: it renders and acts through the engine, and
  // never sees the simulator (the CLI hands it a replay function).
  dashboard: ['kernel', 'domain', 'persistence', 'machines', 'actors', 'jobs', 'dashboard'],
  cli: ['kernel', 'domain', 'persistence', 'machines', 'actors', 'jobs', 'dashboard', 'cli', 'api', 'sim'],
  api: ['kernel', 'domain', 'persistence', 'machines', 'actors', 'jobs', 'dashboard', 'api'],
  sim: ['kernel', 'domain', 'persistence', 'machines', 'actors', 'jobs', 'dashboard', 'cli', 'api', 'sim', 'other'],
  other: ['kernel', 'domain', 'persistence', 'machines', 'actors', 'jobs', 'dashboard', 'cli', 'api', 'sim', 'other'],
}

const importPattern = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g

function importsOf(path: string): string[] {
  const text = readFileSync(path, 'utf8')
  return [...text.matchAll(importPattern)].map((match) => (match[1] ?? match[2] ?? match[3]) as string)
}

const srcFiles = sourceFiles(join(root, 'src'))

describe('architecture', () => {
  it('finds the source tree', () => {
    expect(srcFiles.length).toBeGreaterThan(5)
  })

  it('imports only point down the layers of DESIGN.md §3', () => {
    const violations: string[] = []
    for (const file of srcFiles) {
      const from = layerOf(file)
      for (const specifier of importsOf(file)) {
        if (!specifier.startsWith('.')) continue
        const target = layerOf(resolve(dirname(file), specifier))
        if (!allowed[from].includes(target)) violations.push(`${relative(root, file)} (${from}) imports ${specifier} (${target})`)
      }
    }
    expect(violations).toEqual([])
  })

  it('the CLI reaches the simulator only through sim/index.ts', () => {
    const violations = srcFiles.flatMap((file) =>
      importsOf(file)
        .filter((specifier) => specifier.startsWith('.') && layerOf(resolve(dirname(file), specifier)) === 'sim' && relative(root, resolve(dirname(file), specifier)) !== 'sim/index.ts')
        .map((specifier) => `${relative(root, file)} imports ${specifier}`),
    )
    expect(violations).toEqual([])
  })

  // The simulator is one harness (sim/core) with two workloads beside each other: whatever both
  // need lives in sim/core, so neither workload's folder reaches into the other's.
  it('sim/jobs and sim/matching never import each other; sim/core imports neither', () => {
    const workloadOf = (path: string): string | null => /^sim\/(core|jobs|matching|scale)\//.exec(relative(root, path))?.[1] ?? null
    // The world at scale is the jobs workload with many engines: it builds on sim/jobs, never on sim/matching.
    const mayImport: Record<string, ReadonlyArray<string>> = { core: ['core'], jobs: ['core', 'jobs'], matching: ['core', 'matching'], scale: ['core', 'jobs', 'scale'] }
    const violations: string[] = []
    const simFiles = readdirSync(join(root, 'sim')).flatMap((name) => (statSync(join(root, 'sim', name)).isDirectory() ? allTsFiles(join(root, 'sim', name)) : []))
    for (const file of simFiles) {
      const from = workloadOf(file) as string
      for (const specifier of importsOf(file)) {
        if (!specifier.startsWith('.')) continue
        const target = workloadOf(resolve(dirname(file), specifier))
        if (target !== null && !(mayImport[from] ?? []).includes(target)) violations.push(`${relative(root, file)} (sim/${from}) imports ${specifier} (sim/${target})`)
      }
    }
    expect(simFiles.length).toBeGreaterThan(20)
    expect(violations).toEqual([])
  })

  it('machines see the store contracts (queues, jobs) only as types', () => {
    const violations = srcFiles
      .filter((file) => layerOf(file) === 'machines')
      .flatMap((file) =>
        [...readFileSync(file, 'utf8').matchAll(/(?:^|\n)\s*(import(?:\s+type)?)\s[^'"]*?from\s+['"]([^'"]*persistence[^'"]*)['"]/g)]
          .filter((match) => match[1] !== 'import type' || !/\/(Store|JobStore)\.ts$/.test(match[2] as string))
          .map((match) => `${relative(root, file)}: ${match[0].trim()}`),
      )
    expect(violations).toEqual([])
  })

  it('machines are pure: no Effect, no store, no driver', () => {
    const violations = srcFiles
      .filter((file) => layerOf(file) === 'machines')
      .flatMap((file) => importsOf(file).filter((s) => s === 'effect' || s.startsWith('effect/') || s === 'pg' || s.includes('pglite')).map((s) => `${relative(root, file)} imports ${s}`))
    expect(violations).toEqual([])
  })

  it('only the SQL store and the CLI touch database drivers; actors never import a store implementation', () => {
    const violations: string[] = []
    for (const file of srcFiles) {
      const rel = relative(root, file)
      for (const specifier of importsOf(file)) {
        const isDriver = specifier === 'pg' || specifier.startsWith('@electric-sql/pglite')
        if (isDriver && !/^src\/persistence\/(?:\w+\/)*sql\//.test(rel) && !rel.startsWith('src/cli/') && rel !== 'src/index.ts' && !rel.startsWith('src/jobs/open')) {
          violations.push(`${rel} imports ${specifier}`)
        }
        const isStoreImpl = /persistence\/(?:\w+\/)*(?:sql\/|Memory\w*Store)/.test(specifier)
        if (isStoreImpl && ['machines', 'actors', 'domain', 'kernel'].includes(layerOf(file))) violations.push(`${rel} imports ${specifier}`)
      }
    }
    expect(violations).toEqual([])
  })

  it('no import cycle anywhere under src/ (type-only imports included)', () => {
    const graph = new Map(
      srcFiles.map((file) => [file, importsOf(file).filter((s) => s.startsWith('.')).map((s) => resolve(dirname(file), s))] as const),
    )
    const cycles: string[] = []
    const state = new Map<string, 'open' | 'done'>()
    const stack: string[] = []
    const visit = (file: string): void => {
      state.set(file, 'open')
      stack.push(file)
      for (const next of graph.get(file) ?? []) {
        if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next].map((f) => relative(root, f)).join(' -> '))
        else if (!state.has(next) && graph.has(next)) visit(next)
      }
      stack.pop()
      state.set(file, 'done')
    }
    for (const file of graph.keys()) if (!state.has(file)) visit(file)
    expect(cycles).toEqual([])
  })

  it('nothing outside src/kernel reads the real clock, randomness or timers', () => {
    const forbidden = /\bDate\.now\s*\(|new\s+Date\s*\(\s*\)|\bMath\.random\s*\(|\bsetTimeout\s*\(|\bsetInterval\s*\(|\bsetImmediate\s*\(|\bperformance\.now\s*\(/
    const violations = srcFiles
      .filter((file) => layerOf(file) !== 'kernel')
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .map((line, index) => ({ line, index }))
          .filter(({ line }) => forbidden.test(line) && !line.trim().startsWith('*') && !line.trim().startsWith('//'))
          .map(({ line, index }) => `${relative(root, file)}:${index + 1}: ${line.trim()}`),
      )
    expect(violations).toEqual([])
  })

  it('src/index.ts is a curated list of exports and nothing else', () => {
    const text = readFileSync(join(root, 'src/index.ts'), 'utf8')
    const code = text
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .split('\n')
      .map((line) => line.replace(/\/\/.*$/, '').trim())
      .filter((line) => line !== '')
    const nonExport = code.filter((line) => !/^(export\b|[}\w,\s]+$|}\s*from\s)/.test(line))
    expect(nonExport).toEqual([])
  })
})
