/**
 * P38 and its kind (the primary moves and the old one keeps our sockets): two redis-servers, A primary and B its
 * replica, behind a small TCP proxy (a DNS name, a service address) that sends new connections to the current
 * primary and leaves existing ones where they are. A task streams WORKING every 300 ms and completes at about
 * +6 s; at +2 s B is promoted (`REPLICAOF NO ONE`), A demoted (`REPLICAOF B`) and the proxy pointed at B, without
 * closing a connection. Every write on an old connection gets READONLY (BullMQ's blocked wait gets UNBLOCKED):
 * the client must reconnect through the proxy and resend. Expected: journal writes land on B within a few
 * seconds of the switch, the delegation COMPLETED, one SendMessage, and no job spent a second attempt.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import type { Fleet } from '@durable-a2a/workers';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { startRedisServer, testsOnCluster, type RedisServerHandle } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import type { Step } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { captureLogs } from '../harness/log-capture.ts';

/** A TCP proxy to `target()`, chosen per new connection; existing connections keep their upstream. */
async function startSwitchingProxy(target: () => number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  };
  const server: Server = createServer((client) => {
    const upstream = connect(target(), '127.0.0.1');
    track(client);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const PREFIX = 'demoted';
const WORKING_EVERY_MS = 300;
const WORKING_EVENTS = 20;
let primaryA: RedisServerHandle;
let replicaB: RedisServerHandle;
let proxy: Awaited<ReturnType<typeof startSwitchingProxy>>;
let currentPrimary = 0;
let agent: DemoAgentHandle;
let fleet: Fleet;
let producer: Producer;
/** The fleet's own lines from debug up (a failed attempt is logged at debug when Redis refused it). */
const logs = captureLogs({ level: 'debug', source: 'root calls' });

beforeAll(async () => {
  primaryA = await startRedisServer();
  replicaB = await startRedisServer({ extraArguments: ['--replicaof', '127.0.0.1', String(primaryA.port)] });
  currentPrimary = primaryA.port;
  const b = new Redis(replicaB.url);
  await eventually(async () => /master_link_status:up/.test(await b.info('replication')), 'B replicating A');
  b.disconnect();
  proxy = await startSwitchingProxy(() => currentPrimary);
  const steps: Step[] = [{ state: 'WORKING' }];
  for (let index = 0; index < WORKING_EVENTS; index++) steps.push({ delayMs: WORKING_EVERY_MS }, { state: 'WORKING', text: `step ${index}` });
  steps.push({ artifact: { artifactId: 'result', text: 'done', lastChunk: true } }, { state: 'COMPLETED' });
  agent = await startDemoAgent({ behaviour: () => steps });
  const url = `redis://127.0.0.1:${proxy.port}`;
  fleet = await startTestFleet({ redisUrl: url, prefix: PREFIX, logger: logs.logger });
  producer = createProducer({ redis: url, prefix: PREFIX, addressPolicy: { allowLoopback: true } });
}, 60_000);
afterAll(async () => {
  await producer?.close();
  await fleet?.close();
  await agent?.close();
  await proxy?.close();
  await replicaB?.stop();
  await primaryA?.stop();
});

it.skipIf(testsOnCluster())('P38: a primary demoted behind a proxy without closing sockets: READONLY reconnects, writes land on the new primary, COMPLETED, one SendMessage', async () => {
  const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'stream for six seconds', idempotencyKey: 'p38' });
  const ref = { workflowId: id, delegationId: 'main.1' };
  await eventually(async () => agent.receivedMessages.length === 1 && (await producer.journal.getDelegation(ref))?.state === 'WORKING', 'the task is streaming');
  await new Promise((resolve) => setTimeout(resolve, 2_000)); // the fault's moment in the field case: +2 s into the stream

  const a = new Redis(primaryA.url);
  const b = new Redis(replicaB.url);
  try {
    await b.replicaof('NO', 'ONE');
    await a.replicaof('127.0.0.1', String(replicaB.port));
    currentPrimary = replicaB.port;
    const switchedAt = Date.now();
    const beforeSwitch = Number((await b.hget(producer.journal.keys.delegation(id, 'main.1'), 'updatedAt')) ?? 0);
    // A journal write lands on B (the new primary) while the agent still streams: the old sockets were dropped.
    const landedAt = await eventually(async () => {
      const updatedAt = Number((await b.hget(producer.journal.keys.delegation(id, 'main.1'), 'updatedAt')) ?? 0);
      return updatedAt > beforeSwitch ? Date.now() : undefined;
    }, 'a journal write on the new primary', 20_000);
    console.log(`P38: first journal write on the new primary ${landedAt - switchedAt} ms after the switch`);
    const onB = createProducer({ redis: replicaB.url, prefix: PREFIX });
    try {
      await eventually(async () => (await onB.get(id)).state === 'COMPLETED', 'COMPLETED on the new primary', 40_000);
    } finally {
      await onB.close();
    }
  } finally {
    a.disconnect();
    b.disconnect();
  }
  expect(agent.sendMessageCount()).toBe(1);
  expect(logs.withMessage(/^job failed/), 'no job spent a second attempt').toEqual([]);
}, 120_000);
