/**
 * Scripted A2A agents served over gRPC on 127.0.0.1, their Agent Card on a plain
 * HTTP port. The card lists only gRPC interfaces (`http://127.0.0.1:PORT`,
 * plaintext by scheme), so a client that does not speak gRPC cannot use it.
 * Flavours: `1.0` (@a2a-js/sdk 1.3.0 `server/grpc`), `legacyCompat` (the same
 * server with the sdk's 0.3 gRPC service beside it, card listing 1.0 and 0.3),
 * `v03` (@a2a-js/sdk 0.3.14 `server/grpc`, a 0.3 card). Same behaviours and
 * stream cutting as the HTTP demo agents; `restart` rebinds the same gRPC port.
 */
import { createServer, type Server as HttpServer } from 'node:http';
import { Metadata, Server, ServerCredentials, type ServiceDefinition, type ServiceError, type ServerWritableStream, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { DefaultPushNotificationSender, DefaultRequestHandler, InMemoryPushNotificationStore, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { A2AService, UserBuilder, grpcService } from '@a2a-js/sdk/server/grpc';
import { LegacyA2AService, legacyGrpcService } from '@a2a-js/sdk/compat/v0_3/server/grpc';
import { createLegacyAwarePushNotificationSender } from '@a2a-js/sdk/compat/v0_3/server';
import * as sdkV03 from 'a2a-sdk-v03/server';
import * as sdkV03Grpc from 'a2a-sdk-v03/server/grpc';
import type { AgentCard } from '@a2a-js/sdk';
import { completesWith, type Behaviour } from './agent-behaviours.ts';
import { ScriptedExecutor, type ReceivedMessage } from './agent-executor.ts';
import { ScriptedExecutorV03 } from './agent-v03.ts';
import { countingRequestHandler, type A2AMethod } from './agent-instrumentation.ts';
import { closeServer, listenOnLoopback, trackSockets } from './ports.ts';
import { encodeFromJson, messageType } from '../../packages/a2a/src/grpc/codec.ts';

/** Which server: sdk 1.3.0 (1.0), sdk 1.3.0 with its 0.3 gRPC service too, or sdk 0.3.14. */
export type GrpcAgentFlavour = '1.0' | 'legacyCompat' | 'v03';

export interface GrpcAgentOptions {
  /** Default '1.0'. */
  flavour?: GrpcAgentFlavour;
  /** Default `completesWith('done')`. */
  behaviour?: Behaviour;
  /** `capabilities.pushNotifications`, with an in-memory push store. Default true. */
  pushNotifications?: boolean;
  /**
   * The gRPC server's `grpc.max_receive_message_length` (bytes): a request over it is refused RESOURCE_EXHAUSTED
   * before any handler runs (grpc-js default: 4 MiB).
   */
  maxReceiveMessageBytes?: number;
}

/**
 * A status every SendMessage gets instead of the handler's answer (`answerSendsWith`): `code` (`google.rpc.Code`),
 * `reason` an ErrorInfo reason in the `grpc-status-details-bin` trailer (domain a2a-protocol.org, as the gRPC binding
 * carries an A2A error), none a bare status (a proxy's, an interceptor's, a server that threw); `afterHandler`: the
 * handler ran first (the task was created and its executor started, the agent booked), else it never runs.
 */
export interface GrpcSendAnswer {
  code: number;
  reason?: string;
  afterHandler: boolean;
  /** Details beside the ErrorInfo, in `google.rpc.Status` JSON form (`{ '@type': 'type.googleapis.com/lf.a2a.v1.Task', ... }`): what else the agent put in the status. */
  extraDetails?: Record<string, unknown>[];
}

export interface GrpcAgentHandle {
  /** `http://127.0.0.1:PORT` of the gRPC server. */
  readonly grpcUrl: string;
  readonly cardUrl: string;
  /** User messages the executor received (flavours '1.0' and 'legacyCompat'; the 0.3.14 executor keeps none). */
  readonly receivedMessages: readonly ReceivedMessage[];
  /** Metadata of every call, in order (lower-case keys). */
  readonly seenMetadata: readonly Record<string, string>[];
  readonly droppedStreams: number;
  setBehaviour(behaviour: Behaviour): void;
  /** Executor invocations for `messageId` (flavours '1.0' and 'legacyCompat'). */
  sendMessageCount(messageId?: string): number;
  /**
   * A2A calls of `method` seen by the request handler (flavours '1.0' and 'legacyCompat'), and each SendMessage
   * `answerSendsWith` answered before its handler.
   */
  requestCount(method: A2AMethod): number;
  /** Answer every SendMessage from now on with `answer` (`GrpcSendAnswer`); undefined = the handler's own answer again. */
  answerSendsWith(answer: GrpcSendAnswer | undefined): void;
  /**
   * Answer every read of a task from now on (GetTask, CancelTask, SubscribeToTask; 0.3 TaskSubscription) with `answer`'s
   * status before any handler runs (a proxy or an interceptor in front of the agent; `afterHandler` is ignored);
   * `alsoListTasks`: ListTasks too; `times`: only the next that many reads, then the handlers' own answers again (a
   * proxy's passing fault). Counted as `reads answered`. Undefined = the handlers' own answers again.
   */
  answerReadsWith(answer: ReadAnswer | undefined): void;
  /** Reads `answerReadsWith` answered so far. */
  readonly readsAnswered: number;
  /** End every server stream opened from now on after `events` messages (status OK, no terminal state); undefined = stop. */
  dropStreamsAfter(events: number | undefined): void;
  /** Kills the gRPC server (calls in flight fail), abandons executions, listens again on the same port with empty stores. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** A status every read gets instead of the handler's answer (`answerReadsWith`). */
export type ReadAnswer = Omit<GrpcSendAnswer, 'afterHandler'> & { alsoListTasks?: boolean; times?: number };

type Services = [ServiceDefinition, UntypedServiceImplementation][];
const asImplementation = (service: unknown): UntypedServiceImplementation => service as UntypedServiceImplementation;

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
  let sendAnswer: GrpcSendAnswer | undefined;
  let readAnswer: ReadAnswer | undefined;
  /** Reads `readAnswer` still answers (`ReadAnswer.times`); undefined: every read. */
  let readAnswersLeft: number | undefined;
  let readsAnswered = 0;
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

  const flavour = options.flavour ?? '1.0';
  const executorV03 = new ScriptedExecutorV03(options.behaviour ?? completesWith('done'));
  const count = (method: A2AMethod): void => void counts.set(method, (counts.get(method) ?? 0) + 1);

  const services = (): Services => {
    if (flavour === 'v03') {
      const pushStore = new sdkV03.InMemoryPushNotificationStore();
      const handler = new sdkV03.DefaultRequestHandler(card as never, new sdkV03.InMemoryTaskStore(), executorV03, undefined, pushStore, new sdkV03.DefaultPushNotificationSender(pushStore));
      // Not counted: `countingRequestHandler` is typed for the 1.3.0 handler (counts are read only in 1.0 tests).
      return [[sdkV03Grpc.A2AService, asImplementation(sdkV03Grpc.grpcService({ requestHandler: handler, userBuilder: sdkV03Grpc.UserBuilder.noAuthentication }))]];
    }
    const pushStore = pushEnabled ? new InMemoryPushNotificationStore() : undefined;
    const pushSender = pushStore ? (flavour === 'legacyCompat' ? createLegacyAwarePushNotificationSender(pushStore) : new DefaultPushNotificationSender(pushStore)) : undefined;
    const sdkHandler = new DefaultRequestHandler(card!, new InMemoryTaskStore(), executor, undefined, pushStore, pushSender);
    const requestHandler = countingRequestHandler(sdkHandler, count);
    const userBuilder = UserBuilder.noAuthentication;
    const found: Services = [[A2AService, asImplementation(grpcService({ requestHandler, userBuilder }))]];
    if (flavour === 'legacyCompat') found.push([LegacyA2AService, asImplementation(legacyGrpcService({ requestHandler, userBuilder }))]);
    return found;
  };

  type UnaryCallback = (error: Partial<ServiceError> | null, value?: unknown) => void;
  /** The status of a scripted answer: `code`, with an ErrorInfo of `reason` (domain a2a-protocol.org) when given. */
  const statusOf = (answer: Pick<GrpcSendAnswer, 'code' | 'reason' | 'extraDetails'>): Partial<ServiceError> => {
    const metadata = new Metadata();
    if (answer.reason !== undefined || answer.extraDetails !== undefined) {
      const errorInfo = answer.reason === undefined ? [] : [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: answer.reason, domain: 'a2a-protocol.org' }];
      metadata.set('grpc-status-details-bin', encodeFromJson(messageType('google.rpc.Status'), { code: answer.code, message: answer.reason ?? '', details: [...errorInfo, ...(answer.extraDetails ?? [])] }));
    }
    return { code: answer.code, details: `scripted status ${answer.code}`, metadata };
  };
  /** Wraps a SendMessage handler so its answer is `sendAnswer` when one is set (after the handler ran, or instead). */
  const answeringSend = (handler: (call: unknown, callback: UnaryCallback) => void) => (call: unknown, callback: UnaryCallback) => {
    const answer = sendAnswer;
    if (answer === undefined) return handler(call, callback);
    if (!answer.afterHandler) return (count('SendMessage'), callback(statusOf(answer)));
    return handler(call, (error, value) => (error ? callback(error, value) : callback(statusOf(answer))));
  };
  /** Wraps a read (unary or server-streaming) so it is answered `readAnswer`'s status when one is set, its handler never run. */
  const answeringRead = (handler: (...args: unknown[]) => unknown, streaming: boolean, list: boolean) => (call: { emit(event: 'error', error: Partial<ServiceError>): void }, ...rest: unknown[]) => {
    const answer = readAnswer;
    if (answer === undefined || (list && !answer.alsoListTasks)) return handler(call, ...rest);
    readsAnswered++;
    if (readAnswersLeft !== undefined && --readAnswersLeft <= 0) readAnswer = undefined;
    if (streaming) return void call.emit('error', statusOf(answer));
    return (rest[0] as UnaryCallback)(statusOf(answer));
  };
  const READS = /\/(GetTask|CancelTask|SubscribeToTask|TaskSubscription|ListTasks)$/;

  /** Wraps every method to record its metadata, every server-streaming one to be cut by `dropStreamsAfter`, SendMessage to answer `sendAnswer`. */
  const instrument = (definition: ServiceDefinition, implementation: UntypedServiceImplementation): UntypedServiceImplementation =>
    Object.fromEntries(
      Object.entries(implementation).map(([name, handler]) => {
        const streaming = definition[name]?.responseStream ? droppingStream(handler as (call: ServerWritableStream<unknown, unknown>) => void) : handler;
        const path = definition[name]?.path ?? '';
        const read = READS.exec(path);
        const inner = path.endsWith('/SendMessage')
          ? answeringSend(handler as (call: unknown, callback: UnaryCallback) => void)
          : read
            ? answeringRead(streaming as (...args: unknown[]) => unknown, definition[name]?.responseStream === true, read[1] === 'ListTasks')
            : streaming;
        const wrapped = (call: { metadata: Metadata }, ...rest: unknown[]): unknown => {
          seenMetadata.push(Object.fromEntries(Object.entries(call.metadata.getMap()).map(([key, value]) => [key, String(value)])));
          return (inner as (...args: unknown[]) => unknown)(call, ...rest);
        };
        return [name, wrapped];
      }),
    ) as UntypedServiceImplementation;

  const serverOptions = options.maxReceiveMessageBytes !== undefined ? { 'grpc.max_receive_message_length': options.maxReceiveMessageBytes } : {};
  const build = (): Server => {
    const server = new Server(serverOptions);
    for (const [definition, implementation] of services()) server.addService(definition, instrument(definition, implementation));
    return server;
  };

  let server = new Server();
  grpcPort = await bindServer(server, 0);
  card = buildCard(`http://127.0.0.1:${grpcPort}`, pushEnabled, flavour);
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
    setBehaviour: (behaviour) => void (executor.behaviour = executorV03.behaviour = behaviour),
    sendMessageCount: (messageId) => executor.invocationCount(messageId),
    requestCount: (method) => counts.get(method) ?? 0,
    answerSendsWith: (answer) => void (sendAnswer = answer),
    answerReadsWith: (answer) => void ((readAnswer = answer), (readAnswersLeft = answer?.times)),
    get readsAnswered() {
      return readsAnswered;
    },
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

function buildCard(grpcUrl: string, pushNotifications: boolean, flavour: GrpcAgentFlavour): AgentCard {
  if (flavour === 'v03') {
    const cardV03 = {
      name: 'gRPC demo agent 0.3', description: 'A scripted A2A 0.3 agent (sdk 0.3.14) over gRPC', version: '1.0.0', protocolVersion: '0.3.0',
      url: grpcUrl, preferredTransport: 'GRPC', additionalInterfaces: [{ url: grpcUrl, transport: 'GRPC' }],
      capabilities: { streaming: true, pushNotifications: true }, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
      skills: [{ id: 'demo', name: 'Demo', description: 'Does what the test scripted', tags: ['demo'] }],
    };
    return cardV03 as unknown as AgentCard;
  }
  const versions = flavour === 'legacyCompat' ? ['1.0', '0.3'] : ['1.0'];
  return {
    name: 'gRPC demo agent',
    description: 'A scripted A2A agent served over gRPC',
    supportedInterfaces: versions.map((protocolVersion) => ({ url: grpcUrl, protocolBinding: 'GRPC', tenant: '', protocolVersion })),
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
