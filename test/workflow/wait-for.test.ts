/**
 * producer.waitFor and GET /v1/workflows/:id?waitMs=…: woken by the journal's
 * publish (no poll loop), race-free (subscribe, then read back), bounded by
 * timeoutMs / signal, and the long poll capped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createProducer, NotFoundError, WaitTimeoutError, type Producer, type WorkflowView } from '@durable-a2a/producer';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { Redis } from 'ioredis';
import { createRedisClient } from '@durable-a2a/shared';
import { WorkflowChangeSubscriber, waitForWorkflow, workflowChangeChannel } from '../../packages/producer/src/wait.ts';
import { onEveryServer, useRedisServer, testsOnCluster } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completionSteps, runsSlowly } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { authorized, startTestServer } from '../harness/api-server.ts';

const redisServer = useRedisServer();
const PREFIX = 'wait';
const IDLE_PREFIX = 'wait-idle';
const NOWHERE = 'http://127.0.0.1:9/.well-known/agent-card.json';
let producer: Producer;
let idle: Producer;
let idleApp: ApiServer;
let fleet: Fleet;
let app: ApiServer;
let slow: DemoAgentHandle;
let asking: DemoAgentHandle;
let sequence = 0;

beforeAll(async () => {
  producer = createProducer({ redis: redisServer().url, prefix: PREFIX, addressPolicy: { allowLoopback: true } });
  slow = await startDemoAgent({ behaviour: runsSlowly(300, 'slow and done') });
  asking = await startDemoAgent({ behaviour: asksForInput('Which city?', (answer) => completionSteps(`booked ${answer}`)) });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
  app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX });
  await app.ready();
  idle = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix: IDLE_PREFIX });
  idleApp = startTestServer({ redisUrl: redisServer().url, prefix: IDLE_PREFIX });
  await idleApp.ready();
});
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await producer?.close();
  await idleApp?.close();
  await idle?.close();
  await Promise.all([slow?.close(), asking?.close()]);
});

/** The change channels subscribed under `prefix`, on any server. */
async function subscribedChannels(prefix: string): Promise<string[]> {
  return (await onEveryServer(redisServer(), async (server) => (await server.pubsub('CHANNELS', `${prefix}:*`)) as string[])).flat();
}

/** A RUNNING workflow nobody works on (no fleet runs on IDLE_PREFIX): only the test moves it. */
async function parkedWorkflow(): Promise<string> {
  const workflowId = `idle-${++sequence}`;
  await idle.startWorkflow({ workflowId, steps: [{ name: 'main', agent: NOWHERE, message: { text: 'never sent' } }] });
  return workflowId;
}

describe('producer.waitFor', () => {
  it('resolves with the final view of a delegation the agent completes, the result included', async () => {
    const { id } = await producer.delegate({ agent: slow.cardUrl, text: 'take your time' });
    const view = await producer.waitFor(id, { timeoutMs: 30_000 });
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts[0]!.resultText).toBe('slow and done');
    expect(slow.sendMessageCount()).toBeGreaterThanOrEqual(1);
  });

  it('untilQuestion resolves on the open question; after the reply it resolves COMPLETED', async () => {
    const { id } = await producer.delegate({ agent: asking.cardUrl, text: 'book me' });
    const asked = await producer.waitFor(id, { untilQuestion: true, timeoutMs: 30_000 });
    expect(asked.state).toBe('RUNNING');
    expect(asked.openQuestions).toEqual([expect.objectContaining({ step: 'main', text: 'Which city?' })]);
    await producer.reply(id, 'Porto');
    const done = await producer.waitFor(id, { timeoutMs: 30_000 });
    expect(done.state).toBe('COMPLETED');
    expect(done.steps[0]!.attempts[0]!.resultText).toBe('booked Porto');
  });

  it('an unknown id rejects with NotFoundError; timeoutMs rejects with WaitTimeoutError carrying the last view', async () => {
    await expect(producer.waitFor('no-such-workflow', { timeoutMs: 1_000 })).rejects.toBeInstanceOf(NotFoundError);
    const id = await parkedWorkflow();
    const error = await idle.waitFor(id, { timeoutMs: 100 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect((error as WaitTimeoutError).view).toMatchObject({ workflowId: id, state: 'RUNNING' });
  });

  it('an aborted signal rejects with its reason and leaves no subscription behind', async () => {
    const id = await parkedWorkflow();
    const controller = new AbortController();
    const waiting = idle.waitFor(id, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('caller gave up')), 50);
    await expect(waiting).rejects.toThrow('caller gave up');
    expect(await subscribedChannels(IDLE_PREFIX)).toEqual([]);
  });

  /**
   * Runs `wait` with a fresh producer (no subscriber connection yet) while every client of the server is paused
   * (CLIENT PAUSE ALL for `pauseMs`): its SUBSCRIBE cannot be answered before the pause ends. Resolves with what the
   * wait settled with and whether the pause was over by then (a PING sent at the pause returns only after it).
   */
  async function whilePaused(pauseMs: number, wait: (fresh: Producer) => Promise<unknown>): Promise<{ outcome: unknown; pauseWasOver: boolean }> {
    const fresh = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix: IDLE_PREFIX });
    const admin = createRedisClient(redisServer().url) as Redis;
    const pinger = createRedisClient(redisServer().url) as Redis;
    try {
      await Promise.all([admin.ping(), pinger.ping()]);
      await admin.call('CLIENT', 'PAUSE', String(pauseMs), 'ALL');
      let pauseWasOver = false;
      const over = pinger.ping().then(() => (pauseWasOver = true));
      const outcome = await wait(fresh).catch((error: unknown) => error);
      const result = { outcome, pauseWasOver };
      await over;
      return result;
    } finally {
      await fresh.close();
      await Promise.all([admin.quit(), pinger.quit()]);
    }
  }

  it.skipIf(testsOnCluster())('the signal bounds the subscription too: Redis not answering the SUBSCRIBE, an abort rejects at once', async () => {
    const id = await parkedWorkflow();
    const { outcome, pauseWasOver } = await whilePaused(1_500, (fresh) => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('caller gave up')), 100);
      return fresh.waitFor(id, { signal: controller.signal });
    });
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toBe('caller gave up');
    // Before the SUBSCRIBE could be answered: the wait did not sit behind it.
    expect(pauseWasOver).toBe(false);
  });

  it.skipIf(testsOnCluster())('timeoutMs bounds the subscription too: Redis not answering the SUBSCRIBE, WaitTimeoutError with the view', async () => {
    const id = await parkedWorkflow();
    const { outcome } = await whilePaused(1_000, (fresh) => fresh.waitFor(id, { timeoutMs: 100 }));
    expect(outcome).toBeInstanceOf(WaitTimeoutError);
    expect((outcome as WaitTimeoutError).message).toContain('not subscribed to its changes yet');
    expect((outcome as WaitTimeoutError).view).toMatchObject({ workflowId: id, state: 'RUNNING' });
    // The late subscription was given up: nothing stays subscribed for it.
    await eventually(async () => (await subscribedChannels(IDLE_PREFIX)).length === 0, 'the late subscription given up');
  });

  it('wakes on the publish, not by polling: a state read at the start, one view read per change, however long the wait', async () => {
    const id = await parkedWorkflow();
    let reads = 0;
    const counted = (workflowId: string) => {
      reads++;
      return idle.get(workflowId);
    };
    const base = createRedisClient(redisServer().url);
    const subscriber = new WorkflowChangeSubscriber(base);
    const waiting = waitForWorkflow(subscriber, idle.journal, counted, id, { timeoutMs: 30_000 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    // Still RUNNING: its state alone told (no view of every delegation read while nothing is settled).
    expect(reads).toBe(0);
    await idle.journal.updateWorkflow(id, { state: 'FAILED' });
    expect((await waiting).state).toBe('FAILED');
    expect(reads).toBe(1);
    await subscriber.close();
    await base.quit();
  });

  // On a Cluster the finish publishes its state only (PUBLISH reaches every node): the waiter reads the view, once.
  it('a workflow compacted as it finishes publishes its record: the waiter builds the same view from it, with no read of the view (a Cluster: its state, and one read)', async () => {
    const { id } = await producer.delegate({ agent: slow.cardUrl, text: 'publish the record', idempotencyKey: `published-${++sequence}` });
    // What the channel carries, seen by a listener of its own.
    const listener = createRedisClient(redisServer().url);
    const messages: string[] = [];
    listener.on('message', (_channel: string, message: string) => messages.push(message));
    // Connected before subscribing (see the test below: ioredis's ready check must not be overtaken).
    await (listener as Redis).ping();
    await listener.subscribe(workflowChangeChannel(producer.journal, id));
    // Every read of a whole workflow (row, delegations, record) the producer makes.
    const journal = producer.journal;
    const snapshotOf = journal.getWorkflowSnapshot.bind(journal);
    let snapshotReads = 0;
    journal.getWorkflowSnapshot = (workflowId: string) => {
      snapshotReads++;
      return snapshotOf(workflowId);
    };
    try {
      const view = await producer.waitFor(id, { timeoutMs: 10_000 });
      expect(view.state).toBe('COMPLETED');
      // The wait read the state alone while RUNNING, and the view came from the message: no snapshot read
      // (a Cluster: the message is the state, and the view is read once after it).
      const readsToWait = testsOnCluster() ? 1 : 0;
      expect(snapshotReads).toBe(readsToWait);
      await eventually(async () => messages.length > 0, 'the finish published');
      if (testsOnCluster()) expect(messages.at(-1)).toBe('COMPLETED');
      else expect(messages.at(-1)!.startsWith('{')).toBe(true);
      // The same view a read gives (the record as stored under ':done').
      expect(view).toEqual(await producer.get(id));
      expect(snapshotReads).toBe(readsToWait + 1);
    } finally {
      journal.getWorkflowSnapshot = snapshotOf;
      await listener.quit();
    }
  });

  it('the finish publishes the compacted record exactly as stored, a finish left uncompacted its state; a message that is no record is read back', async () => {
    const listener = createRedisClient(redisServer().url);
    const publisher = createRedisClient(redisServer().url);
    const PROBE = 'probe: the listener hears this channel';
    const messages = new Map<string, string[]>();
    const heard = new Set<string>();
    listener.on('message', (channel: string, message: string) => {
      if (message !== PROBE) messages.set(channel, [...(messages.get(channel) ?? []), message]);
      else heard.add(channel);
    });
    // Subscribed, and proven to hear the channel (a probe published and received) before the change is made:
    // a loaded machine must not turn a listener still connecting into a "lost" publish.
    const subscribe = async (channel: string) => {
      // Connected first: ioredis runs its ready check (INFO) on connect, and a SUBSCRIBE that overtakes it makes the
      // check fail and the client reconnect, losing whatever is published meanwhile (pub/sub is at most once).
      await (listener as Redis).ping();
      await listener.subscribe(channel);
      await eventually(async () => {
        await publisher.publish(channel, PROBE);
        return heard.has(channel);
      }, `listening on ${channel}`, 30_000, 200);
    };
    try {
      // Compacted: every delegation final when the workflow finishes.
      const compacted = await parkedWorkflow();
      const ref = { workflowId: compacted, delegationId: 'main.1' };
      await subscribe(workflowChangeChannel(idle.journal, compacted));
      const fence = await idle.journal.claim(ref, 'test');
      await idle.journal.applyStatus(ref, { fence, mode: 'outcome', state: 'COMPLETED', result: { text: 'done' } });
      await idle.journal.updateWorkflow(compacted, { state: 'COMPLETED' });
      await eventually(async () => (messages.get(workflowChangeChannel(idle.journal, compacted)) ?? []).length > 0, 'published', 30_000);
      const record = await idle.journal.redis.get(idle.journal.keys.finished(compacted));
      expect(messages.get(workflowChangeChannel(idle.journal, compacted))).toEqual([testsOnCluster() ? 'COMPLETED' : record]);
      expect(idle.journal.snapshotFromPublished(compacted, record!)).toEqual(await idle.journal.getWorkflowSnapshot(compacted));
      // Not compacted (its delegation never finished): the state alone, and the view is read.
      const uncompacted = await parkedWorkflow();
      await subscribe(workflowChangeChannel(idle.journal, uncompacted));
      await idle.journal.updateWorkflow(uncompacted, { state: 'FAILED' });
      await eventually(async () => (messages.get(workflowChangeChannel(idle.journal, uncompacted)) ?? []).length > 0, 'published', 30_000);
      expect(messages.get(workflowChangeChannel(idle.journal, uncompacted))).toEqual(['FAILED']);
      expect(idle.journal.snapshotFromPublished(uncompacted, 'FAILED')).toBeUndefined();
      // Anything else on the channel (not a record of this workflow) is never taken for its view.
      for (const other of ['{', '{"workflow":{}}', '{"not":"a record"}', `${record!.slice(0, -5)}`]) {
        expect(idle.journal.snapshotFromPublished(compacted, other)).toBeUndefined();
      }
    } finally {
      await Promise.all([listener.quit(), publisher.quit()]);
    }
  });

  it('a settled wait answers without waiting for its UNSUBSCRIBE, and the channel is still given up', async () => {
    const id = await parkedWorkflow();
    await idle.journal.updateWorkflow(id, { state: 'COMPLETED' });
    expect((await idle.waitFor(id, { timeoutMs: 5_000 })).state).toBe('COMPLETED');
    await eventually(async () => (await subscribedChannels(IDLE_PREFIX)).length === 0, 'channel given up');
  });

  it('a change published while the subscriber reconnects is not lost', async () => {
    const id = await parkedWorkflow();
    const waiting = idle.waitFor(id, { timeoutMs: 30_000 });
    const channel = workflowChangeChannel(idle.journal, id);
    await eventually(async () => (await subscribedChannels(IDLE_PREFIX)).includes(channel), 'the wait subscribed');
    // Every subscriber connection is cut (on a Cluster, on whichever node it is), and the change lands while
    // the subscriber connects again (it takes round trips more than the change): its message is lost to the
    // wait, which must still see the change (woken by the new connection once subscribed, it reads again).
    await onEveryServer(redisServer(), (server) => server.client('KILL', 'TYPE', 'pubsub'));
    await idle.journal.updateWorkflow(id, { state: 'CANCELED' });
    expect((await waiting).state).toBe('CANCELED');
  });

  it('property: whenever the change lands (before the wait, during the read-back, while waiting), waitFor resolves with it', async () => {
    const base = createRedisClient(redisServer().url);
    const subscriber = new WorkflowChangeSubscriber(base);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('COMPLETED', 'COMPENSATED', 'FAILED', 'CANCELED', 'NEEDS_ATTENTION'),
        fc.constantFrom('before the wait', 'right after the first read', 'while waiting'),
        fc.integer({ min: 0, max: 30 }),
        fc.boolean(),
        async (finalState, when, delayMs, untilQuestion) => {
          const id = await parkedWorkflow();
          if (when === 'before the wait') await idle.journal.updateWorkflow(id, { state: finalState });
          let reads = 0;
          let firstReadDone = false;
          // 'right after the first read': the first read (the state probe, or with untilQuestion the whole view)
          // returns a stale RUNNING, and the change lands before the wait starts.
          const afterFirstRead = async (workflowId: string) => {
            if (firstReadDone) return;
            firstReadDone = true;
            if (when === 'right after the first read') await idle.journal.updateWorkflow(workflowId, { state: finalState });
          };
          const read = async (workflowId: string): Promise<WorkflowView> => {
            const view = await idle.get(workflowId);
            reads++;
            await afterFirstRead(workflowId);
            return view;
          };
          const journal = new Proxy(idle.journal, {
            get(target, property) {
              if (property === 'workflowStates') {
                return async (ids: string[]) => {
                  const states = await target.workflowStates(ids);
                  await afterFirstRead(ids[0]!);
                  return states;
                };
              }
              const value = Reflect.get(target, property) as unknown;
              return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
            },
          });
          const waiting = waitForWorkflow(subscriber, journal, read, id, { timeoutMs: 20_000, untilQuestion });
          if (when === 'while waiting') setTimeout(() => void idle.journal.updateWorkflow(id, { state: finalState }), delayMs);
          expect((await waiting).state).toBe(finalState);
          expect(reads).toBeLessThanOrEqual(2);
        },
      ),
      { numRuns: 20 },
    );
    await subscriber.close();
    await base.quit();
  });
});

describe('GET /v1/workflows/:id?waitMs=…', () => {
  it('answers once the workflow finishes, before waitMs', async () => {
    const { id } = await producer.delegate({ agent: slow.cardUrl, text: 'long poll me' });
    const response = await authorized(app, { method: 'GET', url: `/v1/workflows/${id}?waitMs=30000` });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ workflowId: id, state: 'COMPLETED' });
  });

  it('after waitMs answers with the view as it is; untilQuestion=true answers on the question', async () => {
    const id = await parkedWorkflow();
    const still = await authorized(idleApp, { method: 'GET', url: `/v1/workflows/${id}?waitMs=100` });
    expect(still.json()).toMatchObject({ workflowId: id, state: 'RUNNING' });
    const { id: askingId } = await producer.delegate({ agent: asking.cardUrl, text: 'ask me' });
    const asked = await authorized(app, { method: 'GET', url: `/v1/workflows/${askingId}?waitMs=30000&untilQuestion=true` });
    expect(asked.json()).toMatchObject({ state: 'RUNNING', openQuestions: [{ text: 'Which city?' }] });
  });

  it('a long poll longer than the request deadline is answered with the view, not 503 REQUEST_TIMEOUT (deadline = waitMs + the request deadline)', async () => {
    const shortDeadline = startTestServer({ redisUrl: redisServer().url, prefix: IDLE_PREFIX, requestTimeoutMs: 200 });
    try {
      await shortDeadline.ready();
      const id = await parkedWorkflow();
      const started = Date.now();
      const response = await authorized(shortDeadline, { method: 'GET', url: `/v1/workflows/${id}?waitMs=800` });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toMatchObject({ workflowId: id, state: 'RUNNING' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(790); // it waited the whole waitMs
      // Without waitMs the normal deadline still applies to the route (a plain read answers well within it).
      expect((await authorized(shortDeadline, { method: 'GET', url: `/v1/workflows/${id}` })).statusCode).toBe(200);
    } finally {
      await shortDeadline.close();
    }
  });

  it('waitMs above the cap is accepted (capped); a negative or non-numeric waitMs is a 400', async () => {
    const id = await parkedWorkflow();
    await idle.journal.updateWorkflow(id, { state: 'COMPLETED' });
    expect((await authorized(idleApp, { method: 'GET', url: `/v1/workflows/${id}?waitMs=86400000` })).json()).toMatchObject({ state: 'COMPLETED' });
    for (const waitMs of ['-1', 'soon']) {
      expect((await authorized(idleApp, { method: 'GET', url: `/v1/workflows/${id}?waitMs=${waitMs}` })).statusCode).toBe(400);
    }
  });

  it('/openapi.json documents waitMs and untilQuestion on GET /v1/workflows/{id}', async () => {
    const document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, { get?: { parameters?: { name: string; in: string }[] } }> };
    const parameters = document.paths['/v1/workflows/{id}']!.get!.parameters!.filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name);
    expect(parameters.sort()).toEqual(['untilQuestion', 'waitMs']);
  });
});
