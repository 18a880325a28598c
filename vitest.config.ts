import { defineConfig } from 'vitest/config';

// One run for the whole workspace: unit tests next to each package, integration
// tests (real redis-server, real A2A agents) under test/.
export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    setupFiles: ['test/harness/setup.ts'],
    // Integration tests start their own redis-server and agents; two cores.
    maxWorkers: 2,
    // CI (.ci/run) sets VITEST_JSON_REPORT to a path to get a machine-readable summary.
    ...(process.env.VITEST_JSON_REPORT
      ? { reporters: ['default', 'json'], outputFile: { json: process.env.VITEST_JSON_REPORT } }
      : {}),
  },
});
