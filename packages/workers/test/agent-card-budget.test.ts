/**
 * A caller's own time left bounds only its own wait for an Agent Card: the shared fetch has the full
 * request timeout, so a send with little time left never fails the card for the others (review of the
 * per-agent card backoff, issue 12 kind 4), while a card that really fails is still asked once per window.
 */
import { createServer, type Server } from 'node:http';
import { afterEach, expect, it } from 'vitest';
import { NetworkError } from '@durable-a2a/a2a';
import { AgentDirectory } from '../src/agents.ts';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A card server answering after `delayMs` (or never, with `status` 0), counting fetches. */
async function cardServer(delayMs: number, status = 200) {
  let fetches = 0;
  server = createServer((_request, response) => {
    fetches++;
    if (status === 0) return; // hangs
    setTimeout(() => {
      const url = `http://127.0.0.1:${(server!.address() as { port: number }).port}`;
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify({
        name: 'slow', description: 'slow card', version: '1',
        supportedInterfaces: [{ url: `${url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
        capabilities: { streaming: false }, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
        skills: [{ id: 's', name: 's', description: 's', tags: [] }],
      }));
    }, delayMs);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { cardUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}/.well-known/agent-card.json`, fetches: () => fetches };
}

const directory = (requestTimeoutMs = 2_000) =>
  new AgentDirectory({ requestTimeoutMs, streamIdleTimeoutMs: 5_000, cardMaxAgeMs: 60_000, now: Date.now, addressPolicy: { allowLoopback: true } });

it('a caller with 20 ms left gives up alone; the next caller gets the card from the same single fetch', async () => {
  const agent = await cardServer(150);
  const agents = directory();
  await expect(agents.card(agent.cardUrl, 20)).rejects.toBeInstanceOf(NetworkError);
  const card = await agents.card(agent.cardUrl, 2_000);
  expect(card.name).toBe('slow');
  expect(agent.fetches()).toBe(1);
});

it('concurrent callers: the short one times out, the long one gets the card', async () => {
  const agent = await cardServer(150);
  const agents = directory();
  const results = await Promise.allSettled([agents.card(agent.cardUrl, 20), agents.card(agent.cardUrl, 2_000)]);
  expect(results.map((result) => result.status)).toEqual(['rejected', 'fulfilled']);
  expect(agent.fetches()).toBe(1);
});

it('a card that really times out is still cached as the failure: the next caller is answered without a fetch', async () => {
  const agent = await cardServer(0, 0);
  const agents = directory(300);
  await expect(agents.card(agent.cardUrl)).rejects.toBeInstanceOf(NetworkError);
  await expect(agents.card(agent.cardUrl)).rejects.toBeInstanceOf(NetworkError);
  expect(agent.fetches()).toBe(1);
});
