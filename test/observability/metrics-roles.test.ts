/**
 * Metrics per role: each process exports only the metrics it
 * updates; the worker process exports Node/process default metrics and the
 * end-to-end delegation duration histogram; every metric either registers is
 * documented in docs/observability.md.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import { useRedisServer } from '../harness/redis.ts';
import { startTestServer } from '../harness/api-server.ts';
import { spawnObserved, type ObservedProcess } from '../harness/processes.ts';

const redisServer = useRedisServer();
let app: ApiServer;
let workers: ObservedProcess;

beforeAll(async () => {
  app = startTestServer({ redisUrl: redisServer().url, prefix: 'metrics' });
  await app.ready();
  workers = spawnObserved('workers', { REDIS_URL: redisServer().url, DA2A_PREFIX: 'metrics', DA2A_METRICS_PORT: '0', LOG_LEVEL: 'silent' });
  await workers.ready;
}, 60_000);
afterAll(async () => {
  await app?.close();
  await workers?.kill();
});

const names = (text: string) => new Set(text.split('\n').filter((line) => line.startsWith('# TYPE ')).map((line) => line.split(' ')[2]!));

it('the API exports its own metrics only', async () => {
  const exported = names((await app.inject({ method: 'GET', url: '/metrics' })).body);
  for (const name of ['durable_a2a_queue_jobs', 'durable_a2a_delegations', 'durable_a2a_open_questions', 'durable_a2a_push_notifications_total']) expect(exported).toContain(name);
  for (const name of ['durable_a2a_sends_total', 'durable_a2a_transitions_total', 'durable_a2a_job_duration_seconds', 'durable_a2a_delegation_duration_seconds', 'durable_a2a_local_follows']) expect(exported).not.toContain(name);
});

it('the workers export theirs, the default process metrics and the end-to-end histogram', async () => {
  const { opsPort } = await workers.ready;
  const exported = names(await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text());
  for (const name of ['durable_a2a_sends_total', 'durable_a2a_job_duration_seconds', 'durable_a2a_local_follows', 'durable_a2a_delegation_duration_seconds', 'process_cpu_user_seconds_total', 'nodejs_heap_size_used_bytes']) expect(exported).toContain(name);
  for (const name of ['durable_a2a_push_notifications_total', 'durable_a2a_queue_jobs']) expect(exported).not.toContain(name);
});

it('every durable_a2a metric either process registers is in the metrics table of docs/observability.md', async () => {
  const { opsPort } = await workers.ready;
  const exported = [...names((await app.inject({ method: 'GET', url: '/metrics' })).body), ...names(await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text())];
  const ours = [...new Set(exported.filter((name) => name.startsWith('durable_a2a_')))];
  expect(ours.length).toBeGreaterThan(25);
  const table = readFileSync(new URL('../../docs/observability.md', import.meta.url), 'utf8').split('\n').filter((line) => line.startsWith('| `durable_a2a_'));
  expect(ours.filter((name) => !table.some((row) => row.startsWith(`| \`${name}\``)))).toEqual([]);
});

it('the end-to-end histogram counts each settled delegation once, by its final state', async () => {
  const { Registry } = await import('prom-client');
  const { createProducer } = await import('@durable-a2a/producer');
  const { startTestFleet, eventually } = await import('../harness/fleet.ts');
  const { startDemoAgent } = await import('../harness/agent.ts');
  const agent = await startDemoAgent();
  const metricsRegistry = new Registry();
  const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: 'e2e', metricsRegistry });
  const producer = createProducer({ redis: redisServer().url, prefix: 'e2e', addressPolicy: { allowLoopback: true } });
  try {
    const ids = await Promise.all([1, 2].map(async (n) => (await producer.delegate({ agent: agent.cardUrl, text: `hello ${n}` })).id));
    await eventually(async () => (await Promise.all(ids.map((id) => producer.get(id)))).every((view) => view.state === 'COMPLETED'), 'both delegations COMPLETED', 20_000);
    // Settling removes the index entry last; let the settle that follows the outcome finish.
    const count = () => metricsRegistry.getSingleMetricAsString('durable_a2a_delegation_duration_seconds').then((text) => text.match(/_count\{state="COMPLETED",agent="other"\} (\d+)/)?.[1]);
    await eventually(async () => (await count()) === '2', 'two observations', 10_000);
  } finally {
    await producer.close();
    await fleet.close();
    await agent.close();
  }
});
