/**
 * Field case R19 at the product level: the registry never holds, and the
 * workers never call, an agent whose card or interfaces point inside our
 * network; the default policy allows public addresses only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentAddressRefusedError, NotFoundError, createProducer, type Producer } from '@durable-a2a/producer';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { startRawAgent } from '../harness/raw-agent.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { AgentRegistry, createRedisClient } from '@durable-a2a/shared';
import { checkAgentAddresses } from '../../packages/producer/src/agent-addresses.ts';

const redisServer = useRedisServer();
let agent: DemoAgentHandle;
let metadataCard: Awaited<ReturnType<typeof startRawAgent>>;

beforeAll(async () => {
  agent = await startDemoAgent({ skills: [{ id: 'rent-car', name: 'rent', description: 'rent', tags: [] }] });
  metadataCard = await startRawAgent((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        name: 'B',
        description: 'points at the metadata service',
        version: '1.0.0',
        capabilities: { streaming: true },
        defaultInputModes: ['text'],
        defaultOutputModes: ['text'],
        skills: [{ id: 'rent-car', name: 'rent', description: 'rent', tags: [] }],
        supportedInterfaces: [{ protocolBinding: 'JSONRPC', url: 'http://169.254.169.254/latest/meta-data/', protocolVersion: '1.0' }],
      }),
    );
  });
});
afterAll(async () => {
  await agent.close();
  await metadataCard.close();
});

const producerWith = (allowLoopback: boolean, prefix: string): Producer =>
  createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback } });

describe('R19: the library applies the address policy at delegate / startWorkflow time, as the HTTP API does', () => {
  it.each([
    ['the default policy refuses loopback', false, 'http://127.0.0.1:9/'],
    ['the default policy refuses private', false, 'http://10.0.0.1/'],
    ['allowLoopback still refuses private', true, 'http://10.0.0.1/'],
    ['allowLoopback still refuses the metadata address', true, 'http://169.254.169.254/'],
  ])('%s: delegate throws AgentAddressRefusedError naming the field, nothing written', async (_name, allowLoopback, url) => {
    const producer = producerWith(allowLoopback, `policy-lib-${allowLoopback}`);
    try {
      const refused = await producer.delegate({ agent: url, text: 'hi', idempotencyKey: 'refused-1' }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(AgentAddressRefusedError);
      expect(refused).toMatchObject({ field: 'agent', reason: 'BLOCKED_ADDRESS' });
      await expect(producer.get('refused-1')).rejects.toBeInstanceOf(NotFoundError);
      const step = await producer
        .startWorkflow({ workflowId: 'refused-2', steps: [{ name: 'a', skill: 'x', message: { text: 'hi' }, compensation: { agent: url, message: { text: 'undo' } } }] })
        .catch((error: unknown) => error);
      expect(step).toMatchObject({ field: 'steps.0.compensation.agent' });
      await expect(producer.get('refused-2')).rejects.toBeInstanceOf(NotFoundError);
    } finally {
      await producer.close();
    }
  });

  it('an allowed IP-literal address is kept for its policy only, and a refusal is never kept', async () => {
    const url = 'http://127.0.0.1:9/.well-known/agent-card.json';
    const allowing = { allowLoopback: true };
    await checkAgentAddresses({ agent: url }, allowing);
    await checkAgentAddresses({ agent: url }, allowing); // kept: no check
    // Another policy object (the default: loopback refused) is not answered from what the first one allowed.
    const refusing = {};
    for (let time = 0; time < 2; time++) await expect(checkAgentAddresses({ agent: url }, refusing)).rejects.toBeInstanceOf(AgentAddressRefusedError);
    // A URL the first policy refuses stays refused however often it comes.
    for (let time = 0; time < 2; time++) await expect(checkAgentAddresses({ agent: 'http://10.0.0.1/' }, allowing)).rejects.toMatchObject({ field: 'agent' });
  });

  it('at most 1,000 allowed IP-literal addresses are kept per policy: a new one forgets the least recently used, not all', async () => {
    const policy = { allowLoopback: true };
    const urlOf = (index: number) => `http://127.0.0.1:${10_000 + index}/.well-known/agent-card.json`;
    for (let index = 0; index < 1_000; index++) await checkAgentAddresses({ agent: urlOf(index) }, policy);
    await checkAgentAddresses({ agent: urlOf(0) }, policy); // used again: now the most recent
    await checkAgentAddresses({ agent: urlOf(1_000) }, policy);
    // The same policy object now refuses loopback: a kept address is not checked again, a forgotten one is.
    policy.allowLoopback = false;
    for (const index of [0, 2, 999, 1_000]) await checkAgentAddresses({ agent: urlOf(index) }, policy);
    await expect(checkAgentAddresses({ agent: urlOf(1) }, policy)).rejects.toBeInstanceOf(AgentAddressRefusedError);
  });

  it('allowLoopback accepts a loopback agent', async () => {
    const producer = producerWith(true, 'policy-lib-ok');
    try {
      expect(await producer.delegate({ agent: agent.cardUrl, text: 'hi', idempotencyKey: 'allowed-1' })).toMatchObject({ created: true });
    } finally {
      await producer.close();
    }
  });
});

describe('R19: agent URLs are checked against the address policy', () => {
  it('a card whose interface is the metadata address is rejected and never registered', async () => {
    const producer = producerWith(true, 'policy1');
    try {
      await expect(producer.registerAgent(`${metadataCard.url}/.well-known/agent-card.json`)).rejects.toMatchObject({ reason: 'BLOCKED_ADDRESS' });
      await producer.registerAgent(agent.cardUrl);
      expect((await producer.listAgents()).map((registered) => registered.cardUrl)).toEqual([agent.cardUrl]);
    } finally {
      await producer.close();
    }
  });

  it('the default policy refuses loopback agents, with no request reaching them', async () => {
    const producer = producerWith(false, 'policy2');
    const before = agent.httpRequests.length;
    try {
      await expect(producer.registerAgent(agent.cardUrl)).rejects.toMatchObject({ reason: 'BLOCKED_ADDRESS' });
      await expect(producer.registerAgent('file:///etc/passwd')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect(agent.httpRequests.length).toBe(before);
      expect(await producer.listAgents()).toEqual([]);
    } finally {
      await producer.close();
    }
  });
});

describe('registered cards are refreshed', () => {
  it('an agent whose refreshed card now points at a blocked address is marked unavailable and never chosen', async () => {
    let interfaceUrl = '';
    const changing = await startRawAgent((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          name: 'C',
          description: 'changes its card',
          version: '1.0.0',
          capabilities: {},
          defaultInputModes: ['text'],
          defaultOutputModes: ['text'],
          skills: [{ id: 'rent-car', name: 'rent', description: 'rent', tags: [] }],
          supportedInterfaces: [{ protocolBinding: 'JSONRPC', url: interfaceUrl, protocolVersion: '1.0' }],
        }),
      );
    });
    interfaceUrl = `${changing.url}/a2a/jsonrpc`;
    const producer = producerWith(true, 'policy3');
    const redis = createRedisClient(redisServer().url);
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: 'policy3', agentRefreshMs: 1 });
    try {
      const cardUrl = `${changing.url}/.well-known/agent-card.json`;
      await producer.registerAgent(cardUrl);
      const registry = new AgentRegistry(redis, 'policy3');
      expect((await registry.findBySkill('rent-car')).map((agent) => agent.cardUrl)).toEqual([cardUrl]);
      interfaceUrl = 'http://169.254.169.254/latest/meta-data/';
      await fleet.sweepAll();
      const marked = await eventually(async () => (await registry.get(cardUrl))?.unavailable, 'agent marked unavailable');
      expect(marked.reason).toContain('BLOCKED_ADDRESS');
      expect(await registry.findBySkill('rent-car')).toEqual([]);
    } finally {
      await fleet.close();
      await producer.close();
      await redis.quit();
      await changing.close();
    }
  });
});
