/**
 * F36: secrets never reach a log line or a configuration error. The request log keeps, of the query, only the
 * listing parameters (names compared after percent-decoding, `&` and `;` both separators); a configuration error
 * names the variable and the expected form, never a fragment of a secret-bearing value.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import type { ApiServer } from '@durable-a2a/producer/server';
import { parseServerEnvironment } from '@durable-a2a/producer/server';
import { logUrl } from '../../packages/producer/src/server/log-url.ts';
import { parseWorkerEnvironment } from '@durable-a2a/workers';
import { parseEnvironmentOrExit } from '@durable-a2a/shared';
import { TEST_API_TOKEN, startTestServer } from '../harness/api-server.ts';
import { useRedisServer } from '../harness/redis.ts';
import { captureLogs } from '../harness/log-capture.ts';

const redisServer = useRedisServer();
let app: ApiServer;
/** Every line the server logs, as written. */
const logs = captureLogs({ level: 'trace' });
const lines = logs.rawLines;

beforeAll(async () => {
  app = startTestServer({ redisUrl: redisServer().url, prefix: 'secrets', logger: logs.logger });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
});

/** Every way of spelling the `token` parameter a server decodes as `token` (or that a person may mean by it). */
const SPELLINGS = ['token', 'to%6Ben', '%74oken', '%74%6F%6B%65%6E', 'TOKEN', 'ToKeN', 'to%6Ben', 'access_token', 'to+ken', 'api_key', 'password'];

describe('F36: secrets in logs', () => {
  it('F36 (a): GET /ui?to%6Ben=<API token> and its variants log no part of the token', async () => {
    const urls = [
      ...SPELLINGS.map((name) => `/ui?${name}=${TEST_API_TOKEN}`),
      `/ui?state=RUNNING&to%6Ben=${TEST_API_TOKEN}&to%6Ben=${TEST_API_TOKEN}`,
      `/ui?state=RUNNING;to%6Ben=${TEST_API_TOKEN}`,
      `/ui?;%74oken=${TEST_API_TOKEN};state=RUNNING`,
      `/ui?${TEST_API_TOKEN}`,
      `/v1/workflows?limit=5&to%6Ben=${encodeURIComponent(TEST_API_TOKEN)}`,
      `/admin/queues?%74oken=${TEST_API_TOKEN}`,
      `/nowhere?token=${TEST_API_TOKEN}`,
    ];
    const before = lines.length;
    for (const url of urls) await app.inject({ method: 'GET', url });
    const logged = lines.slice(before);
    expect(logged.filter((line) => line.includes('"msg":"request"'))).toHaveLength(urls.length);
    for (const line of logged) expect(line).not.toContain(TEST_API_TOKEN.slice(0, 12));
    // The listing parameters stay readable.
    expect(logged.join('\n')).toContain('state=RUNNING');
  });

  it('property: whatever the query, the logged URL holds a secret value only under a listing parameter the caller chose', () => {
    const secret = 'S3CRETvalue9';
    const name = fc.oneof(fc.constantFrom(...SPELLINGS), fc.string({ maxLength: 8 }).map((text) => encodeURIComponent(text)));
    fc.assert(
      fc.property(fc.array(fc.tuple(name, fc.boolean()), { minLength: 1, maxLength: 6 }), fc.constantFrom('&', ';'), (parameters, separator) => {
        const query = parameters.map(([parameter, withValue]) => (withValue ? `${parameter}=${secret}` : `${parameter}${secret}`)).join(separator);
        const logged = logUrl(`/ui?${query}`);
        // A secret may only appear behind a listing parameter the caller named themselves.
        const allowed = parameters.some(([parameter, withValue]) => withValue && ['state', 'waiting', 'limit', 'cursor', 'waitMs', 'filter'].includes(decodeURIComponent(parameter)));
        if (!allowed) expect(logged).not.toContain(secret);
      }),
      { numRuns: 300 },
    );
  });
});

describe('F36 (b): a configuration error never echoes a secret', () => {
  const SECRET = 'zQ7-secret-value-ABCDEFGHIJ';
  let stderr: string[];
  beforeAll(() => {
    vi.spyOn(process, 'exit').mockImplementation(((code: number) => {
      throw new Error(`exit ${code}`);
    }) as never);
  });
  afterEach(() => vi.mocked(console.error).mockRestore?.());
  afterAll(() => vi.restoreAllMocks());

  /** Runs the parse with `environment`; returns what it printed (it must exit 2). */
  function errorsOf(parse: (environment: NodeJS.ProcessEnv) => unknown, environment: Record<string, string>): string {
    stderr = [];
    vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void stderr.push(args.map(String).join(' ')));
    expect(() => parseEnvironmentOrExit(parse, { DA2A_API_TOKENS: 't', ...environment })).toThrow('exit 2');
    return stderr.join('\n');
  }

  /** Every 6-character piece of the secret (a fragment that identifies it). */
  const fragments = (secret: string) => Array.from({ length: secret.length - 5 }, (_, index) => secret.slice(index, index + 6));

  it.each([
    ['workers', 'DA2A_AGENT_TOKENS', SECRET],
    ['workers', 'DA2A_AGENT_TOKENS', `{"https://agent.example": ${SECRET}}`],
    ['workers', 'DA2A_AGENT_TOKENS', `{"https://agent.example": "${SECRET}"`],
    ['workers', 'DA2A_AGENT_TOKENS', `["${SECRET}"]`],
    ['workers', 'DA2A_HTTP_VERIFIERS', `{"v": {"urlTemplate": "https://x", "headers": {"authorization": ${SECRET}}}}`],
    ['workers', 'DA2A_HTTP_VERIFIERS', `{"v": {"urlTemplate": "https://x", "effectField": "s", "presentValues": ["a"], "headers": {"authorization": 5, "x": "${SECRET}"}}}`],
    ['workers', 'REDIS_URL', `redis//user:${SECRET}@localhost:6379`],
    ['api', 'REDIS_URL', `redis://user:${SECRET}@local host:6379`],
    ['api', 'DA2A_API_TOKENS', ` , ${SECRET.slice(0, 0)} ,`],
  ] as const)('%s %s malformed → exit 2 naming the variable, no fragment of the value', (kind, variable, value) => {
    const printed = errorsOf(kind === 'api' ? parseServerEnvironment : parseWorkerEnvironment, { [variable]: value });
    expect(printed).toContain(`configuration error: ${variable}`);
    for (const fragment of fragments(SECRET)) expect(printed).not.toContain(fragment);
  });
});
