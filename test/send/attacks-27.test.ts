/**
 * Attack round 27: the surfaces earlier rounds left alone: the push webhook (spec §9), Agent Cards that change or are
 * spelled with ProtoJSON proto field names, Retry-After on a SendMessage the agent took, and a live stream left holding
 * the follow lease after something else finished the row. Real redis-server, real fleet, scripted raw node:http
 * agents. Passing `it`: the product holds; `it.fails`: a finding, with input, observed, expected and suspected location.
 */
import { createServer } from 'node:http';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { artifactText, finished, metric, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { eventually } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { getTaskCalls, pushScene } from '../harness/push-scene.ts';
import { delegatePushed, startPushStack } from '../harness/push-stack.ts';
import { holder, listing, receivedOf, type Received } from '../harness/holders.ts';
import { closeServer, listenOnLoopback, trackSockets } from '../harness/ports.ts';
import { startRestAgent } from '../harness/rest-agent.ts';
import { startScriptedAgent, task, taskEvent } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const keep = closeKeptAfterEach();
const host = () => ({ redisUrl: h.redisServer().url, keep });
const fast = { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 } };

/** A card server whose card the test can swap (or break) mid-delegation. */
async function cardServer(initial: () => unknown) {
  let card: () => { status: number; body: string } = () => ({ status: 200, body: JSON.stringify(initial()) });
  let fetches = 0;
  const server = createServer((req, res) => {
    fetches++;
    if ((req.url ?? '').split('?')[0] !== '/.well-known/agent-card.json') return void res.writeHead(404).end();
    const { status, body } = card();
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(body);
  });
  const sockets = trackSockets(server);
  const port = await listenOnLoopback(server);
  const handle = {
    url: `http://127.0.0.1:${port}`,
    cardUrl: `http://127.0.0.1:${port}/.well-known/agent-card.json`,
    fetches: () => fetches,
    swap(next: () => { status: number; body: string }) {
      card = next;
    },
    async close() {
      sockets.destroyAll();
      await closeServer(server);
    },
  };
  keep(handle);
  return handle;
}

/** A 1.0 card naming one JSONRPC interface at `rpcUrl`. */
const cardFor = (rpcUrl: string) => ({
  name: 'Swapped',
  description: 'a card that changes',
  version: '1.0.0',
  supportedInterfaces: [{ url: rpcUrl, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
  capabilities: { streaming: true, pushNotifications: false },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 's', name: 'S', description: 'd', tags: [] }],
});

describe('attack 27: the push webhook', () => {
  it('forged, missing, misplaced and cross-delegation credentials: 401 before the body, nothing applied', async () => {
    // Tried: our row's T1 COMPLETED pushed with a wrong Bearer, no credentials, the right token only in
    // X-A2A-Notification-Token beside a wrong Authorization, the right token at another delegation's path, an unknown
    // workflow. Holds if every one is 401 and the row stays WORKING on T1 (no artifact).
    const scene = await pushScene(host(), (id, received) => holder(id as 'T1', 'WORKING', received));
    const secret = (await scene.env.producer.journal.pushToken(scene.ref))!;
    const body = JSON.stringify({ task: holder('T1', 'COMPLETED', { messageId: scene.messageId, contextId: scene.contextId() }) });
    const post = async (path: string, headers: Record<string, string>) =>
      (await request(`${scene.env.webhookUrl}/${path}`, { method: 'POST', body, headers: { 'content-type': 'application/a2a+json', ...headers } })).statusCode;
    const own = `${scene.workflowId}/main.1`;
    expect(await post(own, { authorization: `Bearer ${secret}x` })).toBe(401);
    expect(await post(own, {})).toBe(401);
    expect(await post(own, { authorization: 'Bearer nope', 'x-a2a-notification-token': secret })).toBe(401);
    expect(await post(own, { authorization: `Basic ${secret}` })).toBe(401);
    expect(await post(`${scene.workflowId}/main.2`, { authorization: `Bearer ${secret}` })).toBe(401);
    expect(await post(`wf-unknown-${Date.now()}/main.1`, { authorization: `Bearer ${secret}` })).toBe(401);
    const record = await scene.record();
    expect(record).toMatchObject({ state: 'WORKING', taskId: 'T1' });
  }, 60_000);

  it('our task id in another context (a whole COMPLETED Task with a result): refused, never our result', async () => {
    // Tried: the right token, a Task T1 COMPLETED in context "ctx-other" whose history holds another client's
    // message, artifact "their booking". Holds if refused (403) and the row is not COMPLETED with "their booking".
    const scene = await pushScene(host(), (id, received) => holder(id as 'T1', 'WORKING', received));
    const status = await scene.push({ task: task('T1', 'COMPLETED', { contextId: 'ctx-other', history: [{ role: 'ROLE_USER', messageId: 'someone-else', parts: [{ text: 'x' }] }], artifacts: { a1: 'their booking' } }) });
    expect(status).toBe(403);
    const record = await scene.record();
    expect(record.state).not.toBe('COMPLETED');
    expect(JSON.stringify(await scene.env.producer.journal.getDelegationView(scene.ref))).not.toContain('their booking');
  }, 60_000);

  /*
   * FIXED FINDING (an update of our task in another context applied; kind: ownership checked on a pushed whole Task only).
   * Input: the right token; a status update naming our T1 but context "ctx-other", state FAILED (no message); the
   * agent's own T1 is WORKING in our context (GetTask, the stream). Observed: 204 and the row FAILED at once (the
   * failure may re-delegate the step while T1 goes on working: the work twice). Expected: an event of our task id in
   * another context is no proof either way (a whole Task in another context is refused, 403): not applied; the workers
   * read T1 in full and settle from what it shows (WORKING: the row stays WORKING). Location:
   * packages/producer/src/server/routes/push.ts `pushRefusal` (context checked only for `task` bodies) and
   * `applyStreamResponse` (shared/src/journal/observe.ts: "kept by taskId", only a warning). Fixed: the webhook does
   * not apply such an update (`isUpdateInAnotherContext`, counted `another-context`) and wakes the workers to read the
   * task. Property: packages/producer/test/push-context.test.ts. (The stream path still keeps such events by task id.)
   */
  it('a status update of our task in another context (FAILED): not applied, T1 read in full (before: FAILED at once)', async () => {
    const scene = await pushScene(host(), (id, received) => holder(id as 'T1', 'WORKING', received));
    const status = await scene.push({ statusUpdate: { taskId: 'T1', contextId: 'ctx-other', status: { state: 'TASK_STATE_FAILED', timestamp: new Date().toISOString() } } });
    expect(status).toBe(204);
    // The route applies before it answers: the row as the 204 left it.
    expect((await scene.record()).state).toBe('WORKING');
  }, 60_000);

  it('a replayed completion (the same whole Task pushed five times, then an older WORKING update): settled once, never regressed', async () => {
    // Tried: our T1 COMPLETED with its artifact pushed 5 times, then a WORKING status update stamped an hour earlier.
    // Holds if the row is COMPLETED with T1's artifact, one COMPLETED transition, and stays COMPLETED.
    const scene = await pushScene(host(), (id, received) => holder(id as 'T1', 'WORKING', received));
    const received = { messageId: scene.messageId, contextId: scene.contextId() };
    const done = { task: { ...holder('T1', 'COMPLETED', received), status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() } } };
    const statuses: number[] = [];
    for (let index = 0; index < 5; index++) statuses.push(await scene.push(done));
    expect(statuses.every((status) => status === 204)).toBe(true);
    const older = new Date(Date.now() - 3_600_000).toISOString();
    expect(await scene.push({ statusUpdate: { taskId: 'T1', contextId: received.contextId, status: { state: 'TASK_STATE_WORKING', timestamp: older } } })).toBe(204);
    const record = await finished(scene.env.producer, scene.workflowId, 20_000);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(artifactText((await scene.env.producer.journal.getDelegationView(scene.ref))!, 'a-T1')).toBe("T1's booking");
    expect(await metric(scene.env.fleet!.metrics.transitions, { state: 'TASK_STATE_COMPLETED' })).toBeLessThanOrEqual(1);
    expect((await scene.record()).state).toBe('COMPLETED');
  }, 60_000);

  it('a push body over the limit (5 MiB of text in one status message): 413, nothing applied', async () => {
    const scene = await pushScene(host(), (id, received) => holder(id as 'T1', 'WORKING', received));
    const huge = 'x'.repeat(5 * 1024 * 1024);
    const answered = await scene.raw(JSON.stringify({ statusUpdate: { taskId: 'T1', contextId: scene.contextId(), status: { state: 'TASK_STATE_FAILED', message: { role: 'ROLE_AGENT', messageId: 'm', parts: [{ text: huge }] } } } }));
    expect(answered.status).toBe(413);
    expect((await scene.record()).state).toBe('WORKING');
  }, 60_000);

  it('a push flood for one delegation (300 WORKING updates, each a new status): bounded reads at the agent', async () => {
    // Tried: 300 status updates of T1, WORKING, each with a later timestamp and its own status message, pushed one
    // after another while the stream holds the follow lease. Holds if the agent sees at most 10 GetTask calls for T1
    // (every push moves the journal, so every push enqueues a reconcile job keyed by its millisecond).
    const scene = await pushScene(host(), (id, received) => holder(id as 'T1', 'WORKING', received));
    const base = Date.now();
    for (let index = 0; index < 300; index++) {
      const status = await scene.push({
        statusUpdate: { taskId: 'T1', contextId: scene.contextId(), status: { state: 'TASK_STATE_WORKING', timestamp: new Date(base + index + 1).toISOString(), message: { role: 'ROLE_AGENT', messageId: `m${index}`, parts: [{ text: `step ${index}` }] } } },
      });
      expect(status).toBe(204);
    }
    // Let the reconcile jobs the flood enqueued run (bounded: until the queue has none waiting or delayed).
    await eventually(async () => { const counts = await scene.env.fleet!.context.queues.reconcile.getJobCounts('waiting', 'active'); return (counts.waiting ?? 0) + (counts.active ?? 0) === 0; }, 'reconcile jobs drained', 30_000).catch(() => undefined);
    expect(getTaskCalls(scene.agent, 'T1')).toBeLessThanOrEqual(10);
    expect(scene.agent.count('SendMessage')).toBe(1);
  }, 90_000);

  it('a row finished by a push while a stream without bytes holds the follow lease: closed by the idle timeout (held for streamIdleTimeoutMs)', async () => {
    // Tried: T1's SubscribeToTask stream open (snapshot, then nothing), our T1 COMPLETED pushed whole. Holds if the
    // agent's SubscribeToTask connection is closed within 20 s (the test fleet's streamIdleTimeoutMs is 5 s).
    const scene = await pushScene(host(), (id, r) => holder(id as 'T1', 'WORKING', r));
    const received = { messageId: scene.messageId, contextId: scene.contextId() };
    await eventually(async () => scene.agent.openRequests('SubscribeToTask') >= 1, 'the stream open', 20_000);
    expect(await scene.push({ task: holder('T1', 'COMPLETED', received) })).toBe(204);
    await finished(scene.env.producer, scene.workflowId, 20_000);
    await eventually(async () => scene.agent.openRequests('SubscribeToTask') === 0, 'the stream closed after the row finished', 20_000);
  }, 60_000);

  /*
   * FIXED FINDING (a finished row's stream kept open; kind: nothing tells a live follow that another path finished its row).
   * Input: a pushed delegation on T1; its SubscribeToTask stream sends the WORKING snapshot, then only SSE keep-alive
   * comments (": keep-alive", every 500 ms); a push of our T1 COMPLETED (whole, with its artifact) finishes the row.
   * Observed: the row is COMPLETED at once, but the agent's SubscribeToTask connection stays open past 20 s (measured:
   * until streamQuietMs, 5 min by default, since keep-alives reset the idle timeout and the quiet window alone ends
   * it), the follow lease renewed all along (lease-1.lua `keep` looks only at the lease key), one job slot and one
   * socket per such delegation held. The same for a row finished by the reconciler or a person's resolve. Expected:
   * the stream of a finished row is closed within a lease renewal tick (lockDurationMs / 3) or so. Location:
   * packages/shared/src/journal/coordination.ts `renewLeases` + lease-1.lua (the renewal never reads the row), and
   * packages/workers/src/delegation/runs/lease-renewal.ts `renewAll` (only 'lost' aborts a stream). Fixed: the
   * renewal is keepLease-2.lua, which reads the row and answers `finished` for a finished one (nothing renewed);
   * `renewAll` stops those streams without a reconcile. Property: test/journal/journal.test.ts (every journal state).
   */
  it('a row finished by a push while keep-alive comments only hold the stream: closed within 20 s, not at streamQuietMs (before: open past 20 s)', async () => {
    const env = await startPushStack(h.redisServer().url, `a27-keepalive-${Date.now()}`);
    let received: Received | undefined;
    const agent = await startScriptedAgent({
      SendMessage: (params) => ((received ??= receivedOf(params)), { result: { task: holder('T1', 'WORKING', received) } }),
      SubscribeToTask: () => ({ sse: [taskEvent(holder('T1', 'WORKING', received!)), ...Array.from({ length: 600 }, () => [': keep-alive\n\n', { waitMs: 500 }]).flat()], endAfter: 'hang' as const }),
      GetTask: () => ({ result: holder('T1', 'WORKING', received!) }),
      ListTasks: () => listing([holder('T1', 'WORKING', received!)]),
    });
    keep(env, agent);
    const workflowId = `wf-a27-keepalive-${Date.now()}`;
    const { ref, record } = await delegatePushed(env, agent.cardUrl, workflowId);
    await eventually(async () => (await record()).taskId === 'T1' && agent.openRequests('SubscribeToTask') >= 1, 'T1 followed on a stream', 20_000);
    const secret = (await env.producer.journal.pushToken(ref))!;
    const answered = await request(`${env.webhookUrl}/${workflowId}/main.1`, { method: 'POST', body: JSON.stringify({ task: holder('T1', 'COMPLETED', received!) }), headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/a2a+json' } });
    expect(answered.statusCode).toBe(204);
    await finished(env.producer, workflowId, 20_000);
    await eventually(async () => agent.openRequests('SubscribeToTask') === 0, 'the stream closed after the row finished', 20_000);
  }, 60_000);
});

describe('attack 27: Agent Cards', () => {
  /*
   * FIXED FINDING (ProtoJSON proto field names in the card; kind: a 1.0 object read under its JSON names only). Input: an
   * Agent Card written with the proto field names (`supported_interfaces`, `protocol_binding`, `protocol_version`,
   * `default_input_modes`, ...), as a ProtoJSON printer with `preserving_proto_field_name` writes it. Observed: the
   * delegation is refused (AGENT_CARD_ERROR NO_USABLE_INTERFACE): no SendMessage. Expected: ProtoJSON parsers accept
   * either name (proto3 JSON mapping: "parsers accept both the lowerCamelCase name and the original proto field name"),
   * so the card's interface is used and the task completes. Location: packages/a2a/src/card-normalize.ts `interfacesOf`
   * (CardV1Schema / InterfaceV1Schema read only `supportedInterfaces` / `protocolBinding` / `protocolVersion`).
   * Fixed: `normalizeAgentCard` reads the card's, its interfaces', capabilities' and skills' proto names as their JSON
   * names first (`withJsonNames`; the JSON name wins when both are present). Property: packages/a2a/test/card-proto-names.test.ts.
   */
  it('a card with proto field names (supported_interfaces, protocol_binding): used, the task completes (before: refused, NO_USABLE_INTERFACE)', async () => {
    const { producer: p, agent } = await h.setUp((seen) => ({
      SendMessage: (params) => ((seen.messageId = params.message.messageId), { result: { task: holder('T1', 'COMPLETED', receivedOf(params)) } }),
    }), fast);
    const cards = await cardServer(() => ({
      name: 'Proto names',
      description: 'a card printed with proto field names',
      version: '1.0.0',
      supported_interfaces: [{ url: agent.rpcUrl, protocol_binding: 'JSONRPC', tenant: '', protocol_version: '1.0' }],
      capabilities: { streaming: false, push_notifications: false },
      default_input_modes: ['text/plain'],
      default_output_modes: ['text/plain'],
      skills: [{ id: 's', name: 'S', description: 'd', tags: [] }],
    }));
    const { id } = await p.delegate({ agent: cards.cardUrl, text: 'go', idempotencyKey: `proto-card-${Date.now()}` });
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
  }, 60_000);

  it('the card moves to another agent between send and follow (another port, a foreign T1 there): never COMPLETED with its result', async () => {
    // Tried: agent A takes our message (T1 WORKING, holding it) and its stream drops; the card then names agent B,
    // whose T1 is COMPLETED in another context with another client's message, artifact "their booking".
    // Holds if the row never COMPLETES with "their booking" and one SendMessage in all.
    let received: Received | undefined;
    const a = await startScriptedAgent({
      SendMessage: (params) => ((received = receivedOf(params)), { result: { task: holder('T1', 'WORKING', received) } }),
      SubscribeToTask: () => ({ sse: [taskEvent(holder('T1', 'WORKING', received!))], endAfter: 'destroy' }),
      GetTask: () => ({ result: holder('T1', 'WORKING', received!) }),
      ListTasks: () => listing([holder('T1', 'WORKING', received!)]),
    });
    const theirs = () => task('T1', 'COMPLETED', { contextId: 'ctx-other', history: [{ role: 'ROLE_USER', messageId: 'someone-else', parts: [{ text: 'x' }] }], artifacts: { a1: 'their booking' } });
    const b = await startScriptedAgent({ GetTask: () => ({ result: theirs() }), SubscribeToTask: () => ({ sse: [taskEvent(theirs())] }), ListTasks: () => listing([theirs()]), SendMessage: () => ({ result: { task: theirs() } }) });
    keep(a, b);
    const cards = await cardServer(() => cardFor(a.rpcUrl));
    const { producer: p } = await h.setUp(() => ({}), fast);
    const { id } = await p.delegate({ agent: cards.cardUrl, text: 'go', idempotencyKey: `moved-${Date.now()}` });
    await eventually(async () => a.count('SendMessage') === 1, 'sent to A', 20_000);
    cards.swap(() => ({ status: 200, body: JSON.stringify(cardFor(b.rpcUrl)) }));
    // Bounded: until B was asked about T1 or 15 s passed.
    await eventually(async () => b.requests.length > 0, 'B asked', 15_000).catch(() => undefined);
    const record = await p.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
    const view = JSON.stringify(await viewOf(p, id));
    expect(record!.state === 'COMPLETED' && view.includes('their booking')).toBe(false);
    expect(a.count('SendMessage') + b.count('SendMessage')).toBe(1);
  }, 60_000);

  it('the card becomes unfetchable (500, then not JSON) after the send: the task taken is still followed to its end, one SendMessage', async () => {
    let received: Received | undefined;
    let done = false;
    const a = await startScriptedAgent({
      SendMessage: (params) => ((received = receivedOf(params)), { result: { task: holder('T1', 'WORKING', received) } }),
      SubscribeToTask: () => ({ sse: [taskEvent(holder(done ? 'T1' : 'T1', done ? 'COMPLETED' : 'WORKING', received!))], endAfter: 'destroy' }),
      GetTask: () => ({ result: holder('T1', done ? 'COMPLETED' : 'WORKING', received!) }),
      ListTasks: () => listing([holder('T1', 'WORKING', received!)]),
    });
    keep(a);
    const cards = await cardServer(() => cardFor(a.rpcUrl));
    const { producer: p } = await h.setUp(() => ({}), fast);
    const { id } = await p.delegate({ agent: cards.cardUrl, text: 'go', idempotencyKey: `unfetchable-${Date.now()}` });
    await eventually(async () => a.count('SendMessage') === 1, 'sent', 20_000);
    cards.swap(() => ({ status: 500, body: 'oops' }));
    await eventually(async () => (a.count('SubscribeToTask') + a.count('GetTask')) >= 2, 'followed after the card broke', 20_000);
    cards.swap(() => ({ status: 200, body: '<html>not a card</html>' }));
    done = true;
    const record = await finished(p, id, 30_000);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(a.count('SendMessage')).toBe(1);
  }, 60_000);
});

describe('attack 27: Retry-After on a SendMessage the agent took', () => {
  const variants: [string, number, string][] = [
    ['503, Retry-After negative', 503, '-5'],
    ['503, Retry-After huge (a year)', 503, String(365 * 24 * 3600)],
    ['429, Retry-After an HTTP-date an hour ahead', 429, new Date(Date.now() + 3_600_000).toUTCString()],
    ['429, Retry-After garbage', 429, 'soon'],
  ];
  it.each(variants)('%s: the task the agent made is adopted, never a second SendMessage', async (_name, status, retryAfter) => {
    // Tried: the agent creates T1 holding our message, then answers the SendMessage with `status` and `Retry-After`;
    // ListTasks lists T1, GetTask reads it COMPLETED. Holds if COMPLETED on T1 with its artifact and one SendMessage
    // (a huge wait must not hold the adoption back: the search by messageId runs first).
    let received: Received | undefined;
    const { producer: p, agent, id } = await h.setUpAndDelegate(() => ({
      SendMessage: (params) => ((received = receivedOf(params)), { http: { status, body: JSON.stringify({ error: 'busy' }), headers: { 'retry-after': retryAfter } } }),
      ListTasks: () => listing(received ? [holder('T1', 'COMPLETED', received)] : []),
      GetTask: () => ({ result: holder('T1', 'COMPLETED', received!) }),
      SubscribeToTask: () => ({ error: { code: -32004, message: 'terminal' } }),
    }), fast);
    const record = await finished(p, id, 40_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
  }, 60_000);
});


/** A raw HTTP+JSON (REST) 1.0 agent: `routes` answers each request by method and path (counted per `METHOD path`). */
async function restAgent(routes: Parameters<typeof startRestAgent>[0]) {
  const handle = await startRestAgent(routes);
  keep(handle);
  return handle;
}

const restError = (status: number, reason: string) => ({ error: { code: status, status: status === 404 ? 'NOT_FOUND' : 'INTERNAL', message: reason, details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org' }] } });

/*
 * The HTTP+JSON binding's equivalents of known JSON-RPC faults. Tried (each held): a 500 on message:send after the
 * agent made the task (adopted by our messageId from GET /tasks, one send); a message:send answer that is another
 * client's COMPLETED task (never our result); a /tasks/T1:subscribe stream opening with another task's snapshot and its
 * COMPLETED (never our result; T1 settles from its own reads). Not tried here: the gRPC binding (its harness serves
 * the SDK's behaviours, not scripted wire faults).
 */
describe('attack 27: the HTTP+JSON binding', () => {
  it('SendMessage answered 500 after the agent made the task (REST): adopted by our messageId, one SendMessage', async () => {
    let received: Received | undefined;
    const agent = await restAgent((method, path, body) => {
      if (method === 'POST' && path === '/message:send') return ((received = receivedOf(body)), { status: 500, body: restError(500, 'INTERNAL') });
      if (method === 'GET' && path === '/tasks') return { status: 200, body: { tasks: received ? [holder('T1', 'COMPLETED', received)] : [], nextPageToken: '', pageSize: 50, totalSize: received ? 1 : 0 } };
      if (method === 'GET' && path === '/tasks/T1') return { status: 200, body: holder('T1', 'COMPLETED', received!) };
      return { status: 404, body: restError(404, 'TASK_NOT_FOUND') };
    });
    const { producer: p } = await h.setUp(() => ({}), fast);
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `rest-500-${Date.now()}` });
    const record = await finished(p, id, 40_000);
    expect(agent.count('POST /message:send')).toBe(1);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
  }, 60_000);

  it('a REST SendMessage answer naming another client\'s task (another context, their message): never COMPLETED with its result', async () => {
    const theirs = () => task('T9', 'COMPLETED', { contextId: 'ctx-other', history: [{ role: 'ROLE_USER', messageId: 'someone-else', parts: [{ text: 'x' }] }], artifacts: { a1: 'their booking' } });
    const agent = await restAgent((method, path) => {
      if (method === 'POST' && path === '/message:send') return { status: 200, body: { task: theirs() } };
      if (method === 'GET' && path === '/tasks') return { status: 200, body: { tasks: [theirs()], nextPageToken: '', pageSize: 50, totalSize: 1 } };
      if (method === 'GET' && path === '/tasks/T9') return { status: 200, body: theirs() };
      return { status: 404, body: restError(404, 'TASK_NOT_FOUND') };
    });
    const { producer: p } = await h.setUp(() => ({}), fast);
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `rest-foreign-${Date.now()}` });
    const record = await finished(p, id, 40_000);
    expect(agent.count('POST /message:send')).toBe(1);
    expect(record.state === 'COMPLETED' && JSON.stringify(await viewOf(p, id)).includes('their booking')).toBe(false);
  }, 60_000);

  it('a REST subscription whose stream is another task\'s (a foreign first snapshot): never COMPLETED with its result', async () => {
    let received: Received | undefined;
    const theirs = () => task('T9', 'COMPLETED', { contextId: 'ctx-other', history: [{ role: 'ROLE_USER', messageId: 'someone-else', parts: [{ text: 'x' }] }], artifacts: { a1: 'their booking' } });
    let reads = 0;
    const agent = await restAgent((method, path, body) => {
      if (method === 'POST' && path === '/message:send') return ((received = receivedOf(body)), { status: 200, body: { task: holder('T1', 'WORKING', received) } });
      if (path === '/tasks/T1:subscribe') return { status: 200, sse: [JSON.stringify({ task: theirs() }), JSON.stringify({ statusUpdate: { taskId: 'T9', contextId: 'ctx-other', status: { state: 'TASK_STATE_COMPLETED' } } })] };
      if (method === 'GET' && path === '/tasks/T1') return { status: 200, body: holder('T1', ++reads > 3 ? 'COMPLETED' : 'WORKING', received!) };
      if (method === 'GET' && path === '/tasks') return { status: 200, body: { tasks: [holder('T1', 'WORKING', received!)], nextPageToken: '', pageSize: 50, totalSize: 1 } };
      return { status: 404, body: restError(404, 'TASK_NOT_FOUND') };
    });
    const { producer: p } = await h.setUp(() => ({}), fast);
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `rest-stream-${Date.now()}` });
    const record = await finished(p, id, 40_000);
    expect(agent.count('POST /message:send')).toBe(1);
    expect(JSON.stringify(await viewOf(p, id))).not.toContain('their booking');
    expect(record.state === 'COMPLETED' ? record.taskId : 'T1').toBe('T1');
  }, 60_000);
});
