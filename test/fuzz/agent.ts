/**
 * The fuzz agent: a raw node:http A2A 1.0 JSON-RPC agent (test/harness/raw-agent.ts)
 * that serves one generated behaviour. It keeps its truth (the one task it
 * created per message, and when that task ends) and a log of every call, so
 * the invariants can compare what the client journaled with what happened.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startRawAgent, type RawAgentHandle } from '../harness/raw-agent.ts';
import { chunkBytes, expand, hugeArtifact, HUGE_MARK, writeChunks, type Chunk } from './body.ts';
import { deviationOf, readStamp, type Behaviour, type Site } from './grammar.ts';
import { serveStream } from './stream.ts';
import { answerId, foreignTask, sendResult, stateAt, statusStamp, wireTask, type AgentTask } from './wire.ts';

/** One call the agent received. */
export interface AgentCall {
  site: Site | string;
  atMs: number;
  /** For sends: the messageId, and whether the agent already had a task for it (a duplicate delivery). */
  messageId?: string;
  duplicate?: boolean;
}

export interface FuzzAgent {
  readonly cardUrl: string;
  readonly calls: readonly AgentCall[];
  /** The task created for our message, once a send arrived. */
  task(): AgentTask | undefined;
  /** Bytes written in answers so far. */
  bytesOut(): number;
  close(): Promise<void>;
}

/** Starts an agent for `behaviour`; ids it makes up contain `runId`. */
export async function startFuzzAgent(runId: string, behaviour: Behaviour): Promise<FuzzAgent> {
  const calls: AgentCall[] = [];
  const perSite = new Map<string, number>();
  let task: AgentTask | undefined;
  let bytesOut = 0;
  let closed = false;
  let raw: RawAgentHandle | undefined;
  const oversized = deviationOf(behaviour, 'oversized');

  const write = async (response: ServerResponse, status: number, contentType: string, chunks: Chunk[]) => {
    response.writeHead(status, { 'content-type': contentType, 'content-length': chunkBytes(chunks) });
    bytesOut += chunkBytes(chunks);
    if (await writeChunks(response, chunks)) response.end();
  };
  const rpc = (response: ServerResponse, id: unknown, result: unknown, status = 200) =>
    write(response, status, 'application/json', expand(JSON.stringify({ jsonrpc: '2.0', id, result }), oversized));
  const rpcError = (response: ServerResponse, id: unknown, code: number, message: string, status = 200, data?: unknown) =>
    write(response, status, 'application/json', [JSON.stringify({ jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } })]);

  /** Our task in its state now, with the oversized artifact when the behaviour has one there. */
  const current = () => {
    const value = wireTask(runId, task!, behaviour, stateAt(task!, behaviour, Date.now()));
    if (oversized?.where === 'artifact' && Array.isArray(value.artifacts)) value.artifacts = [...value.artifacts, hugeArtifact(oversized)];
    return value;
  };

  /** Applies hang and errorCode deviations to this call of `site`; true when it answered (or will never). */
  const deviate = async (site: Site, response: ServerResponse, id: unknown): Promise<boolean> => {
    const count = (perSite.get(site) ?? 0) + 1;
    perSite.set(site, count);
    const hang = deviationOf(behaviour, 'hang');
    if (hang && hang.site === site && count <= hang.times) {
      if (hang.phase === 'afterHeaders') {
        response.writeHead(200, { 'content-type': site === 'SubscribeToTask' || site === 'SendStreamingMessage' ? 'text/event-stream' : 'application/json' });
        response.write(site === 'AgentCard' ? '{"name":' : '{"jsonrpc":"2.0",');
      }
      return true; // close() destroys the socket
    }
    const failure = deviationOf(behaviour, 'errorCode');
    if (failure && failure.method === site && count <= failure.times) {
      const data = failure.data === 'errorInfo'
        ? [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'FUZZ', domain: 'a2a-protocol.org', metadata: {} }]
        : failure.data === 'object' ? { reason: 'fuzz' } : undefined;
      await rpcError(response, answerId(id, behaviour, site), failure.code, 'fuzzed failure', failure.httpStatus, data);
      return true;
    }
    return false;
  };

  const createTask = (params: any): AgentTask => {
    const message = (params?.message ?? {}) as Record<string, unknown>;
    const messageId = String(message.messageId ?? '');
    const duplicate = task !== undefined && task.message.messageId === messageId;
    calls.at(-1)!.messageId = messageId;
    calls.at(-1)!.duplicate = duplicate;
    if (task && duplicate) return task;
    const now = Date.now();
    const contextId = typeof message.contextId === 'string' && message.contextId ? message.contextId : `ctx-${runId}`;
    task = { id: `task-${runId}`, contextId, message, createdAtMs: now, workingAtMs: now + Math.floor(behaviour.story.workMs / 2), finalAtMs: now + behaviour.story.workMs };
    return task;
  };

  const methods: Record<string, (params: any, id: unknown, response: ServerResponse) => Promise<void>> = {
    async SendMessage(params, id, response) {
      createTask(params);
      if (await deviate('SendMessage', response, id)) return;
      if (params?.configuration?.returnImmediately !== true) await sleep(Math.max(0, task!.finalAtMs - Date.now()));
      const foreign = deviationOf(behaviour, 'foreignTask')?.where === 'send' || misrouted('SendMessage');
      await rpc(response, answerId(id, behaviour, 'SendMessage'), sendResult(foreign ? foreignTask(runId, behaviour) : current(), behaviour));
    },
    async SendStreamingMessage(params, id, response) {
      createTask(params);
      if (await deviate('SendStreamingMessage', response, id)) return;
      bytesOut += await serveStream({ runId, behaviour, task: task!, response, id, streamNumber: perSite.get('SendStreamingMessage')!, snapshot: current, closed: () => closed });
    },
    async GetTask(params, id, response) {
      if (await deviate('GetTask', response, id)) return;
      const foreign = deviationOf(behaviour, 'foreignTask')?.where === 'getTask' || misrouted('GetTask');
      if (foreign) return rpc(response, answerId(id, behaviour, 'GetTask'), foreignTask(runId, behaviour));
      if (!task || params?.id !== task.id) return rpcError(response, id, -32001, 'Task not found');
      await rpc(response, answerId(id, behaviour, 'GetTask'), current());
    },
    async ListTasks(params, id, response) {
      if (await deviate('ListTasks', response, id)) return;
      await rpc(response, answerId(id, behaviour, 'ListTasks'), listTasks(params));
    },
    async SubscribeToTask(params, id, response) {
      if (await deviate('SubscribeToTask', response, id)) return;
      if (!task || params?.id !== task.id) return rpcError(response, id, -32001, 'Task not found');
      if (stateAt(task, behaviour, Date.now()) === behaviour.story.final) return rpcError(response, id, -32004, 'Task is in a terminal state');
      bytesOut += await serveStream({ runId, behaviour, task, response, id, streamNumber: perSite.get('SubscribeToTask')!, snapshot: current, closed: () => closed });
    },
    async CancelTask(params, id, response) {
      if (await deviate('CancelTask', response, id)) return;
      if (!task || params?.id !== task.id) return rpcError(response, id, -32001, 'Task not found');
      if (stateAt(task, behaviour, Date.now()) === behaviour.story.final) return rpcError(response, id, -32002, 'Task cannot be canceled');
      await rpc(response, id, current());
    },
  };

  const misrouted = (method: string) => {
    const deviation = deviationOf(behaviour, 'rpcId');
    return deviation?.method === method && deviation.body === 'misrouted';
  };

  /** ListTasks (spec §3.1.4): our task when in the asked context and stamped at or after the bound (agent clock). */
  const listTasks = (params: any) => {
    const ignoresContext = deviationOf(behaviour, 'foreignTask')?.where === 'list';
    const tasks: unknown[] = ignoresContext || misrouted('ListTasks') ? [foreignTask(runId, behaviour)] : [];
    if (task && !misrouted('ListTasks') && (ignoresContext || !params?.contextId || params.contextId === task.contextId)) {
      const state = stateAt(task, behaviour, Date.now());
      const stamped = readStamp(statusStamp(task, behaviour, state));
      const after = params?.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : Number.NaN;
      if (Number.isNaN(after) || Number.isNaN(stamped) || stamped >= after) tasks.push(current());
    }
    return { tasks, nextPageToken: '', pageSize: 50, totalSize: tasks.length };
  };

  const card = (baseUrl: string) => ({
    name: 'Fuzz agent',
    description: oversized?.where === 'card' ? HUGE_MARK : 'A generated deviating agent',
    version: '1.0.0',
    supportedInterfaces: [{ url: `${baseUrl}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'fuzz', name: 'Fuzz', description: 'Deviates', tags: ['fuzz'] }],
  });

  const handle = async (request: IncomingMessage, response: ServerResponse, body: string) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method === 'GET' && path === '/.well-known/agent-card.json') {
      calls.push({ site: 'AgentCard', atMs: Date.now() });
      if (await deviate('AgentCard', response, null)) return;
      return write(response, 200, 'application/json', expand(JSON.stringify(card(raw!.url)), oversized?.where === 'card' ? oversized : undefined));
    }
    let envelope: { id?: unknown; method?: unknown; params?: unknown };
    try {
      envelope = JSON.parse(body);
    } catch {
      return rpcError(response, null, -32700, 'Parse error');
    }
    const method = String(envelope.method);
    calls.push({ site: method, atMs: Date.now() });
    const serve = methods[method];
    if (!serve) return rpcError(response, envelope.id ?? null, -32601, `Method not found: ${method}`);
    await serve(envelope.params, envelope.id ?? null, response);
  };

  raw = await startRawAgent(handle);
  return {
    cardUrl: `${raw.url}/.well-known/agent-card.json`,
    calls,
    task: () => task,
    bytesOut: () => bytesOut,
    async close() {
      closed = true;
      await raw!.close();
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
