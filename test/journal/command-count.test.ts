/**
 * A budget (docs/performance.md): the journal's share of the Redis commands a happy-path delegation costs (producer → send →
 * follow → settle, a real fleet, a real agent, a private redis-server). Counted with MONITOR: every
 * command on a journal key (`<prefix>:…`: workflow, delegation, artifacts, lease, task binding,
 * unfinished index, workflow list), each EVALSHA and every redis.call inside it, as INFO commandstats
 * counts them. BullMQ's keys (`{<prefix>}:…`) are not the journal's. A count, not a time: a change that
 * adds a read or a script call per delegation fails here.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer, testsOnCluster } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';

/**
 * The journal's commands per happy-path delegation may not exceed this: 45 measured (one ZREM inside updateWorkflow-3.lua
 * per index entry, so that only the delegation's own entry decides its duration's observation; 44 with one ZREM for
 * both entries, which counted the workflow's '*' as the delegation's; 47 before the send's answer
 * handed its lease to the local follow, which no longer calls takeFollow; 50 before the send's mark
 * also claimed the delegation; 52 before the send's answer and the stream's terminal event gave their lease back
 * in their own applyStatus; 54 before the send lease was
 * taken by the mark and the follow's lease and claim became one script fed the record just written; 52 before
 * finished workflows were compacted into one key), half a command of room for a rarer path (bench/monitor.ts:
 * ≈75 before the first of these cuts).
 */
const JOURNAL_COMMANDS_PER_DELEGATION = 46.5;
/**
 * The journal's client commands (scripts and plain commands sent, calls inside scripts not counted) per happy-path
 * delegation: 7 measured (9 before the create script wrote the unfinished and search indexes itself; 10 before the handover moved the follow's next check into the send answer's script, 12 before
 * the handover and the settle's index removal inside updateWorkflow).
 */
const JOURNAL_CLIENT_COMMANDS_PER_DELEGATION = 7;
/**
 * The agent registry's share (`<prefix>:agents…`, counted apart from the journal's): one script call per SendMessage
 * for the agent's fleet-wide flow control before the send (agentFlow-2.lua `acquire`, an agent with no limit: EVALSHA,
 * HMGET of its pause; nothing to release). The agent's health (recordAgentCall-1.lua: EVALSHA, HGET, HSET) is written
 * once per agent per window (`agentHealthWindowMs`; test/agents/health-coalesced.test.ts), not per SendMessage: this
 * fleet's window outlasts the count, so none falls inside it (2.75 and 1.25 with the default 250 ms window and these
 * sequential delegations; 5 and 2 when every SendMessage wrote its health, 3 and 1 before the per-agent flow control).
 * The card is cached, so no card fetch is recorded per delegation.
 */
const REGISTRY_COMMANDS_PER_DELEGATION = 2;
const REGISTRY_CLIENT_COMMANDS_PER_DELEGATION = 1;
/**
 * The send queue's order (`<prefix>:{send-order}…`, counted apart): one script call per message send enqueued
 * (sendOrder-2.lua: EVALSHA, HINCRBY of the tenant's count in the window, HGET of its weight; a PEXPIRE once per
 * window).
 */
const SEND_ORDER_COMMANDS_PER_DELEGATION = 3.5;
const SEND_ORDER_CLIENT_COMMANDS_PER_DELEGATION = 1;
const DELEGATIONS = 8;

const redisServer = useRedisServer();
let agent: DemoAgentHandle;
let producer: Producer;
/** Polls for completion on its own connection, whose reads are not counted. */
let poller: Producer;
let fleet: Fleet;
const prefix = `count-${Date.now()}`;

beforeAll(async () => {
  agent = await startDemoAgent();
  producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
  await producer.registerAgent(agent.cardUrl); // a registered agent: its health is written per SendMessage
  poller = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
  // The reconciler's sweeps and the follow leases' renewals are idle work (per interval, not per delegation): kept
  // out of the window (a renewal every 20 s, never during these sub-second streams).
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: 60_000, lockDurationMs: 60_000, agentHealthWindowMs: 60_000 });
});

afterAll(async () => {
  await fleet?.close();
  await producer?.close();
  await poller?.close();
  await agent?.close();
});

/** Runs `count` delegations to COMPLETED, one after the other. */
async function delegate(count: number, tag: string): Promise<void> {
  for (let index = 0; index < count; index++) {
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'do the thing', idempotencyKey: `${tag}-${index}` });
    await eventually(async () => (await poller.get(id)).state === 'COMPLETED', `${id} completed`);
  }
}

describe.skipIf(testsOnCluster())("the journal's Redis commands per happy-path delegation", () => {
  it(`a happy-path delegation costs the journal at most ${JOURNAL_COMMANDS_PER_DELEGATION} commands (scripts counted with every call inside)`, async () => {
    await delegate(2, 'warm'); // scripts loaded, connections open
    await new Promise((resolve) => setTimeout(resolve, 300));
    const pollerAddress = /addr=(\S+)/.exec(String(await poller.journal.redis.client('INFO')))![1]!;
    const monitor = await new Redis(redisServer().url).monitor();
    const byShape = new Map<string, number>();
    // takeFollow-2.lua by its digest: the send's answer hands its lease to the local follow (`endsLease: handover`).
    const takeFollowSha = createHash('sha1').update(readFileSync(new URL('../../packages/shared/src/journal/lua/takeFollow-2.lua', import.meta.url), 'utf8')).digest('hex');
    let takeFollows = 0;
    /** The journal's commands sent by a client (scripts and plain commands; not the calls inside scripts). */
    const clientShapes = new Map<string, number>();
    let registryCommands = 0;
    let registryClientCommands = 0;
    let sendOrderCommands = 0;
    let sendOrderClientCommands = 0;
    // The workers' liveness (`<prefix>:{fleet}:…`, heartbeat-2.lua) costs one script call per worker process per
    // second, whatever the number of delegations: counted apart, per second.
    let livenessClientCommands = 0;
    const startedAt = Date.now();
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source.endsWith(pollerAddress)) return;
      const command = (args[0] ?? '').toLowerCase();
      if (command === 'evalsha' && args[1] === takeFollowSha) takeFollows++;
      const key = command === 'evalsha' || command === 'eval' ? (args[3] ?? '') : (args[1] ?? '');
      if (key.startsWith(`${prefix}:agents`)) {
        registryCommands++;
        if (!source.includes('lua')) registryClientCommands++;
        return;
      }
      if (key.startsWith(`${prefix}:{send-order}`)) {
        sendOrderCommands++;
        if (!source.includes('lua')) sendOrderClientCommands++;
        return;
      }
      if (key.startsWith(`${prefix}:{fleet}`)) {
        if (!source.includes('lua')) livenessClientCommands++;
        return;
      }
      if (!key.startsWith(`${prefix}:`)) return;
      const shape = `${command} ${key.replace(/\{wf:[^}]*\}/, '{wf}').replace(/task:[0-9a-f]+/, 'task:<hex>')}`;
      byShape.set(shape, (byShape.get(shape) ?? 0) + 1);
      if (!source.includes('lua')) clientShapes.set(shape, (clientShapes.get(shape) ?? 0) + 1);
    });
    await delegate(DELEGATIONS, 'run');
    await new Promise((resolve) => setTimeout(resolve, 300));
    monitor.disconnect();
    const elapsedSeconds = (Date.now() - startedAt) / 1000;
    const total = [...byShape.values()].reduce((sum, count) => sum + count, 0);
    const perDelegation = total / DELEGATIONS;
    const profile = [...byShape.entries()].sort((a, b) => b[1] - a[1]).map(([shape, count]) => `${(count / DELEGATIONS).toFixed(2)} ${shape}`);
    expect(byShape.get(`evalsha ${prefix}:{wf}:d:main.1`) ?? 0, profile.join('\n')).toBeGreaterThan(0); // the count saw the journal
    expect(perDelegation, profile.join('\n')).toBeLessThanOrEqual(JOURNAL_COMMANDS_PER_DELEGATION);
    // The settle reads neither row whole: the worker builds the compacted record's text from the rows the finishing
    // transition returned, and updateWorkflow-4.lua only checks them (HMGET) and swaps the keys. The workflow row is
    // read whole once (by that finishing transition; 2 when the settle compacted in Lua), the delegation row three
    // times (the send's read and the two status transitions; 4 when the settle compacted in Lua).
    expect(byShape.get(`hgetall ${prefix}:{wf}:wf`) ?? 0, profile.join('\n')).toBe(DELEGATIONS);
    expect(byShape.get(`hgetall ${prefix}:{wf}:d:main.1`) ?? 0, profile.join('\n')).toBe(3 * DELEGATIONS);
    // Neither lease is released by a call of its own: the send's answer and the terminal event end them in their script.
    expect(byShape.get(`evalsha ${prefix}:{wf}:d:main.1:lease`) ?? 0, profile.join('\n')).toBe(0);
    // Nor taken by a call of its own: the send's answer hands the send lease to the follow in its script.
    expect(takeFollows, profile.join('\n')).toBe(0);
    // Round trips the workers and the producer send for the journal (each one a write and a reply to parse).
    const clientProfile = [...clientShapes.entries()].sort((a, b) => b[1] - a[1]).map(([shape, count]) => `${(count / DELEGATIONS).toFixed(2)} ${shape}`);
    const clientTotal = [...clientShapes.values()].reduce((sum, count) => sum + count, 0) / DELEGATIONS;
    expect(clientTotal, clientProfile.join('\n')).toBeLessThanOrEqual(JOURNAL_CLIENT_COMMANDS_PER_DELEGATION);
    console.log(`per delegation: journal ${perDelegation} commands, ${clientTotal} client commands; registry ${registryCommands / DELEGATIONS} commands, ${registryClientCommands / DELEGATIONS} client commands`);
    // The registry's: the flow control's acquire per SendMessage, the agent's health once per window.
    expect(registryCommands / DELEGATIONS).toBeGreaterThan(0);
    expect(registryCommands / DELEGATIONS).toBeLessThanOrEqual(REGISTRY_COMMANDS_PER_DELEGATION);
    expect(registryClientCommands / DELEGATIONS).toBeLessThanOrEqual(REGISTRY_CLIENT_COMMANDS_PER_DELEGATION);
    // The liveness heartbeat: one script call per second from this fleet's one process (and one more at each edge).
    expect(livenessClientCommands).toBeLessThanOrEqual(Math.ceil(elapsedSeconds) + 2);
    // The send queue's order: one script call per message send enqueued.
    expect(sendOrderCommands / DELEGATIONS).toBeGreaterThan(0);
    expect(sendOrderCommands / DELEGATIONS).toBeLessThanOrEqual(SEND_ORDER_COMMANDS_PER_DELEGATION);
    expect(sendOrderClientCommands / DELEGATIONS).toBeLessThanOrEqual(SEND_ORDER_CLIENT_COMMANDS_PER_DELEGATION);
  });
});
