/**
 * Red-team round 12: agent answers attack10 did not try. Real redis-server, real fleet, scripted raw JSON-RPC agents
 * (exact bytes); the HTTP+JSON cases are in `rest-framing.test.ts`.
 */
import { describe, expect, it } from 'vitest';
import { finished, useFieldCases } from '../harness/field-cases.ts';
import { task } from '../harness/scripted-agent.ts';

const h = useFieldCases();

describe('attack12: a JSON-RPC SendMessage answered in a 4xx whose body is a task not proven ours', () => {
  // The agent created a task (the body names one), whatever the status: never "nothing created" (FAILED would let the
  // step go to another agent), never adopted either (not proven ours: another request's id, or none and another context).
  const agentsOwn = () => task('T5', 'WORKING', { contextId: 'agents-own' });
  const bodies: [string, (id: unknown) => unknown][] = [
    ['a JSON-RPC envelope with another request\'s id', () => ({ jsonrpc: '2.0', id: 'someone-else', result: { task: agentsOwn() } })],
    ['a JSON-RPC envelope without an id', () => ({ jsonrpc: '2.0', id: null, result: { task: agentsOwn() } })],
    ['a bare Task', () => agentsOwn()],
  ];
  for (const status of [400, 404, 422]) {
    for (const [name, body] of bodies) {
      it(`HTTP ${status}, ${name}: not FAILED, one SendMessage`, async () => {
        const { producer, agent, id } = await h.setUpAndDelegate(() => ({
          SendMessage: (_params, call) => ({ http: { status, body: JSON.stringify(body(call.id)) } }),
          ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
        }), { reconcileIntervalMs: 300 });
        const record = await finished(producer, id, 30_000);
        expect(record.state, JSON.stringify(record.error)).not.toBe('FAILED');
        expect(record.taskId).toBeUndefined();
        expect(agent.count('SendMessage')).toBe(1);
      }, 45_000);
    }
  }
});
