import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'sim/**/*.test.ts'],
    globalSetup: ['test/harness/globalSetup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Two cores: files run in parallel forks, but PGlite and PostgreSQL suites are heavy.
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
})
