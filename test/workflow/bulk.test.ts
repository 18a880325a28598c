/**
 * Bulk actions by filter (docs/people.md "Search and bulk actions"), end to end: the API (`POST /v1/bulk/workflows/{action}`) and the CLI
 * (`workflows cancel|retry|search --where …`) against real workers and a real agent that keeps its tasks WORKING.
 * A dry run changes nothing; the real run cancels exactly the matching workflows, each through the single-workflow
 * cancel, so CancelTask reaches the agent for each bound task and for no other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { run } from '@durable-a2a/cli';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { runsSlowly } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { TEST_API_TOKEN, startTestServer } from '../harness/api-server.ts';

const redisServer = useRedisServer();
const PREFIX = 'bulk';
let app: ApiServer;
let fleet: Fleet;
let apiUrl: string;
let agent: DemoAgentHandle;
let producer: Producer;

beforeAll(async () => {
  agent = await startDemoAgent({ behaviour: runsSlowly(120_000) });
  app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX });
  apiUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
  producer = createProducer({ redis: redisServer().url, prefix: PREFIX, addressPolicy: { allowLoopback: true } });
});
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await producer?.close();
  await agent?.close();
});

async function api<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; json: T }> {
  const response = await fetch(`${apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${TEST_API_TOKEN}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, json: (await response.json()) as T };
}

async function cli(argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), env: { DURABLE_A2A_URL: apiUrl, DURABLE_A2A_TOKEN: TEST_API_TOKEN } });
  return { code, stdout, stderr };
}

/** Delegations to the slow agent, each with `metadata`, waited until the agent's task is WORKING (bound). */
async function workingDelegations(ids: string[], metadata: Record<string, string>): Promise<void> {
  for (const id of ids) await producer.delegate({ agent: agent.cardUrl, text: `work ${id}`, idempotencyKey: id, metadata });
  for (const id of ids) await eventually(async () => (await producer.get(id)).steps[0]?.attempts[0]?.state === 'WORKING', `${id} WORKING`, 20_000);
}

interface BulkAnswer {
  items: { workflowId: string; outcome: string; state: string; code?: string }[];
  cursor?: string;
}

describe('bulk cancel by metadata filter (API)', () => {
  it('a dry run lists exactly the matching workflows and changes nothing; the real run cancels exactly those, CancelTask once for each', async () => {
    const matching = ['bulk-a-1', 'bulk-a-2', 'bulk-a-3'];
    const others = ['bulk-b-1', 'bulk-b-2'];
    await workingDelegations(matching, { batch: 'a', customer: 'c-1' });
    await workingDelegations(others, { batch: 'b', customer: 'c-1' });
    const cancelsBefore = agent.requestCount('CancelTask');

    const dry = await api<BulkAnswer>('POST', '/v1/bulk/workflows/cancel', { filter: { metadata: { batch: 'a' } }, dryRun: true });
    expect(dry.status).toBe(200);
    expect(dry.json.items.map((item) => [item.workflowId, item.outcome]).sort()).toEqual(matching.map((id) => [id, 'would']));
    for (const id of [...matching, ...others]) expect((await producer.get(id)).cancelRequested).toBe(false);
    expect(agent.requestCount('CancelTask')).toBe(cancelsBefore);

    const real = await api<BulkAnswer>('POST', '/v1/bulk/workflows/cancel', { filter: { metadata: { batch: 'a' } } });
    expect(real.status).toBe(200);
    expect(real.json.items.map((item) => [item.workflowId, item.outcome]).sort()).toEqual(matching.map((id) => [id, 'done']));
    for (const id of matching) await eventually(async () => (await producer.get(id)).state === 'CANCELED', `${id} CANCELED`, 20_000);
    await eventually(async () => agent.requestCount('CancelTask') - cancelsBefore === matching.length, 'CancelTask for each matching task', 20_000);
    for (const id of others) expect(await producer.get(id)).toMatchObject({ state: 'RUNNING', cancelRequested: false });

    // Again: every match is finished now, skipped with the code, nothing sent.
    const again = await api<BulkAnswer>('POST', '/v1/bulk/workflows/cancel', { filter: { metadata: { batch: 'a' } } });
    expect(again.json.items.map((item) => item.code)).toEqual(['WORKFLOW_FINISHED', 'WORKFLOW_FINISHED', 'WORKFLOW_FINISHED']);
    expect(agent.requestCount('CancelTask') - cancelsBefore).toBe(matching.length);
  }, 90_000);

  it('refuses an empty filter, a resolve without its decision, and an unknown action (400, nothing done)', async () => {
    expect((await api<{ code: string }>('POST', '/v1/bulk/workflows/cancel', { filter: {} })).json.code).toBe('INVALID_INPUT');
    expect((await api<{ code: string }>('POST', '/v1/bulk/workflows/resolve', { filter: { state: 'NEEDS_ATTENTION' } })).json.code).toBe('INVALID_INPUT');
    expect((await api<unknown>('POST', '/v1/bulk/workflows/delete', { filter: { state: 'RUNNING' } })).status).toBe(400);
    expect((await api<unknown>('POST', '/v1/bulk/workflows/cancel', { filter: { state: 'RUNNING' }, limit: 501 })).status).toBe(400);
  });

  it('pages by the limit with a cursor: each workflow once over the pages', async () => {
    const ids = ['bulk-page-1', 'bulk-page-2', 'bulk-page-3', 'bulk-page-4', 'bulk-page-5'];
    await workingDelegations(ids, { batch: 'paged' });
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const answer = await api<BulkAnswer>('POST', '/v1/bulk/workflows/cancel', { filter: { metadata: { batch: 'paged' } }, dryRun: true, limit: 2, ...(cursor ? { cursor } : {}) });
      expect(answer.json.items.length).toBeLessThanOrEqual(2);
      seen.push(...answer.json.items.map((item) => item.workflowId));
      cursor = answer.json.cursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(ids);
  }, 60_000);
});

describe('search (API)', () => {
  it('GET /v1/workflows by metadata pairs, id prefix and created range; a malformed pair or instant is a 400 naming it', async () => {
    await workingDelegations(['find-1', 'find-2'], { project: 'atlas', tier: 'gold' });
    await workingDelegations(['find-3'], { project: 'atlas', tier: 'silver' });
    const ids = async (query: string) => (await api<{ ids: string[] }>('GET', `/v1/workflows?${query}`)).json.ids;
    expect(await ids('meta=project%3Datlas')).toEqual(['find-1', 'find-2', 'find-3']);
    expect(await ids('meta=project%3Datlas&meta=tier%3Dgold')).toEqual(['find-1', 'find-2']);
    expect(await ids('idPrefix=find-&meta=tier%3Dsilver')).toEqual(['find-3']);
    expect(await ids('idPrefix=find-&state=RUNNING&createdAfter=2000-01-01T00:00:00Z')).toEqual(['find-1', 'find-2', 'find-3']);
    expect(await ids('idPrefix=find-&createdBefore=2000-01-01T00:00:00Z')).toEqual([]);
    // The agent by its card URL or its base URL (the form it was given in does not matter); another agent: none.
    expect(await ids(`idPrefix=find-&agent=${encodeURIComponent(agent.cardUrl)}`)).toEqual(['find-1', 'find-2', 'find-3']);
    expect(await ids(`idPrefix=find-&agent=${encodeURIComponent(new URL(agent.cardUrl).origin + '/')}`)).toEqual(['find-1', 'find-2', 'find-3']);
    expect(await ids('idPrefix=find-&agent=http%3A%2F%2Fother.example%2F')).toEqual([]);
    const badPair = await api<{ code: string; field?: string }>('GET', '/v1/workflows?meta=no%20pair');
    expect(badPair.status).toBe(400);
    expect(badPair.json.code).toBe('INVALID_INPUT');
    expect((await api<{ code: string }>('GET', '/v1/workflows?createdAfter=yesterday')).status).toBe(400);
  }, 60_000);
});

describe('bulk commands (CLI)', () => {
  it('workflows cancel --where meta.k=v --dry-run lists, changes nothing; without --dry-run cancels exactly those', async () => {
    const matching = ['cli-bulk-x-1', 'cli-bulk-x-2'];
    await workingDelegations(matching, { team: 'x' });
    await workingDelegations(['cli-bulk-y-1'], { team: 'y' });
    const cancelsBefore = agent.requestCount('CancelTask');

    const dry = await cli(['workflows', 'cancel', '--where', 'meta.team=x', '--where', 'state=RUNNING', '--dry-run']);
    expect(dry).toMatchObject({ code: 0, stderr: '' });
    expect(dry.stdout).toBe('cli-bulk-x-1\twould\tRUNNING\ncli-bulk-x-2\twould\tRUNNING\n2 would change, 0 skipped\n');
    expect(agent.requestCount('CancelTask')).toBe(cancelsBefore);
    for (const id of matching) expect((await producer.get(id)).cancelRequested).toBe(false);

    const real = await cli(['--json', 'workflows', 'cancel', '--where', 'meta.team=x']);
    expect(real.code).toBe(0);
    expect(JSON.parse(real.stdout)).toMatchObject({ action: 'cancel', dryRun: false, items: matching.map((workflowId) => ({ workflowId, outcome: 'done' })) });
    for (const id of matching) await eventually(async () => (await producer.get(id)).state === 'CANCELED', `${id} CANCELED`, 20_000);
    await eventually(async () => agent.requestCount('CancelTask') - cancelsBefore === 2, 'CancelTask for each', 20_000);
    expect((await producer.get('cli-bulk-y-1')).state).toBe('RUNNING');

    const searched = await cli(['--json', 'workflows', 'search', '--where', 'meta.team=y']);
    expect(JSON.parse(searched.stdout).workflows.map((row: { workflowId: string }) => row.workflowId)).toEqual(['cli-bulk-y-1']);
  }, 90_000);

  it('retry skips what is not waiting for a person, with the code; usage errors exit 2', async () => {
    const retried = await cli(['workflows', 'retry', '--where', 'meta.team=y', '--dry-run']);
    expect(retried).toMatchObject({ code: 0, stdout: 'cli-bulk-y-1\tskipped\tRUNNING\tNOT_WAITING: RUNNING, not waiting for a person\n0 would change, 1 skipped\n' });
    expect((await cli(['workflows', 'cancel', '--dry-run'])).code).toBe(2);
    expect((await cli(['workflows', 'cancel', '--where', 'colour=red'])).code).toBe(2);
    expect((await cli(['workflows', 'resolve', '--where', 'state=NEEDS_ATTENTION'])).code).toBe(2);
  });
});

describe('bulk actions in /ui', () => {
  it('the form previews a dry run (nothing changes), then Confirm cancels exactly the matching workflows', async () => {
    const matching = ['ui-bulk-z-1', 'ui-bulk-z-2'];
    await workingDelegations(matching, { desk: 'z' });
    await workingDelegations(['ui-bulk-w-1'], { desk: 'w' });
    const headers = { authorization: `Bearer ${TEST_API_TOKEN}` };
    const form = await app.inject({ method: 'GET', url: '/ui/bulk', headers });
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('Preview (dry run)');

    const preview = await app.inject({ method: 'GET', url: `/ui/bulk?preview=1&action=cancel&meta=${encodeURIComponent('desk=z')}`, headers });
    expect(preview.statusCode).toBe(200);
    expect(preview.body).toContain('Dry run: 2 would change, 0 skipped');
    for (const id of matching) expect(preview.body).toContain(`/ui/workflows/${id}`);
    expect(preview.body).not.toContain('ui-bulk-w-1');
    expect(preview.body).toContain('Confirm: cancel 2 workflow(s)');
    for (const id of matching) expect((await producer.get(id)).cancelRequested).toBe(false);

    const confirmed = await app.inject({ method: 'POST', url: '/ui/bulk', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ action: 'cancel', meta: 'desk=z' }).toString() });
    expect(confirmed.statusCode).toBe(200);
    expect(confirmed.body).toContain('Done: 2 changed, 0 skipped');
    for (const id of matching) await eventually(async () => (await producer.get(id)).state === 'CANCELED', `${id} CANCELED`, 20_000);
    expect((await producer.get('ui-bulk-w-1')).state).toBe('RUNNING');

    const crossSite = await app.inject({ method: 'POST', url: '/ui/bulk', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site' }, payload: 'action=cancel&meta=desk%3Dw' });
    expect(crossSite.statusCode).toBe(403);
    expect((await producer.get('ui-bulk-w-1')).cancelRequested).toBe(false);
  }, 90_000);
});
