/**
 * B32: caches keyed by URLs an agent or caller chooses are bounded by bytes, not entries. 40 cards of ~900 KiB
 * each at distinct URLs on one server, with a 4 MiB budget: the directory keeps the most recent few (served
 * without a request) and forgets the oldest (fetched again, without an ETag: the ETag cache is bounded too),
 * so worker memory stays within the budget whatever callers name.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { afterEach, expect, it } from 'vitest';
import { AgentDirectory, CARD_CACHE_BYTES } from '../src/agents.ts';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

const CARD_BYTES = 900 * 1024;

async function cardServer() {
  const requests: { path: string; headers: IncomingHttpHeaders }[] = [];
  server = createServer((request, response) => {
    requests.push({ path: request.url ?? '', headers: request.headers });
    const base = `http://127.0.0.1:${(server!.address() as { port: number }).port}`;
    const card = {
      name: request.url, description: 'x'.repeat(CARD_BYTES), version: '1',
      supportedInterfaces: [{ url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      capabilities: { streaming: false }, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
      skills: [{ id: 's', name: 's', description: 's', tags: [] }],
    };
    response.writeHead(200, { 'content-type': 'application/json', etag: `"${request.url}"` });
    response.end(JSON.stringify(card));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { cardUrl: (index: number) => `${base}/agent-${index}/agent-card.json`, requests };
}

it('40 cards of 900 KiB with a 4 MiB budget: the newest are served from memory, the oldest fetched again without an ETag', async () => {
  const agents = await cardServer();
  const directory = new AgentDirectory({ requestTimeoutMs: 5_000, streamIdleTimeoutMs: 5_000, cardMaxAgeMs: 0, now: Date.now, addressPolicy: { allowLoopback: true }, cardCacheBytes: 4 * 1024 * 1024 });
  for (let index = 0; index < 40; index++) await directory.card(agents.cardUrl(index));
  expect(agents.requests).toHaveLength(40);
  // cardMaxAgeMs 0: every card is revalidated; a remembered one with its ETag, a forgotten one without.
  await directory.card(agents.cardUrl(39));
  expect(agents.requests.at(-1)!.headers['if-none-match']).toBe(`"/agent-39/agent-card.json"`);
  await directory.card(agents.cardUrl(0));
  expect(agents.requests.at(-1)!.headers['if-none-match']).toBeUndefined();
  expect(CARD_CACHE_BYTES).toBe(32 * 1024 * 1024);
});
