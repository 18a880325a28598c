/**
 * The ops endpoint of the workers. A port that cannot be bound stops the process with
 * one line and exit 2 before it takes a job (a second worker on a taken port used to log "fleet started", take
 * jobs, then die on an unhandled EADDRINUSE); the endpoint binds loopback unless DA2A_METRICS_HOST says otherwise;
 * DA2A_METRICS_TOKEN, when set, is required on `/metrics` (workers and API) while the probes stay open.
 */
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { queuePrefix } from '@durable-a2a/shared';
import { createProducer } from '@durable-a2a/producer';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { spawnObserved, type ObservedProcess } from '../harness/processes.ts';
import { TEST_API_TOKEN } from '../harness/api-server.ts';

const redisServer = useRedisServer();
let agent: DemoAgentHandle;
let holder: Server;
let takenPort: number;

beforeAll(async () => {
  agent = await startDemoAgent();
  holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  takenPort = (holder.address() as { port: number }).port;
}, 30_000);
afterAll(async () => {
  await new Promise((resolve) => holder?.close(resolve));
  await agent?.close();
});

/** True when a TCP connection to `host:port` is accepted. */
async function accepts(host: string, port: number): Promise<boolean> {
  return fetch(`http://${host}:${port}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
    () => true,
    () => false,
  );
}

describe('a port that cannot be bound', () => {
  it('a worker on a taken metrics port exits 2 with one line naming the setting, and took no job', async () => {
    const prefix = 'taken-port';
    const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'wait for a worker' });
    const worker = spawnObserved('workers', { REDIS_URL: redisServer().url, DA2A_PREFIX: prefix, DA2A_ALLOW_LOOPBACK: 'true', DA2A_METRICS_PORT: String(takenPort), LOG_LEVEL: 'info' });
    const exit = await worker.exited;
    expect(exit.code).toBe(2);
    expect(worker.stderr().trim().split('\n')).toEqual([
      `configuration error: DA2A_METRICS_PORT=${takenPort} on 127.0.0.1: the port is taken (another process, or a second worker on this host): stop it or set DA2A_METRICS_PORT to a free port (0: any)`,
    ]);
    expect(worker.stdoutLines().join('\n')).not.toContain('fleet started');
    // Nothing was taken: the send job still waits, the attempt is the journaled intent, the agent saw nothing.
    const send = new Queue('send', { connection: { url: redisServer().url }, prefix: queuePrefix(prefix) });
    try {
      // A message send carries its priority and its tenant's place (the send queue's order), so it waits prioritized.
      expect(await send.getJobCounts('waiting', 'prioritized', 'active', 'completed', 'failed')).toEqual({ waiting: 0, prioritized: 1, active: 0, completed: 0, failed: 0 });
    } finally {
      await send.close();
    }
    const attempt = (await producer.get(id)).steps[0]!.attempts[0]!;
    expect(attempt.state).toBe('INTENT');
    expect(await producer.journal.getDelegation({ workflowId: id, delegationId: attempt.delegationId })).toMatchObject({ state: 'INTENT', fence: 0 });
    expect(agent.sendMessageCount()).toBe(0);
    await producer.close();
  }, 60_000);

  it('the API on a taken PORT exits 2 with one line naming the setting', async () => {
    const api = spawnObserved('api', { REDIS_URL: redisServer().url, DA2A_API_TOKENS: TEST_API_TOKEN, PORT: String(takenPort), HOST: '127.0.0.1', LOG_LEVEL: 'silent' });
    const exit = await api.exited;
    expect(exit.code).toBe(2);
    expect(api.stderr().trim().split('\n')).toEqual([
      `configuration error: PORT=${takenPort} on 127.0.0.1: the port is taken (another process, or a second worker on this host): stop it or set PORT to a free port (0: any)`,
    ]);
  }, 60_000);
});

describe('where the ops endpoint listens, and its token', () => {
  let loopbackOnly: ObservedProcess;
  let everywhere: ObservedProcess;
  const TOKEN = 'metrics-token-0123456789';

  beforeAll(async () => {
    const shared = { REDIS_URL: redisServer().url, DA2A_PREFIX: 'ops-host', DA2A_METRICS_PORT: '0', LOG_LEVEL: 'silent' };
    loopbackOnly = spawnObserved('workers', shared);
    everywhere = spawnObserved('workers', { ...shared, DA2A_METRICS_HOST: '0.0.0.0', DA2A_METRICS_TOKEN: TOKEN });
    await Promise.all([loopbackOnly.ready, everywhere.ready]);
  }, 60_000);
  afterAll(async () => {
    await loopbackOnly?.kill('SIGTERM');
    await everywhere?.kill('SIGTERM');
  });

  it('binds 127.0.0.1 by default (127.0.0.2, another loopback address, is refused); DA2A_METRICS_HOST=0.0.0.0 binds every address', async () => {
    const { opsPort: defaultPort } = await loopbackOnly.ready;
    expect(await accepts('127.0.0.1', defaultPort!)).toBe(true);
    expect(await accepts('127.0.0.2', defaultPort!)).toBe(false);
    const { opsPort: openPort } = await everywhere.ready;
    expect(await accepts('127.0.0.2', openPort!)).toBe(true);
  });

  it('with DA2A_METRICS_TOKEN, /metrics needs the bearer token; /healthz and /readyz do not', async () => {
    const { opsPort } = await everywhere.ready;
    const base = `http://127.0.0.1:${opsPort}`;
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    expect((await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const scrape = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(scrape.status).toBe(200);
    expect(await scrape.text()).toContain('durable_a2a_sends_total');
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    // Without a token the endpoint stays open (as before).
    expect((await fetch(`http://127.0.0.1:${(await loopbackOnly.ready).opsPort}/metrics`)).status).toBe(200);
  });

  it('with DA2A_METRICS_PORT=0 the port the system picked is in the log (an operator reading the log can find it)', async () => {
    const worker = spawnObserved('workers', { REDIS_URL: redisServer().url, DA2A_PREFIX: 'ops-log', DA2A_METRICS_PORT: '0', LOG_LEVEL: 'info' });
    try {
      const { opsPort } = await worker.ready;
      const logged = (): { opsPort?: number } | undefined =>
        worker
          .stdoutLines()
          .map((line) => JSON.parse(line) as { msg?: string; opsPort?: number })
          .find((entry) => entry.opsPort !== undefined);
      // The line is written before the ready message; the pipe may deliver it after: wait on stdout's data events, bounded.
      if (logged() === undefined) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no log line with opsPort: ${worker.stdoutLines().join('\n').slice(-2_000)}`)), 30_000);
          const onData = () => logged() !== undefined && (clearTimeout(timer), worker.child.stdout!.off('data', onData), resolve());
          worker.child.stdout!.on('data', onData);
        });
      }
      expect(opsPort).toBeGreaterThan(0);
      expect(logged()).toMatchObject({ opsPort, msg: expect.stringContaining('/metrics') });
    } finally {
      await worker.kill('SIGTERM');
    }
  }, 60_000);

  it('the API: with DA2A_METRICS_TOKEN, GET /metrics needs it', async () => {
    const api = spawnObserved('api', { REDIS_URL: redisServer().url, DA2A_API_TOKENS: TEST_API_TOKEN, DA2A_METRICS_TOKEN: TOKEN, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' });
    try {
      const { port } = await api.ready;
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(401);
      expect((await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${TEST_API_TOKEN}` } })).status).toBe(401);
      expect((await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    } finally {
      await api.kill('SIGTERM');
    }
  }, 60_000);
});
