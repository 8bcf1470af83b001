/**
 * The published package, checked the way a user meets it: build and `npm pack` a copy of this
 * working tree, install the tarball into a fresh project, then run a plain JavaScript consumer
 * on Node (no loader, no TypeScript) and type-check a strict TypeScript consumer (NodeNext,
 * `strict`, default lib, no skipLibCheck) with this repo's tsc.
 *
 * The copy is the working tree's files as a clone would have them (tracked and untracked,
 * never the ignored ones such as dist/), with node_modules linked from this repo: the build runs
 * from scratch and never touches this repo's own dist/. The consumer's install is a real
 * `npm install <tarball>`, preferring npm's cache, so only the tarball and its declared
 * dependencies are what the consumer sees.
 *
 * Does not: publish, or check the CLI beyond one command (the CLI tests run it from src/).
 */
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '..')
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')

// Build, pack and install take ~10 s warm; a cold npm cache fetches the dependencies.
const setupTimeoutMs = 180_000
// Any one command: a hung install or a consumer that never exits fails instead of stalling.
const commandTimeoutMs = 120_000

// Plain Node: no loader or option that vitest's workers may have inherited.
const plainEnv = { ...process.env, NODE_OPTIONS: '' }

/** Runs a command; returns its stdout, or throws with the command, exit status and both outputs. */
function sh(command: string, args: ReadonlyArray<string>, cwd: string): string {
  try {
    return execFileSync(command, args, { cwd, env: plainEnv, encoding: 'utf8', timeout: commandTimeoutMs, stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (error) {
    const failed = error as { status?: number | null; signal?: string | null; stdout?: string; stderr?: string }
    throw new Error(
      `${command} ${args.join(' ')} (in ${cwd}) failed: status ${failed.status ?? failed.signal}\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`,
    )
  }
}

/** What `npm pack --json` reports for one tarball. */
interface Packed {
  readonly filename: string
  readonly size: number
  readonly unpackedSize: number
  readonly entryCount: number
  readonly files: ReadonlyArray<{ readonly path: string }>
}

/** The fields of a package.json this test reads. */
interface PackageManifest {
  readonly name: string
  readonly version: string
  readonly engines?: { readonly node?: string }
  readonly dependencies?: Record<string, string>
}

/** Every package installed under `modules` (scoped and nested ones included). */
function installedManifests(modules: string): PackageManifest[] {
  if (!existsSync(modules)) return []
  return readdirSync(modules).flatMap((name) => {
    if (name.startsWith('.')) return []
    if (name.startsWith('@')) return readdirSync(join(modules, name)).flatMap((scoped) => manifestAt(join(modules, name, scoped)))
    return manifestAt(join(modules, name))
  })
}

function manifestAt(directory: string): PackageManifest[] {
  const file = join(directory, 'package.json')
  if (!existsSync(file)) return []
  return [JSON.parse(readFileSync(file, 'utf8')) as PackageManifest, ...installedManifests(join(directory, 'node_modules'))]
}

/** A Node version as [major, minor, patch]. */
type Version = readonly [number, number, number]

// The lower bound of one `>=X[.Y[.Z]]` (or `>X`) comparator; null for any other form, which
// then fails the test with the range printed rather than being guessed at.
function lowerBound(comparator: string): Version | null {
  const match = /^(>=?)\s*v?(\d+)(?:\.(\d+|x))?(?:\.(\d+|x))?$/.exec(comparator.trim())
  if (match === null) return null
  const part = (text: string | undefined): number => (text === undefined || text === 'x' ? 0 : Number(text))
  const bound: Version = [part(match[2]), part(match[3]), part(match[4])]
  return match[1] === '>' ? [bound[0], bound[1], bound[2] + 1] : bound
}

// The lowest Node a range admits, for ranges made of `>=` alternatives; null otherwise.
function lowestNode(range: string): Version | null {
  const bounds = range.split('||').map(lowerBound)
  if (bounds.length === 0 || bounds.some((bound) => bound === null)) return null
  return (bounds as Version[]).reduce((lowest, bound) => (compare(bound, lowest) < 0 ? bound : lowest))
}

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2]
}

// True when `range` admits `node`: some alternative's lower bound is at or below it.
function admits(range: string, node: Version): boolean {
  return range.split('||').some((alternative) => {
    const bound = lowerBound(alternative)
    return bound !== null && compare(bound, node) <= 0
  })
}

const consumerJs = `import { open, openEmbeddedStore } from 'matchbox'

const matchbox = await open({ store: 'memory' })
const queue = matchbox.queue('emails')
const id = await queue.enqueue({ to: 'ada@example.com' })
const job = await queue.claim()
const acked = job !== null && job.id === id && (await job.ack())
await matchbox.close()
console.log(\`consumer: enqueued, claimed and acked \${acked ? 'one job' : 'nothing'}\`)

// Opening an embedded store applies the migrations, read from the .sql files beside the build.
const store = await openEmbeddedStore()
console.log(\`consumer: opened and migrated the \${store.kind} store\`)
await store.close()
`

const consumerTs = `import { type EnqueueOptions, isMatchboxError, type Job, type JobHandle, type Matchbox, open, openEmbeddedStore, type Store } from 'matchbox'

const matchbox: Matchbox = await open({ store: 'memory' })
const options: EnqueueOptions = { priority: 1 }
const id: string = await matchbox.queue('emails').enqueue({ to: 'ada@example.com' }, options)
const handle: JobHandle | null = await matchbox.queue('emails').claim()
const job: Job | null = await matchbox.queue('emails').getJob(id)
const acked: boolean = handle === null ? false : await handle.ack()
// @ts-expect-error: a queue name is a string (fails as "unused" if the types were any)
matchbox.queue(42)
const embedded: (options?: { readonly dataDir?: string }) => Promise<Store> = openEmbeddedStore
console.log(acked, job?.id, isMatchboxError(new Error('not ours')), typeof embedded)
await matchbox.close()
`

const consumerTsconfig = {
  compilerOptions: { module: 'NodeNext', strict: true, noEmit: true },
  files: ['consumer.ts'],
}

describe('the packed package', () => {
  let work = ''
  let packed: Packed
  let consumer = ''

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'matchbox-package-'))
    console.log(`package test: working in ${work} on Node ${process.version}`)

    // A clone of the working tree: what git would hand a new contributor, plus untracked files.
    const clone = join(work, 'clone')
    const listed = sh('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], root).split('\0')
    for (const file of listed) {
      // node_modules is linked below (a symlinked one is listed as untracked).
      if (file === '' || file.split('/')[0] === 'node_modules' || !existsSync(join(root, file))) continue
      mkdirSync(dirname(join(clone, file)), { recursive: true })
      cpSync(join(root, file), join(clone, file))
    }
    symlinkSync(join(root, 'node_modules'), join(clone, 'node_modules'), 'dir')

    // `npm pack` runs `prepack`, which is the build.
    const packStarted = performance.now()
    const report = sh('npm', ['pack', '--json', '--pack-destination', work], clone)
    const parsed = JSON.parse(report.slice(report.indexOf('['))) as ReadonlyArray<Packed>
    packed = parsed[0] as Packed
    console.log(
      `package test: ${packed.filename}: ${(packed.size / 1024).toFixed(0)} KiB packed, ${(packed.unpackedSize / 1024).toFixed(0)} KiB unpacked, ` +
        `${packed.entryCount} files; build and pack ${((performance.now() - packStarted) / 1000).toFixed(1)} s`,
    )

    consumer = join(work, 'consumer')
    mkdirSync(consumer)
    writeFileSync(join(consumer, 'package.json'), `${JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`)
    const installStarted = performance.now()
    sh('npm', ['install', join(work, packed.filename), '--prefer-offline', '--no-audit', '--no-fund'], consumer)
    const installed = sh('du', ['-sk', join(consumer, 'node_modules')], consumer).split('\t')[0]
    const ours = sh('du', ['-sk', join(consumer, 'node_modules', 'matchbox')], consumer).split('\t')[0]
    console.log(
      `package test: installed in ${((performance.now() - installStarted) / 1000).toFixed(1)} s: node_modules ${installed} KiB, of which matchbox ${ours} KiB`,
    )
  }, setupTimeoutMs)

  afterAll(() => {
    if (work !== '') rmSync(work, { recursive: true, force: true })
  })

  it('carries the build, the bin and the README, and no sources, tests or benchmarks', () => {
    const paths = packed.files.map((file) => file.path)
    expect(paths).toEqual(expect.arrayContaining(['package.json', 'README.md', 'bin/matchbox.mjs', 'dist/src/index.js', 'dist/src/index.d.ts']))
    expect(paths).toContain('dist/src/persistence/sql/migrations/001_matching.sql')
    const misplaced = paths.filter(
      (path) => /(^|\/)(test|bench|examples|notes)\//.test(path) || /\.test\./.test(path) || /^(src|sim)\//.test(path) || (path.endsWith('.ts') && !path.endsWith('.d.ts')),
    )
    expect(misplaced).toEqual([])
  })

  it('declares only what it needs at runtime, and every installed package accepts the Node it claims', () => {
    const manifest = JSON.parse(readFileSync(join(consumer, 'node_modules', 'matchbox', 'package.json'), 'utf8')) as PackageManifest
    for (const buildOnly of ['tsx', 'typescript', 'vitest', 'vite', 'fast-check', 'oxlint']) expect(Object.keys(manifest.dependencies ?? {})).not.toContain(buildOnly)
    expect(existsSync(join(consumer, 'node_modules', 'tsx'))).toBe(false)
    const claimed = lowestNode(manifest.engines?.node ?? '')
    expect(claimed, `matchbox's engines.node (${manifest.engines?.node})`).not.toBeNull()
    // npm only warns (EBADENGINE) about these; here they fail.
    const refusing = installedManifests(join(consumer, 'node_modules'))
      .filter((dependency) => dependency.engines?.node !== undefined && !admits(dependency.engines.node, claimed as Version))
      .map((dependency) => `${dependency.name}@${dependency.version} needs node ${dependency.engines?.node}`)
    expect(refusing).toEqual([])
  })

  it('runs a plain JavaScript consumer on Node', () => {
    writeFileSync(join(consumer, 'consumer.mjs'), consumerJs)
    expect(sh(process.execPath, ['consumer.mjs'], consumer).trim().split('\n')).toEqual([
      'consumer: enqueued, claimed and acked one job',
      'consumer: opened and migrated the embedded store',
    ])
  })

  it('runs the installed matchbox command without tsx', () => {
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }
    expect(sh(process.execPath, [join(consumer, 'node_modules', '.bin', 'matchbox'), '--version'], consumer).trim()).toBe(version)
  })

  it('type-checks a strict TypeScript consumer with no errors, libraries included', () => {
    writeFileSync(join(consumer, 'consumer.ts'), consumerTs)
    writeFileSync(join(consumer, 'tsconfig.json'), `${JSON.stringify(consumerTsconfig, null, 2)}\n`)
    expect(sh(process.execPath, [tsc, '-p', join(consumer, 'tsconfig.json')], consumer)).toBe('')
  })
})
