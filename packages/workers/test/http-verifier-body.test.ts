/**
 * `httpVerifier` reads at most `maxBodyBytes` of a 2xx answer (the a2a client's bounded reader): a body over it,
 * declared (`Content-Length`) or streamed (chunked, no length), is unknown with the reason; one within it is read
 * whole, split over chunks (a multi-byte character across two chunks decodes as one).
 */
import { createServer, type Server } from 'node:http';
import { afterEach, expect, it } from 'vitest';
import type { DelegationView } from '@durable-a2a/shared';
import { httpVerifier } from '../src/verifiers.ts';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A server answering 200 with `chunks` written one by one (chunked unless `declared`). */
async function serve(chunks: Buffer[], declared = false): Promise<string> {
  server = createServer((_request, response) => {
    const length = chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0);
    response.writeHead(200, { 'content-type': 'application/json', ...(declared ? { 'content-length': String(length) } : {}) });
    for (const chunk of chunks) response.write(chunk);
    response.end();
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/bookings/{messageId}`;
}

const delegation = { messageId: 'm-1', workflowId: 'w', step: 's', delegationId: 's.1' } as DelegationView;
const verify = (urlTemplate: string, maxBodyBytes: number) =>
  httpVerifier({ urlTemplate, maxBodyBytes, responseSchema: { parse: (value: unknown) => value as { status: string } }, effectOf: (body) => (body.status === 'booked' ? 'present' : 'absent') }).verify({ delegation, params: {} });

it('a body within maxBodyBytes, in chunks that split a character: read whole', async () => {
  const text = Buffer.from(JSON.stringify({ status: 'booked', note: 'café' }));
  const cut = text.indexOf(0xc3) + 1;
  const url = await serve([text.subarray(0, cut), text.subarray(cut)]);
  const found = await verify(url, text.byteLength);
  expect(found).toMatchObject({ effect: 'present', evidence: { body: { status: 'booked', note: 'café' } } });
});

it.each([false, true])('a body over maxBodyBytes (declared: %s): unknown, not read', async (declared) => {
  const url = await serve([Buffer.from('{"status":"booked","pad":"'), Buffer.alloc(64 * 1024, 'y'), Buffer.from('"}')], declared);
  const found = await verify(url, 32 * 1024);
  expect(found).toMatchObject({ effect: 'unknown', evidence: { refused: expect.stringContaining('maxBodyBytes') } });
});
