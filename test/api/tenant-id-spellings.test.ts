/**
 * Tenants (docs/tenants.md) against id spellings that could cross from one tenant to another over real HTTP: a raw
 * or percent-encoded `~` (either case), other letter cases of the tenant, unicode look-alikes of `~`, doubled and
 * leading separators, another tenant's prefix behind one's own, trailing bytes, very long ids, and the `default`
 * tenant spelled out. Each is sent by another tenant's service to the record routes, the front door and the
 * listings; the victims' keys must be byte-identical afterwards (DUMP of every key of their hash tags).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import type { ApiServer } from '@durable-a2a/producer/server';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { listenOnLoopback, startTestServer } from '../harness/api-server.ts';

const redisServer = useRedisServer();
const redis = useRedisClient<Redis>(redisServer);
const PREFIX = 'spellings';
const TOKENS = { blue: 'blue-service-token-0123456789', red: 'red-service-token-0123456789', plain: 'default-service-token-0123456789' } as const;
let app: ApiServer;
let baseUrl: string;
/** The victims: blue's workflow `trip` (stored `blue~trip`) and the default tenant's `trip-plain`. */
const VICTIMS = { blue: 'blue~trip', plain: 'trip-plain' } as const;

async function call(token: keyof typeof TOKENS, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKENS[token]}`, ...(body !== undefined ? { 'content-type': 'application/json', 'a2a-version': '1.0' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, text: await response.text() };
}

/** Every key of a workflow's hash tag and the indexes, as DUMP bytes: "byte-identical" compares these. */
async function dump(workflowId: string): Promise<Record<string, string>> {
  const keys = (await redis().keys(`${PREFIX}:{wf:${workflowId}}*`)).sort();
  expect(keys.length).toBeGreaterThan(0);
  return Object.fromEntries(await Promise.all(keys.map(async (key) => [key, (await redis().dumpBuffer(key))?.toString('base64') ?? ''])));
}

/** Spellings of `victimId` (`<tenant>~<local>` or a default tenant's bare id) an attacker might send. */
function spellingsOf(victimId: string): string[] {
  const [tenant, local] = victimId.includes('~') ? (victimId.split('~') as [string, string]) : ['default', victimId];
  const stored = tenant === 'default' ? [`default~${local}`, `Default~${local}`, `~${local}`, `%7E${local}`] : [];
  return [
    ...stored,
    `${tenant}~${local}`,
    `${tenant}%7E${local}`,
    `${tenant}%7e${local}`,
    `${tenant}%257E${local}`,
    `${tenant.toUpperCase()}~${local}`,
    `${tenant[0]!.toUpperCase()}${tenant.slice(1)}%7E${local}`,
    `%${tenant.charCodeAt(0).toString(16)}${tenant.slice(1)}~${local}`,
    encodeURIComponent(`${tenant}\uFF5E${local}`), // fullwidth tilde
    encodeURIComponent(`${tenant}\u02DC${local}`), // small tilde
    encodeURIComponent(`${tenant}\u223C${local}`), // tilde operator
    `${tenant}~~${local}`,
    `~${tenant}~${local}`,
    `red~${tenant}~${local}`,
    `blue~${tenant}~${local}`,
    `${tenant}~${local}%00`,
    `${tenant}~${local}%20`,
    `${tenant}~${local}.`,
    `${tenant}~${local}?tenant=${tenant}`,
    `${tenant}~${'a'.repeat(4_000)}`,
    `${'b'.repeat(40)}~${local}`,
    local,
    local.toUpperCase(),
  ];
}

beforeAll(async () => {
  app = startTestServer({
    redisUrl: redisServer().url,
    prefix: PREFIX,
    apiTokens: Object.entries(TOKENS).map(([name, token]) => `${name}:${token}`),
    tenants: { tokens: { blue: { tenant: 'blue', role: 'service' }, red: { tenant: 'red', role: 'service' }, plain: { tenant: 'default', role: 'service' } } },
  });
  baseUrl = await listenOnLoopback(app);
  // No fleet: the victims stay as created (an agent nobody runs), so any change is one a request made.
  const workflow = (workflowId: string) => ({ workflowId, steps: [{ name: 'main', agent: 'http://127.0.0.1:9/agent', message: { text: 'book a trip' } }] });
  expect((await call('blue', 'POST', '/v1/workflows', workflow('trip'))).status).toBe(201);
  expect((await call('plain', 'POST', '/v1/workflows', workflow(VICTIMS.plain))).status).toBe(201);
  // The owners reach their own workflows by these ids (the checks below are not refusing everything).
  expect((await call('blue', 'GET', '/v1/workflows/trip')).status).toBe(200);
  expect((await call('blue', 'GET', '/v1/workflows/blue%7Etrip')).status).toBe(200);
  expect((await call('plain', 'GET', `/v1/workflows/${VICTIMS.plain}`)).status).toBe(200);
});
afterAll(async () => {
  await app?.close();
});

describe('id spellings across tenants', () => {
  const attacks = [
    { token: 'red', victim: VICTIMS.blue },
    { token: 'plain', victim: VICTIMS.blue },
    { token: 'blue', victim: VICTIMS.plain },
    { token: 'red', victim: VICTIMS.plain },
  ] as const;

  it('every spelling of another tenant\'s id is 404 (or refused as no id: 400, 414) on every record route and the front door, and changes no byte', async () => {
    const before = { blue: await dump(VICTIMS.blue), plain: await dump(VICTIMS.plain) };
    const failures: string[] = [];
    for (const { token, victim } of attacks) {
      for (const spelling of spellingsOf(victim)) {
        for (const [method, path, body] of [
          ['GET', `/v1/workflows/${spelling}`],
          ['GET', `/v1/workflows/${spelling}/history`],
          ['POST', `/v1/workflows/${spelling}/cancel`, {}],
          ['POST', `/v1/workflows/${spelling}/resolve`, { action: 'abandon' }],
          ['POST', `/v1/workflows/${spelling}/steps/main/reply`, { text: 'Paris' }],
          ['GET', `/ui/workflows/${spelling}`],
        ] as const) {
          const answer = await call(token, method, path, body);
          const seen = `${token} → ${method} ${path.slice(0, 120)}: ${answer.status}`;
          if (![400, 404, 414].includes(answer.status) && !(answer.status === 401 && path.startsWith('/ui/'))) failures.push(seen);
          // A refusal may echo the id it was given (as for an id nobody used); anything else must not name the victim.
          if (answer.status < 400 && answer.text.includes(victim)) failures.push(`${seen} shows ${victim}`);
        }
        const decoded = (() => {
          try {
            return decodeURIComponent(spelling);
          } catch {
            return spelling;
          }
        })();
        for (const method of ['GetTask', 'CancelTask']) {
          const answer = await call(token, 'POST', '/a2a', { jsonrpc: '2.0', id: 1, method, params: { id: decoded } });
          if (!answer.text.includes('"error"')) failures.push(`${token} → ${method} ${decoded.slice(0, 120)}: ${answer.text.slice(0, 200)}`);
        }
      }
      // Listings narrowed by the victim's id or tenant, spelled the same ways.
      for (const spelling of spellingsOf(victim).slice(0, 12)) {
        for (const path of [`/v1/workflows?idPrefix=${spelling}`, `/v1/workflows?tenant=${spelling.split(/~|%7E|%7e/)[0]}`, `/v1/questions?tenant=${spelling.split(/~|%7E|%7e/)[0]}`]) {
          const answer = await call(token, 'GET', path);
          if (answer.status >= 500 || answer.text.includes(victim)) failures.push(`${token} → GET ${path}: ${answer.status}${answer.text.includes(victim) ? ' shows the victim' : ''}`);
        }
        const bulk = await call(token, 'POST', '/v1/bulk/workflows/cancel', { filter: { idPrefix: spelling } });
        if (bulk.status >= 500 || bulk.text.includes(victim)) failures.push(`${token} → bulk cancel idPrefix=${spelling}: ${bulk.status}`);
      }
      // Creating under a spelling of the victim's id makes a workflow of the attacker's own, or nothing.
      for (const spelling of spellingsOf(victim).slice(0, 12)) {
        const decoded = spelling;
        const created = await call(token, 'POST', '/v1/workflows', { workflowId: decoded, steps: [{ name: 'main', agent: 'http://127.0.0.1:9/agent', message: { text: 'x' } }] });
        if (created.status < 400 && created.text.includes(`"${victim}"`)) failures.push(`${token} → create ${decoded}: ${created.status} answered the victim`);
        const delegated = await call(token, 'POST', '/v1/delegations', { agent: 'http://127.0.0.1:9/agent', text: 'x', idempotencyKey: decoded });
        if (delegated.status < 400 && delegated.text.includes(`"${victim}"`)) failures.push(`${token} → delegate ${decoded}: ${delegated.status} answered the victim`);
      }
    }
    expect(failures).toEqual([]);
    expect({ blue: await dump(VICTIMS.blue), plain: await dump(VICTIMS.plain) }).toEqual(before);
  }, 120_000);
});
