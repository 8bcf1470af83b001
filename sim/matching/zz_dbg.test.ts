import { writeFileSync } from 'node:fs'
import { it } from 'vitest'
import { freshDatabase } from '../../test/harness/database.ts'
import { runSeed } from './Simulation.ts'
it('dbg', async () => {
  const databaseUrl = await freshDatabase('dbg')
  const pg = await runSeed({ seed: 1, store: 'postgres', databaseUrl, keepTrace: true } as any)
  const mem = await runSeed({ seed: 1, store: 'memory', keepTrace: true } as any)
  writeFileSync('/tmp/pg.txt', ((pg as any).result?.trace ?? (pg as any).trace ?? []).join('\n'))
  writeFileSync('/tmp/mem.txt', ((mem as any).result?.trace ?? (mem as any).trace ?? []).join('\n'))
}, 120000)
