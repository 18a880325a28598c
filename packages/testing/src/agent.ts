/**
 * A real @a2a-js/sdk 1.3.0 agent on 127.0.0.1, scripted per test, with
 * counters and fault injection. Server layout follows the protocol digest §11
 * "Server outline": card at /.well-known/agent-card.json, JSON-RPC at
 * /a2a/jsonrpc, HTTP+JSON at /a2a/rest.
 */
import { createServer, type Server } from 'node:http';
import express from 'express';
import type { AgentCard } from '@a2a-js/sdk';
import {
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { completesWith, type Behaviour } from './agent-behaviours.ts';
import { buildCard } from './agent-card.ts';
import { ScriptedExecutor, type ReceivedMessage } from './agent-executor.ts';
import { countingRequestHandler, streamDropper, type A2AMethod } from './agent-instrumentation.ts';
import { closeServer, listenOnLoopback, trackSockets } from './ports.ts';
import { quietTerminalSubscribeRefusals } from './quiet-sdk.ts';

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

/** What the agent's express app reports to its handle. */
interface AgentObservers {
  countCall: (method: A2AMethod) => void;
  httpRequests: SeenHttpRequest[];
  /** Events after which SSE responses are cut (`dropStreamsAfter`); undefined = none. */
  dropLimit: () => number | undefined;
  onDrop: () => void;
}

/** The SDK's handlers behind express, with fresh task and push stores (a restart that forgets tasks builds a new one). */
function buildAgentApp(card: AgentCard, executor: ScriptedExecutor, options: DemoAgentOptions, observers: AgentObservers): express.Express {
  const pushEnabled = options.pushNotifications ?? true;
  const pushStore = pushEnabled ? new InMemoryPushNotificationStore() : undefined;
  const pushSender = pushStore
    ? new DefaultPushNotificationSender(pushStore, {
        ...(options.push?.timeoutMs !== undefined ? { timeout: options.push.timeoutMs } : {}),
        ...(options.push?.tokenHeaderName !== undefined ? { tokenHeaderName: options.push.tokenHeaderName } : {}),
      })
    : undefined;
  const sdkHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor, undefined, pushStore, pushSender);
  const requestHandler = countingRequestHandler(sdkHandler, observers.countCall);
  const app = express();
  app.use((request, _response, next) => {
    observers.httpRequests.push({ method: request.method, url: request.originalUrl, authorization: request.headers.authorization, traceparent: request.header('traceparent') });
    next();
  });
  app.use(streamDropper(observers.dropLimit, observers.onDrop));
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  app.use('/a2a/rest', restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  return app;
}

/** The agent's HTTP server: shut down (every connection cut) and listened again on the same port. */
class RestartableServer {
  private server: Server = createServer();
  private sockets = trackSockets(this.server);
  private running = true;

  constructor(private readonly host: string | undefined) {}

  /** Listens on `port` (0 = any free one); returns the bound port. */
  listen(port: number): Promise<number> {
    return listenOnLoopback(this.server, port, this.host);
  }

  serve(app: express.Express): void {
    this.server.on('request', app);
  }

  /** Cuts all connections and stops listening. Safe to call twice. */
  async shutDown(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.sockets.destroyAll();
    await closeServer(this.server);
    // Give in-process clients a turn of the event loop to see the FIN on their
    // pooled keep-alive sockets, so the next request opens a fresh connection.
    await new Promise((resolve) => setTimeout(resolve, CLOSE_SETTLE_MS));
  }

  /** A new server for `app` on the same `port`. */
  async reopen(app: express.Express, port: number): Promise<void> {
    this.server = createServer(app);
    this.sockets = trackSockets(this.server);
    await listenOnLoopback(this.server, port, this.host);
    this.running = true;
  }
}

/** Starts a scripted SDK agent on 127.0.0.1 and resolves once it listens. */
export async function startDemoAgent(options: DemoAgentOptions = {}): Promise<DemoAgentHandle> {
  quietTerminalSubscribeRefusals();
  const executor = new ScriptedExecutor(options.behaviour ?? completesWith('done'));
  const counts = new Map<A2AMethod, number>();
  const httpRequests: SeenHttpRequest[] = [];
  let dropLimit: number | undefined;
  let droppedStreams = 0;

  const server = new RestartableServer(options.host);
  const port = await server.listen(options.port ?? 0);
  const baseUrl = `http://${options.publicHost ?? '127.0.0.1'}:${port}`;
  const card = buildCard(baseUrl, options);
  const observers: AgentObservers = {
    countCall: (method) => counts.set(method, (counts.get(method) ?? 0) + 1),
    httpRequests,
    dropLimit: () => dropLimit,
    onDrop: () => droppedStreams++,
  };
  let app = buildAgentApp(card, executor, options, observers);
  server.serve(app);
  const shutDown = (): Promise<void> => server.shutDown();

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
      if (restartOptions.forgetTasks ?? true) app = buildAgentApp(card, executor, options, observers);
      await server.reopen(app, port);
    },
    stop: shutDown,
    close: shutDown,
  };
}
