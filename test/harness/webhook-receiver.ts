/**
 * A notification receiver for tests: raw `node:http` on loopback, whose answer is scripted per request
 * (`accept`, `fail` with a status, or `hang` until closed), recording each request's id, headers and body, and
 * verifying each signature by hand with the documented scheme (Standard Webhooks: HMAC-SHA256 under the base64
 * key after `whsec_`, over `<webhook-id>.<webhook-timestamp>.<body>`, sent as `v1,<base64>`), not with the library
 * the workers sign with.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ReceiverAnswer = { kind: 'accept' } | { kind: 'fail'; status: number } | { kind: 'hang' };

export interface ReceivedNotification {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  /** The signature checked out with the documented scheme. */
  verified: boolean;
  /** The answer this request got. */
  answer: ReceiverAnswer['kind'];
}

export interface WebhookReceiver {
  url: string;
  received: ReceivedNotification[];
  /** Requests held open by `hang`, not answered yet. */
  hanging(): number;
  /** Replaces how the next requests are answered (`tries`: this id's requests so far, this one included). */
  answerWith(script: (id: string, tries: number) => ReceiverAnswer): void;
  /** Ids answered 2xx, each once (the receiver's deduplication). */
  acceptedIds(): Set<string>;
  close(): Promise<void>;
}

/** The documented check of one request's signature. */
export function verifySignature(secret: string, id: string, timestamp: string, body: string, signature: string): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signature.split(' ').some((candidate) => {
    const [version, value] = candidate.split(',');
    const given = Buffer.from(value ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

export async function startWebhookReceiver(secret: string): Promise<WebhookReceiver> {
  const received: ReceivedNotification[] = [];
  const tries = new Map<string, number>();
  const held = new Set<ServerResponse>();
  let script: (id: string, tries: number) => ReceiverAnswer = () => ({ kind: 'accept' });
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const id = String(request.headers['webhook-id'] ?? '');
      const timestamp = String(request.headers['webhook-timestamp'] ?? '');
      const signature = String(request.headers['webhook-signature'] ?? '');
      const count = (tries.get(id) ?? 0) + 1;
      tries.set(id, count);
      const answer = script(id, count);
      received.push({ id, timestamp, signature, body, verified: verifySignature(secret, id, timestamp, body, signature), answer: answer.kind });
      if (answer.kind === 'hang') {
        held.add(response);
        response.on('close', () => held.delete(response));
        return;
      }
      response.writeHead(answer.kind === 'accept' ? 204 : answer.status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    hanging: () => held.size,
    answerWith: (next) => {
      script = next;
    },
    acceptedIds: () => new Set(received.filter((request) => request.answer === 'accept' && request.verified).map((request) => request.id)),
    close: async () => {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
