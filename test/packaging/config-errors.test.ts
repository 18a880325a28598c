/**
 * Configuration errors name the variable and the expected form and exit 2,
 * with no stack trace and nothing on stdout (stdout is for JSON log lines); a Redis that could
 * lose the journal under DA2A_STRICT_PERSISTENCE exits 2 with one line.
 */
import { describe, expect, it } from 'vitest';
import { useRedisServer } from '../harness/redis.ts';
import { spawnObserved } from '../harness/processes.ts';

const redisServer = useRedisServer(); // no AOF, no RDB: unsafe for the journal

async function exitOf(kind: 'api' | 'workers', environment: Record<string, string>) {
  const child = spawnObserved(kind, { LOG_LEVEL: 'info', DA2A_API_TOKENS: 't', ...environment });
  const exit = await child.exited;
  return { code: exit.code, stderr: child.stderr(), stdout: child.stdoutLines() };
}

describe('bad variables', () => {
  it.each([
    ['workers', { DA2A_CONCURRENCY: 'send=abc' }, 'DA2A_CONCURRENCY', 'send=20,follow=500'],
    ['workers', { DA2A_CONCURRENCY: 'sned=2' }, 'DA2A_CONCURRENCY', 'send=20,follow=500'],
    ['workers', { DA2A_AGENT_TOKENS: '{"https://a": ' }, 'DA2A_AGENT_TOKENS', 'JSON object'],
    ['workers', { DA2A_HTTP_VERIFIERS: 'nope' }, 'DA2A_HTTP_VERIFIERS', 'JSON object'],
    ['workers', { REDIS_URL: 'localhost:6379' }, 'REDIS_URL', 'redis://'],
    ['workers', { DA2A_CLOSE_TIMEOUT_MS: 'soon' }, 'DA2A_CLOSE_TIMEOUT_MS', 'milliseconds'],
    ['workers', { DA2A_LOCAL_FOLLOW_SLOTS: '-1' }, 'DA2A_LOCAL_FOLLOW_SLOTS', 'whole number ≥ 0'],
    ['workers', { DA2A_LOCAL_FOLLOW_SLOTS: '2.5' }, 'DA2A_LOCAL_FOLLOW_SLOTS', 'whole number ≥ 0'],
    ['workers', { DA2A_METRICS_PORT: 'not-a-port' }, 'DA2A_METRICS_PORT', 'a port number, 0 to 65535'],
    ['workers', { DA2A_METRICS_PORT: '70000' }, 'DA2A_METRICS_PORT', 'a port number, 0 to 65535'],
    ['api', { REDIS_URL: 'not a url' }, 'REDIS_URL', 'redis://'],
    ['api', { DA2A_REQUEST_TIMEOUT_MS: '-5' }, 'DA2A_REQUEST_TIMEOUT_MS', 'milliseconds'],
    ['api', { DA2A_ADMIN_READ_ONLY: 'maybe' }, 'DA2A_ADMIN_READ_ONLY', 'true or false'],
  ] as const)('%s %j → exit 2 naming %s and the expected form', async (kind, environment, variable, expected) => {
    const { code, stderr, stdout } = await exitOf(kind, environment);
    expect(code).toBe(2);
    expect(stderr).toContain(`configuration error: ${variable}: `);
    expect(stderr).toContain(expected);
    expect(stderr).not.toMatch(/^\s+at /m); // no stack trace
    expect(stdout).toEqual([]);
  });
});

it('DA2A_STRICT_PERSISTENCE with a Redis that could lose the journal: exit 2, one line', async () => {
  const { code, stderr } = await exitOf('workers', { REDIS_URL: redisServer().url, DA2A_STRICT_PERSISTENCE: 'true', DA2A_PREFIX: 'strict' });
  expect(code).toBe(2);
  expect(stderr.trim().split('\n')).toHaveLength(1);
  expect(stderr).toMatch(/^configuration error: DA2A_STRICT_PERSISTENCE=true refuses this Redis: .*appendonly/);
});
