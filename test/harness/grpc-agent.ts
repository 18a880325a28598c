/**
 * A scripted @a2a-js/sdk 1.3.0 agent served over gRPC (`@a2a-js/sdk/server/grpc`)
 * on 127.0.0.1, its Agent Card on a plain HTTP port. The card lists only the
 * gRPC interface (`http://127.0.0.1:PORT`, plaintext by scheme), so a client that
 * does not speak gRPC cannot use it. Same behaviours, counters and stream cutting
 * as the HTTP demo agent; `restart` rebinds the same gRPC port.
 */
import { createServer, type Server as HttpServer } from 'node:http';
import { Metadata, Server, ServerCredentials, type ServerWritableStream, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { DefaultPushNotificationSender, DefaultRequestHandler, InMemoryPushNotificationStore, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { A2AService, UserBuilder, grpcService } from '@a2a-js/sdk/server/grpc';
import type { AgentCard } from '@a2a-js/sdk';
import { completesWith, type Behaviour } from './agent-behaviours.ts';
import { ScriptedExecutor, type ReceivedMessage } from './agent-executor.ts';
import { countingRequestHandler, type A2AMethod } from './agent-instrumentation.ts';
import { closeServer, listenOnLoopback, trackSockets } from './ports.ts';

export interface GrpcAgentOptions {
  /** Default `completesWith('done')`. */
  behaviour?: Behaviour;
  /** `capabilities.pushNotifications`, with an in-memory push store. Default true. */
  pushNotifications?: boolean;
}

export interface GrpcAgentHandle {
  /** `http://127.0.0.1:PORT` of the gRPC server. */
  readonly grpcUrl: string;
  readonly cardUrl: string;
  readonly receivedMessages: readonly ReceivedMessage[];
  /** Metadata of every call, in order (lower-case keys). */
  readonly seenMetadata: readonly Record<string, string>[];
  readonly droppedStreams: number;
  setBehaviour(behaviour: Behaviour): void;
  sendMessageCount(messageId?: string): number;
  requestCount(method: A2AMethod): number;
  /** End every server stream opened from now on after `events` messages (status OK, no terminal state); undefined = stop. */
  dropStreamsAfter(events: number | undefined): void;
  /** Kills the gRPC server (calls in flight fail), abandons executions, listens again on the same port with empty stores. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const STREAM_METHODS = ['sendStreamingMessage', 'subscribeToTask'] as const;

function bindServer(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound)));
  });
}

/** Starts the agent; resolves once both ports listen. */
export async function startGrpcAgent(options: GrpcAgentOptions = {}): Promise<GrpcAgentHandle> {
  const executor = new ScriptedExecutor(options.behaviour ?? completesWith('done'));
  const counts = new Map<A2AMethod, number>();
  const seenMetadata: Record<string, string>[] = [];
  let dropLimit: number | undefined;
  let droppedStreams = 0;
  const pushEnabled = options.pushNotifications ?? true;

  const cardServer: HttpServer = createServer();
  const cardSockets = trackSockets(cardServer);
  const cardPort = await listenOnLoopback(cardServer, 0);
  let grpcPort = 0;
  let card: AgentCard | undefined;
  cardServer.on('request', (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card));
  });

  /** Wraps a server-streaming handler so its stream ends (OK status) after `dropLimit` messages. */
  const droppingStream = (handler: (call: ServerWritableStream<unknown, unknown>) => void) => (call: ServerWritableStream<unknown, unknown>) => {
    const allowed = dropLimit;
    if (allowed !== undefined) {
      let written = 0;
      const write = call.write.bind(call) as (chunk: unknown) => boolean;
      call.write = ((chunk: unknown) => {
        if (written >= allowed) return true;
        written++;
        write(chunk);
        if (written === allowed) {
          droppedStreams++;
          call.end();
        }
        return true;
      }) as typeof call.write;
      call.end = ((end) => (metadata?: Metadata) => (call.writableEnded ? call : end(metadata)))(call.end.bind(call)) as typeof call.end;
    }
    handler(call);
  };

  const build = (): Server => {
    const pushStore = pushEnabled ? new InMemoryPushNotificationStore() : undefined;
    const pushSender = pushStore ? new DefaultPushNotificationSender(pushStore) : undefined;
    const sdkHandler = new DefaultRequestHandler(card!, new InMemoryTaskStore(), executor, undefined, pushStore, pushSender);
    const requestHandler = countingRequestHandler(sdkHandler, (method) => counts.set(method, (counts.get(method) ?? 0) + 1));
    const implementation = grpcService({ requestHandler, userBuilder: UserBuilder.noAuthentication }) as unknown as UntypedServiceImplementation;
    for (const name of STREAM_METHODS) implementation[name] = droppingStream(implementation[name] as (call: ServerWritableStream<unknown, unknown>) => void);
    for (const [name, handler] of Object.entries(implementation)) {
      implementation[name] = (call: { metadata: Metadata }, ...rest: unknown[]) => {
        seenMetadata.push(Object.fromEntries(Object.entries(call.metadata.getMap()).map(([key, value]) => [key, String(value)])));
        return (handler as (...args: unknown[]) => unknown)(call, ...rest);
      };
    }
    const server = new Server();
    server.addService(A2AService, implementation);
    return server;
  };

  let server = new Server();
  grpcPort = await bindServer(server, 0);
  card = buildCard(`http://127.0.0.1:${grpcPort}`, pushEnabled);
  server.forceShutdown();
  server = build();
  await bindServer(server, grpcPort);
  let running = true;

  return {
    grpcUrl: `http://127.0.0.1:${grpcPort}`,
    cardUrl: `http://127.0.0.1:${cardPort}/.well-known/agent-card.json`,
    receivedMessages: executor.received,
    seenMetadata,
    get droppedStreams() {
      return droppedStreams;
    },
    setBehaviour: (behaviour) => void (executor.behaviour = behaviour),
    sendMessageCount: (messageId) => executor.invocationCount(messageId),
    requestCount: (method) => counts.get(method) ?? 0,
    dropStreamsAfter: (events) => void (dropLimit = events),
    async restart() {
      server.forceShutdown();
      executor.crashAll();
      server = build();
      await bindServer(server, grpcPort);
    },
    async stop() {
      if (!running) return;
      running = false;
      server.forceShutdown();
      cardSockets.destroyAll();
      await closeServer(cardServer);
    },
  };
}

function buildCard(grpcUrl: string, pushNotifications: boolean): AgentCard {
  return {
    name: 'gRPC demo agent',
    description: 'A scripted A2A agent served over gRPC',
    supportedInterfaces: [{ url: grpcUrl, protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'demo', name: 'Demo', description: 'Does what the test scripted', tags: ['demo'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
}
