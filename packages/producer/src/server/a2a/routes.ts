/**
 * The A2A front door on the HTTP service: the service's Agent Card at `/.well-known/agent-card.json`, A2A
 * at `/a2a` (JSON-RPC 1.0 and 0.3 POSTed to `/a2a` itself, HTTP+JSON 1.0 under it), and per registered
 * agent the same at `/a2a/agents/<name>` with its card at `/a2a/agents/<name>/.well-known/agent-card.json`.
 *
 * The wire format is the SDK's: its express handlers (`jsonRpcHandler` with 0.3 compatibility,
 * `restHandler`, `agentCardHandler`) run on the raw request once fastify has authenticated it and parsed
 * its body (depth-checked like every API body; express's own parser then sees the body already read and
 * leaves it). Cards are public; everything else needs an API token as Bearer (401 problem+json otherwise).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Request, type RequestHandler } from 'express';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import type { Producer } from '../../producer.ts';
import { bearerOf } from '../auth.ts';
import { namedTokenOf, type NamedToken } from '../callers.ts';
import { problem, sendProblem } from '../problem.ts';
import { parseJsonWithinDepth } from '../json-body.ts';
import { logUrl } from '../log-url.ts';
import { FrontDoorCaller, principalOf } from './caller.ts';
import { FRONT_DOOR_PATH, availableAgents, frontDoorCard } from './card.ts';
import { FrontDoorRequestHandler, type FrontDoorTarget } from './handler.ts';
import { FrontDoorPushNotifier } from './push.ts';
import type { AddressPolicyOptions } from '@durable-a2a/a2a';

/** Options of `frontDoorRoutes`. */
export interface FrontDoorOptions {
  producer: Producer;
  /** The API tokens; each one is a principal with its own tasks, in its tenant. */
  apiTokens: readonly NamedToken[];
  /** Every configured tenant (push notifications of each one's tasks resume after a restart). Default `default` only. */
  tenants?: readonly string[];
  /** Longest wait of a blocking SendMessage (ms). Default 30_000 (the long poll's cap). */
  blockingWaitMs?: number;
  /** Attempts of a task (`FrontDoorHandlerOptions.attempts`). Default 3. */
  attempts?: number;
  /** Deepest JSON body accepted (as on /v1: `apiBodyDepth`). */
  jsonDepth: number;
  /** The policy push notification URLs pass (the agents' policy). Default: public addresses only. */
  addressPolicy?: AddressPolicyOptions;
}

const CARD_SUFFIX = '/.well-known/agent-card.json';

/** A caller's connection: aborted when it closes; `drained` resolves once it took what was written (events.ts `Drained`). */
interface CallerConnection {
  disconnected: AbortSignal;
  drained: () => Promise<void>;
}

/** Resolves once `response` holds no more than its high-water mark unsent (its 'drain'), or the caller left. */
function drainedOf(response: ServerResponse, left: AbortSignal): Promise<void> {
  if (!response.writableNeedDrain || left.aborted || response.destroyed) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = () => {
      response.off('drain', done);
      response.off('close', done);
      left.removeEventListener('abort', done);
      resolve();
    };
    response.once('drain', done);
    response.once('close', done);
    left.addEventListener('abort', done, { once: true });
  });
}
/** Proxied agents whose transports are kept built (one small router pair each); past it the cache starts over. */
const MAX_CACHED_AGENTS = 1_000;

/** The origin the caller reached this service at (the card's interface URLs). */
const originOf = (request: Request) => `${request.protocol}://${request.get('host') ?? 'localhost'}`;

/** The express app that carries the SDK's handlers; `disconnected` gives each raw request's abort signal. */
function frontDoorApp(options: FrontDoorOptions, connections: WeakMap<IncomingMessage, CallerConnection>, push: FrontDoorPushNotifier): express.Express {
  const { producer } = options;
  const userBuilder = async (request: Request) => {
    const token = bearerOf({ headers: request.headers } as FastifyRequest);
    // The onRequest hook admitted only configured tokens: the scope is that token's.
    const scope = namedTokenOf(token, options.apiTokens)?.scope;
    const connection = connections.get(request);
    return new FrontDoorCaller(principalOf(token ?? ''), connection?.disconnected ?? new AbortController().signal, scope, connection?.drained);
  };
  const transports = new Map<string, RequestHandler>();
  const transportsOf = (target: FrontDoorTarget): RequestHandler => {
    const key = target.kind === 'agent' ? `agent:${target.name}` : 'skill';
    let handler = transports.get(key);
    if (!handler) {
      if (transports.size >= MAX_CACHED_AGENTS) transports.clear();
      const requestHandler = new FrontDoorRequestHandler({ producer, target, blockingWaitMs: options.blockingWaitMs ?? 30_000, attempts: options.attempts ?? 3, push });
      const jsonRpc = jsonRpcHandler({ requestHandler, userBuilder, legacyCompat: { enabled: true } });
      const rest = restHandler({ requestHandler, userBuilder });
      handler = (request, response, next) => (request.method === 'POST' && request.path === '/' ? jsonRpc : rest)(request, response, next);
      transports.set(key, handler);
    }
    return handler;
  };
  const card = (agentName: string | undefined): RequestHandler => async (request, response, next) => {
    try {
      // The cards are public: they name shared agents only (an agent registered for one tenant stays that tenant's).
      const agents = availableAgents((await producer.listAgents()).filter((agent) => agent.tenant === null));
      const agent = agentName === undefined ? undefined : agents.find((candidate) => candidate.card.name === agentName);
      if (agentName !== undefined && !agent) {
        response.status(404).json({ error: `no registered agent named ${agentName}` });
        return;
      }
      const served = frontDoorCard(originOf(request), agents, agent);
      agentCardHandler({ agentCardProvider: async () => served, legacyCompat: { enabled: true }, cache: { maxAge: 0 } })(request, response, next);
    } catch (error) {
      next(error);
    }
  };
  const app = express();
  app.disable('x-powered-by');
  // Express's own error pages (a body it cannot route) carry no stack trace.
  app.set('env', 'production');
  app.use(CARD_SUFFIX, card(undefined));
  app.use(`${FRONT_DOOR_PATH}/agents/:name${CARD_SUFFIX}`, (request, response, next) => card(String(request.params.name))(request, response, next));
  app.use(`${FRONT_DOOR_PATH}/agents/:name`, (request, response, next) => transportsOf({ kind: 'agent', name: String(request.params.name) })(request, response, next));
  app.use(FRONT_DOOR_PATH, transportsOf({ kind: 'skill' }));
  return app;
}

/** Registers the front door's routes (cards and `/a2a`) on `app`. */
export function frontDoorRoutes(options: FrontDoorOptions) {
  return async (app: FastifyInstance): Promise<void> => {
    const connections = new WeakMap<IncomingMessage, CallerConnection>();
    const push = new FrontDoorPushNotifier({
      producer: options.producer,
      tenants: options.tenants,
      addressPolicy: options.addressPolicy ?? {},
      onResumeError: (error) => app.log.warn({ err: error }, 'front door push: a resume round failed'),
    });
    // Watches of another (maybe dead) process resume here: at start, then periodically.
    app.addHook('onReady', async () => push.startResuming());
    app.addHook('onClose', () => push.close());
    const expressApp = frontDoorApp(options, connections, push);
    // The SDK's express handlers answer on the raw response; fastify hands it over with the parsed body.
    const handOver = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
      const raw = request.raw as IncomingMessage & { body?: unknown };
      raw.body = request.body;
      const left = new AbortController();
      reply.raw.once('close', () => left.abort());
      connections.set(raw, { disconnected: left.signal, drained: () => drainedOf(reply.raw, left.signal) });
      for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value);
      // A hijacked reply skips fastify's onResponse hook: the request line is logged here instead.
      reply.raw.once('finish', () => request.log.info({ method: request.method, url: logUrl(request.url), statusCode: reply.raw.statusCode, ms: Math.round(reply.elapsedTime) }, 'request'));
      reply.hijack();
      expressApp(raw as express.Request, reply.raw as express.Response);
    };
    const methods = ['GET', 'POST', 'DELETE'];
    // The A2A surface is described by the Agent Card and the A2A specification, not by the OpenAPI document.
    const schema = { hide: true };
    app.route({ method: 'GET', url: CARD_SUFFIX, schema, handler: handOver });
    await app.register(async (scope) => {
      // HTTP+JSON sends CancelTask and SubscribeToTask as POSTs that may carry no body at all.
      scope.removeContentTypeParser(['application/json', 'application/a2a+json']);
      scope.addContentTypeParser(['application/json', 'application/a2a+json'], { parseAs: 'string' }, (_request, body, done) => {
        try {
          done(null, String(body).trim() === '' ? undefined : parseJsonWithinDepth(body, options.jsonDepth));
        } catch (refused) {
          done(refused as Error, undefined);
        }
      });
      scope.addHook('onRequest', async (request, reply) => {
        if (request.method === 'GET' && request.url.split('?')[0]!.endsWith(CARD_SUFFIX)) return;
        if (!namedTokenOf(bearerOf(request), options.apiTokens)) await sendProblem(reply, problem('UNAUTHORIZED', 'a valid API token is required as Authorization: Bearer <token>'));
      });
      scope.route({ method: methods, url: FRONT_DOOR_PATH, schema, handler: handOver });
      scope.route({ method: methods, url: `${FRONT_DOOR_PATH}/*`, schema, handler: handOver });
    });
  };
}
