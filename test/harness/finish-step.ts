/**
 * The one-step finish compared with the two calls it stands for (finishStep-5.lua against applyStatus-5.lua then
 * updateWorkflow-4.lua): a one-step workflow set up twice under two prefixes, the terminal change as the worker builds
 * it, the settle the worker makes after the change alone, a dump of every key under a prefix, and the messages
 * published on the change channels. Used by test/journal/finish-step*.test.ts.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import type { Journal, DelegationRecord, RecordedError, RedisClient, StatusChange, StatusChangeResult, WorkflowPatch, WorkflowState } from '@durable-a2a/shared';
import { intentRow } from './journal-rows.ts';

export const FINISH_CARD = 'http://agent.example/.well-known/agent-card.json';

/** What a scenario of the comparison varies: the terminal state, the shape of the stream's answer, its fields. */
export interface FinishScenario {
  state: 'COMPLETED' | 'FAILED' | 'REJECTED' | 'CANCELED';
  /** A stream's status update, the pair (an artifact update and the status update after it), or a full Task (snapshot). */
  shape: 'event' | 'pair' | 'snapshot';
  artifacts: number;
  message: string | undefined;
  timestamp: boolean;
  contextId: boolean;
  lease: boolean;
  /** The row before the terminal status: as the send's answer left it (default), working with a status message, or parked with a question. */
  before?: 'submitted' | 'working' | 'asked';
}

/**
 * Vitest hooks: a subscriber of every channel of the server at `url()`; returns the messages published so far (the
 * test empties it) and `drained`, which waits until every message published before it has arrived.
 */
export function usePublished(url: () => string, redis: () => RedisClient) {
  const published: { channel: string; message: string }[] = [];
  // Markers `drained` waits for, by channel: resolved when the subscriber receives them.
  const markers = new Map<string, () => void>();
  let subscriber: Redis | undefined;
  beforeAll(async () => {
    subscriber = new Redis(url());
    subscriber.on('pmessage', (_pattern: string, channel: string, message: string) => {
      published.push({ channel, message });
      markers.get(channel)?.();
    });
    await subscriber.psubscribe('*');
  });
  afterAll(async () => {
    await subscriber?.quit();
  });
  /**
   * Waits until every message published before this call has reached the subscriber (a marker published after them,
   * waited for as an event). A restarted redis-server drops the subscriber, which subscribes again once it has
   * reconnected: a PUBLISH no subscriber received (its reply 0) is sent again after a `psubscribe` of our own, which
   * the client runs once connected, so no message published after this call is missed (before: a bounded spin of
   * setImmediate turns, which a reconnect could outlast, so the next message published was lost).
   */
  const drained = async (): Promise<void> => {
    const marker = `marker-${Math.random()}`;
    const seen = new Promise<void>((resolve) => markers.set(marker, resolve));
    for (let tries = 0; (await redis().publish(marker, '1')) === 0; tries++) {
      if (tries >= 20) throw new Error('the subscriber did not subscribe again');
      await subscriber!.psubscribe('*');
    }
    await seen;
    markers.delete(marker);
  };
  /** Takes the messages published on channels under `prefix`, the prefix written as '<p>'. */
  const take = (prefix: string) =>
    published.splice(0).filter((entry) => entry.channel.startsWith(prefix)).map(({ channel, message }) => ({ channel: channel.replace(prefix, '<p>'), message }));
  return { published, drained, take };
}

/** The finishing patch the worker's decision makes of a terminal state (`finishingPatch` of 'complete' / 'fail'). */
export const finishPatchOf = (state: FinishScenario['state']): WorkflowPatch & { state: WorkflowState } =>
  state === 'COMPLETED' ? { state: 'COMPLETED' } : { state: 'FAILED', failure: [`main: ${state}`] };

/**
 * A one-step workflow with its delegation SUBMITTED (task bound; then WORKING with a status message, or INPUT_REQUIRED
 * with a question, as `s.before` says), claimed by a follow; what the worker holds then.
 */
export async function setUpOneStep(journal: Journal, workflowId: string, s: Pick<FinishScenario, 'contextId' | 'lease' | 'before'>) {
  const ref = { workflowId, delegationId: 'main.1' };
  const definition = JSON.stringify({ workflowId, steps: [{ name: 'main', agent: FINISH_CARD, message: { text: 'x' } }] });
  await journal.createWorkflow(workflowId, { state: 'RUNNING', definition, createdAt: '1000' }, intentRow(workflowId));
  await journal.applyStatus(ref, { mode: 'snapshot', state: 'SUBMITTED', taskId: 't-1', ...(s.contextId ? {} : { contextId: 'c-1' }), agentCardUrl: FINISH_CARD });
  if (s.before === 'working' || s.before === 'asked') {
    const asked = s.before === 'asked';
    const statusMessage = { messageId: asked ? 'q-1' : 'w-1', role: 'ROLE_AGENT' as const, parts: [{ text: asked ? 'which one?' : 'on it' }] };
    await journal.applyStatus(ref, { mode: 'event', state: asked ? 'INPUT_REQUIRED' : 'WORKING', statusMessage });
  }
  const fence = await journal.claim(ref, 'follower');
  if (s.lease) await journal.lease(ref, 'acquire', 'follow-token', 60_000);
  const held = (await journal.getDelegation(ref))!;
  const workflow = (await journal.getWorkflow(workflowId))!;
  return { ref, fence, held, workflow };
}

/** The terminal change (and the artifact update before it, for a pair) as the worker would apply it. */
export function terminalChangeOf(
  s: FinishScenario,
  fence: number,
  held: DelegationRecord,
  artifactOf: (index: number) => { artifactId: string; name?: string; parts: { text: string }[] } = (index) => ({ artifactId: `a${index}`, name: `n${index}`, parts: [{ text: `part ${index} "q"` }] }),
): { change: StatusChange; artifact?: { fence: number; update: { artifact: { artifactId: string; parts: { text: string }[] }; lastChunk: boolean } } } {
  const statusMessage = s.message === undefined ? undefined : { messageId: 'sm-1', role: 'ROLE_AGENT' as const, parts: [{ text: s.message }] };
  const error: RecordedError | undefined = s.state === 'COMPLETED' ? undefined : { code: `TASK_${s.state}` as RecordedError['code'], message: s.message || `the agent reported ${s.state}`, retryable: false };
  const change: StatusChange = {
    fence,
    mode: s.shape === 'snapshot' ? 'snapshot' : 'event',
    state: s.state,
    taskId: 't-1',
    ...(s.timestamp ? { statusTimestamp: '2026-02-01T00:00:00.123Z' } : {}),
    ...(s.contextId ? { contextId: 'c-late' } : {}),
    ...(statusMessage ? { statusMessage } : {}),
    ...(error ? { error } : {}),
    ...(s.shape === 'snapshot' ? { artifacts: Array.from({ length: s.artifacts }, (_, index) => artifactOf(index)) } : {}),
    ...(s.lease ? { endsLease: { token: 'follow-token', when: 'finished' as const } } : {}),
    held,
  };
  if (s.shape !== 'pair') return { change };
  return { change, artifact: { fence, update: { artifact: { artifactId: 'result', parts: [{ text: 'done' }] }, lastChunk: true } } };
}

/** The settle the worker makes after a status change applied on its own (the happy path's `finishWorkflow`). */
export async function settleAsToday(journal: Journal, ref: { workflowId: string; delegationId: string }, status: StatusChangeResult, patch: WorkflowPatch & { state: WorkflowState }): Promise<void> {
  if (!status.applied || !status.finishedWorkflow || !status.record) return;
  const { record: workflow, delegationIds } = status.finishedWorkflow;
  if (workflow.state !== 'RUNNING' || workflow.cancelRequested || workflow.stopping || delegationIds.length !== 1) return;
  await journal.finishWorkflow(ref.workflowId, patch, workflow.version, [ref, { workflowId: ref.workflowId, delegationId: '*' }], { workflow, delegations: [status.record] });
}

/** Every key under `prefix` with its value and whether it expires, the prefix written as '<p>'. */
export async function dumpKeys(redis: RedisClient, prefix: string): Promise<Record<string, unknown>> {
  const keys = (await redis.keys(`${prefix}:*`)).sort();
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const type = await redis.type(key);
    const value =
      type === 'string' ? await redis.get(key) : type === 'hash' ? await redis.hgetall(key) : type === 'list' ? await redis.lrange(key, 0, -1) : await redis.zrange(key, 0, -1, 'WITHSCORES');
    out[key.replace(prefix, '<p>')] = { value: JSON.parse(JSON.stringify(value).split(prefix).join('<p>')), expires: (await redis.pttl(key)) > 0 };
  }
  return out;
}

/** `run`'s result, or the journal error code it threw (`{ refused }`). */
export async function refusalOf<T extends object>(run: () => Promise<T>): Promise<T | { refused: string }> {
  try {
    return await run();
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (!code) throw error;
    return { refused: code };
  }
}
