#!/usr/bin/env node
// The `matchbox` command. The sources are TypeScript; tsx loads them without a build step.
import { register } from 'tsx/esm/api'

register()
await import('../src/cli/main.ts')
