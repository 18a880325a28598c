/**
 * Property (attack 33, kind: ownership before the code): a JSON-RPC error envelope that carries ANOTHER request's id
 * answers another request, whatever HTTP status carries it and whether the call was plain (SendMessage) or a stream
 * (SendStreamingMessage answered with a whole JSON body): its code refuses nothing of ours, so `sendEffectOf` is
 * `maybe` (the search decides), never `none` (FAILED, the step sent to a second agent after the first booked).
 * Before, only a 2xx was checked: a 400 or 500 carrying another request's -32602 was our refusal. The same body under
 * our id, or null, keeps the code's verdict (the control) under a status that may carry a refusal (a 2xx or a refusing
 * 4xx: a 5xx or a 409 proves nothing, server-error-refusal-property). 1.0 and 0.3; byte-exact node:http server.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { A2AError, ResponseIdMismatchError, sendEffectOf } from '../src/errors.ts';
import { type RawServer, startEchoServer } from './helpers/raw-server.ts';

const message = { messageId: 'm-ours', contextId: 'c-ours', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] };
/** The refusal codes of the table (effect none when the agent's own answer to our request). */
const REFUSALS = [-32700, -32600, -32601, -32602, -32003, -32004, -32005, -32008, -32009];
/** Statuses other than 401/403 (which refuse our credentials by the status alone). */
const STATUSES = [200, 400, 404, 405, 409, 413, 422, 500, 502, 503];
type IdKind = 'another string' | 'another number' | 'ours' | 'ours as text' | 'null' | 'none';

let answer: (id: unknown) => { status: number; body: string } = () => ({ status: 200, body: '{}' });
let server: RawServer;
beforeAll(async () => {
  server = await startEchoServer(() => answer);
});
afterAll(() => server.close());

const envelopeId = (kind: IdKind, ours: unknown): unknown => {
  if (kind === 'another string') return `not-${String(ours)}`;
  if (kind === 'another number') return Number(ours) + 1000;
  if (kind === 'ours') return ours;
  if (kind === 'ours as text') return String(ours);
  return null;
};

/** The error a call ends with (a stream: its first failure). */
async function failureOf(protocolVersion: '1.0' | '0.3', call: 'plain' | 'stream'): Promise<unknown> {
  const transport = createTransport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion });
  if (call === 'plain') return transport.sendMessage({ message }).then((value) => ({ value }), (caught: unknown) => caught);
  try {
    for await (const event of transport.sendStreamingMessage({ message })) return { event };
    return { ended: true };
  } catch (caught) {
    return caught;
  }
}

describe('property (attack 33): a JSON-RPC error under another request\'s id refuses nothing of ours', () => {
  it('over versions, calls, statuses, refusal codes and id spellings: another id is effect maybe; ours or null keeps the refusal', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('1.0' as const, '0.3' as const),
        fc.constantFrom('plain' as const, 'stream' as const),
        fc.constantFrom(...STATUSES),
        fc.constantFrom(...REFUSALS),
        fc.constantFrom<IdKind>('another string', 'another number', 'ours', 'ours as text', 'null', 'none'),
        async (protocolVersion, call, status, code, idKind) => {
          answer = (ours) => {
            const envelope: Record<string, unknown> = { jsonrpc: '2.0', error: { code, message: 'refused' } };
            if (idKind !== 'none') envelope.id = envelopeId(idKind, ours);
            return { status, body: JSON.stringify(envelope) };
          };
          const error = await failureOf(protocolVersion, call);
          const what = JSON.stringify({ protocolVersion, call, status, code, idKind, error: (error as Error).message });
          expect(error, what).toBeInstanceOf(A2AError);
          if (idKind.startsWith('another')) {
            expect(error, what).toBeInstanceOf(ResponseIdMismatchError);
            expect(sendEffectOf(error), what).toBe('maybe');
            expect((error as A2AError).delivery, what).toBe('received');
          } else {
            // Ours or null keeps the code's verdict under a status that may carry a refusal; a 5xx or a 409 proves nothing (edges35).
            expect(sendEffectOf(error), what).toBe(status < 300 || (status < 500 && status !== 409) ? 'none' : 'maybe');
          }
        },
      ),
      { numRuns: 250 },
    );
  });
});
