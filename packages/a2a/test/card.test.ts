/** Field case R20 (card shapes by version), ETag caching, URL checks, interface selection. */
import { afterEach, describe, expect, it } from 'vitest';
import { AgentCardError, createAgentCardCache, fetchAgentCard, normalizeAgentCard, selectInterface } from '../src/card.ts';
import { createTransport, defaultTransports, isInterfaceSupported, type TransportFactory } from '../src/client.ts';
import { ProtocolError, deliveryOf } from '../src/errors.ts';
import { type GrpcTransport, grpcTransports } from '../src/grpc/index.ts';
import { JsonRpcV03Transport, RestV03Transport } from '../src/v03/index.ts';
import { JsonRpcTransport } from '../src/jsonrpc.ts';
import { RestTransport } from '../src/rest.ts';
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
  const at = (protocolBinding: string, protocolVersion: string) => ({ url: 'https://x.example/a2a', protocolBinding, protocolVersion });

  it('builds the default transport for each JSON binding and version', () => {
    expect(createTransport(at('JSONRPC', '1.0'))).toBeInstanceOf(JsonRpcTransport);
    expect(createTransport(at('HTTP+JSON', '1.0'))).toBeInstanceOf(RestTransport);
    expect(createTransport(at('JSONRPC', '0.3'))).toBeInstanceOf(JsonRpcV03Transport);
    expect(createTransport(at('HTTP+JSON', '0.3'))).toBeInstanceOf(RestV03Transport);
    expect(defaultTransports.map((factory) => `${factory.protocolBinding} ${factory.protocolVersion}`)).toEqual(['JSONRPC 1.0', 'HTTP+JSON 1.0', 'JSONRPC 0.3', 'HTTP+JSON 0.3']);
  });

  it('gRPC only when the caller passes grpcTransports: nothing registers itself on import', () => {
    const refused = (() => {
      try {
        createTransport(at('GRPC', '1.0'));
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(ProtocolError);
    expect(deliveryOf(refused)).toBe('not-sent');
    expect(isInterfaceSupported(at('GRPC', '1.0'))).toBe(false);
    for (const version of ['1.0', '0.3']) {
      const transport = createTransport(at('GRPC', version), { transports: [...defaultTransports, ...grpcTransports] });
      expect([transport.binding, transport.protocolVersion]).toEqual(['GRPC', version]);
      (transport as GrpcTransport).close();
    }
  });

  it("uses only the caller's factories, the first that matches", () => {
    const built: string[] = [];
    const only: TransportFactory[] = [
      { protocolBinding: 'JSONRPC', protocolVersion: '0.3', create: (agentInterface, options) => (built.push('first'), new JsonRpcTransport(agentInterface, options)) },
      { protocolBinding: 'JSONRPC', protocolVersion: '0.3', create: (agentInterface, options) => (built.push('second'), new JsonRpcTransport(agentInterface, options)) },
    ];
    expect(createTransport(at('JSONRPC', '0.3'), { transports: only })).toBeInstanceOf(JsonRpcTransport);
    expect(built).toEqual(['first']);
    expect(() => createTransport(at('JSONRPC', '1.0'), { transports: only })).toThrow('no transport for JSONRPC 1.0');
    expect(() => createTransport(at('JSONRPC', '1.0'), { transports: [] })).toThrow('no transport');
  });

  it('selectInterface with transports skips what they cannot build', () => {
    const card = normalizeAgentCard({
      name: 'J',
      supportedInterfaces: [
        { url: 'https://j.example/grpc', protocolBinding: 'GRPC', protocolVersion: '1.0' },
        { url: 'https://j.example/rpc', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ],
    });
    expect(selectInterface(card, { transports: defaultTransports })?.url).toBe('https://j.example/rpc');
    expect(selectInterface(card, { transports: [...defaultTransports, ...grpcTransports] })?.url).toBe('https://j.example/grpc');
    expect(selectInterface(card, { transports: defaultTransports, versions: ['1.0'] })).toBeUndefined();
  });
});
