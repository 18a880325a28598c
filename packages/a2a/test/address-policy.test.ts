/**
 * Field case R19: agent URLs pointing inside our network. Every socket this
 * file opens goes to 127.0.0.1: host names resolve through an injected lookup,
 * and each test asserts (via `net.client.socket` `connectionAttempt`) that no
 * connection was attempted anywhere else.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  ALLOWING_OPTION,
  type AddressCategory,
  type AddressPolicyOptions,
  BlockedAddressError,
  type ResolvedAddress,
  checkUrl,
  classifyAddress,
  createPolicyDispatcher,
} from '../src/address-policy.ts';
import { AgentCardError, fetchAgentCard } from '../src/card.ts';
import { createHttpClient } from '../src/http.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

/** Every TCP connection attempt made by this process, as `ip:port`. */
const attempts: string[] = [];
const onSocket = (message: unknown): void => {
  (message as { socket: Socket }).socket.on('connectionAttempt', (ip: string, port: number) => attempts.push(`${ip}:${port}`));
};

/** A stand-in for Redis: counts TCP connections and closes them at once (a regression fails fast instead of hanging). */
interface TcpTarget {
  port: number;
  connections: number;
  close(): Promise<void>;
}
async function startTcpTarget(): Promise<TcpTarget> {
  const target: TcpTarget = { port: 0, connections: 0, close: async () => undefined };
  const server: Server = createServer((socket) => {
    target.connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  target.port = (server.address() as AddressInfo).port;
  target.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
    });
  return target;
}

/** A lookup answering from a table; each answer list is used in turn, the last one repeating. Records every call. */
function fakeDns(table: Record<string, string[][]>): { lookup: (hostname: string) => Promise<ResolvedAddress[]>; calls: string[] } {
  const calls: string[] = [];
  const lookup = async (hostname: string): Promise<ResolvedAddress[]> => {
    const answers = table[hostname];
    if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    const turn = calls.filter((called) => called === hostname).length;
    calls.push(hostname);
    const addresses = answers[Math.min(turn, answers.length - 1)] ?? [];
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { lookup, calls };
}

const cleanups: (() => Promise<void>)[] = [];
beforeEach(() => {
  attempts.length = 0;
  diagnosticsChannel.subscribe('net.client.socket', onSocket);
});
afterEach(async () => {
  diagnosticsChannel.unsubscribe('net.client.socket', onSocket);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
const track = <T extends { close(): Promise<void> }>(resource: T): T => {
  cleanups.push(() => resource.close());
  return resource;
};
const onlyLoopbackAttempts = (): void => expect(attempts.filter((attempt) => !attempt.startsWith('127.0.0.1:'))).toEqual([]);

describe('classifyAddress', () => {
  const table: [string, AddressCategory][] = [
    ['127.0.0.1', 'loopback'], ['127.255.255.254', 'loopback'],
    ['10.0.0.5', 'private'], ['172.16.0.1', 'private'], ['172.31.255.255', 'private'], ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'], ['100.127.255.255', 'private'],
    ['169.254.0.1', 'link-local'], ['169.254.169.254', 'metadata'], ['100.100.100.200', 'metadata'],
    ['0.0.0.0', 'unspecified'], ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'], ['239.255.255.255', 'multicast'], ['240.0.0.1', 'reserved'], ['255.255.255.255', 'reserved'],
    ['93.184.216.34', 'public'], ['8.8.8.8', 'public'], ['172.15.255.255', 'public'], ['172.32.0.0', 'public'], ['100.128.0.0', 'public'],
    ['::1', 'loopback'], ['::', 'unspecified'], ['fc00::1', 'private'], ['fd12:3456::1', 'private'], ['fec0::1', 'private'],
    ['fe80::1', 'link-local'], ['fe80::1%eth0', 'link-local'], ['febf::1', 'link-local'], ['fd00:ec2::254', 'metadata'],
    ['ff02::1', 'multicast'], ['2606:2800:220:1:248:1893:25c8:1946', 'public'], ['[::1]', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'], ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:10.0.0.5', 'private'], ['::ffff:93.184.216.34', 'public'], ['64:ff9b::a9fe:a9fe', 'metadata'], ['64:ff9b::8.8.8.8', 'public'],
  ];
  it.each(table)('%s -> %s', (ip, category) => {
    expect(classifyAddress(ip)).toBe(category);
  });
  it('throws on a non-IP', () => {
    expect(() => classifyAddress('example.com')).toThrow(TypeError);
  });
});

describe('checkUrl', () => {
  it('(4) refuses non-http(s) schemes: file:///etc/passwd', async () => {
    await expect(checkUrl('file:///etc/passwd')).rejects.toMatchObject({ code: 'BLOCKED_ADDRESS', category: 'scheme', retryable: false });
    await expect(checkUrl('gopher://127.0.0.1:6379/')).rejects.toBeInstanceOf(BlockedAddressError);
    await expect(checkUrl('not a url')).rejects.toMatchObject({ category: 'scheme' });
    await expect(fetchAgentCard('file:///etc/passwd', { addressPolicy: {} })).rejects.toMatchObject({ reason: 'INVALID_URL' });
  });

  it('checks IP literals directly, in every spelling the URL parser accepts', async () => {
    await expect(checkUrl('http://169.254.169.254/latest/meta-data/')).rejects.toThrow(/blocked address.*metadata/);
    await expect(checkUrl('http://0x7f000001:6379/')).rejects.toMatchObject({ category: 'loopback', address: '127.0.0.1' });
    await expect(checkUrl('http://2130706433/')).rejects.toMatchObject({ category: 'loopback' });
    await expect(checkUrl('http://[::ffff:a9fe:a9fe]/')).rejects.toMatchObject({ category: 'metadata' });
    await expect(checkUrl('http://[fd00:ec2::254]/')).rejects.toMatchObject({ category: 'metadata' });
    await expect(checkUrl('https://93.184.216.34/a2a')).resolves.toEqual([{ address: '93.184.216.34', family: 4, category: 'public' }]);
  });

  it('rejects a host if ANY resolved address is refused', async () => {
    const { lookup } = fakeDns({ 'mixed.test': [['93.184.216.34', '10.0.0.5']], 'public.test': [['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946']] });
    await expect(checkUrl('https://mixed.test/a2a', { lookup })).rejects.toMatchObject({ category: 'private', address: '10.0.0.5', host: 'mixed.test' });
    await expect(checkUrl('https://mixed.test/a2a', { lookup, allowPrivate: true })).resolves.toHaveLength(2);
    await expect(checkUrl('https://public.test/a2a', { lookup })).resolves.toHaveLength(2);
  });

  it('allow flags open loopback, private and link-local only; metadata stays blocked; allowedHosts always pass', async () => {
    const all = { allowLoopback: true, allowPrivate: true, allowLinkLocal: true };
    await expect(checkUrl('http://127.0.0.1/', { allowLoopback: true })).resolves.toHaveLength(1);
    await expect(checkUrl('http://169.254.1.1/', { allowLinkLocal: true })).resolves.toHaveLength(1);
    await expect(checkUrl('http://169.254.169.254/', all)).rejects.toMatchObject({ category: 'metadata' });
    await expect(checkUrl('http://0.0.0.0/', all)).rejects.toMatchObject({ category: 'unspecified' });
    const { lookup } = fakeDns({ 'card.test': [['127.0.0.1']] });
    await expect(checkUrl('http://CARD.test./x', { lookup, allowedHosts: ['card.test'] })).resolves.toEqual([{ address: '127.0.0.1', family: 4, category: 'loopback' }]);
    await expect(checkUrl('http://card.test/x', { lookup })).rejects.toMatchObject({ category: 'loopback' });
  });

  it('a refusal says how to allow it: the addressPolicy switch of its category (10.0.0.5 → allowPrivate)', async () => {
    await expect(checkUrl('http://10.0.0.5/')).rejects.toThrow('blocked address: 10.0.0.5 (private); to allow it: addressPolicy.allowPrivate, or the host in addressPolicy.allowedHosts');
    // A category no switch allows says nothing of the kind: there is no switch to give.
    await expect(checkUrl('http://169.254.169.254/')).rejects.toThrow(/^blocked address: 169\.254\.169\.254 \(metadata\)$/);
  });

  it('property: any address of a category a switch allows is refused naming that switch, and allowed with it', async () => {
    const octet = fc.integer({ min: 0, max: 255 });
    const addresses = fc.oneof(
      fc.tuple(octet, octet, octet).map(([b, c, d]) => `10.${b}.${c}.${d}`),
      fc.tuple(fc.integer({ min: 16, max: 31 }), octet, octet).map(([b, c, d]) => `172.${b}.${c}.${d}`),
      fc.tuple(octet, octet).map(([c, d]) => `192.168.${c}.${d}`),
      fc.tuple(octet, octet, octet).map(([b, c, d]) => `127.${b}.${c}.${d}`),
      fc.tuple(octet, octet).filter(([c, d]) => `${c}.${d}` !== '169.254').map(([c, d]) => `169.254.${c}.${d}`),
    );
    await fc.assert(
      fc.asyncProperty(addresses, async (address) => {
        const category = classifyAddress(address);
        const option = ALLOWING_OPTION[category as keyof typeof ALLOWING_OPTION];
        if (!option) return; // a metadata address inside 169.254/16: no switch allows it
        const refused = await checkUrl(`http://${address}/`).then(() => undefined, (error: unknown) => error);
        expect(refused).toBeInstanceOf(BlockedAddressError);
        expect((refused as Error).message).toContain(`addressPolicy.${option}`);
        await expect(checkUrl(`http://${address}/`, { [option]: true })).resolves.toHaveLength(1);
      }),
      { numRuns: 300 },
    );
  });

  it('a host that does not resolve is a NetworkError (retryable), not a block', async () => {
    const { lookup } = fakeDns({});
    await expect(checkUrl('https://gone.test/', { lookup })).rejects.toMatchObject({ code: 'NETWORK_ERROR', retryable: true });
  });
});

describe('R19 agent card pointing inside our network', () => {
  const cardWith = (url: string): string => JSON.stringify({ name: 'B', supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }] });

  /** Serves `body` as the card; `card.test` resolves to it and is the only host allowed to be loopback. */
  async function cardHost(body: string): Promise<{ server: RawServer; cardUrl: string; policy: AddressPolicyOptions; calls: string[] }> {
    const server = track(await startRawServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(body);
    }));
    const { lookup, calls } = fakeDns({ 'card.test': [['127.0.0.1']], 'b.example': [['93.184.216.34']], 'rebind.example': [['93.184.216.34'], ['10.0.0.5']] });
    const port = new URL(server.url).port;
    return { server, cardUrl: `http://card.test:${port}`, policy: { lookup, allowedHosts: ['card.test'] }, calls };
  }

  it('(1) an interface at http://169.254.169.254/latest/meta-data/ -> card rejected BLOCKED_ADDRESS', async () => {
    const { server, cardUrl, policy } = await cardHost(cardWith('http://169.254.169.254/latest/meta-data/'));
    const error = await fetchAgentCard(cardUrl, { addressPolicy: policy }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AgentCardError);
    expect(error).toMatchObject({ reason: 'BLOCKED_ADDRESS', retryable: false });
    expect((error as Error).message).toMatch(/blocked address.*169\.254\.169\.254 \(metadata\)/);
    expect((error as Error).cause).toBeInstanceOf(BlockedAddressError);
    expect(server.requests).toHaveLength(1);
    onlyLoopbackAttempts();
  });

  it('(1) the same card with a public interface is accepted; an interface host resolving privately is not', async () => {
    const good = await cardHost(cardWith('https://b.example/a2a'));
    const card = await fetchAgentCard(good.cardUrl, { addressPolicy: good.policy });
    expect(card.interfaces[0]?.url).toBe('https://b.example/a2a');
    expect(good.calls).toEqual(['card.test', 'card.test', 'b.example']); // checked at discovery, then again at connect time
    const bad = await cardHost(cardWith('https://10.0.0.5/a2a'));
    await expect(fetchAgentCard(bad.cardUrl, { addressPolicy: bad.policy })).rejects.toMatchObject({ reason: 'BLOCKED_ADDRESS' });
    onlyLoopbackAttempts();
  });

  it('a card URL that is itself blocked is never fetched', async () => {
    const redis = track(await startTcpTarget());
    await expect(fetchAgentCard(`http://127.0.0.1:${redis.port}/`, { addressPolicy: {} })).rejects.toMatchObject({ reason: 'BLOCKED_ADDRESS' });
    expect(redis.connections).toBe(0);
    expect(attempts).toEqual([]);
  });

  it('(2) card URL answers 302 -> http://127.0.0.1:6379/ ("Redis"): not followed, 0 connections to the target', async () => {
    const redis = track(await startTcpTarget());
    const location = `http://127.0.0.1:${redis.port}/`;
    const server = track(await startRawServer((_request, response) => {
      response.writeHead(302, { location }).end();
    }));
    const { lookup } = fakeDns({ 'card.test': [['127.0.0.1']] });
    const policy = { lookup, allowedHosts: ['card.test'] };
    const dispatcher = track(createPolicyDispatcher(policy));
    const cardUrl = `http://card.test:${new URL(server.url).port}`;
    await expect(fetchAgentCard(cardUrl, { addressPolicy: policy, dispatcher })).rejects.toMatchObject({ reason: 'REDIRECT', httpStatus: 302 });
    await expect(fetchAgentCard(server.url)).rejects.toMatchObject({ reason: 'REDIRECT' }); // no policy: still not followed
    await expect(checkUrl(location, policy)).rejects.toMatchObject({ category: 'loopback' }); // re-validated, it would be refused
    expect(server.requests).toHaveLength(2);
    expect(redis.connections).toBe(0);
    expect(attempts).not.toContain(`127.0.0.1:${redis.port}`);
  });

  it('(3) DNS rebinding: public at discovery, 10.0.0.5 at connection time -> BlockedAddressError, no connection attempted', async () => {
    const { lookup, calls } = fakeDns({ 'agent.test': [['93.184.216.34'], ['10.0.0.5']] });
    const policy = { lookup, allowLoopback: true };
    await expect(checkUrl('http://agent.test/rpc', policy)).resolves.toEqual([{ address: '93.184.216.34', family: 4, category: 'public' }]);
    const http = createHttpClient({ dispatcher: track(createPolicyDispatcher(policy)) });
    const error = await http.request({ method: 'POST', url: 'http://agent.test/rpc', body: '{}' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BlockedAddressError);
    expect(error).toMatchObject({ code: 'BLOCKED_ADDRESS', category: 'private', address: '10.0.0.5', retryable: false });
    expect(calls).toEqual(['agent.test', 'agent.test']);
    expect(attempts).toEqual([]);
  });

  it('(3) rebinding to loopback: the local server sees 0 connections', async () => {
    const target = track(await startTcpTarget());
    const { lookup, calls } = fakeDns({ 'agent.test': [['93.184.216.34'], ['127.0.0.1']] });
    const url = `http://agent.test:${target.port}/rpc`;
    await checkUrl(url, { lookup });
    const dispatcher = track(createPolicyDispatcher({ lookup }));
    await expect(request(url, { dispatcher })).rejects.toMatchObject({ category: 'loopback', address: '127.0.0.1' });
    expect(calls).toHaveLength(2);
    expect(target.connections).toBe(0);
    expect(attempts).toEqual([]);
  });

  it('IP literals are checked at connection time too (net.connect never looks them up)', async () => {
    const redis = track(await startTcpTarget());
    const dispatcher = track(createPolicyDispatcher());
    await expect(request(`http://127.0.0.1:${redis.port}/`, { dispatcher })).rejects.toMatchObject({ code: 'BLOCKED_ADDRESS', category: 'loopback' });
    expect(redis.connections).toBe(0);
    expect(attempts).toEqual([]);
  });

  it('pinning: the socket goes to the address the policy checked, not to a second lookup', async () => {
    const server = track(await startRawServer((_request, response) => void response.writeHead(200).end('ok')));
    const port = new URL(server.url).port;
    const { lookup, calls } = fakeDns({ 'agent.test': [['127.0.0.1']] }); // agent.test exists only in this table
    const dispatcher = track(createPolicyDispatcher({ lookup, allowLoopback: true }));
    const response = await request(`http://agent.test:${port}/rpc`, { dispatcher });
    expect(await response.body.text()).toBe('ok');
    expect(server.requests[0]?.headers.host).toBe(`agent.test:${port}`);
    expect(calls).toEqual(['agent.test']);
    expect(attempts).toEqual([`127.0.0.1:${port}`]);
  });

  it('(5) allowLoopback: a request to a local server on 127.0.0.1 succeeds through the dispatcher', async () => {
    const server = track(await startRawServer((_request, response) => void response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')));
    const http = createHttpClient({ dispatcher: track(createPolicyDispatcher({ allowLoopback: true })) });
    const response = await http.request({ method: 'GET', url: `${server.url}/x` });
    expect(response).toMatchObject({ status: 200, bodyText: '{"ok":true}' });
    onlyLoopbackAttempts();
  });
});
