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
import { PATTERN_FROM_WAITERS } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer, testsOnCluster, startMonitor } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';

/**
 * The journal's commands per happy-path delegation may not exceed this: 35 measured, one of them the create's ZREM of
 * the member that keeps the unfinished index a skiplist (createWorkflow-11.lua, branch redis36: a command more, about
 * 60,000 instructions fewer a delegation at 50 in flight, where every ZADD and ZREM of a listpack index scanned it);
 * 34 before that (35 before the one-step finish
 * released the follow lease in the compaction's DEL instead of a DEL of its own; 39 before a snapshot's artifacts
 * went into the one-step finish's record from its arguments, no HSET, HGETALL and DEL of an artifacts hash written
 * and deleted in the same script, and the send lease's handover wrote the follow's fence and owner in the change's own
 * HSET; 44 before the terminal status of
 * a one-step workflow and its settle became one script, finishStep-5.lua: no HSET of either row, which it deletes,
 * no HGETALL of the workflow row returned to the worker, one LRANGE; the send reads the workflow row whole instead of
 * its definition; 46 before applyStatus read the
 * version with the fields a transition needs, one HMGET instead of an HGET and an HMGET, the agent card and the
 * workflow id in it when the transition needs them, and the send's answer held the row as its mark left it; 44 before applyStatus looked at the
 * version first, one HGET in each of its two calls: the send's answer, whose record predates the mark, then reads the
 * row whole as before; the terminal event, which holds the row the answer returned, reads 16 fields with one HMGET
 * and gets back only the change, about 5 µs less Lua and half the reply; 45 with one ZREM inside updateWorkflow-3.lua
 * per index entry, so that only the delegation's own entry decides its duration's observation; 44 with one ZREM for
 * both entries, which counted the workflow's '*' as the delegation's; 47 before the send's answer
 * handed its lease to the local follow, which no longer calls takeFollow; 50 before the send's mark
 * also claimed the delegation; 52 before the send's answer and the stream's terminal event gave their lease back
 * in their own applyStatus; 54 before the send lease was
 * taken by the mark and the follow's lease and claim became one script fed the record just written; 52 before
 * finished workflows were compacted into one key), half a command of room for a rarer path (bench/monitor.ts:
 * ≈75 before the first of these cuts).
 */
const JOURNAL_COMMANDS_PER_DELEGATION = 35.5;
/**
 * The journal's client commands (scripts and plain commands sent, calls inside scripts not counted) per happy-path
 * delegation: 6 measured (7 before the terminal status and the settle of a one-step workflow became one script; 9 before the create script wrote the unfinished and search indexes itself; 10 before the handover moved the follow's next check into the send answer's script, 12 before
 * the handover and the settle's index removal inside updateWorkflow).
 */
const JOURNAL_CLIENT_COMMANDS_PER_DELEGATION = 6;
/**
 * The agent registry's share (`<prefix>:agents…`, counted apart from the journal's): none per SendMessage here. The
 * agent's fleet-wide flow control before the send (agentFlow-2.lua `acquire`, EVALSHA and HMGET of its pause; nothing
 * to release for an agent with no limit) is asked once per worker and `pauseCheckMs`, not per send: this fleet's
 * `pauseCheckMs` outlasts the count and the warm-up asked, so none falls inside it (2 and 1 when every SendMessage
 * asked). The agent's health (recordAgentCall-1.lua: EVALSHA, HGET, HSET) is written once per agent per window
 * (`agentHealthWindowMs`; test/agents/health-coalesced.test.ts), not per SendMessage: this fleet's window outlasts the
 * count too (2.75 and 1.25 with the default 250 ms window and these sequential delegations; 5 and 2 when every
 * SendMessage wrote its health, 3 and 1 before the per-agent flow control). The card is cached, so no card fetch is
 * recorded per delegation.
 */
const REGISTRY_COMMANDS_PER_DELEGATION = 0;
const REGISTRY_CLIENT_COMMANDS_PER_DELEGATION = 0;
/**
 * The send queue's order (`<prefix>:{send-order}…`, counted apart): a new workflow's first send takes its place in the
 * create script (createWorkflow-11.lua with includes/sendPlaces.lua: HMGET of the clock and the tenant's entry, HGET of
 * its weight, HSET of the entry; an HRANDFIELD when the tenant starts at the clock and a PEXPIRE once a place of the
 * clock; its TIME names no key and is not counted here): 3 a delegation here, as with the windows' counts before
 * (HGET of the stored window, HINCRBY, HGET of the weight; a DEL, HSET and PEXPIRE once per window), so no script call
 * of its own (4.5 and 1 when it was a sendOrder-2.lua call beside the create).
 */
const SEND_ORDER_COMMANDS_PER_DELEGATION = 3.5;
const SEND_ORDER_CLIENT_COMMANDS_PER_DELEGATION = 0;
const DELEGATIONS = 8;
/**
 * The producer's commands per `delegate` + `waitFor` with many waits at once (the change subscriber's pattern): the
 * create script (which takes the send's place too) and BullMQ's addJob. 3 while the wait read its workflow's state
 * after registering (a workflow the producer created while its pattern was confirmed is now known to be as created
 * unless its channel published since: `watchCreation`); 4 while the send's place was a sendOrder-2.lua call of its own;
 * 6 before the subscriber heard many waits through one PSUBSCRIBE (a SUBSCRIBE and an UNSUBSCRIBE per wait); the
 * pattern's one PSUBSCRIBE is shared by the whole burst.
 */
const PRODUCER_COMMANDS_PER_WAITED_DELEGATION = 2;
/** Delegations waited for at once: from `PATTERN_FROM_WAITERS` (8) waits on, the subscriber uses the pattern. */
const WAITED_AT_ONCE = 16;

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
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: 60_000, lockDurationMs: 60_000, agentHealthWindowMs: 60_000, pauseCheckMs: 60_000 });
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
    const monitor = await startMonitor(redisServer().url);
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
    // The settle reads neither row whole: the worker builds the compacted record's text from the rows it holds, and
    // finishStep-5.lua (the terminal status and the settle in one) only checks them (HMGET) and swaps the keys. The
    // workflow row is read whole once (by the send, with the delegation row; before finishStep by the finishing
    // transition, which returned it; 2 when the settle compacted in Lua), the delegation row once: the
    // send's read. The send's answer and the terminal transition reply with the change only (HMGET), merged into the
    // row the worker holds, stored text included: the mark replies with what it wrote, so the send holds the row at
    // the mark's version (2 when the send held the row one version behind, its mark's; 3 when the terminal transition
    // read the row whole, 4 when the settle also compacted in Lua).
    expect(byShape.get(`hgetall ${prefix}:{wf}:wf`) ?? 0, profile.join('\n')).toBe(DELEGATIONS);
    expect(byShape.get(`hgetall ${prefix}:{wf}:d:main.1`) ?? 0, profile.join('\n')).toBe(DELEGATIONS);
    // Neither lease is released by a call of its own: the send's answer and the terminal event end them in their script.
    expect(byShape.get(`evalsha ${prefix}:{wf}:d:main.1:lease`) ?? 0, profile.join('\n')).toBe(0);
    // Nor taken by a call of its own: the send's answer hands the send lease to the follow in its script.
    expect(takeFollows, profile.join('\n')).toBe(0);
    // Round trips the workers and the producer send for the journal (each one a write and a reply to parse).
    const clientProfile = [...clientShapes.entries()].sort((a, b) => b[1] - a[1]).map(([shape, count]) => `${(count / DELEGATIONS).toFixed(2)} ${shape}`);
    const clientTotal = [...clientShapes.values()].reduce((sum, count) => sum + count, 0) / DELEGATIONS;
    expect(clientTotal, clientProfile.join('\n')).toBeLessThanOrEqual(JOURNAL_CLIENT_COMMANDS_PER_DELEGATION);
    console.log(`per delegation: journal ${perDelegation} commands, ${clientTotal} client commands; registry ${registryCommands / DELEGATIONS} commands, ${registryClientCommands / DELEGATIONS} client commands`);
    // The registry's: the flow control's acquire once per pauseCheckMs, the agent's health once per window.
    expect(registryCommands / DELEGATIONS).toBeLessThanOrEqual(REGISTRY_COMMANDS_PER_DELEGATION);
    expect(registryClientCommands / DELEGATIONS).toBeLessThanOrEqual(REGISTRY_CLIENT_COMMANDS_PER_DELEGATION);
    // The liveness heartbeat: one script call per second from this fleet's one process (and one more at each edge).
    expect(livenessClientCommands).toBeLessThanOrEqual(Math.ceil(elapsedSeconds) + 2);
    // The send queue's order: counted inside the create script, no call of its own.
    expect(sendOrderCommands / DELEGATIONS).toBeGreaterThan(0);
    expect(sendOrderCommands / DELEGATIONS).toBeLessThanOrEqual(SEND_ORDER_COMMANDS_PER_DELEGATION);
    expect(sendOrderClientCommands / DELEGATIONS).toBeLessThanOrEqual(SEND_ORDER_CLIENT_COMMANDS_PER_DELEGATION);
  });

  it(`delegate + waitFor, ${WAITED_AT_ONCE} at once: ${PRODUCER_COMMANDS_PER_WAITED_DELEGATION} producer commands per delegation, the send's place taken by the create, no SUBSCRIBE per wait`, async () => {
    expect(WAITED_AT_ONCE).toBeGreaterThanOrEqual(2 * PATTERN_FROM_WAITERS);
    // A producer of its own, on a named connection: its queue and subscriber connections are duplicates (same name).
    const name = `counted-${Date.now()}`;
    const client = new Redis(redisServer().url, { connectionName: name });
    const counted = createProducer({ redis: client, prefix, addressPolicy: { allowLoopback: true } });
    let monitor: Redis | undefined;
    // One wait held for the whole test (an agent nobody answers at): the pattern stays subscribed between the bursts.
    const holding = new AbortController();
    const { id: held } = await counted.delegate({ agent: 'http://127.0.0.1:9/.well-known/agent-card.json', text: 'never answered', idempotencyKey: 'waited-held' });
    const heldWait = counted.waitFor(held, { signal: holding.signal }).catch(() => undefined);
    try {
      const burst = (tag: string) =>
        Promise.all(
          Array.from({ length: WAITED_AT_ONCE }, async (_, index) => {
            const { id } = await counted.delegate({ agent: agent.cardUrl, text: 'do the thing', idempotencyKey: `${tag}-${index}` });
            return (await counted.waitFor(id, { timeoutMs: 30_000 })).state;
          }),
        );
      expect(await burst('waited-warm')).toEqual(Array.from({ length: WAITED_AT_ONCE }, () => 'COMPLETED')); // connections open, scripts loaded
      const addresses = new Set(
        String(await client.client('LIST'))
          .split('\n')
          .filter((line) => line.includes(` name=${name} `))
          .map((line) => /addr=(\S+)/.exec(line)![1]!),
      );
      expect(addresses.size).toBeGreaterThanOrEqual(3); // the journal's, BullMQ's and the subscriber's
      const commands: string[] = [];
      // Started once the warm burst is done: ioredis' MONITOR reply racing a busy server's first lines breaks its client.
      monitor = await startMonitor(redisServer().url);
      monitor.on('monitor', (_time: string, args: string[], source: string) => {
        if (![...addresses].some((address) => source.endsWith(address))) return;
        const command = (args[0] ?? '').toLowerCase();
        const key = command === 'evalsha' ? (args[3] ?? '') : (args[1] ?? '');
        commands.push(`${command} ${key.replace(/\{wf:[^}]*\}/, '{wf}').replace(/counts:\d+/, 'counts:<window>')}`);
      });
      expect(await burst('waited')).toEqual(Array.from({ length: WAITED_AT_ONCE }, () => 'COMPLETED'));
      await eventually(async () => commands.length >= PRODUCER_COMMANDS_PER_WAITED_DELEGATION * WAITED_AT_ONCE, 'the commands seen');
      const shapes = new Map<string, number>();
      for (const command of commands) shapes.set(command, (shapes.get(command) ?? 0) + 1);
      const profile = [...shapes.entries()].map(([shape, count]) => `${(count / WAITED_AT_ONCE).toFixed(2)} ${shape}`).join('\n');
      console.log(`delegate + waitFor, ${WAITED_AT_ONCE} at once, per delegation:\n${profile}`);
      expect(commands.length / WAITED_AT_ONCE, profile).toBeLessThanOrEqual(PRODUCER_COMMANDS_PER_WAITED_DELEGATION);
      expect(commands.filter((command) => /^(p?subscribe|p?unsubscribe) /.test(command)), profile).toEqual([]); // the pattern stays from the warm burst
      expect(shapes.get(`hget ${prefix}:{wf}:wf`), profile).toBeUndefined(); // created here while the pattern was confirmed: no state read
      // The send's place is taken by the create script: no call of its own.
      expect(shapes.get(`evalsha ${prefix}:{wf}:wf`), profile).toBe(WAITED_AT_ONCE);
      expect(commands.filter((command) => command.startsWith(`evalsha ${prefix}:{send-order}`)), profile).toEqual([]);
    } finally {
      monitor?.disconnect();
      holding.abort();
      await heldWait;
      await counted.close();
      await client.quit();
    }
  });
});
