/** Field case R20 (card shapes by version), ETag caching, URL checks, interface selection. */
import { afterEach, describe, expect, it } from 'vitest';
import { AgentCardError, createAgentCardCache, fetchAgentCard, normalizeAgentCard, selectInterface } from '../src/a2a/card.ts';
import { createTransport, registerTransport } from '../src/a2a/client.ts';
import { JsonRpcTransport } from '../src/a2a/jsonrpc.ts';
import { RestTransport } from '../src/a2a/rest.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

let server: RawServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const rejection = (raw: unknown): string | undefined => {
  try {
    normalizeAgentCard(raw);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(AgentCardError);
    return (error as AgentCardError).reason;
  }
};

describe('R20 agent card shapes', () => {
  it('(a) a 1.0 card: endpoint, binding and version from supportedInterfaces; unknown fields ignored', () => {
    const card = normalizeAgentCard({
      name: 'B', version: '1.0.0', capabilities: { streaming: true }, defaultInputModes: ['text'], defaultOutputModes: ['text'], skills: [],
      supportedInterfaces: [{ protocolBinding: 'JSONRPC', url: 'https://b.example/a2a', protocolVersion: '1.0' }],
      'x-vendor': { k: 1 },
    });
    expect(card.interfaces).toEqual([{ url: 'https://b.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }]);
    expect(card).not.toHaveProperty('x-vendor');
    expect(card.capabilities).toEqual({ streaming: true });
    expect(selectInterface(card)?.url).toBe('https://b.example/a2a');
  });

  it('(b) a 0.3 card: endpoint from the root url, version 0.3', () => {
    const card = normalizeAgentCard({
      name: 'C', description: 'c', version: '1', skills: [{ id: 's', name: 'S', description: 'd', tags: ['t'] }], capabilities: {},
      url: 'https://c.example/a2a', protocolVersion: '0.3.0', preferredTransport: 'JSONRPC',
      additionalInterfaces: [{ url: 'https://c.example/a2a', transport: 'JSONRPC' }, { url: 'https://c.example/rest', transport: 'HTTP+JSON' }],
    });
    expect(card.interfaces).toEqual([
      { url: 'https://c.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      { url: 'https://c.example/rest', protocolBinding: 'HTTP+JSON', protocolVersion: '0.3' },
    ]);
    expect(selectInterface(card)?.url).toBe('https://c.example/a2a'); // 0.3 is a default version
    expect(selectInterface(card, { versions: ['1.0'] })).toBeUndefined();
  });

  it('(c) no interfaces -> rejected with a reason, never an empty URL', () => {
    expect(rejection({ name: 'D', supportedInterfaces: [] })).toBe('NO_USABLE_INTERFACE');
    expect(rejection({ name: 'E', supportedInterfaces: [{ url: '', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }] })).toBe('NO_USABLE_INTERFACE');
    expect(rejection({ name: 'F', url: '' })).toBe('NO_USABLE_INTERFACE');
    expect(rejection({ supportedInterfaces: [] })).toBe('INVALID_CARD');
  });

  it('only http(s) interface URLs are kept', () => {
    expect(rejection({ name: 'G', supportedInterfaces: [{ url: 'file:///etc/passwd', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }] })).toBe('NO_USABLE_INTERFACE');
    const card = normalizeAgentCard({
      name: 'H',
      supportedInterfaces: [
        { url: 'ftp://h.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: 'http://h.example/rest', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: 'acme' },
      ],
    });
    expect(card.interfaces).toEqual([{ url: 'http://h.example/rest', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: 'acme' }]);
  });

  it('selectInterface keeps card order and skips unsupported bindings and versions', () => {
    const card = normalizeAgentCard({
      name: 'I',
      supportedInterfaces: [
        { url: 'https://i.example/grpc', protocolBinding: 'GRPC', protocolVersion: '1.0' },
        { url: 'https://i.example/old', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
        { url: 'https://i.example/rest', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0.1' },
        { url: 'https://i.example/rpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      ],
    });
    expect(selectInterface(card)?.url).toBe('https://i.example/grpc'); // first supported in card order, gRPC included
    expect(selectInterface(card, { bindings: ['JSONRPC', 'HTTP+JSON'] })?.url).toBe('https://i.example/old'); // 0.3 included
    expect(selectInterface(card, { bindings: ['JSONRPC', 'HTTP+JSON'], versions: ['1.0'] })?.url).toBe('https://i.example/rest');
    expect(selectInterface(card, { bindings: ['JSONRPC'], versions: ['1.0'] })?.url).toBe('https://i.example/rpc');
  });
});

describe('fetchAgentCard', () => {
  const cardBody = JSON.stringify({ name: 'B', supportedInterfaces: [{ url: 'https://b.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }] });

  it('fetches /.well-known/agent-card.json, then revalidates with If-None-Match and reuses the cached card on 304', async () => {
    server = await startRawServer((request, response) => {
      if (request.headers['if-none-match'] === '"v1"') {
        response.writeHead(304).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json', etag: '"v1"' }).end(cardBody);
    });
    const cache = createAgentCardCache();
    const first = await fetchAgentCard(`${server.url}/some/base`, { cache });
    const second = await fetchAgentCard(server.url, { cache });
    expect(second).toBe(first);
    expect(server.requests.map((request) => [request.url, request.headers['if-none-match']])).toEqual([
      ['/.well-known/agent-card.json', undefined],
      ['/.well-known/agent-card.json', '"v1"'],
    ]);
    expect(server.requests[0]!.headers['a2a-version']).toBe('1.0');
  });

  it('does not follow redirects and refuses non-http(s) card URLs', async () => {
    server = await startRawServer((_request, response) => {
      response.writeHead(302, { location: 'http://127.0.0.1:6379/' }).end();
    });
    await expect(fetchAgentCard(server.url)).rejects.toMatchObject({ reason: 'REDIRECT' });
    await expect(fetchAgentCard('file:///etc/passwd')).rejects.toMatchObject({ reason: 'INVALID_URL' });
  });

  it('rejects a non-JSON card', async () => {
    server = await startRawServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>');
    });
    await expect(fetchAgentCard(server.url)).rejects.toMatchObject({ reason: 'NOT_JSON' });
  });
});

describe('createTransport', () => {
  it('builds the transport registered for binding and version', () => {
    expect(createTransport({ url: 'https://x.example/rpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' })).toBeInstanceOf(JsonRpcTransport);
    expect(createTransport({ url: 'https://x.example/rest', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' })).toBeInstanceOf(RestTransport);
    expect(() => createTransport({ url: 'https://x.example/rpc', protocolBinding: 'JSONRPC', protocolVersion: '0.3' })).toThrow('no transport');
    registerTransport('JSONRPC', '0.3', (agentInterface, options) => new JsonRpcTransport(agentInterface, options));
    expect(createTransport({ url: 'https://x.example/rpc', protocolBinding: 'JSONRPC', protocolVersion: '0.3' })).toBeInstanceOf(JsonRpcTransport);
  });
});
