/**
 * Per-record isolation: a record that does not parse is skipped by every reader over many records (workflow
 * summaries, /ui, the agent registry, skill-based candidates), counted in `durable_a2a_corrupt_records_total`,
 * logged once per key, and its own view answers the typed problem CORRUPT_RECORD naming the key.
 */
import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { AgentRegistry, Journal } from '@durable-a2a/shared';
import { authorized, startTestServer } from '../harness/api-server.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';
import { eventually, reconcileOutcomes, startTestFleet } from '../harness/fleet.ts';
import { captureLogs } from '../harness/log-capture.ts';

const redisServer = useRedisServer();
const redis = useRedisClient<Redis>(redisServer);
let counter = 0;

/** The agent of `intentRow` (never called: no fleet runs here). */
const AGENT = 'http://agent.example/.well-known/agent-card.json';
const definition = (id: string) => JSON.stringify({ workflowId: id, steps: [{ name: 'main', agent: AGENT, message: { text: 'do' } }], maxAttemptsPerStep: 1 });

/** A server on a fresh prefix whose log lines are kept, with a journal and a registry on the same prefix. */
function setup() {
  const prefix = `corrupt${++counter}`;
  const logs = captureLogs({ level: 'info' });
  const metricsRegistry = new Registry();
  const app = startTestServer({ redisUrl: redisServer().url, prefix, logger: logs.logger, metricsRegistry });
  const journal = new Journal(redis(), { prefix, retentionMs: 600_000 });
  const registry = new AgentRegistry(redis(), { prefix });
  const corruptCount = async (kind: string) => Number(new RegExp(`durable_a2a_corrupt_records_total\\{kind="${kind}"\\} (\\d+)`).exec(await metricsRegistry.metrics())?.[1] ?? 0);
  const corruptLogLines = (key: string) => logs.lines.filter((line) => line.code === 'CORRUPT_RECORD' && line.key === key);
  return { prefix, app, journal, registry, corruptCount, corruptLogLines };
}

/** A workflow: compacted and COMPLETED (`finished`), or RUNNING with its hashes. */
async function seedWorkflow(journal: Journal, id: string, finished: boolean): Promise<void> {
  await journal.createWorkflow(id, { state: 'RUNNING', definition: definition(id), createdAt: '1000', updatedAt: '1000' }, intentRow(id));
  if (!finished) return;
  const ref = { workflowId: id, delegationId: 'main.1' };
  const fence = await journal.claim(ref, 'worker');
  await journal.markSending(ref, fence);
  await journal.applyStatus(ref, { fence, mode: 'event', state: 'COMPLETED', taskId: `T-${id}`, contextId: `c-${id}`, agentCardUrl: AGENT });
  await journal.updateWorkflow(id, { state: 'COMPLETED' });
}

const agentEntry = (cardUrl: string, skill: string, registeredAt: number) =>
  JSON.stringify({
    cardUrl,
    registeredAt,
    refreshedAt: registeredAt,
    card: { name: cardUrl, description: 'd', version: '1', skills: [{ id: skill, name: skill, description: skill, tags: [] }], capabilities: {}, interfaces: [{ url: cardUrl.replace('/.well-known/agent-card.json', '/a2a'), protocolBinding: 'JSONRPC', protocolVersion: '1.0' }] },
  });

interface Listing {
  workflows: { workflowId: string }[];
  corrupt?: { workflowId: string; key: string; code: string }[];
}

describe('F32: one corrupt record takes a listing down', () => {
  it('F32 (a): a finished record holding "not json at all" is skipped by GET /v1/workflows and /ui, and its view is CORRUPT_RECORD naming the key', async () => {
    const { app, journal, corruptCount, corruptLogLines } = setup();
    try {
      for (const id of ['done-1', 'done-2', 'run-1']) await seedWorkflow(journal, id, id !== 'run-1');
      const key = journal.keys.finished('done-1');
      expect(await redis().exists(key)).toBe(1);
      await redis().set(key, 'not json at all');

      for (let round = 0; round < 2; round++) {
        const listing = await authorized(app, { method: 'GET', url: '/v1/workflows' });
        expect(listing.statusCode).toBe(200);
        const body = listing.json<Listing>();
        expect(body.workflows.map((workflow) => workflow.workflowId).sort()).toEqual(['done-2', 'run-1']);
        expect(body.corrupt).toEqual([{ workflowId: 'done-1', key, code: 'CORRUPT_RECORD' }]);
      }
      const page = await authorized(app, { method: 'GET', url: '/ui' });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('done-2');
      expect(page.body).toContain(key);

      for (const url of ['/v1/workflows/done-1']) {
        const view = await authorized(app, { method: 'GET', url });
        expect(view.statusCode, url).toBe(422);
        expect(view.json(), url).toMatchObject({ code: 'CORRUPT_RECORD', key });
      }
      const uiView = await authorized(app, { method: 'GET', url: '/ui/workflows/done-1' });
      expect(uiView.statusCode).toBe(422);
      expect(uiView.json()).toMatchObject({ code: 'CORRUPT_RECORD', key });
      // By state, the producer's id listing skips it too.
      expect((await authorized(app, { method: 'GET', url: '/v1/workflows?state=COMPLETED' })).json<Listing>().workflows.map((workflow) => workflow.workflowId)).toEqual(['done-2']);

      expect(await corruptCount('workflow')).toBeGreaterThanOrEqual(5);
      expect(corruptLogLines(key)).toHaveLength(1);
    } finally {
      await app.close();
    }
  });

  it("F32 (b): a registry entry holding '{bad' is skipped by GET /v1/agents and by a skill-based POST /v1/workflows", async () => {
    const { prefix, app, journal, corruptCount, corruptLogLines } = setup();
    try {
      const good = 'http://127.0.0.1:9/.well-known/agent-card.json';
      const bad = 'http://127.0.0.1:10/.well-known/agent-card.json';
      await redis().hset(`${prefix}:agents`, good, agentEntry(good, 'book', 1_000));
      await redis().hset(`${prefix}:agents`, bad, '{bad');

      const agents = await authorized(app, { method: 'GET', url: '/v1/agents' });
      expect(agents.statusCode).toBe(200);
      expect(JSON.stringify(agents.json())).toContain(good);
      expect(JSON.stringify(agents.json())).not.toContain(bad);

      const created = await authorized(app, { method: 'POST', url: '/v1/workflows', payload: { workflowId: 'by-skill', steps: [{ name: 'main', skill: 'book', message: { text: 'go' } }] } });
      expect(created.statusCode, created.body).toBe(201);
      expect((await journal.getDelegation({ workflowId: 'by-skill', delegationId: 'main.1' }))?.agentCardUrl).toBe(good);

      expect(await corruptCount('agent')).toBeGreaterThanOrEqual(2);
      expect(corruptLogLines(`${prefix}:agents#${bad}`)).toHaveLength(1);
    } finally {
      await app.close();
    }
  });

  /** Ways a stored record goes bad. */
  const CORRUPTIONS = ['non-json', 'truncated', 'wrong-type', 'missing-field'] as const;
  type Corruption = (typeof CORRUPTIONS)[number];

  /** Corrupts workflow `id`'s record (its compacted record when finished, else its hash) in the way `how`; returns the key. */
  async function corruptWorkflow(journal: Journal, id: string, finished: boolean, how: Corruption, cut: number): Promise<string> {
    if (!finished) {
      const key = journal.keys.workflow(id);
      if (how === 'missing-field') await redis().hdel(key, 'state');
      else if (how === 'wrong-type') await redis().hset(key, 'createdAt', 'yesterday');
      else await redis().hset(key, 'state', how === 'non-json' ? '{not a state' : 'RUNN');
      return key;
    }
    const key = journal.keys.finished(id);
    const text = (await redis().get(key))!;
    const record = JSON.parse(text) as { workflow: Record<string, unknown> };
    if (how === 'non-json') await redis().set(key, `x${text}`);
    // Cut inside the workflow object (it starts at 12 and holds at least the state).
    else if (how === 'truncated') await redis().set(key, text.slice(0, 12 + (cut % Math.max(1, text.indexOf(',"delegations"') - 12))));
    else if (how === 'wrong-type') await redis().set(key, JSON.stringify({ ...record, workflow: { ...record.workflow, state: 42 } }));
    else {
      const { state: _state, ...rest } = record.workflow;
      await redis().set(key, JSON.stringify({ ...record, workflow: rest }));
    }
    return key;
  }

  it('property: random corruptions of random records among good ones: listings return every good record and name every bad one', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ finished: fc.boolean(), corrupt: fc.option(fc.record({ how: fc.constantFrom(...CORRUPTIONS), cut: fc.nat(10_000) }), { nil: undefined }) }), { minLength: 1, maxLength: 6 }),
        fc.array(fc.option(fc.constantFrom(...CORRUPTIONS), { nil: undefined }), { minLength: 1, maxLength: 5 }),
        async (workflows, agents) => {
          const { prefix, app, journal, registry } = setup();
          try {
            const bad = new Map<string, string>();
            for (const [index, workflow] of workflows.entries()) {
              const id = `wf-${index}`;
              await seedWorkflow(journal, id, workflow.finished);
              if (workflow.corrupt) bad.set(id, await corruptWorkflow(journal, id, workflow.finished, workflow.corrupt.how, workflow.corrupt.cut));
            }
            const goodAgents: string[] = [];
            for (const [index, corruption] of agents.entries()) {
              const url = `http://127.0.0.1:${20 + index}/.well-known/agent-card.json`;
              const entry = agentEntry(url, 'book', 1_000 + index);
              const stored = { 'non-json': `<${entry}`, truncated: entry.slice(0, entry.length - 5), 'wrong-type': entry.replace('"registeredAt":', '"registeredAt":"x",\n"was":'), 'missing-field': entry.replace('"card":', '"cart":'), none: entry }[corruption ?? 'none'];
              await redis().hset(`${prefix}:agents`, url, stored);
              if (!corruption) goodAgents.push(url);
            }

            const listing = await authorized(app, { method: 'GET', url: '/v1/workflows?limit=500' });
            expect(listing.statusCode).toBe(200);
            const body = listing.json<Listing>();
            const goodIds = workflows.map((_, index) => `wf-${index}`).filter((id) => !bad.has(id));
            expect(body.workflows.map((workflow) => workflow.workflowId).sort()).toEqual(goodIds.sort());
            expect((body.corrupt ?? []).map(({ workflowId, key }) => [workflowId, key]).sort()).toEqual([...bad].sort());
            expect((await authorized(app, { method: 'GET', url: '/ui' })).statusCode).toBe(200);
            for (const [id, key] of bad) {
              const view = await authorized(app, { method: 'GET', url: `/v1/workflows/${id}` });
              expect(view.statusCode).toBe(422);
              expect(view.json()).toMatchObject({ code: 'CORRUPT_RECORD', key });
            }
            for (const id of goodIds) expect((await authorized(app, { method: 'GET', url: `/v1/workflows/${id}` })).statusCode).toBe(200);

            expect((await registry.list()).map((agent) => agent.cardUrl)).toEqual(goodAgents);
            expect((await authorized(app, { method: 'GET', url: '/v1/agents' })).statusCode).toBe(200);
          } finally {
            await app.close();
          }
        },
      ),
      { numRuns: 15 },
    );
  });
});

describe('F32 (c): a corrupt delegation in the reconciler', () => {
  it('the start-up sweep skips it (outcome corrupt, counted, logged once) and reconciles the good ones beside it; the fleet keeps running', async () => {
    const prefix = `corrupt-fleet${++counter}`;
    const journal = new Journal(redis(), { prefix, retentionMs: 600_000 });
    // Three INTENT rows of an agent that cannot be reached, one of them corrupt: the start-up sweep puts them in one batch.
    for (const id of ['good-1', 'bad-1', 'good-2']) await seedWorkflow(journal, id, false);
    const badKey = journal.keys.delegation('bad-1', 'main.1');
    await redis().hset(badKey, 'state', 'NOT-A-STATE');
    const logs = captureLogs({ level: 'info' });
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, logger: logs.logger, addressPolicy: { allowLoopback: true } });
    try {
      await eventually(async () => ((await reconcileOutcomes(fleet)).corrupt ?? 0) >= 1, 'the corrupt delegation reconciled as corrupt');
      // The good ones beside it in the batch were reconciled too (whatever their outcome: the agent does not exist).
      await eventually(async () => Object.entries(await reconcileOutcomes(fleet)).some(([outcome, count]) => outcome !== 'corrupt' && count >= 2), 'the good delegations reconciled');
      expect(Number((await fleet.metrics.corruptRecords.get()).values.find((value) => value.labels.kind === 'delegation')?.value ?? 0)).toBeGreaterThanOrEqual(1);
      expect(logs.lines.filter((line) => line.code === 'CORRUPT_RECORD' && line.key === badKey)).toHaveLength(1);
      // Still in the index for a person, checked again later, never dropped.
      expect(await redis().zscore(journal.keys.unfinished(), 'bad-1|main.1')).not.toBeNull();
    } finally {
      await fleet.close();
    }
  });
});
