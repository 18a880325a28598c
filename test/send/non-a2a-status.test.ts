/**
 * FINDING (fourohfour; done twice; kind: an HTTP status without A2A proof of refusal read as "nothing created").
 * Input: a workflow {maxAttemptsPerStep: 2, one step by skill}, two agents with the skill; each books (makes T1 holding
 * our message), then answers our SendMessage with HTTP 404 and a body no A2A binding speaks: `{"message":"Task not
 * found"}`, `application/problem+json`, an HTML page, nothing (also 400/409/410/422/500 variants); its ListTasks lists
 * T1, its GetTask reads it COMPLETED. Observed (before): the attempt FAILED at once (PROTOCOL_ERROR, "delivery
 * received", no search) and the step went to the second agent: two bookings. `sendEffectOf`'s `statusRefuses` read any
 * 4xx but 408/409/429 as a wrong URL's page. Expected: the request reached a server at the agent's URL and no A2A error
 * says it was refused: effect maybe, the search by our messageId adopts T1; one booking, COMPLETED. Over both HTTP
 * bindings (JSON-RPC and HTTP+JSON). A wrong URL (every call 404, no A2A anywhere) still never reaches a second agent:
 * the search cannot tell, so a person decides (AMBIGUOUS SEARCH_UNAVAILABLE). An agent that answers the 404 and whose
 * A2A search shows nothing: FAILED after one search, the step free to go elsewhere, as for any error answer.
 * Real redis-server, real fleet, raw node:http agents.
 */
import { describe, expect, it } from 'vitest';
import { finished, useFieldCases, workflowSettled } from '../harness/field-cases.ts';
import { finishedAttempt, holder, listing, receivedOf, type Received } from '../harness/holders.ts';
import { startRestAgent, type RestAnswer, type RestAgentHandle } from '../harness/rest-agent.ts';
import type { ScriptedHandlers } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** A non-A2A answer: status, content type, body. */
interface PlainAnswer {
  status: number;
  contentType: string;
  body: string;
}

const notFoundBodies: [string, PlainAnswer][] = [
  ['404 JSON {"message":"Task not found"}', { status: 404, contentType: 'application/json', body: JSON.stringify({ message: 'Task not found' }) }],
  ['404 application/problem+json', { status: 404, contentType: 'application/problem+json', body: JSON.stringify({ type: 'about:blank', title: 'Not Found', status: 404, detail: 'Task not found' }) }],
  ['404 text/html page', { status: 404, contentType: 'text/html', body: '<html><body><h1>404 Not Found</h1></body></html>' }],
  ['404 empty body', { status: 404, contentType: 'text/plain', body: '' }],
];
const otherStatuses: [string, PlainAnswer][] = [400, 409, 410, 422, 500].map((status) => [`${status} JSON {"message":...}`, { status, contentType: 'application/json', body: JSON.stringify({ message: 'could not process' }) }]);

/** Books on SendMessage (T1 holds our message, `bookings` counts it), answers `answer`; lists and reads T1 COMPLETED. */
function bookingThenAnswering(answer: PlainAnswer, bookings: string[]): ScriptedHandlers {
  let received: Received | undefined;
  return {
    SendMessage: (params) => ((received = receivedOf(params)), bookings.push(received.messageId), { http: { status: answer.status, body: answer.body, headers: { 'content-type': answer.contentType } } }),
    ListTasks: () => listing(received ? [holder('T1', 'COMPLETED', received)] : []),
    GetTask: () => ({ result: holder('T1', 'COMPLETED', received!) }),
    SubscribeToTask: () => ({ error: { code: -32004, message: 'terminal' } }),
  };
}

/** The same agent over HTTP+JSON: POST /message:send books and answers `answer`; GET /tasks lists T1, GET /tasks/T1 reads it. */
function restBookingThenAnswering(answer: PlainAnswer, bookings: string[]) {
  let received: Received | undefined;
  return (method: string, path: string, body: any): RestAnswer => {
    if (method === 'POST' && path === '/message:send') return ((received = receivedOf(body)), bookings.push(received.messageId), { status: answer.status, raw: { body: answer.body, contentType: answer.contentType } });
    if (method === 'GET' && path === '/tasks') return { status: 200, body: { tasks: received ? [holder('T1', 'COMPLETED', received)] : [], nextPageToken: '', pageSize: 50, totalSize: received ? 1 : 0 } };
    if (method === 'GET' && path === '/tasks/T1' && received) return { status: 200, body: holder('T1', 'COMPLETED', received) };
    return { status: 404, body: { error: { code: 404, status: 'NOT_FOUND', message: 'no', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }] } } };
  };
}

/** Two agents registered for the skill, a workflow of one step by skill with two attempts; settles and returns what it saw. */
async function twoAgentsOneStep(cardUrls: string[], name: string) {
  const prefix = h.newPrefix();
  const producer = h.producer(prefix);
  for (const cardUrl of cardUrls) await producer.registerAgent(cardUrl);
  await h.fleetFor(prefix, { reconcileIntervalMs: 300 });
  const workflowId = `${name}-${prefix}`;
  await producer.startWorkflow({ workflowId, maxAttemptsPerStep: 2, steps: [{ name: 'hotel', skill: 'scripted', message: { text: 'book' } }] });
  return workflowSettled(producer, workflowId, 40_000);
}

describe('JSON-RPC: an agent that booked, then answered a status without A2A proof of refusal', () => {
  for (const [name, answer] of [...notFoundBodies, ...otherStatuses]) {
    it(`${name}: T1 adopted by our messageId, the second agent never gets a SendMessage (before: re-delegated, two bookings)`, async () => {
      const bookings: string[] = [];
      const first = await h.agentWith(bookingThenAnswering(answer, bookings));
      const second = await h.agentWith(bookingThenAnswering(answer, bookings));
      const view = await twoAgentsOneStep([first.cardUrl, second.cardUrl], 'jsonrpc');
      expect(bookings).toHaveLength(1);
      expect(first.count('SendMessage') + second.count('SendMessage')).toBe(1);
      expect(view.steps[0]!.attempts).toHaveLength(1);
      expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    }, 60_000);
  }
});

describe('HTTP+JSON: an agent that booked, then answered a status without A2A proof of refusal', () => {
  const restVariants: [string, PlainAnswer][] = [
    ...notFoundBodies,
    ['400 google.rpc.Status without ErrorInfo', { status: 400, contentType: 'application/json', body: JSON.stringify({ error: { code: 400, status: 'INVALID_ARGUMENT', message: 'bad request' } }) }],
    ['422 JSON {"message":...}', { status: 422, contentType: 'application/json', body: JSON.stringify({ message: 'could not process' }) }],
  ];
  for (const [name, answer] of restVariants) {
    it(`${name}: T1 adopted from GET /tasks, the second agent never gets a SendMessage (before: re-delegated, two bookings)`, async () => {
      const bookings: string[] = [];
      const agents: RestAgentHandle[] = [await startRestAgent(restBookingThenAnswering(answer, bookings)), await startRestAgent(restBookingThenAnswering(answer, bookings))];
      try {
        const view = await twoAgentsOneStep(agents.map((agent) => agent.cardUrl), 'rest');
        expect(bookings).toHaveLength(1);
        expect(agents[0]!.count('POST /message:send') + agents[1]!.count('POST /message:send')).toBe(1);
        expect(view.steps[0]!.attempts).toHaveLength(1);
        expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
      } finally {
        await Promise.all(agents.map((agent) => agent.close()));
      }
    }, 60_000);
  }
});

describe('a wrong URL, and an honest 404 whose search shows nothing', () => {
  it('every call 404 with an HTML page (no A2A anywhere): the search cannot tell, a person decides; one SendMessage, never a second attempt', async () => {
    // The agent that booked can answer every path 404 too: a search that 404s proves nothing, so never re-delegated.
    const page: PlainAnswer = { status: 404, contentType: 'text/html', body: '<html><body>Cannot POST /</body></html>' };
    const http = () => ({ http: { status: page.status, body: page.body, headers: { 'content-type': page.contentType } } });
    const agent = await h.agentWith({ SendMessage: http, ListTasks: http, GetTask: http });
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    await h.fleetFor(prefix, { reconcileIntervalMs: 300 });
    const workflowId = `wrong-url-${prefix}`;
    await producer.startWorkflow({ workflowId, maxAttemptsPerStep: 2, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'book' } }] });
    const row = await finishedAttempt(producer, workflowId, 40_000);
    expect(row).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'SEARCH_UNAVAILABLE' } });
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(1);
    expect(await producer.journal.getDelegation({ workflowId, delegationId: 'main.2' })).toBeUndefined();
  }, 60_000);

  it('404 HTML to SendMessage, an A2A ListTasks showing no task: one search, then FAILED (the step may go elsewhere)', async () => {
    const { producer: p, agent, id } = await h.setUpAndDelegate(() => ({
      SendMessage: () => ({ http: { status: 404, body: '<html>Not Found</html>', headers: { 'content-type': 'text/html' } } }),
      ListTasks: () => listing([]),
    }), { reconcileIntervalMs: 300 });
    const record = await finished(p, id, 40_000);
    expect(record).toMatchObject({ state: 'FAILED', error: { code: 'PROTOCOL_ERROR' } });
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(1);
  }, 60_000);
});
