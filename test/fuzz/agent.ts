/**
 * The fuzz agent: a raw node:http A2A 1.0 JSON-RPC agent (test/harness/raw-agent.ts)
 * that serves one generated behaviour. It keeps its truth (the one task it
 * created per message, and when that task ends) and a log of every call, so
 * the invariants can compare what the client journaled with what happened.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startRawAgent } from '../harness/raw-agent.ts';
import { chunkBytes, expand, hugeArtifact, HUGE_MARK, writeChunks, type Chunk } from './body.ts';
import { decoyTask, timeline } from './answers.ts';
import { declaresStreaming, deviationOf, errorCreatesTask, readStamp, type Behaviour, type Deviation, type Site } from './grammar.ts';
import { serveStream } from './stream.ts';
import { answerId, foreignTask, sendResult, speller, stateAt, statusStamp, wireTask, type AgentTask, type StreamPayload } from './wire.ts';

type Oversized = Extract<Deviation, { kind: 'oversized' }>;

/** Whether a stream event carries task `taskId` (a whole task, or a status or artifact update of it). */
function namesTask(payload: StreamPayload, taskId: string): boolean {
  const event = payload as { task?: { id?: string }; statusUpdate?: { taskId?: string }; artifactUpdate?: { taskId?: string } };
  return event.task?.id === taskId || event.statusUpdate?.taskId === taskId || event.artifactUpdate?.taskId === taskId;
}

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
  /** An answer to a send (SendMessage, or an event of a SendStreamingMessage stream) named our task with our request id. */
  sendNamedTask(): boolean;
  /** An answer over a limit (overLimitAnswer) was written whole: the client had it and had to refuse it. */
  overLimitDelivered(): boolean;
  close(): Promise<void>;
}

/** Starts an agent for `behaviour` on 127.0.0.1, port 0; ids it makes up contain `runId`. */
export async function startFuzzAgent(runId: string, behaviour: Behaviour): Promise<FuzzAgent> {
  const agent = new FuzzAgentServer(runId, behaviour);
  const raw = await startRawAgent((request, response, body) => agent.handle(request, response, body));
  agent.baseUrl = raw.url;
  return {
    cardUrl: `${raw.url}/.well-known/agent-card.json`,
    calls: agent.calls,
    task: () => agent.task,
    bytesOut: () => agent.bytesOut,
    sendNamedTask: () => agent.sendNamedTask,
    overLimitDelivered: () => agent.overLimitDelivered,
    async close() {
      agent.closed = true;
      await raw.close();
    },
  };
}

type MethodHandler = (params: any, id: unknown, response: ServerResponse) => Promise<void>;

/** The agent's state and its answers; one instance per run. */
class FuzzAgentServer {
  readonly calls: AgentCall[] = [];
  task: AgentTask | undefined;
  bytesOut = 0;
  sendNamedTask = false;
  overLimitDelivered = false;
  closed = false;
  baseUrl = '';
  private readonly perSite = new Map<string, number>();
  private readonly oversized: Extract<Deviation, { kind: 'oversized' }> | undefined;
  private readonly methods: Record<string, MethodHandler>;

  constructor(
    private readonly runId: string,
    private readonly behaviour: Behaviour,
  ) {
    this.oversized = deviationOf(behaviour, 'oversized');
    this.methods = {
      SendMessage: (params, id, response) => this.sendMessage(params, id, response),
      SendStreamingMessage: (params, id, response) => this.sendStreamingMessage(params, id, response),
      GetTask: (params, id, response) => this.getTask(params, id, response),
      ListTasks: (params, id, response) => this.listTasks(params, id, response),
      SubscribeToTask: (params, id, response) => this.subscribeToTask(params, id, response),
      CancelTask: (params, id, response) => this.cancelTask(params, id, response),
    };
  }

  async handle(request: IncomingMessage, response: ServerResponse, body: string): Promise<void> {
    const path = (request.url ?? '').split('?')[0];
    if (request.method === 'GET' && path === '/.well-known/agent-card.json') {
      this.calls.push({ site: 'AgentCard', atMs: Date.now() });
      if (await this.deviate('AgentCard', response, null)) return;
      const oversizedCard = this.oversized?.where === 'card' ? this.oversized : undefined;
      return this.write(response, 200, 'application/json', expand(JSON.stringify(this.card(oversizedCard !== undefined)), oversizedCard));
    }
    let envelope: { id?: unknown; method?: unknown; params?: unknown };
    try {
      envelope = JSON.parse(body);
    } catch {
      return this.rpcError(response, null, -32700, 'Parse error');
    }
    const method = String(envelope.method);
    this.calls.push({ site: method, atMs: Date.now() });
    const serve = this.methods[method];
    if (!serve) return this.rpcError(response, envelope.id ?? null, -32601, `Method not found: ${method}`);
    await serve(envelope.params, envelope.id ?? null, response);
  }

  private async sendMessage(params: any, id: unknown, response: ServerResponse): Promise<void> {
    if (this.failsWithoutTask('SendMessage')) return void (this.noteSend(params), await this.deviate('SendMessage', response, id));
    const task = this.createTask(params);
    if (await this.deviate('SendMessage', response, id)) return;
    if (params?.configuration?.returnImmediately !== true) await sleep(Math.max(0, task.finalAtMs - Date.now()));
    const foreign = deviationOf(this.behaviour, 'foreignTask')?.where === 'send' || this.misrouted('SendMessage') || this.decoyAt('SendMessage');
    const huge = this.overLimitAt('send') && this.perSite.get('SendMessage') === 1 ? this.overLimitValue() : undefined;
    const value = this.decoyAt('SendMessage') ? this.decoy() : foreign ? foreignTask(this.runId, this.behaviour) : this.sendAnswer(huge);
    await this.rpc(response, answerId(id, this.behaviour, 'SendMessage'), sendResult(value, this.behaviour), huge);
    if (huge) this.overLimitDelivered = !response.destroyed;
    const ownId = deviationOf(this.behaviour, 'rpcId')?.method !== 'SendMessage' && deviationOf(this.behaviour, 'envelopeId')?.site !== 'SendMessage';
    if (!foreign && ownId) this.sendNamedTask = true;
  }

  private async sendStreamingMessage(params: any, id: unknown, response: ServerResponse): Promise<void> {
    if (this.failsWithoutTask('SendStreamingMessage')) return void (this.noteSend(params), await this.deviate('SendStreamingMessage', response, id));
    this.createTask(params);
    if (await this.deviate('SendStreamingMessage', response, id)) return;
    await this.stream('SendStreamingMessage', id, response);
  }

  private async getTask(params: any, id: unknown, response: ServerResponse): Promise<void> {
    if (await this.deviate('GetTask', response, id)) return;
    const foreign = deviationOf(this.behaviour, 'foreignTask')?.where === 'getTask' || this.misrouted('GetTask');
    if (foreign) return this.rpc(response, answerId(id, this.behaviour, 'GetTask'), foreignTask(this.runId, this.behaviour));
    if (!this.task || params?.id !== this.task.id) return this.rpcError(response, id, -32001, 'Task not found');
    if (this.decoyAt('GetTask')) return this.rpc(response, answerId(id, this.behaviour, 'GetTask'), this.decoy());
    const huge = this.overLimitAt('followAndRead') ? this.overLimitValue() : undefined;
    await this.rpc(response, answerId(id, this.behaviour, 'GetTask'), this.read(huge), huge);
  }

  /** ListTasks (spec §3.1.4): our task when in the asked context and stamped at or after the bound (agent clock). */
  private async listTasks(params: any, id: unknown, response: ServerResponse): Promise<void> {
    if (await this.deviate('ListTasks', response, id)) return;
    const ignoresContext = deviationOf(this.behaviour, 'foreignTask')?.where === 'list';
    const misrouted = this.misrouted('ListTasks');
    const tasks: unknown[] = ignoresContext || misrouted ? [foreignTask(this.runId, this.behaviour)] : [];
    const task = this.task;
    if (task && !misrouted && (ignoresContext || !params?.contextId || params.contextId === task.contextId)) {
      const stamped = readStamp(statusStamp(task, this.behaviour, stateAt(task, this.behaviour, Date.now())));
      const after = params?.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : Number.NaN;
      if (Number.isNaN(after) || Number.isNaN(stamped) || stamped >= after) tasks.push(this.summary(params));
    }
    const huge = this.overLimitAt('followAndRead') ? this.overLimitValue() : undefined;
    await this.rpc(response, answerId(id, this.behaviour, 'ListTasks'), { tasks, nextPageToken: '', pageSize: 50, totalSize: tasks.length }, huge);
  }

  private async subscribeToTask(params: any, id: unknown, response: ServerResponse): Promise<void> {
    if (await this.deviate('SubscribeToTask', response, id)) return;
    if (!this.task || params?.id !== this.task.id) return this.rpcError(response, id, -32001, 'Task not found');
    // An agent whose streams carry an answer over a limit serves them for a finished task too (the client must meet it).
    const replays = this.overLimitAt('follow') || this.overLimitAt('followAndRead');
    if (this.finished() && !replays) return this.rpcError(response, id, -32004, 'Task is in a terminal state');
    await this.stream('SubscribeToTask', id, response);
  }

  private async cancelTask(params: any, id: unknown, response: ServerResponse): Promise<void> {
    if (await this.deviate('CancelTask', response, id)) return;
    if (!this.task || params?.id !== this.task.id) return this.rpcError(response, id, -32001, 'Task not found');
    if (this.finished()) return this.rpcError(response, id, -32002, 'Task cannot be canceled');
    await this.rpc(response, id, this.current());
  }

  private async stream(site: 'SubscribeToTask' | 'SendStreamingMessage', id: unknown, response: ServerResponse): Promise<void> {
    const streamNumber = this.perSite.get(site)!;
    const request = { runId: this.runId, behaviour: this.behaviour, task: this.task!, response, id, streamNumber, site };
    // A send stream names our task with any event carrying its id (a task, a status or an artifact update).
    const onEventSent = (payload: StreamPayload) => {
      const ownId = deviationOf(this.behaviour, 'envelopeId')?.site !== site;
      if (site === 'SendStreamingMessage' && ownId && namesTask(payload, this.task!.id)) this.sendNamedTask = true;
      if ('artifactUpdate' in payload && (payload.artifactUpdate.artifact as { artifactId?: string }).artifactId === 'big') this.overLimitDelivered = true;
    };
    this.bytesOut += await serveStream({ ...request, snapshot: () => this.current(), closed: () => this.closed, onEventSent });
  }

  /** Applies hang and errorCode deviations to this call of `site`; true when it answered (or never will). */
  private async deviate(site: Site, response: ServerResponse, id: unknown): Promise<boolean> {
    const count = (this.perSite.get(site) ?? 0) + 1;
    this.perSite.set(site, count);
    const hang = this.hangAt(site);
    if (hang && count <= hang.times) {
      if (hang.phase === 'afterHeaders') {
        const streaming = site === 'SubscribeToTask' || site === 'SendStreamingMessage';
        response.writeHead(200, { 'content-type': streaming ? 'text/event-stream' : 'application/json' });
        if (streaming) response.flushHeaders();
        else response.write(site === 'AgentCard' ? '{"name":' : '{"jsonrpc":"2.0",');
      }
      return true; // close() destroys the socket
    }
    const failure = deviationOf(this.behaviour, 'errorCode');
    if (!failure || failure.method !== site || count > failure.times) return false;
    const data =
      failure.data === 'errorInfo'
        ? [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'FUZZ', domain: 'a2a-protocol.org', metadata: {} }]
        : failure.data === 'object' ? { reason: 'fuzz' } : undefined;
    await this.rpcError(response, answerId(id, this.behaviour, site), failure.code, 'fuzzed failure', failure.httpStatus, data);
    return true;
  }

  /**
   * True when this call of a send site will answer an error that leaves no task: a refusal code, or
   * an error the agent raised before accepting the message (`errorCreatesTask`); a hang creates the task.
   */
  private failsWithoutTask(site: 'SendMessage' | 'SendStreamingMessage'): boolean {
    const next = (this.perSite.get(site) ?? 0) + 1;
    const hang = this.hangAt(site);
    if (hang && next <= hang.times) return false;
    const failure = deviationOf(this.behaviour, 'errorCode');
    return failure?.method === site && next <= failure.times && !errorCreatesTask(failure);
  }

  /** Notes the messageId of this send on its call, and whether the agent already had a task for it (a duplicate delivery). */
  private noteSend(params: any): { message: Record<string, unknown>; duplicate: boolean } {
    const message = (params?.message ?? {}) as Record<string, unknown>;
    const messageId = String(message.messageId ?? '');
    const duplicate = this.task !== undefined && this.task.message.messageId === messageId;
    Object.assign(this.calls.at(-1)!, { messageId, duplicate });
    return { message, duplicate };
  }

  /** The task for the message of this send: a new one, or the one the agent already has (then the call is a duplicate). */
  private createTask(params: any): AgentTask {
    const { message, duplicate } = this.noteSend(params);
    if (this.task && duplicate) return this.task;
    const now = Date.now();
    const contextId = typeof message.contextId === 'string' && message.contextId ? message.contextId : `ctx-${this.runId}`;
    this.task = { id: `task-${this.runId}`, contextId, message, createdAtMs: now, ...timeline(this.behaviour, now) };
    return this.task;
  }

  /** The hang at `site`: the hang deviation, or the first send lost after it created the task (listSummary). */
  private hangAt(site: Site): { phase: 'beforeHeaders' | 'afterHeaders'; times: number } | undefined {
    const hang = deviationOf(this.behaviour, 'hang');
    if (hang?.site === site) return hang;
    const summary = deviationOf(this.behaviour, 'listSummary');
    if (summary && (site === 'SendMessage' || site === 'SendStreamingMessage')) return { phase: summary.lostSend, times: 1 };
    return undefined;
  }

  private decoyAt(site: 'SendMessage' | 'GetTask'): boolean {
    const envelope = deviationOf(this.behaviour, 'envelopeId');
    return envelope?.site === site && envelope.id === 'other';
  }

  private decoy(): Record<string, unknown> {
    return decoyTask(this.runId, this.task!, speller(this.behaviour)('FAILED'));
  }

  private overLimitAt(path: 'send' | 'follow' | 'followAndRead'): boolean {
    return deviationOf(this.behaviour, 'overLimitAnswer')?.path === path;
  }

  /** The answer over a limit, in the `oversized` form body.ts expands. */
  private overLimitValue(): Oversized {
    const answer = deviationOf(this.behaviour, 'overLimitAnswer')!;
    return { kind: 'oversized', where: 'artifact', shape: answer.shape, amount: answer.amount };
  }

  /**
   * Our task as the answer to a send: with the value over a limit on the send path; an agent whose streams carry
   * one answers sends WORKING at most (the outcome is met on the follow path).
   */
  private sendAnswer(huge: Oversized | undefined): Record<string, unknown> {
    const follows = this.overLimitAt('follow') || this.overLimitAt('followAndRead');
    const state = stateAt(this.task!, this.behaviour, Date.now());
    const value = follows && state !== 'SUBMITTED' ? wireTask(this.runId, this.task!, this.behaviour, 'WORKING') : this.current();
    if (huge) value.artifacts = [...((value.artifacts as unknown[] | undefined) ?? []), hugeArtifact(huge)];
    return value;
  }

  /** Our task as a full read (GetTask) shows it: without artifacts on the `follow` path, with the value over a limit on `followAndRead`. */
  private read(huge: Oversized | undefined): Record<string, unknown> {
    const value = this.current();
    if (this.overLimitAt('follow')) delete value.artifacts;
    if (huge && value.artifacts) value.artifacts = [...(value.artifacts as unknown[]), hugeArtifact(huge)];
    return value;
  }

  /** Our task in a ListTasks answer: a full read, or a summary without artifacts (listSummary, unless `includeArtifacts` is honoured and asked). */
  private summary(params: any): Record<string, unknown> {
    const value = this.read(this.overLimitAt('followAndRead') ? this.overLimitValue() : undefined);
    const summary = deviationOf(this.behaviour, 'listSummary');
    if (summary && !(summary.includeArtifacts === 'honoured' && params?.includeArtifacts === true)) delete value.artifacts;
    return value;
  }

  /** Our task in its state now, with the oversized artifact when the behaviour has one there. */
  private current(): Record<string, unknown> {
    const value = wireTask(this.runId, this.task!, this.behaviour, stateAt(this.task!, this.behaviour, Date.now()));
    if (this.oversized?.where === 'artifact' && Array.isArray(value.artifacts)) value.artifacts = [...value.artifacts, hugeArtifact(this.oversized)];
    return value;
  }

  private finished(): boolean {
    return stateAt(this.task!, this.behaviour, Date.now()) === this.behaviour.story.final;
  }

  private misrouted(method: string): boolean {
    const deviation = deviationOf(this.behaviour, 'rpcId');
    return deviation?.method === method && deviation.body === 'misrouted';
  }

  private card(oversized: boolean) {
    return {
      name: 'Fuzz agent',
      description: oversized ? HUGE_MARK : 'A generated deviating agent',
      version: '1.0.0',
      supportedInterfaces: [{ url: `${this.baseUrl}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      capabilities: { streaming: declaresStreaming(this.behaviour), pushNotifications: false },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [{ id: 'fuzz', name: 'Fuzz', description: 'Deviates', tags: ['fuzz'] }],
    };
  }

  private async write(response: ServerResponse, status: number, contentType: string, chunks: Chunk[]): Promise<void> {
    response.writeHead(status, { 'content-type': contentType, 'content-length': chunkBytes(chunks) });
    this.bytesOut += chunkBytes(chunks);
    if (await writeChunks(response, chunks)) response.end();
  }

  private rpc(response: ServerResponse, id: unknown, result: unknown, huge: Oversized | undefined = this.oversized): Promise<void> {
    return this.write(response, 200, 'application/json', expand(JSON.stringify({ jsonrpc: '2.0', id, result }), huge));
  }

  private rpcError(response: ServerResponse, id: unknown, code: number, message: string, status = 200, data?: unknown): Promise<void> {
    const error = { code, message, ...(data === undefined ? {} : { data }) };
    return this.write(response, status, 'application/json', [JSON.stringify({ jsonrpc: '2.0', id, error })]);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
