/**
 * Field cases end to end — Streams: SSE framing, quiet streams, duplicated events and artifact chunks (R04, R05, R09, R10).
 * Producer → fleet → a scripted raw JSON-RPC agent → journal; each `describe` names its case id
 * (docs/field-cases.md says what each proves); the case's "Expected" is the assertion.
 */
import { describe, expect, it } from 'vitest';
import { STALE_READ_REREADS } from '../../packages/workers/src/delegation/core/policy.ts';
import {
  artifactText,
  counted,
  finished,
  metric,
  recordOf,
  sleep,
  terminalTransitions,
  useFieldCases,
  viewOf,
  workflowSettled,
} from '../harness/field-cases.ts';
import {
  AU,
  SU,
  ev,
  task,
  taskEvent,
} from '../harness/scripted-agent.ts';
import { eventually } from '../harness/fleet.ts';

const h = useFieldCases();

describe('R04: last event not followed by a blank line, then EOF', () => {
  it('discards the unterminated COMPLETED, reads the task once: COMPLETED with a1 "done", fast', async () => {
    const { producer: p, agent, fleet, seen } = await h.setUp(
      (seen) => ({
        SubscribeToTask: () => ({
          sse: ev(SU('WORKING', { contextId: seen.contextId })) + 'data: ' + SU('COMPLETED', { contextId: seen.contextId }) + '\n',
          endAfter: 'close',
        }),
        GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'done' } }) }),
      }),
      // A backoff of at least 10 s: a resubscription or retry before the GetTask would not finish within the 9 s wait below.
      { followBackoff: { baseMs: 10_000, capMs: 20_000 }, reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r04', idempotencyKey: 'r04' });
    const record = await finished(p, id, 9_000);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('done');
    expect(agent.count('GetTask')).toBe(1);
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(agent.calls('SendMessage')[0]!.params.message.messageId).toBe(seen.messageId);
    // Not applied from the stream: the terminal transition came from the GetTask, once (counted just after its write).
    expect(await counted(fleet.metrics.transitions, { state: 'TASK_STATE_COMPLETED', source: 'get-task' })).toBe(1);
    expect(await metric(fleet.metrics.transitions, { state: 'TASK_STATE_COMPLETED', source: 'stream' })).toBe(0);
    expect(await terminalTransitions(fleet)).toBe(1);
    expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
  });
});

describe('R05: a quiet SSE stream (worker side, scaled to a 500 ms idle watchdog)', () => {
  it('": ping" then silence longer than the watchdog: resubscribed, never FAILED or re-delegated, then COMPLETED once', async () => {
    const { producer: p, agent, fleet } = await h.setUp(
      (seen) => ({
        SubscribeToTask: (_params, call) =>
          call.count === 1
            ? { sse: [': ping\n\n'], endAfter: 'hang' }
            : { sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), ev(SU('COMPLETED', { contextId: seen.contextId }))], endAfter: 'close' },
        GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId }) }),
      }),
      { streamIdleTimeoutMs: 500, reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r05', idempotencyKey: 'r05' });
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    expect(agent.count('SubscribeToTask')).toBeGreaterThanOrEqual(2);
    expect(agent.count('SendMessage')).toBe(1);
    expect(await metric(fleet.metrics.resubscriptions, { reason: 'idle' })).toBeGreaterThanOrEqual(1);
    expect(await metric(fleet.metrics.transitions, { state: 'TASK_STATE_FAILED' })).toBe(0);
    expect(await terminalTransitions(fleet)).toBe(1);
    expect(await metric(fleet.metrics.redelegations)).toBe(0);
    const view = await workflowSettled(p, id);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts).toHaveLength(1);
  });

  it('keep-alive comments every 100 ms for 2 s reset the watchdog: one subscription, 0 reconnects, 1 terminal transition', async () => {
    const keepAlives = Array.from({ length: 20 }, () => [': keepalive\n\n', { waitMs: 100 }]).flat();
    const { producer: p, agent, fleet } = await h.setUp(
      (seen) => ({
        SubscribeToTask: () => ({
          sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), ...keepAlives, ev(SU('COMPLETED', { contextId: seen.contextId }))],
          endAfter: 'close',
        }),
        GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId }) }),
      }),
      { streamIdleTimeoutMs: 500, reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r05b', idempotencyKey: 'r05b' });
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    expect(agent.count('SubscribeToTask')).toBe(1);
    // R26: a GetTask collects the artifacts of a COMPLETED status update that brought none; this agent's GetTask stays
    // at WORKING (older than the stream), so it is asked again a bounded number of times before the status stands alone.
    expect(agent.count('GetTask')).toBe(1 + STALE_READ_REREADS);
    expect(await metric(fleet.metrics.resubscriptions)).toBe(0);
    expect(await terminalTransitions(fleet)).toBe(1);
  });
});

describe('R09: artifact chunks and events delivered twice', () => {
  const chunks = (contextId?: string) => [
    ev(AU('a1', false, false, 'Hello, ', { contextId })),
    ev(AU('a1', true, false, 'big ', { contextId })),
    ev(AU('a1', true, true, 'world!', { contextId })),
    ev(SU('COMPLETED', { contextId })),
  ];

  async function run(duplicateLastTwo: boolean) {
    const { producer: p, agent, fleet } = await h.setUp(
      (seen) => ({
        SubscribeToTask: () => {
          const events = chunks(seen.contextId);
          if (duplicateLastTwo) events.splice(3, 0, events[2]!), events.push(events.at(-1)!);
          return { sse: events, endAfter: 'close' };
        },
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r09', idempotencyKey: `r09-${duplicateLastTwo}` });
    const record = await finished(p, id);
    const view = await workflowSettled(p, id);
    // Let any late duplicate processing happen before counting.
    await sleep(300);
    return { p, agent, fleet, id, record, view, artifacts: await viewOf(p, id) };
  }

  it('appends three deltas once: a1 === "Hello, big world!"', async () => {
    const { record, artifacts, fleet, view, agent } = await run(false);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(artifacts, 'a1')).toBe('Hello, big world!');
    expect(await terminalTransitions(fleet)).toBe(1);
    expect(view.state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('last artifact event and COMPLETED each sent twice: second sealed append ignored, 1 terminal transition, same journal version', async () => {
    const single = await run(false);
    const singleVersion = (await recordOf(single.p, single.id))!.version;
    await h.closeFleetsAndProducers();
    const { record, artifacts, fleet, view, agent, p, id } = await run(true);
    expect(agent.calls('SubscribeToTask')).toHaveLength(1);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(artifacts, 'a1')).toBe('Hello, big world!');
    expect(await terminalTransitions(fleet)).toBe(1);
    // The duplicates changed nothing: the record's version is the one of the run without duplicates.
    expect((await recordOf(p, id))!.version).toBe(singleVersion);
    // Our side closes the stream at the first COMPLETED (a finished row takes nothing more): the resent one is never applied.
    expect(await metric(fleet.metrics.staleObservations, { reason: 'finished' })).toBe(0);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts).toHaveLength(1);
  });
});

describe('R10: append:false snapshot after deltas; lastChunk seals', () => {
  it('a1 === "Hello", a2 === "x", the post-seal update is dropped', async () => {
    const { producer: p, agent } = await h.setUp(
      (seen) => ({
        SubscribeToTask: () => {
          const c = { contextId: seen.contextId };
          return {
            sse: [
              ev(AU('a1', false, false, 'Hel', c)),
              ev(AU('a1', true, false, 'lo', c)),
              ev(AU('a2', true, false, 'x', c)),
              ev(AU('a1', false, true, 'Hello', c)),
              ev(AU('a1', true, false, '!!', c)),
              ev(SU('COMPLETED', c)),
            ],
            endAfter: 'close',
          };
        },
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r10', idempotencyKey: 'r10' });
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    const view = await viewOf(p, id);
    expect(artifactText(view, 'a1')).toBe('Hello');
    expect(artifactText(view, 'a2')).toBe('x');
    expect(view.artifacts.map((artifact) => artifact.artifactId)).toEqual(['a1', 'a2']);
  });
});

describe('SubscribeToTask refused (-32004, spec §3.1.6): counted by what GetTask then found', () => {
  it('the task is already COMPLETED: reason "terminal", never "protocol"; COMPLETED once', async () => {
    const { producer: p, agent, fleet } = await h.setUp((seen) => ({
      SubscribeToTask: () => ({ error: { code: -32004, message: 'Task T1 is in a terminal state and cannot be subscribed to' } }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'done' } }) }),
    }));
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'refused-terminal', idempotencyKey: 'refused-terminal' });
    expect((await finished(p, id)).state).toBe('COMPLETED');
    expect(agent.count('SubscribeToTask')).toBe(1);
    // The refusal is counted once GetTask's answer is applied, which may be after the workflow is read as finished.
    const counted = async () =>
      (await metric(fleet.metrics.resubscriptions, { reason: 'terminal' })) + (await metric(fleet.metrics.resubscriptions, { reason: 'protocol' }));
    await eventually(async () => (await counted()) >= 1, 'the refusal counted', 10_000);
    expect(await metric(fleet.metrics.resubscriptions, { reason: 'terminal' })).toBe(1);
    expect(await metric(fleet.metrics.resubscriptions, { reason: 'protocol' })).toBe(0);
    expect(await terminalTransitions(fleet)).toBe(1);
  });

  it('the task is still WORKING: the refusal stays a "protocol" error', async () => {
    const { producer: p, agent, fleet } = await h.setUp((seen) => ({
      SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming not supported' } }),
      GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId }) }),
    }));
    await p.delegate({ agent: agent.cardUrl, text: 'refused-working', idempotencyKey: 'refused-working' });
    await eventually(async () => (await metric(fleet.metrics.resubscriptions, { reason: 'protocol' })) >= 1, 'a protocol refusal counted', 10_000);
    expect(await metric(fleet.metrics.resubscriptions, { reason: 'terminal' })).toBe(0);
  });
});
