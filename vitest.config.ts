import { defineConfig } from 'vitest/config';

// One run for the whole workspace: unit tests next to each package, integration
// tests (real redis-server, real A2A agents) under test/.
export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Integration tests start their own redis-server and agents; two cores.
    maxWorkers: 2,
  },
});
