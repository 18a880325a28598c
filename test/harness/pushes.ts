/**
 * Push bodies for the push webhook's tests (spec §9: a StreamResponse): a whole Task with artifacts by id, and an
 * artifact update over `partsPerMessage` (1,001 parts against the default 1,000); and `usePushRoute`, the webhook
 * with a producer on a private prefix and no workers, each delegation bound to task T1 WORKING.
 */
import { afterAll, beforeAll } from 'vitest';
import { applyTask, type DelegationRef } from '@durable-a2a/shared';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { ApiServer, InjectResponse } from '@durable-a2a/producer/server';
import type { RedisServerHandle } from './redis.ts';
import { startTestServer } from './api-server.ts';

/** A pushed Task of `taskId` in context C1, in `state`, with one text artifact per id in `artifactIds`. */
export const pushedTask = (taskId: string, state: string, artifactIds: readonly string[]) => ({
  task: {
    id: taskId,
    contextId: 'C1',
    status: { state: `TASK_STATE_${state}`, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, 10)).toISOString() },
    ...(artifactIds.length ? { artifacts: artifactIds.map((artifactId) => ({ artifactId, parts: [{ text: `the ${artifactId}` }] })) } : {}),
  },
});

/** A whole artifact `artifactId` (lastChunk) of `taskId` with 1,001 parts: over the default `partsPerMessage`. */
export const overPartsArtifactPush = (taskId: string, artifactId: string) => ({
  artifactUpdate: { taskId, contextId: 'C1', artifact: { artifactId, parts: Array.from({ length: 1_001 }, (_, index) => ({ text: `p${index}` })) }, lastChunk: true },
});

/** A delegation bound to T1 (WORKING, no artifacts), its push authorized: `push` posts a body (an object as JSON). */
export interface PushedDelegation {
  ref: DelegationRef;
  push: (payload: unknown) => Promise<InjectResponse>;
  /** Posts without credentials. */
  anonymous: (payload: unknown) => Promise<InjectResponse>;
}

/**
 * The push webhook (inject) and a producer under `prefix`, started before the file's tests and closed after;
 * `working()` starts a one-step pushed workflow whose delegation is bound to task T1, WORKING (as the send worker
 * journals it; no workers run).
 */
export function usePushRoute(redisServer: () => RedisServerHandle, prefix: string): { producer: () => Producer; working: () => Promise<PushedDelegation> } {
  let producer: Producer;
  let app: ApiServer;
  let n = 0;
  beforeAll(async () => {
    producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    app = startTestServer({ redisUrl: redisServer().url, prefix });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await producer?.close();
  });
  const working = async (): Promise<PushedDelegation> => {
    const workflowId = `${prefix}-${++n}`;
    await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: `http://127.0.0.1:9/${workflowId}`, message: { text: 'go' }, push: true }] });
    const ref = { workflowId, delegationId: 'main.1' };
    await applyTask(producer.journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } }, { snapshot: true });
    const url = `/v1/push/${workflowId}/main.1`;
    const secret = (await producer.journal.pushToken(ref))!;
    const post = (headers: Record<string, string>) => (payload: unknown) => app.inject({ method: 'POST', url, headers: { 'content-type': 'application/a2a+json', ...headers }, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) });
    return { ref, push: post({ authorization: `Bearer ${secret}` }), anonymous: post({}) };
  };
  return { producer: () => producer, working };
}
