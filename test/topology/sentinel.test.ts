/**
 * The Sentinel harness and the journal's durability setting against it: clients on a
 * `redis-sentinel://` URL follow a promoted replica; WAIT refuses a write the replica has not
 * acknowledged (typed, retryable) and accepts it once the replica caught up; a failover announced
 * while a client is asking a Sentinel for the primary neither ends the client nor fails what it queued.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Journal, ReplicationTimeoutError, buildIntent, connectionGeneration, createLogger, createRedisClient, waitUntilConnected } from '@durable-a2a/shared';
import { createServer } from '@durable-a2a/producer/server';
import { eventually } from '../harness/fleet.ts';
import { MASTER_NAME, startRelay, useSentinelSet } from '../harness/sentinel.ts';

const sentinelSet = useSentinelSet();
const clients: { quit(): Promise<unknown> }[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.quit().catch(() => undefined)));
});

const intent = (workflowId: string) =>
  buildIntent({ workflowId, step: 'main', attempt: 1, agentCardUrl: 'http://127.0.0.1:1/card', message: { parts: [{ text: 'hi' }] }, now: Date.now() });

describe('Sentinel set and replica-acknowledged journal writes', () => {
  it('WAIT: a held-back replica makes the write fail with REPLICATION_TIMEOUT; released, the same call succeeds', async () => {
    const redis = createRedisClient(sentinelSet().url);
    redis.on('error', () => undefined);
    clients.push(redis);
    const journal = new Journal(redis, { prefix: 'durable', durability: { replicas: 1, timeoutMs: 300 } });
    // Where the replica must acknowledge: a timeout a loaded machine cannot miss.
    const patient = new Journal(redis, { prefix: 'durable', durability: { replicas: 1, timeoutMs: 10_000 } });
    const first = intent('w1');
    const generation = connectionGeneration(redis);
    await journal.createWorkflow('w1', { state: 'RUNNING' }, first);
    await patient.awaitReplicas('w1', generation);

    await sentinelSet().holdReplication(true);
    try {
      const held = connectionGeneration(redis);
      await journal.createWorkflow('w2', { state: 'RUNNING' }, intent('w2'));
      const error = await journal.awaitReplicas('w2', held).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ReplicationTimeoutError);
      expect(error).toMatchObject({ code: 'REPLICATION_TIMEOUT', retryable: true, acknowledged: 0, required: 1 });
      // markSending checks the replicas first: refused, and the mark is not written (nothing may leave).
      const ref = { workflowId: 'w1', delegationId: first.delegationId! };
      const fence = await journal.claim(ref, 'test');
      await expect(journal.markSending(ref, fence)).rejects.toBeInstanceOf(ReplicationTimeoutError);
      expect((await journal.getDelegation(ref))?.sendStartedAt).toBeUndefined();
    } finally {
      await sentinelSet().holdReplication(false);
    }
    await patient.awaitReplicas('w2', connectionGeneration(redis));
    // Off (the default): no WAIT at all, even with the replica held back.
    await sentinelSet().holdReplication(true);
    try {
      const plain = new Journal(redis, { prefix: 'durable' });
      await plain.createWorkflow('w3', { state: 'RUNNING' }, intent('w3'));
      await plain.awaitReplicas('w3', connectionGeneration(redis));
    } finally {
      await sentinelSet().holdReplication(false);
    }
  });

  it('HTTP API: a delegation the replica has not acknowledged is a 503 REPLICATION_TIMEOUT; the same request retried is accepted', async () => {
    const app = createServer({ redisUrl: sentinelSet().url, prefix: 'api', apiTokens: ['t0ken-for-tests'], durability: { replicas: 1, timeoutMs: 300 }, logger: createLogger({ level: 'silent' }) });
    const request = () =>
      app.inject({
        method: 'POST',
        url: '/v1/delegations',
        headers: { authorization: 'Bearer t0ken-for-tests' },
        payload: { agent: 'https://agent.example/.well-known/agent-card.json', text: 'hello', idempotencyKey: 'order-1' },
      });
    try {
      await sentinelSet().holdReplication(true);
      let refused;
      try {
        refused = await request();
      } finally {
        await sentinelSet().holdReplication(false);
      }
      expect(refused.statusCode).toBe(503);
      expect(refused.json()).toMatchObject({ code: 'REPLICATION_TIMEOUT' });
      let accepted = await request();
      // A loaded machine may need a moment for the replica to catch up on what was held back.
      for (let attempt = 0; attempt < 20 && accepted.statusCode === 503; attempt++) accepted = await request();
      expect([200, 201]).toContain(accepted.statusCode);
    } finally {
      await app.close();
    }
  });

  it('a client on the sentinel URL follows the promoted replica after the primary is SIGKILLed', async () => {
    const redis = createRedisClient(sentinelSet().url);
    redis.on('error', () => undefined);
    clients.push(redis);
    await redis.set('before', '1');
    const generation = connectionGeneration(redis);
    const journal = new Journal(redis, { prefix: 'follow', durability: { replicas: 1, timeoutMs: 2_000 } });
    await journal.createWorkflow('w', { state: 'RUNNING' });
    await journal.awaitReplicas('w', generation);
    const oldPort = await sentinelSet().killPrimary();
    const newPort = await sentinelSet().awaitPromotion(oldPort);
    expect(newPort).not.toBe(oldPort);
    // Acknowledged by the replica before the kill: on the promoted one.
    expect(await journal.getWorkflowHash('w')).toMatchObject({ state: 'RUNNING' });
    expect(await redis.get('before')).toBe('1');
    await redis.set('after', '1');
    expect(await redis.get('after')).toBe('1');
    // The old primary comes back and the Sentinels make it a replica of the new one.
    await sentinelSet().servers.get(oldPort)!.restart();
    await sentinelSet().awaitReplicas(1);
    const again = connectionGeneration(redis);
    expect(again).toBeGreaterThan(generation);
    await journal.createWorkflow('w-after', { state: 'RUNNING' });
    await journal.awaitReplicas('w-after', again);
  });

  it('+switch-master while a reconnect is asking a Sentinel: the client reconnects to the new primary and its queued command runs (ioredis SentinelConnector race)', async () => {
    const asking = await clientAskingThroughRelay();
    const admin = asking.others.map((port) => new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 }));
    const detectorSubscriptions = async () => {
      const lists = await Promise.all(admin.map((client) => client.call('CLIENT', 'LIST') as Promise<string>));
      return lists.map((list) => list.split('\n').filter((line) => / sub=1 /.test(line)).length);
    };
    try {
      const before = await detectorSubscriptions();
      const redis = asking.connect();
      await redis.set('queued', '0');
      // Its failover detector listens for +switch-master on the other two Sentinels.
      await eventually(async () => (await detectorSubscriptions()).every((count, index) => count > before[index]!), 'the failover detector subscribed', 10_000);
      const oldPort = await asking.reconnectWhileHeld();
      const queued = redis.incr('queued');
      // A failover the Sentinels announce meanwhile (retried while they have not yet seen a good replica).
      await eventually(async () => (await admin[0]!.call('SENTINEL', 'FAILOVER', MASTER_NAME)) === 'OK', 'SENTINEL FAILOVER accepted', 30_000, 200);
      const newPort = await sentinelSet().awaitPromotion(oldPort);
      // Every Sentinel names the new primary: the +switch-master messages are out; give them time to arrive.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(redis.status).toBe('connecting');
      await asking.relay.hold(false);
      // Before the fix: the queued command rejected with "Connection is closed." and the client ended for good.
      await expect(queued).resolves.toBe(1);
      expect(await waitUntilConnected(redis, 10_000)).toBe(true);
      await eventually(async () => ((await redis.role()) as unknown[])[0] === 'master', 'the client on the new primary', 15_000);
      expect(Number(((await redis.call('CONFIG', 'GET', 'port')) as string[])[1])).toBe(newPort);
      await redis.set('after', '1');
    } finally {
      for (const client of admin) client.disconnect();
      await asking.relay.close();
    }
  });

  it('closed by its owner while a reconnect is asking a Sentinel: the client ends once the answer arrives and does not reconnect', async () => {
    const asking = await clientAskingThroughRelay();
    try {
      const redis = asking.connect();
      await redis.ping();
      await asking.reconnectWhileHeld();
      const queued = redis.incr('closed').catch((error: unknown) => error);
      redis.disconnect();
      await asking.relay.hold(false);
      await eventually(async () => redis.status === 'end', 'the client ended', 10_000);
      expect(String(await queued)).toMatch(/Connection is closed/);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(redis.status).toBe('end');
    } finally {
      await asking.relay.close();
    }
  });
});

/**
 * A client on the Sentinel set that asks the first Sentinel through a relay that can hold the answer back;
 * `reconnectWhileHeld` holds it, drops the client's connection from the primary's side and resolves (with
 * the primary's port) once the client is reconnecting, waiting for that answer.
 */
async function clientAskingThroughRelay() {
  const [first, ...others] = sentinelSet().sentinelPorts;
  const relay = await startRelay(first!);
  let redis: ReturnType<typeof createRedisClient> | undefined;
  return {
    relay,
    others,
    connect() {
      redis = createRedisClient(`redis-sentinel://${[relay.port, ...others].map((port) => `127.0.0.1:${port}`).join(',')}/${MASTER_NAME}`);
      redis.on('error', () => undefined);
      clients.push(redis);
      return redis;
    },
    async reconnectWhileHeld() {
      await relay.hold(true);
      const port = await sentinelSet().primaryPort();
      const primary = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
      try {
        await primary.client('KILL', 'ID', String(await redis!.client('ID')));
      } finally {
        primary.disconnect();
      }
      await eventually(async () => redis!.status === 'connecting', 'the client asking a Sentinel', 10_000);
      return port;
    },
  };
}
