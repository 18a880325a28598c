/**
 * Raw node:http agents of the attack rounds whose exact bytes matter: an Agent Card for a raw JSON-RPC endpoint
 * (`rawCardOf`) and an agent that takes our message and goes down (`goneAgent`).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { listTasksPage } from './field-cases.ts';
import { listenOnLoopback } from './ports.ts';

const DAY_MS = 86_400_000;

/** An Agent Card (A2A 1.0, JSON-RPC at `rpcUrl`, skill `scripted`, no streaming, no push) for a raw agent. */
export const rawCardOf = (rpcUrl: string) => ({
  name: 'Raw agent',
  description: 'a raw node:http agent of the attack rounds',
  version: '1.0.0',
  supportedInterfaces: [{ url: rpcUrl, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
  capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'scripted', name: 'Scripted', description: 'books', tags: ['scripted'] }],
});

/**
 * Agent A as one raw server (card and JSON-RPC; skill `scripted`): SendMessage is taken and its connection cut without
 * an answer (delivery maybe: A may be doing the work). `unsupported` (the default): ListTasks answers -32601 (no search
 * can prove our message absent) and, once that answer is flushed, A goes down: it stops listening and cuts every
 * connection (every later call ECONNREFUSED). `empty`: ListTasks answers an empty last page (the search proves our
 * message absent), and A goes down once it has answered the search's last pass (the one widened for clock skew:
 * `statusTimestampAfter` more than half a day back; search.ts `searchPasses`), so the search concludes before A is
 * gone. `sends`: the messageIds of the SendMessages A took (`count('SendMessage')` their number, as a scripted agent's). `close` is safe to call twice.
 */
export async function goneAgent(listing: 'unsupported' | 'empty' = 'unsupported') {
  const sockets = new Set<Socket>();
  const sends: string[] = [];
  let base = '';
  const json = (response: ServerResponse, payload: unknown, then?: () => void) => {
    const body = JSON.stringify(payload);
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    response.end(body, then);
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method === 'GET') {
        return json(response, rawCardOf(`${base}/a2a/jsonrpc`));
      }
      const envelope = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: unknown; method: string; params: { message?: { messageId: string } } };
      if (envelope.method === 'SendMessage') {
        sends.push(envelope.params.message!.messageId);
        return void response.socket?.destroy();
      }
      if (envelope.method === 'ListTasks') {
        if (listing === 'unsupported') return json(response, { jsonrpc: '2.0', id: envelope.id, error: { code: -32601, message: 'Method not found' } }, () => void down());
        const after = (envelope.params as { statusTimestampAfter?: string }).statusTimestampAfter;
        const lastPass = after !== undefined && Date.parse(after) < Date.now() - DAY_MS / 2;
        return json(response, { jsonrpc: '2.0', id: envelope.id, ...listTasksPage([]) }, lastPass ? () => void down() : undefined);
      }
      return json(response, { jsonrpc: '2.0', id: envelope.id, error: { code: -32001, message: 'Task not found' } });
    });
  });
  server.on('connection', (socket: Socket) => (sockets.add(socket), socket.on('close', () => sockets.delete(socket))));
  const down = async () => {
    if (!server.listening) return;
    const closed = new Promise((resolve) => server.close(resolve));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  base = `http://127.0.0.1:${await listenOnLoopback(server)}`;
  return { cardUrl: `${base}/.well-known/agent-card.json`, sends, count: (method: string) => (method === 'SendMessage' ? sends.length : 0), close: down };
}
