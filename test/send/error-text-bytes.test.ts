/**
 * An agent's error text is journaled as a bounded excerpt (attack 23, kind: text from an agent journaled without a
 * byte bound). Real redis-server, real fleet, a scripted raw JSON-RPC agent. Fails before `encodeRecordedError`
 * (record.ts) and the client's excerpt of an agent's error message (error-mapping.ts): the views were 8.4 MB and
 * 16.8 MB.
 */
import { describe, expect, it } from 'vitest';
import { artifactText, finished, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { task, type ScriptedAnswer } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** The agent answers SendMessage with `answer` (an error over any sensible length), then lists and reads T1 COMPLETED with a1. */
async function answeredThenFound(answer: ScriptedAnswer) {
  let message: any;
  const scene = await h.setUpAndDelegate(
    () => ({
      SendMessage: (params) => ((message = params.message), answer),
      ListTasks: () => ({ result: { tasks: [task('T1', 'COMPLETED', { contextId: message.contextId, history: [message] })], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: message.contextId, history: [message], artifacts: { a1: 'booked' } }) }),
    }),
    { reconcileIntervalMs: 300 },
  );
  const record = await finished(scene.producer, scene.id, 30_000);
  return { ...scene, record };
}

describe('an agent error text over any sensible length', () => {
  it('a -32603 whose message is 8 MiB, then the task found COMPLETED: one SendMessage, the views stay under 1 MiB', async () => {
    const { producer: p, agent, id, record } = await answeredThenFound({ error: { code: -32603, message: 'x'.repeat(8 * 1024 * 1024) } });
    expect(record.state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('booked');
    expect(JSON.stringify(await viewOf(p, id)).length).toBeLessThan(1024 * 1024);
    expect(JSON.stringify(await p.get(id)).length).toBeLessThan(1024 * 1024);
  }, 45_000);

  it('an HTTP 503 whose JSON error body carries a 4 MiB message, then the task found COMPLETED: the views stay under 1 MiB', async () => {
    const body = JSON.stringify({ error: { code: 503, status: 'UNAVAILABLE', message: 'y'.repeat(4 * 1024 * 1024) } });
    const { producer: p, agent, id, record } = await answeredThenFound({ http: { status: 503, body } });
    expect(record.state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
    expect(JSON.stringify(await viewOf(p, id)).length).toBeLessThan(1024 * 1024);
    expect(JSON.stringify(await p.get(id)).length).toBeLessThan(1024 * 1024);
  }, 45_000);
});
