#!/usr/bin/env node
/**
 * build — `npm run build`: the published JavaScript and declarations in dist/.
 *
 * Starts from an empty dist/ (a deleted source must not live on in the package), compiles with
 * tsconfig.build.json, then copies what the code reads at runtime next to the compiled module
 * that reads it:
 * - every `.sql` file under src/ (the migrations, found through `new URL('./migrations/',
 *   import.meta.url)`, so the same lookup works from src/ under vitest and from dist/src/);
 * - a `dist/package.json` holding `type` and `version`: the CLI reads its version from
 *   `../../package.json` relative to its own module, which is dist/ once compiled, and `type`
 *   keeps the compiled `.js` files ES modules for Node and for TypeScript's NodeNext.
 *
 * It also adds `/// <reference types="emscripten" />` to each declaration file that imports
 * `@electric-sql/pglite`. PGlite's own declarations use the global `Emscripten`, `FS` and
 * `EmscriptenModule` types without referencing them (it lists @types/emscripten only as a
 * devDependency), so a consumer that type-checks its libraries (no skipLibCheck) fails inside
 * PGlite as soon as our public types mention `PGlite`. The directive, with @types/emscripten
 * as our dependency, supplies those globals.
 *
 * Does not: bundle, minify, or touch anything outside dist/.
 */
import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const dist = join(root, 'dist')

rmSync(dist, { recursive: true, force: true })

const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc')
const compiled = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' })
if (compiled.status !== 0) {
  // tsc has printed the errors; a half-checked dist/ is not a build.
  process.stderr.write(`build: tsc -p tsconfig.build.json failed (${compiled.status ?? compiled.signal})\n`)
  process.exit(1)
}

for (const entry of readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.sql')) continue
  const from = join(entry.parentPath ?? entry.path, entry.name)
  const to = join(dist, relative(root, from))
  mkdirSync(dirname(to), { recursive: true })
  cpSync(from, to)
}

const pgliteImport = /^import .* from '@electric-sql\/pglite';$/m
for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue
  const file = join(entry.parentPath ?? entry.path, entry.name)
  const text = readFileSync(file, 'utf8')
  if (pgliteImport.test(text)) writeFileSync(file, `/// <reference types="emscripten" />\n${text}`)
}

const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
writeFileSync(join(dist, 'package.json'), `${JSON.stringify({ type: 'module', version }, null, 2)}\n`)
