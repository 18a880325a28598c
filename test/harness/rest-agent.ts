/**
 * A raw node:http HTTP+JSON (REST) A2A 1.0 agent whose routes a test scripts: the card at
 * /.well-known/agent-card.json names one HTTP+JSON interface at /rest and the skill `scripted` (as the scripted
 * JSON-RPC agent's, so a workflow by skill may route to it); every other request is answered by
 * `routes(method, path, body)` (the path without /rest, the body parsed) and counted per `METHOD path`. An answer with
 * `sse` is a text/event-stream of those events; `raw` is bytes with their content type (none when omitted); else
 * `body` as JSON under `contentType` (default application/a2a+json: a test of a mislabelled agent passes another).
 */
import { createServer } from 'node:http';
import { closeServer, listenOnLoopback, trackSockets } from './ports.ts';

/** One answer: a JSON `body`, SSE `sse` events (200), or `raw` bytes with their content type (none when omitted). */
export interface RestAnswer {
  status: number;
  body?: unknown;
  sse?: string[];
  raw?: { body: string; contentType?: string };
}

export interface RestAgentOptions {
  /** The content type of every JSON answer. Default application/a2a+json (spec §11.1). */
  contentType?: string;
  /** The card's `capabilities.streaming`. Default true. */
  streaming?: boolean;
}

/** A running REST agent: its base URL, card URL, how many times each `METHOD path` was called, `close`. */
export interface RestAgentHandle {
  readonly url: string;
  readonly cardUrl: string;
  /** Requests of one `METHOD path` (path without /rest), e.g. `POST /message:send`. */
  count(key: string): number;
  /** Destroys open sockets and stops listening. */
  close(): Promise<void>;
}

/** Starts the agent on 127.0.0.1, port 0 (see the module header); the caller closes it. */
export async function startRestAgent(routes: (method: string, path: string, body: any) => RestAnswer, options: RestAgentOptions = {}): Promise<RestAgentHandle> {
  const counts = new Map<string, number>();
  let base = '';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0]!;
      if (req.method === 'GET' && path === '/.well-known/agent-card.json') {
        const card = {
          name: 'Rest',
          description: 'a raw HTTP+JSON agent',
          version: '1.0.0',
          supportedInterfaces: [{ url: `${base}/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' }],
          capabilities: { streaming: options.streaming ?? true, pushNotifications: false },
          defaultInputModes: ['text/plain'],
          defaultOutputModes: ['text/plain'],
          skills: [{ id: 'scripted', name: 'Scripted', description: 'Does what the test scripted', tags: ['scripted'] }],
        };
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card));
      }
      const key = `${req.method} ${path.replace(/^\/rest/, '')}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      const text = Buffer.concat(chunks).toString('utf8');
      const answer = routes(req.method ?? '', path.replace(/^\/rest/, ''), text ? JSON.parse(text) : undefined);
      if (answer.sse) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const event of answer.sse) res.write(`data: ${event}\n\n`);
        return void res.end();
      }
      if (answer.raw) {
        const { body, contentType } = answer.raw;
        return void res.writeHead(answer.status, { ...(contentType === undefined ? {} : { 'content-type': contentType }), 'content-length': Buffer.byteLength(body) }).end(body);
      }
      res.writeHead(answer.status, { 'content-type': options.contentType ?? 'application/a2a+json' }).end(answer.body === undefined ? '' : JSON.stringify(answer.body));
    });
  });
  const sockets = trackSockets(server);
  base = `http://127.0.0.1:${await listenOnLoopback(server)}`;
  return {
    url: base,
    cardUrl: `${base}/.well-known/agent-card.json`,
    count: (key) => counts.get(key) ?? 0,
    async close() {
      sockets.destroyAll();
      await closeServer(server);
    },
  };
}
