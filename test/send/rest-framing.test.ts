/**
 * Attack: an HTTP+JSON (REST) agent whose server reports its own trouble in the status after the work was done: a
 * 5xx whose body is our COMPLETED Task (docs/a2a-edge.md "Ownership", "HTTP+JSON: the content, not the status").
 * REST has no request id; the content proves the answer ours (our messageId in the task's history, the context we
 * sent), as for a JSON-RPC answer without an id. Before, the task was thrown away: the search, and with an agent that
 * lists no tasks (as this one), a person. A body proving nothing ours is never adopted, and never re-sent either; nor
 * is a Message in a 4xx (a refusal with its reason, not a reply).
 * Real redis-server, real fleet, a raw REST agent (exact bytes).
 */
import type { ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { startRawAgent, type RawAgentHandle } from '../harness/raw-agent.ts';
import { expectCompletedWith, finished, useFieldCases } from '../harness/field-cases.ts';

const h = useFieldCases();
const agents: RawAgentHandle[] = [];
afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.close()));
});

type Message = { messageId: string; contextId?: string };
const completed = (message: Message, proven: boolean) => ({
  id: proven ? 'T1' : 'T9',
  contextId: proven ? message.contextId : 'someone-else',
  status: { state: 'TASK_STATE_COMPLETED' },
  history: proven ? [message] : [],
  artifacts: [{ artifactId: 'a1', parts: [{ text: 'booked' }] }],
});

const json = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/a2a+json', 'content-length': String(Buffer.byteLength(text)), ...headers });
  response.end(text);
};

/**
 * A REST-only agent answering SendMessage with `status` and our task (`proven`) or one naming nothing of ours, or with
 * what `answer` makes of our message; it lists no tasks.
 */
async function restAgent(status: number, proven: boolean, headers: Record<string, string> = {}, answer = (sent: Message): unknown => ({ task: completed(sent, proven) })) {
  let sent: Message | undefined;
  const agent = await startRawAgent((request, response, body) => {
    const path = (request.url ?? '').split('?')[0]!;
    if (path === '/.well-known/agent-card.json') {
      return json(response, 200, {
        name: 'REST',
        description: 'answers in a 5xx',
        version: '1.0.0',
        capabilities: { streaming: false, pushNotifications: false },
        defaultInputModes: ['text'],
        defaultOutputModes: ['text'],
        skills: [{ id: 'book', name: 'book', description: 'book', tags: [] }],
        supportedInterfaces: [{ protocolBinding: 'HTTP+JSON', url: `${agent.url}/rest`, protocolVersion: '1.0' }],
      });
    }
    if (request.method === 'POST' && path === '/rest/message:send') {
      sent = (JSON.parse(body) as { message: Message }).message;
      return json(response, status, answer(sent), headers);
    }
    if (request.method === 'GET' && path.startsWith('/rest/tasks/') && sent) return json(response, 200, completed(sent, proven));
    return json(response, 404, { error: { code: 404, status: 'NOT_FOUND', message: `no route ${path}` } });
  });
  agents.push(agent);
  const sends = () => agent.requests.filter((seen) => seen.url.endsWith('/message:send')).length;
  return { cardUrl: `${agent.url}/.well-known/agent-card.json`, sends };
}

async function delegateTo(cardUrl: string) {
  const prefix = h.newPrefix();
  const producer = h.producer(prefix);
  await h.fleetFor(prefix);
  const { id } = await producer.delegate({ agent: cardUrl, text: 'go', idempotencyKey: `${prefix}-1` });
  return { producer, id };
}

describe('attack: our COMPLETED task inside an HTTP+JSON 5xx', () => {
  for (const [status, headers] of [[500, {}], [503, { 'retry-after': '1' }], [502, {}]] as const) {
    it(`SendMessage answered HTTP ${status} whose body is our task: COMPLETED with the artifact, one SendMessage`, async () => {
      const agent = await restAgent(status, true, headers);
      const { producer, id } = await delegateTo(agent.cardUrl);
      await expectCompletedWith(producer, id, 'T1', 'booked');
      expect(agent.sends()).toBe(1);
    }, 45_000);
  }

  it('SendMessage answered HTTP 500 whose body is a task proving nothing ours: not COMPLETED from it, one SendMessage', async () => {
    const agent = await restAgent(500, false);
    const { producer, id } = await delegateTo(agent.cardUrl);
    const record = await finished(producer, id, 30_000);
    expect(record.state).not.toBe('COMPLETED');
    expect(agent.sends()).toBe(1);
  }, 45_000);
});

describe('attack: an HTTP+JSON 400 whose body is the agent\'s Message in our context', () => {
  // A Message carries no verdict of its own (agent frameworks wrap errors in a reply): the status is the verdict
  // (packages/a2a/test/rest-adoption-attacks.test.ts). Before, the step COMPLETED with the error's text.
  it('SendMessage refused with HTTP 400 and a Message saying why: not COMPLETED with the error text, one SendMessage', async () => {
    const why = (sent: Message) => ({ message: { messageId: 'why', contextId: sent.contextId, role: 'ROLE_AGENT', parts: [{ text: 'invalid request: no such booking' }] } });
    const agent = await restAgent(400, true, {}, why);
    const { producer, id } = await delegateTo(agent.cardUrl);
    const record = await finished(producer, id, 30_000);
    expect(record.state).not.toBe('COMPLETED');
    expect(agent.sends()).toBe(1);
  }, 45_000);
});

describe('attack12: an HTTP+JSON 4xx whose body is a Task that proves nothing ours', () => {
  // A Task carries its own verdict: the agent created a task (effect maybe), whatever the status says. Not proven ours
  // (the agent's own context, our message under an id of its own), it is not adopted; never read as "nothing created"
  // either (FAILED would let the step go to another agent: the work done twice).
  const agentsOwn = (sent: Message) => ({
    task: { id: 'T5', contextId: 'agents-own', status: { state: 'TASK_STATE_WORKING' }, history: [{ ...sent, messageId: 'agent-assigned', contextId: 'agents-own' }] },
  });
  for (const status of [400, 404, 409, 422]) {
    it(`SendMessage answered HTTP ${status} with a WORKING Task in a context of the agent's own: not FAILED, one SendMessage`, async () => {
      const agent = await restAgent(status, false, {}, agentsOwn);
      const { producer, id } = await delegateTo(agent.cardUrl);
      const record = await finished(producer, id, 30_000);
      expect(record.state).not.toBe('FAILED');
      expect(agent.sends()).toBe(1);
    }, 45_000);
  }
});
