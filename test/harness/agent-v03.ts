/**
 * A2A 0.3 agents for the interop matrix, scripted with the same `Behaviour`s
 * as the 1.0 demo agent:
 * - `startV03Agent`: @a2a-js/sdk 0.3.14 (the `a2a-sdk-v03` alias), JSON-RPC at
 *   /a2a/jsonrpc and its HTTP+JSON binding under /a2a/rest (/v1/... routes),
 *   serving a 0.3 card (root `url`, `preferredTransport`, `additionalInterfaces`).
 * - `startLegacyCompatAgent`: @a2a-js/sdk 1.3.0 with `legacyCompat` on, whose
 *   1.0 card lists 1.0 and 0.3 interfaces on the same URLs (dispatch by `A2A-Version`).
 * Both can cut SSE responses after N events (`streamDropper`).
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import express from 'express';
import type { AgentCard as AgentCardV1 } from '@a2a-js/sdk';
import { DefaultRequestHandler as DefaultRequestHandlerV1, InMemoryPushNotificationStore as PushStoreV1, InMemoryTaskStore as TaskStoreV1 } from '@a2a-js/sdk/server';
import { UserBuilder as UserBuilderV1, agentCardHandler as agentCardHandlerV1, jsonRpcHandler as jsonRpcHandlerV1, restHandler as restHandlerV1 } from '@a2a-js/sdk/server/express';
import { createLegacyAwarePushNotificationSender } from '@a2a-js/sdk/compat/v0_3/server';
import type { AgentCard, Message, Part, Task, TaskState } from 'a2a-sdk-v03';
import {
  type AgentExecutor,
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
  type RequestContext,
} from 'a2a-sdk-v03/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler, restHandler } from 'a2a-sdk-v03/server/express';
import { completesWith, type AgentRequest, type Behaviour, type ScriptedTaskState, type Step } from './agent-behaviours.ts';
import { ScriptedExecutor } from './agent-executor.ts';
import { streamDropper } from './agent-instrumentation.ts';
import { closeServer, listenOnLoopback, trackSockets } from './ports.ts';

export interface V03AgentOptions {
  /** Default `completesWith('done')`. */
  behaviour?: Behaviour;
}

export interface V03AgentHandle {
  readonly baseUrl: string;
  readonly cardUrl: string;
  readonly jsonRpcUrl: string;
  readonly restUrl: string;
  /** How many SSE responses were cut so far. */
  readonly droppedStreams: number;
  setBehaviour(behaviour: Behaviour): void;
  /** Cut every SSE response opened from now on after `events` data events; undefined = stop cutting. */
  dropStreamsAfter(events: number | undefined): void;
  /** Cuts all connections and stops listening. Safe to call twice. */
  stop(): Promise<void>;
}

const STATES: Record<ScriptedTaskState, TaskState> = {
  WORKING: 'working',
  COMPLETED: 'completed',
  FAILED: 'failed',
  REJECTED: 'rejected',
  CANCELED: 'canceled',
  INPUT_REQUIRED: 'input-required',
  AUTH_REQUIRED: 'auth-required',
};
/** 0.3 `final`: the stream (and the execution) ends on a terminal or interrupted state. */
const FINAL: ReadonlySet<ScriptedTaskState> = new Set(['COMPLETED', 'FAILED', 'REJECTED', 'CANCELED', 'INPUT_REQUIRED', 'AUTH_REQUIRED']);

const textPart = (text: string): Part => ({ kind: 'text', text });
const agentMessage = (text: string, taskId: string | undefined, contextId: string): Message => ({
  kind: 'message', messageId: randomUUID(), role: 'agent', parts: [textPart(text)], contextId, ...(taskId ? { taskId } : {}),
});

/**
 * Plays a behaviour's steps as 0.3 events. SDK 0.3.14 contract: the first event
 * is the Task (or a Message), a status update with `final:true` ends the
 * execution, then `finished()`. Cancel publishes `canceled` (final) at once,
 * because `cancelTask` waits for that event on the bus.
 */
export class ScriptedExecutorV03 implements AgentExecutor {
  private readonly running = new Map<string, { stopped: boolean; wake?: () => void }>();

  constructor(public behaviour: Behaviour) {}

  execute = async (context: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { userMessage, taskId, contextId } = context;
    const request: AgentRequest = {
      text: userMessage.parts.map((part) => (part.kind === 'text' ? part.text : '')).join(''),
      messageId: userMessage.messageId, taskId, contextId, isFollowUp: context.task !== undefined,
    };
    const run: { stopped: boolean; wake?: () => void } = { stopped: false };
    this.running.set(taskId, run);
    const steps: Step[] = this.behaviour(request);
    const status = (state: ScriptedTaskState, text?: string) =>
      bus.publish({
        kind: 'status-update', taskId, contextId, final: FINAL.has(state),
        status: { state: STATES[state], timestamp: new Date().toISOString(), ...(text === undefined ? {} : { message: agentMessage(text, taskId, contextId) }) },
      });
    try {
      if ('directMessage' in (steps[0] ?? {})) {
        bus.publish(agentMessage((steps[0] as { directMessage: string }).directMessage, undefined, contextId));
        return;
      }
      const existing: Task | undefined = context.task;
      bus.publish({
        kind: 'task', id: taskId, contextId,
        status: { state: existing ? 'working' : 'submitted', timestamp: new Date().toISOString() },
        history: existing?.history ?? [userMessage], artifacts: existing?.artifacts ?? [],
      });
      for (const step of steps) {
        if (run.stopped) return;
        if ('delayMs' in step) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, step.delayMs);
            run.wake = () => (clearTimeout(timer), resolve());
          });
        } else if ('sideEffect' in step) {
          await step.sideEffect();
        } else if ('artifact' in step) {
          const { artifactId, text, append, lastChunk, name } = step.artifact;
          bus.publish({ kind: 'artifact-update', taskId, contextId, artifact: { artifactId, ...(name ? { name } : {}), parts: [textPart(text)] }, append: append ?? false, lastChunk: lastChunk ?? false });
        } else if ('state' in step) {
          status(step.state, step.text);
          if (FINAL.has(step.state)) return;
        }
      }
    } finally {
      if (this.running.get(taskId) === run) this.running.delete(taskId);
      if (!run.stopped) bus.finished();
    }
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const run = this.running.get(taskId);
    if (run) {
      run.stopped = true;
      run.wake?.();
    }
    bus.publish({ kind: 'status-update', taskId, contextId: '', final: true, status: { state: 'canceled', timestamp: new Date().toISOString() } });
    bus.finished();
  };
}

/** Serves `app` on 127.0.0.1:0 with stream cutting; returns the handle's common part. */
async function serve(mount: (app: express.Express) => void, cardUrlOf: (baseUrl: string) => void): Promise<Omit<V03AgentHandle, 'setBehaviour'>> {
  let dropLimit: number | undefined;
  let droppedStreams = 0;
  const app = express();
  app.use(streamDropper(() => dropLimit, () => droppedStreams++));
  const server = createServer(app);
  const sockets = trackSockets(server);
  const port = await listenOnLoopback(server, 0);
  const baseUrl = `http://127.0.0.1:${port}`;
  cardUrlOf(baseUrl);
  mount(app);
  let running = true;
  return {
    baseUrl,
    cardUrl: `${baseUrl}/.well-known/agent-card.json`,
    jsonRpcUrl: `${baseUrl}/a2a/jsonrpc`,
    restUrl: `${baseUrl}/a2a/rest`,
    get droppedStreams() {
      return droppedStreams;
    },
    dropStreamsAfter(events) {
      dropLimit = events;
    },
    async stop() {
      if (!running) return;
      running = false;
      sockets.destroyAll();
      await closeServer(server);
    },
  };
}

const SKILLS = [{ id: 'demo', name: 'Demo', description: 'Does what the test scripted', tags: ['demo'] }];

/** A @a2a-js/sdk 0.3.14 agent with both of its bindings and push notifications (whole-Task bodies). */
export async function startV03Agent(options: V03AgentOptions = {}): Promise<V03AgentHandle> {
  const executor = new ScriptedExecutorV03(options.behaviour ?? completesWith('done'));
  let card: AgentCard | undefined;
  const common = await serve(
    (app) => {
      const pushStore = new InMemoryPushNotificationStore();
      const handler = new DefaultRequestHandler(card!, new InMemoryTaskStore(), executor, undefined, pushStore, new DefaultPushNotificationSender(pushStore));
      app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
      app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
      app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
    },
    (baseUrl) => {
      card = {
        name: 'Demo agent 0.3', description: 'A scripted A2A 0.3 agent (sdk 0.3.14)', version: '1.0.0', protocolVersion: '0.3.0',
        url: `${baseUrl}/a2a/jsonrpc`, preferredTransport: 'JSONRPC',
        additionalInterfaces: [{ url: `${baseUrl}/a2a/jsonrpc`, transport: 'JSONRPC' }, { url: `${baseUrl}/a2a/rest`, transport: 'HTTP+JSON' }],
        capabilities: { streaming: true, pushNotifications: true },
        defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: SKILLS,
      };
    },
  );
  return Object.assign(common, { setBehaviour: (behaviour: Behaviour) => void (executor.behaviour = behaviour) });
}

/** A @a2a-js/sdk 1.3.0 agent with `legacyCompat` on: 1.0 and 0.3 on both bindings, push bodies by the version a config was set with. */
export async function startLegacyCompatAgent(options: V03AgentOptions = {}): Promise<V03AgentHandle> {
  const executor = new ScriptedExecutor(options.behaviour ?? completesWith('done'));
  let card: AgentCardV1 | undefined;
  const legacyCompat = { enabled: true };
  const common = await serve(
    (app) => {
      const pushStore = new PushStoreV1();
      const handler = new DefaultRequestHandlerV1(card!, new TaskStoreV1(), executor, undefined, pushStore, createLegacyAwarePushNotificationSender(pushStore));
      app.use('/.well-known/agent-card.json', agentCardHandlerV1({ agentCardProvider: handler, legacyCompat }));
      app.use('/a2a/jsonrpc', jsonRpcHandlerV1({ requestHandler: handler, userBuilder: UserBuilderV1.noAuthentication, legacyCompat }));
      app.use('/a2a/rest', restHandlerV1({ requestHandler: handler, userBuilder: UserBuilderV1.noAuthentication, legacyCompat }));
    },
    (baseUrl) => {
      const urls = { JSONRPC: `${baseUrl}/a2a/jsonrpc`, 'HTTP+JSON': `${baseUrl}/a2a/rest` } as const;
      card = {
        name: 'Demo agent 1.0 + 0.3', description: 'A scripted A2A agent (sdk 1.3.0, legacyCompat)', version: '1.0.0', provider: undefined,
        supportedInterfaces: (['1.0', '0.3'] as const).flatMap((protocolVersion) =>
          (['JSONRPC', 'HTTP+JSON'] as const).map((protocolBinding) => ({ url: urls[protocolBinding], protocolBinding, protocolVersion, tenant: '' })),
        ),
        capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
        securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
        skills: SKILLS.map((skill) => ({ ...skill, examples: [], inputModes: [], outputModes: [], securityRequirements: [] })),
        signatures: [],
      };
    },
  );
  return Object.assign(common, { setBehaviour: (behaviour: Behaviour) => void (executor.behaviour = behaviour) });
}
