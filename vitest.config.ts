import { defaultClientConditions, defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Tests run from sources: @durable-a2a/* packages export `./src/*.ts` under this condition, `dist/` otherwise.
const SOURCE_CONDITION = '@durable-a2a/source';

// One run for the whole workspace: unit tests next to each package, integration
// tests (real redis-server, real A2A agents) under test/.
export default defineConfig({
  resolve: { conditions: [SOURCE_CONDITION, ...defaultClientConditions] },
  ssr: { resolve: { conditions: [SOURCE_CONDITION, ...defaultServerConditions] } },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
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
