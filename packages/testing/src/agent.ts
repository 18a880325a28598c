/**
 * A real @a2a-js/sdk 1.3.0 agent on 127.0.0.1, scripted per test, with
 * counters and fault injection. Server layout follows the protocol digest §11
 * "Server outline": card at /.well-known/agent-card.json, JSON-RPC at
 * /a2a/jsonrpc, HTTP+JSON at /a2a/rest.
 */
import { createServer, type Server } from 'node:http';
import express from 'express';
import type { AgentCard, AgentInterface } from '@a2a-js/sdk';
import {
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { completesWith, type Behaviour } from './agent-behaviours.ts';
import { ScriptedExecutor, type ReceivedMessage } from './agent-executor.ts';
import { countingRequestHandler, streamDropper, type A2AMethod } from './agent-instrumentation.ts';
import { closeServer, listenOnLoopback, trackSockets } from './ports.ts';

/** Pause after cutting connections; see `shutDown`. 20 ms is ample on loopback. */
const CLOSE_SETTLE_MS = 20;

export type DemoAgentBinding = 'JSONRPC' | 'HTTP+JSON';

export interface DemoAgentSkill {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples?: string[];
}

export interface DemoAgentOptions {
  /** Default 'Demo agent'. */
  name?: string;
  /** Default 'A scripted A2A agent for integration tests'. */
  description?: string;
  /** Default: one skill `demo`. */
  skills?: DemoAgentSkill[];
  /** Default `completesWith('done')`. */
  behaviour?: Behaviour;
  /** Interfaces on the card, in preference order (spec §8.3: first = preferred). Default JSON-RPC, then REST. */
  bindings?: DemoAgentBinding[];
  /** `capabilities.streaming`. Default true. */
  streaming?: boolean;
  /** `capabilities.pushNotifications`, with an in-memory push store and the SDK's sender. Default true. */
  pushNotifications?: boolean;
  /** Push sender options: request timeout (SDK default 5 s) and token header name. */
  push?: { timeoutMs?: number; tokenHeaderName?: string };
  /** Listen on this port. Default 0 (any free port). */
  port?: number;
  /** Bind address. Default 127.0.0.1 (docker compose binds 0.0.0.0). */
  host?: string;
  /** Host name written into the card's URLs. Default 127.0.0.1. */
  publicHost?: string;
}

/** One HTTP request as it arrived, before the SDK saw it. */
export interface SeenHttpRequest {
  method: string;
  /** Path and query, e.g. `/a2a/rest/tasks/abc`. */
  url: string;
  /** The Authorization header, if any (to check which principal called). */
  authorization?: string;
  /** The W3C `traceparent` header, if any. */
  traceparent?: string;
}

export interface DemoAgentHandle {
  readonly port: number;
  /** `http://127.0.0.1:PORT` */
  readonly baseUrl: string;
  /** `${baseUrl}/.well-known/agent-card.json` */
  readonly cardUrl: string;
  readonly jsonRpcUrl: string;
  readonly restUrl: string;
  /** The card as served (SDK TS form). */
  readonly card: AgentCard;
  /** Every user message the executor received, in order, across restarts. */
  readonly receivedMessages: readonly ReceivedMessage[];
  /** Every HTTP request, in order, across restarts. */
  readonly httpRequests: readonly SeenHttpRequest[];
  /** How many SSE responses `dropStreamsAfter` has cut so far. */
  readonly droppedStreams: number;
  /** Replaces the behaviour for executions that start from now on. */
  setBehaviour(behaviour: Behaviour): void;
  /** Executor invocations (SendMessage and SendStreamingMessage) for `messageId`, or all when omitted. */
  sendMessageCount(messageId?: string): number;
  /** A2A calls of `method` seen by the request handler (both bindings, failed calls included). */
  requestCount(method: A2AMethod): number;
  /** Cut every SSE response opened from now on after `events` data events; undefined = stop cutting. */
  dropStreamsAfter(events: number | undefined): void;
  /**
   * Cuts all connections, abandons executions in flight (nothing more is
   * published for them) and listens again on the same port. With
   * `forgetTasks` (default true) the task and push stores start empty.
   */
  restart(options?: { forgetTasks?: boolean }): Promise<void>;
  /** Cuts all connections and stops listening. Safe to call twice. */
  stop(): Promise<void>;
  /** Same as `stop()`. */
  close(): Promise<void>;
}

/** Starts a scripted SDK agent on 127.0.0.1 and resolves once it listens. */
export async function startDemoAgent(options: DemoAgentOptions = {}): Promise<DemoAgentHandle> {
  const executor = new ScriptedExecutor(options.behaviour ?? completesWith('done'));
  const counts = new Map<A2AMethod, number>();
  const httpRequests: SeenHttpRequest[] = [];
  let dropLimit: number | undefined;
  let droppedStreams = 0;

  let server: Server = createServer();
  let sockets = trackSockets(server);
  const port = await listenOnLoopback(server, options.port ?? 0, options.host);
  const baseUrl = `http://${options.publicHost ?? '127.0.0.1'}:${port}`;
  const card = buildCard(baseUrl, options);

  const buildApp = (): express.Express => {
    const pushEnabled = options.pushNotifications ?? true;
    const pushStore = pushEnabled ? new InMemoryPushNotificationStore() : undefined;
    const pushSender = pushStore
      ? new DefaultPushNotificationSender(pushStore, {
          ...(options.push?.timeoutMs !== undefined ? { timeout: options.push.timeoutMs } : {}),
          ...(options.push?.tokenHeaderName !== undefined ? { tokenHeaderName: options.push.tokenHeaderName } : {}),
        })
      : undefined;
    const sdkHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor, undefined, pushStore, pushSender);
    const requestHandler = countingRequestHandler(sdkHandler, (method) => counts.set(method, (counts.get(method) ?? 0) + 1));
    const app = express();
    app.use((request, _response, next) => {
      httpRequests.push({ method: request.method, url: request.originalUrl, authorization: request.headers.authorization, traceparent: request.header('traceparent') });
      next();
    });
    app.use(streamDropper(() => dropLimit, () => droppedStreams++));
    app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
    app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
    app.use('/a2a/rest', restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
    return app;
  };

  let app = buildApp();
  server.on('request', app);
  let running = true;

  const shutDown = async (): Promise<void> => {
    if (!running) return;
    running = false;
    sockets.destroyAll();
    await closeServer(server);
    // Give in-process clients a turn of the event loop to see the FIN on their
    // pooled keep-alive sockets, so the next request opens a fresh connection.
    await new Promise((resolve) => setTimeout(resolve, CLOSE_SETTLE_MS));
  };

  return {
    port,
    baseUrl,
    cardUrl: `${baseUrl}/.well-known/agent-card.json`,
    jsonRpcUrl: `${baseUrl}/a2a/jsonrpc`,
    restUrl: `${baseUrl}/a2a/rest`,
    card,
    receivedMessages: executor.received,
    httpRequests,
    get droppedStreams() {
      return droppedStreams;
    },
    setBehaviour(behaviour) {
      executor.behaviour = behaviour;
    },
    sendMessageCount: (messageId) => executor.invocationCount(messageId),
    requestCount: (method) => counts.get(method) ?? 0,
    dropStreamsAfter(events) {
      dropLimit = events;
    },
    async restart(restartOptions = {}) {
      await shutDown();
      executor.crashAll();
      if (restartOptions.forgetTasks ?? true) app = buildApp();
      server = createServer(app);
      sockets = trackSockets(server);
      await listenOnLoopback(server, port, options.host);
      running = true;
    },
    stop: shutDown,
    close: shutDown,
  };
}

function buildCard(baseUrl: string, options: DemoAgentOptions): AgentCard {
  const urls: Record<DemoAgentBinding, string> = { JSONRPC: `${baseUrl}/a2a/jsonrpc`, 'HTTP+JSON': `${baseUrl}/a2a/rest` };
  const interfaces: AgentInterface[] = (options.bindings ?? ['JSONRPC', 'HTTP+JSON']).map((binding) => ({
    url: urls[binding],
    protocolBinding: binding,
    tenant: '',
    protocolVersion: '1.0',
  }));
  const skills = options.skills ?? [{ id: 'demo', name: 'Demo', description: 'Does what the test scripted', tags: ['demo'] }];
  return {
    name: options.name ?? 'Demo agent',
    description: options.description ?? 'A scripted A2A agent for integration tests',
    supportedInterfaces: interfaces,
    provider: undefined,
    version: '1.0.0',
    capabilities: {
      streaming: options.streaming ?? true,
      pushNotifications: options.pushNotifications ?? true,
      extensions: [],
      extendedAgentCard: false,
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: skills.map((skill) => ({
      id: skill.id,
      name: skill.name,
      description: skill.description,
      tags: skill.tags,
      examples: skill.examples ?? [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    })),
    signatures: [],
  };
}
