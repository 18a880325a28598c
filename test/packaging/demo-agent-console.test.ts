/**
 * Test-kit agents do not print the @a2a-js/sdk's `Pre-stream error … terminal
 * state` stack for the expected refusal of SubscribeToTask on a finished task;
 * the refusal itself still reaches the client, and other pre-stream errors print.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { completesWith, startDemoAgent, type DemoAgentHandle } from '@durable-a2a/testing';

const printed: unknown[][] = [];
const original = console.error;
// Installed before the first agent starts, so the kit's filter wraps this recorder.
console.error = (...args: unknown[]) => void printed.push(args);
let agent: DemoAgentHandle | undefined;
afterAll(async () => {
  await agent?.close();
  console.error = original;
});

const rpc = async (url: string, method: string, params: unknown) => {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'a2a-version': '1.0' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  return (await response.json()) as { result?: { task?: { id: string; status: { state: string } } }; error?: { code: number; message: string } };
};

it('SubscribeToTask on a COMPLETED task: the client gets -32004, nothing is printed', async () => {
  agent = await startDemoAgent({ behaviour: completesWith('done') });
  const url = `${new URL(agent.cardUrl).origin}/a2a/jsonrpc`;
  const sent = await rpc(url, 'SendMessage', { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }] }, configuration: { returnImmediately: false } });
  const taskId = sent.result?.task?.id;
  expect(sent.result?.task?.status.state).toBe('TASK_STATE_COMPLETED');
  const refused = await rpc(url, 'SubscribeToTask', { id: taskId });
  expect(refused.error?.message).toMatch(/terminal state/);
  expect(agent.requestCount('SubscribeToTask')).toBe(1);
  expect(printed.filter((args) => String(args[0]).startsWith('Pre-stream error'))).toEqual([]);
  console.error('Pre-stream error for request 9:', new Error('something else'));
  expect(printed).toHaveLength(1);
});
