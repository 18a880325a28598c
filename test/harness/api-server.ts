/**
 * Starts the HTTP service for tests: a silent logger, a fresh metrics
 * registry, one API token; torn down with `close()`.
 */
import { Registry } from 'prom-client';
import { createLogger } from '@durable-a2a/shared';
import { createServer, type ApiServer, type InjectOptions, type InjectResponse, type ServerOptions } from '@durable-a2a/producer/server';

export const TEST_API_TOKEN = 'test-api-token-0123456789';

export function startTestServer(options: Partial<ServerOptions> & { redisUrl: string; prefix: string }): ApiServer {
  return createServer({
    apiTokens: [TEST_API_TOKEN],
    logger: createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    metricsRegistry: new Registry(),
    addressPolicy: { allowLoopback: true },
    ...options,
  });
}

/** `app.inject` with the test API token as Bearer. */
export function authorized(app: ApiServer, request: InjectOptions): Promise<InjectResponse> {
  return app.inject({ ...request, headers: { authorization: `Bearer ${TEST_API_TOKEN}`, ...request.headers } });
}

/** Listens on a free loopback port; returns the base URL (`http://127.0.0.1:PORT`). */
export async function listenOnLoopback(app: ApiServer): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

/**
 * Signs in with the /ui form (the token posted once, as a browser on the same origin does) and returns the
 * `Cookie` header value of the session it sets.
 */
export async function signIn(app: ApiServer, token = TEST_API_TOKEN): Promise<string> {
  const response = await app.inject({
    method: 'POST',
    url: '/ui/sign-in',
    payload: new URLSearchParams({ token, next: '/ui' }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
  });
  if (response.statusCode !== 303) throw new Error(`sign-in answered ${response.statusCode}: ${response.body.slice(0, 200)}`);
  return String([response.headers['set-cookie']].flat()[0]).split(';')[0]!;
}
