#!/usr/bin/env node
// The `matchbox` command: runs the compiled CLI in dist/, on plain Node. The package carries
// dist/ (built by `prepack`); in a clone `npm start` builds it first, and after editing src/
// `npm run build` does. The compiled main.js does not start itself when imported, so this file
// calls its `run`.
import { existsSync } from 'node:fs'

const main = new URL('../dist/src/cli/main.js', import.meta.url)
if (!existsSync(main)) {
  process.stderr.write('matchbox: dist/ is missing; run `npm run build` first\n')
  process.exit(1)
}
const { run } = await import(main.href)
const { processIo } = await import(new URL('../dist/src/cli/Terminal.js', import.meta.url).href)
process.exitCode = await run(process.argv.slice(2), processIo())
