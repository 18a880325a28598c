/**
 * Metrics (docs/observability.md "Logs and metrics"): the metrics answer "which agent is failing or slow" with a bounded `agent` label, count
 * finished workflows by state and failed sends by code and agent, and carry no series that is always zero.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { AgentLabels, OTHER_AGENT_LABEL, RECORDED_ERROR_CODES, createMetrics } from '@durable-a2a/shared';
import { cardUrlOf } from '../../packages/a2a/src/card-url.ts';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import fc from 'fast-check';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { fails, repliesWith, runsSlowly } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { startTestServer } from '../harness/api-server.ts';

/** The samples of metric `name` in a Prometheus text scrape: labels and value. */
function samples(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .map((line) => {
      const labels = Object.fromEntries([...(/\{(.*)\}/.exec(line)?.[1] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((match) => [match[1]!, match[2]!]));
      return { labels, value: Number(line.slice(line.lastIndexOf(' ') + 1)) };
    });
}
const sum = (list: { value: number }[]) => list.reduce((total, each) => total + each.value, 0);

const redisServer = useRedisServer();
const PREFIX = 'agent-metrics';
const UNREGISTERED = 50;
let registered: DemoAgentHandle;
let unregistered: DemoAgentHandle;
let gone: DemoAgentHandle;
let producer: Producer;
let fleet: Fleet;
const registry = new Registry();
const scrape = () => registry.metrics();

beforeAll(async () => {
  // One agent registered under its card name; one never registered, reached through 50 distinct card URLs.
  registered = await startDemoAgent({ name: 'Registered agent', behaviour: (request) => (request.text === 'fail' ? fails('no')(request) : request.text === 'slow' ? runsSlowly(60_000)(request) : repliesWith('ok')(request)) });
  unregistered = await startDemoAgent({ name: 'Unregistered agent', behaviour: repliesWith('ok') });
  gone = await startDemoAgent({ name: 'Gone agent' });
  producer = createProducer({ redis: redisServer().url, prefix: PREFIX, addressPolicy: { allowLoopback: true } });
  await producer.registerAgent(registered.cardUrl);
  await producer.registerAgent(gone.cardUrl);
  await gone.stop();
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX, metricsRegistry: registry });
}, 60_000);
afterAll(async () => {
  await producer?.close();
  await fleet?.close();
  for (const agent of [registered, unregistered, gone]) await agent?.close();
});

describe('which agent is failing or slow', () => {
  it('50 unregistered agents give one `other` series; a registered agent is labelled by its card name', async () => {
    const ids = await Promise.all(
      Array.from({ length: UNREGISTERED }, async (_, index) => (await producer.delegate({ agent: `${unregistered.cardUrl}?n=${index}`, text: 'hello' })).id),
    );
    ids.push((await producer.delegate({ agent: registered.cardUrl, text: 'hello' })).id);
    const views = await Promise.all(ids.map((id) => producer.waitFor(id, { timeoutMs: 60_000 })));
    expect(views.map((view) => view.state)).toEqual(ids.map(() => 'COMPLETED'));
    expect(unregistered.sendMessageCount()).toBe(UNREGISTERED);
    await eventually(async () => sum(samples(await scrape(), 'durable_a2a_delegation_duration_seconds_count')) === UNREGISTERED + 1, 'every settle observed', 20_000);

    const text = await scrape();
    for (const name of ['durable_a2a_sends_total', 'durable_a2a_delegation_duration_seconds_count', 'durable_a2a_transitions_total']) {
      const agents = new Set(samples(text, name).map((sample) => sample.labels.agent));
      expect([...agents].sort(), name).toEqual(['Registered agent', OTHER_AGENT_LABEL].sort());
    }
    const sends = samples(text, 'durable_a2a_sends_total');
    expect(sends.filter((sample) => sample.labels.agent === OTHER_AGENT_LABEL)).toEqual([{ labels: { kind: 'message', agent: OTHER_AGENT_LABEL }, value: UNREGISTERED }]);
    expect(sends.filter((sample) => sample.labels.agent === 'Registered agent')).toEqual([{ labels: { kind: 'message', agent: 'Registered agent' }, value: 1 }]);
  }, 120_000);

  it('durable_a2a_workflows_finished_total counts each finished workflow once, by state', async () => {
    const before = samples(await scrape(), 'durable_a2a_workflows_finished_total');
    const count = (list: typeof before, state: string) => sum(list.filter((sample) => sample.labels.state === state));
    const failed = (await producer.delegate({ agent: registered.cardUrl, text: 'fail' })).id;
    const canceled = (await producer.delegate({ agent: registered.cardUrl, text: 'slow' })).id;
    const completed = (await producer.delegate({ agent: registered.cardUrl, text: 'hello' })).id;
    await eventually(async () => (await producer.get(canceled)).steps[0]?.attempts[0]?.taskId !== undefined, 'the slow task started');
    await producer.cancel(canceled);
    expect((await producer.waitFor(failed, { timeoutMs: 30_000 })).state).toBe('FAILED');
    expect((await producer.waitFor(canceled, { timeoutMs: 30_000 })).state).toBe('CANCELED');
    expect((await producer.waitFor(completed, { timeoutMs: 30_000 })).state).toBe('COMPLETED');
    // The count follows the journaled finish (advance.ts `workflowFinished`): a waiter may see the state first.
    const deltas = (after: typeof before) => ({ COMPLETED: count(after, 'COMPLETED') - count(before, 'COMPLETED'), FAILED: count(after, 'FAILED') - count(before, 'FAILED'), CANCELED: count(after, 'CANCELED') - count(before, 'CANCELED') });
    await eventually(async () => Object.values(deltas(samples(await scrape(), 'durable_a2a_workflows_finished_total'))).every((delta) => delta >= 1), 'every finish counted', 30_000);
    const after = samples(await scrape(), 'durable_a2a_workflows_finished_total');
    expect(deltas(after)).toEqual({
      COMPLETED: 1,
      FAILED: 1,
      CANCELED: 1,
    });
    // The 51 of the first test are in there too, once each.
    expect(count(after, 'COMPLETED')).toBe(UNREGISTERED + 2);
  }, 90_000);

  it('a failed send is counted with its journaled code and the agent label', async () => {
    const id = (await producer.delegate({ agent: gone.cardUrl, text: 'hello' })).id;
    await eventually(async () => samples(await scrape(), 'durable_a2a_send_errors_total').some((sample) => sample.labels.agent === 'Gone agent'), 'a send error of the gone agent', 30_000);
    const errors = samples(await scrape(), 'durable_a2a_send_errors_total').filter((sample) => sample.labels.agent === 'Gone agent');
    // The card fetch was refused: a transport code of the one list of journaled codes (bounded), never the text.
    expect(errors.length).toBeGreaterThan(0);
    for (const sample of errors) expect(RECORDED_ERROR_CODES).toContain(sample.labels.code);
    const journaled = (await producer.get(id)).steps[0]!.attempts[0]!.lastError?.code;
    if (journaled !== undefined) expect(errors.map((sample) => sample.labels.code)).toContain(journaled);
    await producer.cancel(id).catch(() => undefined);
  }, 60_000);
});

describe('no series that is always zero', () => {
  it('queue depth has no `completed` (removed on completion) nor `waiting-children` series', async () => {
    const api = startTestServer({ redisUrl: redisServer().url, prefix: 'zero-series' });
    await api.ready();
    const text = (await api.inject({ method: 'GET', url: '/metrics' })).body;
    await api.close();
    const statuses = new Set(samples(text, 'durable_a2a_queue_jobs').map((sample) => sample.labels.status));
    expect([...statuses].sort()).toEqual(['active', 'delayed', 'failed', 'prioritized', 'waiting']);
  });
});

describe('AgentLabels (property)', () => {
  it('whatever the registry holds and whatever URLs delegations name, at most limit + 1 label values', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ cardUrl: fc.webUrl(), card: fc.record({ name: fc.string({ maxLength: 100 }) }) }), { maxLength: 80 }),
        fc.array(fc.webUrl(), { maxLength: 80 }),
        fc.integer({ min: 0, max: 10 }),
        (agents, urls, limit) => {
          const labels = new AgentLabels(limit);
          labels.update(agents);
          const values = new Set([...agents.map((agent) => agent.cardUrl), ...urls].map((url) => labels.of(url)));
          expect(values.size).toBeLessThanOrEqual(limit + 1);
          for (const value of values) expect(value.length).toBeLessThanOrEqual(64);
          const spelling = (url: string) => cardUrlOf(new URL(url));
          for (const url of urls) if (!agents.some((agent) => spelling(agent.cardUrl) === spelling(url))) expect(labels.of(url)).toBe(OTHER_AGENT_LABEL);
        },
      ),
    );
  });

  it('a delegation that names a registered agent by another spelling (base URL, trailing slash, case) gets its name', () => {
    const labels = new AgentLabels();
    labels.update([{ cardUrl: 'http://127.0.0.1:7202/.well-known/agent-card.json', card: { name: 'Hotels' } }]);
    for (const url of ['http://127.0.0.1:7202', 'http://127.0.0.1:7202/', 'HTTP://127.0.0.1:7202/.well-known/agent-card.json', 'http://127.0.0.1:7202/.well-known/agent-card.json']) expect(labels.of(url)).toBe('Hotels');
    expect(labels.of('http://127.0.0.1:7203/')).toBe(OTHER_AGENT_LABEL);
  });

  it('a metric labelled through AgentLabels on a fresh registry', async () => {
    const metrics = createMetrics(new Registry(), 'workers');
    metrics.agentLabels.update([{ cardUrl: 'https://a.example/card', card: { name: 'A' } }]);
    metrics.sendErrors.inc({ code: 'TRANSPORT_ERROR', agent: metrics.agentLabels.of('https://a.example/card') });
    metrics.sendErrors.inc({ code: 'TRANSPORT_ERROR', agent: metrics.agentLabels.of('https://b.example/card') });
    expect(samples(await metrics.registry.metrics(), 'durable_a2a_send_errors_total').map((sample) => sample.labels.agent).sort()).toEqual(['A', OTHER_AGENT_LABEL]);
  });
});
